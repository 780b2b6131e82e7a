"""Modes: debug_options (IR / C++ dumps, runtime_debug_mode=4 bounds checks) and host_options.compile_stage
(stop without launching). verify_options: tests/ut/verify."""
import ctypes
import os

import pytest
import torch

import pypto
from pypto.codegen import generate
from pypto.compiler import compile_source
from pypto.verify import check as verify_check
from pypto.testing import simple_request
from pypto.errors import KernelRuntimeError
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import Check, trace

F32 = pypto.DT_FP32
D8 = pypto.Tensor([pypto.DYNAMIC, 8], F32)


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))




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
