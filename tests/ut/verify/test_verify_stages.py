"""verify_options: every stage of a kernel (the traced IR in the reference interpreter, the compiled library)
against golden data — reports, tolerances, user golden data, a miscompiled stage found, run-time checks in
every stage — and the interpreter covering the language."""
import os
import re

import pytest
import torch

import pypto
from pypto.verify import check as verify_check
from pypto.verify import StageReport
from pypto.errors import KernelRuntimeError

F32 = pypto.DT_FP32
D8 = pypto.Tensor([pypto.DYNAMIC, 8], F32)


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(autouse=True)
def _no_golden():
    pypto.set_verify_golden_data()
    yield
    pypto.set_verify_golden_data()


def _body(x: D8, y: D8, out: D8):
    n = x.shape[0]
    for i in pypto.loop(0, n, 1, unroll_list=[2]):
        r = x[i:i + 1, :]
        if i % 2 == 0:
            out[i:i + 1, :] = pypto.exp(r) * y[i:i + 1, :] + pypto.sum(r, 1, keepdim=True)
        else:
            out[i:i + 1, :] = pypto.sigmoid(r) - 1.0


def _ref(x, y):
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = torch.exp(x[i]) * y[i] + x[i].sum() if i % 2 == 0 else torch.sigmoid(x[i]) - 1.0
    return out


# ---------------------------------------------------------------------------------------------------------------
# verify_options
# ---------------------------------------------------------------------------------------------------------------

def test_verify_passes_and_reports_every_stage(tmp_path):
    k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True, "pass_verify_save_tensor": True,
                                                  "pass_verify_save_tensor_dir": str(tmp_path)})
    for n in (5, 8):                      # every call is verified (the second one hits the cache)
        x, y = _rand(n, 8, seed=n), _rand(n, 8, seed=n + 1)
        out = torch.zeros(n, 8)
        k(x, y, out)
        torch.testing.assert_close(out, _ref(x, y), rtol=1e-5, atol=1e-5)
        assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    assert k.cache_info()["specializations"] == 1 and k.cache_info()["hits"] >= 1
    saved = sorted(os.listdir(tmp_path / "_body"))
    assert saved == sorted(f"{s}_{p}.pt" for s in ("TENSOR_GRAPH", "CODEGEN_BINARY") for p in ("x", "y", "out"))
    torch.testing.assert_close(torch.load(tmp_path / "_body" / "TENSOR_GRAPH_out.pt"), _ref(x, y),
                               rtol=1e-5, atol=1e-5)


def _merged_scalar_body(x: D8, out: D8):
    n = x.shape[0]
    if n > 4:                   # a kernel-level branch: `scale` becomes the symbolic select (n > 4 ? 2 : -1)
        scale = 2.0
    else:
        scale = -1.0
    out[:] = x * scale


@pytest.mark.parametrize("n", [3, 7])
def test_verify_interprets_kernel_branch_selects(n):
    """The IR interpreter evaluates symbolic scalars with the same evaluator as the rest of the IR (selects
    included), so a kernel with a merged branch scalar is verified, not skipped."""
    k = pypto.frontend.jit(_merged_scalar_body, verify_options={"enable_pass_verify": True})
    x = _rand(n, 8, seed=n)
    out = torch.zeros(n, 8)
    k(x, out)
    torch.testing.assert_close(out, x * (2.0 if n > 4 else -1.0), rtol=0, atol=0)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]


def test_verify_against_user_golden_reports_stage_and_worst_element():
    k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                  "pass_verify_error_tol": [1e-3, 1e-3]})
    x, y = _rand(6, 8, seed=3), _rand(6, 8, seed=4)
    golden = _ref(x, y)
    pypto.set_verify_golden_data(goldens=[None, None, golden])
    out = torch.zeros(6, 8)
    k(x, y, out)                                          # golden within tolerance: fine
    torch.testing.assert_close(out, golden, rtol=1e-5, atol=1e-5)

    bad = golden.clone()
    bad[4, 5] += 0.5                                       # the worst element
    bad[1, 2] += 0.01
    pypto.set_verify_golden_data(goldens=[None, None, bad])
    out = torch.full((6, 8), -9.0)
    with pytest.raises(KernelRuntimeError) as ei:
        k(x, y, out)
    msg = str(ei.value)
    assert msg.startswith("kernel '_body': pass verify failed: stage TENSOR_GRAPH: tensor 'out': 2 of 48 elements")
    assert "stage CODEGEN_BINARY: tensor 'out': 2 of 48 elements differ from golden data beyond rtol=0.001, " \
           "atol=0.001; worst at index [4, 5]" in msg
    assert re.search(r"got -?[0-9.]+, golden -?[0-9.]+ \(\|diff\| 0\.5", msg)
    assert bool((out == -9.0).all())                      # nothing launched
    assert k.last_verify is None


def test_verify_finds_a_miscompiled_stage(monkeypatch):
    """Without golden data the compiled kernel is compared with the IR interpreter: a wrong binary is caught."""
    k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True})
    real = verify_check.launch

    def broken(library, tensors, scalars=(), num_threads=1, debug_mode=0):
        real(library, tensors, scalars, num_threads, debug_mode)
        tensors[2][3, 1] += 1.0                            # one wrong element
    monkeypatch.setattr(verify_check, "launch", broken)
    x, y = _rand(5, 8, seed=5), _rand(5, 8, seed=6)
    out = torch.full((5, 8), 4.0)
    with pytest.raises(KernelRuntimeError) as ei:
        k(x, y, out)
    msg = str(ei.value)
    assert "stage CODEGEN_BINARY: tensor 'out': 1 of 40 elements differ from the TENSOR_GRAPH stage (IR " \
           "interpreter)" in msg and "worst at index [3, 1]" in msg and "TENSOR_GRAPH:" not in msg
    assert bool((out == 4.0).all())


def test_verify_tolerance_and_filter(monkeypatch):
    real = verify_check.launch
    wrong = [(0, 0)]

    def off_by(library, tensors, scalars=(), num_threads=1, debug_mode=0):
        real(library, tensors, scalars, num_threads, debug_mode)
        for r, c in wrong:
            tensors[2][r, c] += 5e-4
    monkeypatch.setattr(verify_check, "launch", off_by)
    x, y = _rand(4, 8, seed=7), _rand(4, 8, seed=8)
    loose = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                      "pass_verify_error_tol": [0.0, 1e-3]})
    loose(x, y, torch.zeros(4, 8))                          # 5e-4 < atol
    tight = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                      "pass_verify_error_tol": [0.0, 1e-4]})
    # the reference's budget: of 32 elements, isqrt(32) // 2 = 2 may be outside (none 128-fold)
    assert verify_check.error_budget(32, 0.0, 1e-4) == 2 and verify_check.error_budget(20000, 1e-3, 1e-3) == 20
    tight(x, y, torch.zeros(4, 8))
    assert "1 element(s) outside the tolerance, within the 2 allowed" in tight.last_verify[1].tensors["out"][2]
    wrong[:] = [(0, 0), (1, 1), (3, 2)]
    with pytest.raises(KernelRuntimeError, match=r"stage CODEGEN_BINARY: tensor 'out': 3 of 32 elements .*worst "
                                                 r"at index \[[013], [012]\].*; at most 2 may be"):
        tight(x, y, torch.zeros(4, 8))
    wrong[:] = [(2, 5)] * 30                                # one element 1.5e-2 off: beyond 128 * 1e-4
    with pytest.raises(KernelRuntimeError, match=r"1 of 32 elements .*worst at index \[2, 5\].*one is 128-fold "
                                                 r"outside"):
        tight(x, y, torch.zeros(4, 8))
    only_ir = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                        "pass_verify_error_tol": [0.0, 1e-4],
                                                        "pass_verify_pass_filter": ["TENSOR_GRAPH"]})
    only_ir(x, y, torch.zeros(4, 8))
    assert [(r.stage, r.status) for r in only_ir.last_verify] == [("TENSOR_GRAPH", "ok"),
                                                                  ("CODEGEN_BINARY", "skipped")]


def test_verify_golden_data_validation():
    k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True})
    pypto.set_verify_golden_data(goldens=[None, torch.zeros(3, 8)])   # 2 entries for 3 tensors
    out = torch.full((3, 8), 1.0)
    with pytest.raises(KernelRuntimeError, match=r"kernel '_body': pass verify: set_verify_golden_data got 2 "
                                                 r"goldens, the kernel has 3 tensor parameters"):
        k(_rand(3, 8), _rand(3, 8), out)
    assert bool((out == 1.0).all())
    with pytest.raises(TypeError, match="goldens must be a list of tensors"):
        pypto.set_verify_golden_data(goldens=torch.zeros(3))


def test_verify_uses_in_out_tensors():
    k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True})
    x, y = _rand(4, 8, seed=9), _rand(4, 8, seed=10)
    other = _rand(4, 8, seed=11)
    pypto.set_verify_golden_data(in_out_tensors=[other, y, torch.zeros(4, 8)], goldens=[None, None, _ref(other, y)])
    out = torch.zeros(4, 8)
    k(x, y, out)                           # verified on `other`, launched on x
    torch.testing.assert_close(out, _ref(x, y), rtol=1e-5, atol=1e-5)
    assert all(isinstance(r, StageReport) and r.status == "ok" for r in k.last_verify)


# ---------------------------------------------------------------------------------------------------------------
# the reference interpreter covers the language: verify of a kernel using most ops, every stage "ok"
# ---------------------------------------------------------------------------------------------------------------

D16 = pypto.Tensor([pypto.DYNAMIC, 16], F32)
I64 = pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_INT64)
H16 = pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP16)
W = pypto.Tensor([16, 16], F32)


def _many_ops(x: D16, w: W, idx: I64, o1: D16, o2: D16, o3: I64, o4: H16, o5: D16):
    n = x.shape[0]
    a = pypto.clip(x * 3.0 - 1.0, -2.0, 2.0)
    o1[:] = pypto.where(a > 0.5, pypto.exp(a), pypto.sigmoid(a)) + pypto.softmax(a, -1) \
        + pypto.rms_norm(a, eps=1e-6) + pypto.cumsum(a, 1) * 0.125
    o2[:] = pypto.matmul(pypto.tanh(a), w, pypto.DT_FP32) + pypto.amin(pypto.abs(a), 1, keepdim=True) \
        + pypto.transpose(pypto.view(w, [16, 16], [0, 0]), 0, 1)[0:1, :] + pypto.cast(pypto.arange(16), F32)
    vals, ids = pypto.topk(a, 3, 1)
    o3[:] = pypto.gather(pypto.cast(a * 10.0, pypto.DT_INT64), 1, idx) + pypto.sum(ids, 1, keepdim=True) \
        + pypto.cast(vals[:, 0:1] * 100.0, pypto.DT_INT64) + (pypto.cast(x * 7.0, pypto.DT_INT64) // 3) \
        + (pypto.cast(x * 7.0, pypto.DT_INT64) % 5)
    o4[:] = pypto.cast(pypto.sqrt(pypto.abs(a)) + pypto.pow(a, 2.0) + pypto.floor(a) - pypto.round(a * 4.0),
                       pypto.DT_FP16)
    o5[:] = pypto.scatter_update(pypto.full([n, 16], 0.5, F32), 1, idx, a)
    for i in pypto.loop(0, n, 1, unroll_list=[2]):
        if pypto.is_loop_end(i):
            o5[i:i + 1, :] = pypto.maximum(o5[i:i + 1, :], pypto.concat([a[i:i + 1, 0:8], a[i:i + 1, 8:16]], 1))


def test_verify_covers_the_language():
    k = pypto.frontend.jit(_many_ops, verify_options={"enable_pass_verify": True,
                                                      "pass_verify_error_tol": [1e-5, 1e-5]})
    n = 5
    x, w = _rand(n, 16, seed=1), _rand(16, 16, seed=2) * 0.25
    g = torch.Generator().manual_seed(3)
    idx = torch.stack([torch.randperm(16, generator=g) for _ in range(n)])
    outs = [torch.zeros(n, 16), torch.zeros(n, 16), torch.zeros(n, 16, dtype=torch.int64),
            torch.zeros(n, 16, dtype=torch.float16), torch.zeros(n, 16)]
    k(x, w, idx, *outs)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")], \
        k.last_verify
    # and the interpreted stage agrees with torch itself
    a = torch.clamp(x * 3.0 - 1.0, -2.0, 2.0)
    ref1 = torch.where(a > 0.5, torch.exp(a), torch.sigmoid(a)) + torch.softmax(a, -1) \
        + a * torch.rsqrt((a * a).mean(-1, keepdim=True) + 1e-6) + torch.cumsum(a, 1) * 0.125
    torch.testing.assert_close(outs[0], ref1, rtol=1e-5, atol=1e-5)
    ref2 = torch.tanh(a) @ w + a.abs().amin(1, keepdim=True) + w.t()[0:1, :] + torch.arange(16).float()
    torch.testing.assert_close(outs[1], ref2, rtol=1e-5, atol=1e-5)
    ref5 = torch.full((n, 16), 0.5).scatter(1, idx, a)
    ref5[-1] = torch.maximum(ref5[-1], a[-1])
    torch.testing.assert_close(outs[4], ref5, rtol=0, atol=0)


def test_verify_reports_a_failing_run_time_check_in_every_stage():
    @pypto.frontend.jit(verify_options={"enable_pass_verify": True})
    def k_rows(x: D8, out: D8, rows: pypto.Scalar[pypto.DT_INT32]):
        out[0:rows, :] = x[0:rows, :] + 1.0

    out = torch.full((3, 8), 6.0)
    with pytest.raises(KernelRuntimeError) as ei:
        k_rows(_rand(3, 8), out, 5)
    msg = str(ei.value)
    assert msg.startswith("kernel 'k_rows': pass verify failed: stage TENSOR_GRAPH failed: kernel 'k_rows': ")
    assert "| stage CODEGEN_BINARY failed: kernel 'k_rows': " in msg and "exceeds dim 0" in msg
    assert bool((out == 6.0).all())
    k_rows(_rand(3, 8, seed=2), out, 2)
    torch.testing.assert_close(out[:2], _rand(3, 8, seed=2)[:2] + 1.0)
    assert bool((out[2] == 6.0).all())


# ---------------------------------------------------------------------------------------------------------------
# the verify log (pypto_impl.LogTopFolder()/verify/interpreter.log), as the reference's tests read it
# ---------------------------------------------------------------------------------------------------------------

def _log_text(monkeypatch, tmp_path):
    monkeypatch.setenv("TILE_FWK_OUTPUT_DIR", str(tmp_path))
    folder = pypto.pypto_impl.LogTopFolder()
    assert folder == pypto.pypto_impl.LogTopFolder()          # one folder per process and output dir
    assert os.path.dirname(folder) == str(tmp_path)
    assert re.fullmatch(rf"output_\d{{8}}_\d{{6}}_\d{{6}}_{os.getpid()}_.+", os.path.basename(folder))
    log = os.path.join(folder, "verify", "interpreter.log")
    return lambda: open(log, encoding="utf-8").read() if os.path.exists(log) else ""


def test_verify_log_reports_what_each_stage_checked(monkeypatch, tmp_path):
    read = _log_text(monkeypatch, tmp_path)
    k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True})
    x, y = _rand(4, 8, seed=11), _rand(4, 8, seed=12)
    pypto.set_verify_golden_data(goldens=[None, None, _ref(x, y)])
    out = torch.zeros(4, 8)
    k(x, y, out)
    torch.testing.assert_close(out, _ref(x, y), rtol=1e-5, atol=1e-5)
    text = read()
    for stage in ("TENSOR_GRAPH", "CODEGEN_BINARY"):
        assert f"[EVENT]" in text and f"_body {stage} Verify for tensor 'out' (tensor parameter 2) result PASS " \
                                      f"(against golden data)" in text
        assert f"_body {stage} Verify for tensor 'x' (tensor parameter 0) result NO_COMPARE (not written by " \
               f"the kernel)" in text
    assert not re.search("error|fail", text, re.IGNORECASE)    # the reference suite's check of a passing run
    saving = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True, "pass_verify_save_tensor": True})
    saving(x, y, torch.zeros(4, 8))                           # saved next to the log by default, as the reference
    saved = os.path.join(pypto.pypto_impl.LogTopFolder(), "verify", "_body", "CODEGEN_BINARY_out.pt")
    torch.testing.assert_close(torch.load(saved), _ref(x, y), rtol=1e-5, atol=1e-5)


def test_verify_log_marks_a_mismatch_failed(monkeypatch, tmp_path):
    read = _log_text(monkeypatch, tmp_path)
    k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                  "pass_verify_pass_filter": ["TENSOR_GRAPH"]})
    x, y = _rand(3, 8, seed=13), _rand(3, 8, seed=14)
    bad = _ref(x, y)
    bad[2, 3] += 3.0                                          # beyond 128-fold the tolerance there (-7.7)
    pypto.set_verify_golden_data(goldens=[None, None, bad])
    out = torch.full((3, 8), 7.0)
    with pytest.raises(KernelRuntimeError, match="pass verify failed"):
        k(x, y, out)
    assert bool((out == 7.0).all())
    text = read()
    assert re.search(r"\[ERROR\]\[tid:\d+\] \[VERIFY:FAIL\] _body TENSOR_GRAPH Verify for tensor 'out' \(tensor "
                     r"parameter 2\) result FAILED: tensor 'out': 1 of 24 elements differ from golden data", text)
    assert "_body CODEGEN_BINARY Verify result NO_COMPARE (not in pass_verify_pass_filter)" in text


def test_global_verify_options_are_read_when_a_call_verifies(monkeypatch):
    """As in the reference (it reads the global verify options when it compiles, at the call): a
    `set_verify_options` after decoration applies to the next verified call; the decorator's own values win;
    `enable_pass_verify` stays as decorated; nothing is recompiled."""
    real = verify_check.launch
    wrong = [(0, 0), (1, 1), (3, 2)]

    def off_by(library, tensors, scalars=(), num_threads=1, debug_mode=0):
        real(library, tensors, scalars, num_threads, debug_mode)
        for r, c in wrong:
            tensors[2][r, c] += 5e-4
    monkeypatch.setattr(verify_check, "launch", off_by)
    x, y = _rand(4, 8, seed=7), _rand(4, 8, seed=8)
    pypto.reset_options()
    try:
        k = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True})
        own = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                        "pass_verify_error_tol": [0.0, 1e-3]})
        k(x, y, torch.zeros(4, 8))                          # the default [1e-3, 1e-3]: 5e-4 is within
        own(x, y, torch.zeros(4, 8))
        pypto.set_verify_options(pass_verify_error_tol=[0.0, 1e-4])   # after decoration and a first call
        out = torch.full((4, 8), -3.0)
        with pytest.raises(KernelRuntimeError, match=r"stage CODEGEN_BINARY: tensor 'out': 3 of 32 elements .*"
                                                     r"rtol=0(\.0)?, atol=0\.0001.*at most 2 may be"):
            k(x, y, out)
        assert bool((out == -3.0).all())                    # nothing launched
        own(x, y, torch.zeros(4, 8))                        # its decorator's tolerance wins over the global one
        pypto.set_verify_options(pass_verify_error_tol=[0.0, 1e-4], pass_verify_pass_filter=["TENSOR_GRAPH"],
                                 enable_pass_verify=False)
        out = torch.zeros(4, 8)
        k(x, y, out)                                        # the binary's stage is filtered out now
        assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "skipped")]
        torch.testing.assert_close(out, _ref(x, y), rtol=1e-3, atol=1e-3)   # launched (the real binary)
        assert k.options.verify["pass_verify_error_tol"] == (1e-3, 1e-3)   # the kernel's own options: unchanged
        assert k.cache_info()["specializations"] == 1 and own.cache_info()["specializations"] == 1
    finally:
        pypto.reset_options()
