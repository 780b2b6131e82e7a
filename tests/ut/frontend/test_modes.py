"""Modes: verify_options (every stage against golden data), debug_options (IR / C++ dumps,
runtime_debug_mode=4 bounds checks) and host_options.compile_stage (stop without launching)."""
import ctypes
import os
import re

import pytest
import torch

import pypto
from pypto.codegen import generate
from pypto.compiler import compile_source
from pypto.verify import check as verify_check
from pypto.testing import simple_request
from pypto.verify import StageReport
from pypto.errors import KernelRuntimeError
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import Check, trace

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

    def off_by(library, tensors, scalars=(), num_threads=1, debug_mode=0):
        real(library, tensors, scalars, num_threads, debug_mode)
        tensors[2][0, 0] += 5e-4
    monkeypatch.setattr(verify_check, "launch", off_by)
    x, y = _rand(4, 8, seed=7), _rand(4, 8, seed=8)
    loose = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                      "pass_verify_error_tol": [0.0, 1e-3]})
    loose(x, y, torch.zeros(4, 8))                          # 5e-4 < atol
    tight = pypto.frontend.jit(_body, verify_options={"enable_pass_verify": True,
                                                      "pass_verify_error_tol": [0.0, 1e-4]})
    with pytest.raises(KernelRuntimeError, match=r"stage CODEGEN_BINARY: .*worst at index \[0, 0\]"):
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
# debug_options: dumps
# ---------------------------------------------------------------------------------------------------------------

def test_debug_dump_writes_ir_and_cpp(tmp_path):
    k = pypto.frontend.jit(_body, debug_options={"compile_debug_mode": 1, "dump_dir": str(tmp_path / "dump")})
    x, y = _rand(3, 8), _rand(3, 8)
    out = torch.zeros(3, 8)
    k(x, y, out)
    torch.testing.assert_close(out, _ref(x, y), rtol=1e-5, atol=1e-5)
    files = sorted(os.listdir(tmp_path / "dump"))
    ir = [f for f in files if f.startswith("_body_") and f.endswith(".ir.txt")]
    cpp = [f for f in files if f.startswith("_body_") and f.endswith(".cpp")]
    assert len(ir) == 1 and len(cpp) == 1
    ir_text = (tmp_path / "dump" / ir[0]).read_text()
    assert ir_text.startswith("kernel _body(x: float32[?, 8] #t0, y: float32[?, 8] #t1, out: float32[?, 8] #t2)")
    assert "unrolled loop(0, x.shape[0], 1):" in ir_text and "ew(" in ir_text
    src = (tmp_path / "dump" / cpp[0]).read_text()
    assert "int pypto_entry(" in src and "pypto_rt::exp_(" in src


def test_no_dump_without_debug_mode(tmp_path):
    k = pypto.frontend.jit(_body, debug_options={"dump_dir": str(tmp_path / "d")})
    k(_rand(2, 8), _rand(2, 8), torch.zeros(2, 8))
    assert not (tmp_path / "d").exists()


# ---------------------------------------------------------------------------------------------------------------
# host_options.compile_stage
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage,has_source,has_library", [
    (pypto.CompileStage.TENSOR_GRAPH, False, False), (pypto.CompileStage.TILE_GRAPH, False, False),
    (pypto.CompileStage.EXECUTE_GRAPH, False, False), (pypto.CompileStage.CODEGEN_INSTRUCTION, True, False),
    (pypto.CompileStage.CODEGEN_BINARY, True, True)])
def test_compile_stage_stops_without_launching(tmp_path, stage, has_source, has_library):
    k = pypto.frontend.jit(_body, host_options={"compile_stage": stage},
                           debug_options={"compile_debug_mode": 1, "dump_dir": str(tmp_path)})
    out = torch.full((3, 8), 7.0)
    assert k(_rand(3, 8), _rand(3, 8), out) is None
    assert bool((out == 7.0).all())                       # nothing launched
    st = k.last_stage
    assert st.stage == stage.name and st.ir_text.startswith("kernel _body(")
    assert (st.source is not None) == has_source and (st.library is not None) == has_library
    if has_library:
        assert os.path.isfile(st.library) and ctypes.CDLL(st.library).pypto_entry
    files = os.listdir(tmp_path)
    tag = os.path.basename(st.library).split(".")[0] if has_library else stage.name
    assert f"_body_{tag}.ir.txt" in files
    assert (f"_body_{tag}.cpp" in files) == has_source and len(files) == 1 + has_source


# ---------------------------------------------------------------------------------------------------------------
# runtime_debug_mode=4: bounds checks
# ---------------------------------------------------------------------------------------------------------------

def _source(fn, args, mode, strip_checks=False):
    params = build_params(fn.__name__, fn)
    req, _, _ = simple_request(fn.__name__, params, args, {}, {"debug_options": {"runtime_debug_mode": mode}})
    k = trace(prepare(fn, fn.__name__), req)
    if strip_checks:          # simulate an access the tracer did not guard (e.g. a bug in an op's checks)
        def strip(block):
            block.stmts = [s for s in block.stmts if not isinstance(s, Check)]
            for s in block.stmts:
                for attr in ("body", "then", "orelse"):
                    if hasattr(s, attr):
                        strip(getattr(s, attr))
        strip(k.body)
    return generate(k)


def k_oob(x: D8, out: D8):
    out[0:6, :] = x[0:6, :] * 2.0


def test_debug_mode_4_stops_an_out_of_bounds_write_before_it_happens():
    x = _rand(6, 8)
    buf = torch.full((9, 8), -7.0)          # `out` is the first 4 rows; rows 4.. are someone else's memory
    out = buf[:4]
    args = (x, torch.zeros(4, 8))
    # without the bounds checks (and with the tracer's own checks removed) the write runs past `out`
    plain = compile_source(_source(k_oob, args, 0, strip_checks=True), None, "k_oob")[0]
    verify_check.launch(plain, [x, out])
    assert torch.equal(buf[4:6], x[4:6] * 2.0)             # memory after the tensor was overwritten
    # with runtime_debug_mode=4 the same kernel fails first, naming kernel, tensor, element index and shape
    buf.fill_(-7.0)
    src = _source(k_oob, args, 4, strip_checks=True)
    assert "pypto_rt::check_view(ctx" in src
    lib = compile_source(src, None, "k_oob")[0]
    with pytest.raises(KernelRuntimeError) as ei:
        verify_check.launch(lib, [x, out], debug_mode=4)
    msg = str(ei.value)
    assert msg.startswith("kernel 'k_oob': runtime_debug_mode=4: ")
    assert "out-of-bounds access of tensor 'out': element index [5, 7] (flat 47) is outside the tensor of " \
           "shape [4, 8] (32 elements)" in msg
    assert bool((buf == -7.0).all())                        # nothing written: not `out`, not past it


@pypto.frontend.jit(debug_options={"runtime_debug_mode": 4})
def k_checked(x: pypto.Tensor([pypto.DYNAMIC, 16], F32), out: pypto.Tensor([pypto.DYNAMIC, 16], F32),
              rows: pypto.Scalar[pypto.DT_INT32]):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 3) // 4):
        v = pypto.view(x, [4, 16], [i * 4, 0], valid_shape=[pypto.min(4, n - i * 4), 16])
        pypto.assemble(pypto.exp(v) + pypto.amax(v, 1, keepdim=True), [i * 4, 0], out)
    out[0:rows, :] = out[0:rows, :] * 2.0


@pypto.frontend.jit
def k_unchecked(x: pypto.Tensor([pypto.DYNAMIC, 16], F32), out: pypto.Tensor([pypto.DYNAMIC, 16], F32),
                rows: pypto.Scalar[pypto.DT_INT32]):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 3) // 4):
        v = pypto.view(x, [4, 16], [i * 4, 0], valid_shape=[pypto.min(4, n - i * 4), 16])
        pypto.assemble(pypto.exp(v) + pypto.amax(v, 1, keepdim=True), [i * 4, 0], out)
    out[0:rows, :] = out[0:rows, :] * 2.0


@pytest.mark.parametrize("n", [1, 4, 10])
def test_debug_mode_4_same_results(n):
    x = _rand(n, 16, seed=n)
    o4, o0 = torch.zeros(n, 16), torch.zeros(n, 16)
    k_checked(x, o4, n // 2)
    k_unchecked(x, o0, n // 2)
    assert torch.equal(o4, o0)
    ref = torch.exp(x) + x.amax(1, keepdim=True)
    ref[: n // 2] *= 2.0
    torch.testing.assert_close(o4, ref, rtol=1e-6, atol=1e-6)


def test_debug_mode_4_public_api_error():
    x = _rand(5, 16)
    out = torch.full((5, 16), 3.0)
    with pytest.raises(KernelRuntimeError) as ei:
        k_checked(x, out, 9)                                   # rows 0:9 of a 5-row tensor
    msg = str(ei.value)
    assert "kernel 'k_checked'" in msg and "exceeds dim 0 of size out.shape[0]" in msg
    # the loop ran (it is in bounds), the failing statement did not: rows hold exp(x) + amax, not doubled
    torch.testing.assert_close(out, torch.exp(x) + x.amax(1, keepdim=True), rtol=1e-6, atol=1e-6)


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
