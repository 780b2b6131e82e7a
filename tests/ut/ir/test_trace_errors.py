"""Trace-time errors: they name the kernel, the op and the user's line; IR printing."""
import re

import pytest
import torch

import pypto
from pypto.testing import DevKernel, simple_request
from pypto.errors import KernelTraceError
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import trace

T = pypto.Tensor
F32 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
F16 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16)


def _trace(fn, *args, **kw):
    params = build_params(fn.__name__, fn)
    req, _, _ = simple_request(fn.__name__, params, args, kw)
    return trace(prepare(fn, fn.__name__), req)


def _x(*shape, dtype=torch.float32):
    return torch.zeros(shape, dtype=dtype)


def test_plain_assignment_to_output_is_an_error():
    def k_rebind(a: F32, out: F32):
        out = a + 1.0  # noqa: F841

    with pytest.raises(KernelTraceError, match=r"k_rebind.*writes nothing; use out\[:\] = \.\.\. or out\.move"):
        _trace(k_rebind, _x(2, 2), _x(2, 2))


def test_rebinding_that_reads_the_param_is_legal():
    def k_ok(a: F32, out: F32):
        a = pypto.reshape(a, [4, 1])
        out[:] = pypto.reshape(a, [2, 2])
        a = a + 1.0   # a is no longer the parameter itself

    _trace(k_ok, _x(2, 2), _x(2, 2))  # traces without the rebinding error ...
    x, out = torch.randn(2, 2), torch.zeros(2, 2)
    pypto.frontend.jit(k_ok)(x, out)   # ... and computes the right thing
    torch.testing.assert_close(out, x)


def k_break(a: F32, out: F32):
    for i in pypto.loop(2):
        for j in range(2):
            if j == 1:
                break             # legal: leaves the Python loop
        out[i, :] = a[i, :]
        break                     # illegal


def test_break_reports_kernel_and_line():
    with pytest.raises(KernelTraceError) as ei:
        _trace(k_break, _x(2, 2), _x(2, 2))
    msg = str(ei.value)
    assert "k_break" in msg and "`break`" in msg
    line = k_break.__code__.co_firstlineno + 6
    assert f"test_trace_errors.py:{line}" in msg


def test_symbolic_while_is_an_error():
    # (`if` on a symbolic value is a kernel branch: tests/ut/ir/test_control_flow.py; `while` cannot be one)
    def k_while(a: pypto.Tensor([pypto.DYNAMIC, 2], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC, 2], pypto.DT_FP32)):
        while a.shape[0] > 4:
            out[:] = a

    with pytest.raises(KernelTraceError, match="pypto.cond"):
        _trace(k_while, _x(5, 2), _x(5, 2))


def test_dtype_mismatch_write():
    def k_dt(a: F32, out: F16):
        out[:] = a * 2.0

    with pytest.raises(KernelTraceError, match=r"k_dt.*setitem.*float32 into a float16.*pypto.cast"):
        _trace(k_dt, _x(2, 2), _x(2, 2, dtype=torch.float16))


def test_shape_mismatch_and_broadcast_errors():
    def k_shape(a: F32, b: F32, out: F32):
        out[:] = a + b

    with pytest.raises(KernelTraceError, match=r"k_shape.*add.*cannot be broadcast"):
        _trace(k_shape, _x(2, 3), _x(3, 3), _x(2, 3))

    def k_write(a: F32, out: F32):
        out[:] = a

    with pytest.raises(KernelTraceError, match=r"k_write.*shape mismatch"):
        _trace(k_write, _x(2, 3), _x(3, 3))


def test_rank_and_view_errors():
    def k_rank(a: F32, out: F32):
        out[:] = pypto.view(a, [2], [0])

    with pytest.raises(KernelTraceError, match=r"k_rank.*view.*one entry per dim"):
        _trace(k_rank, _x(2, 2), _x(2, 2))

    def k_oob(a: F32, out: F32):   # a view that runs past the end holds the rest; one starting past it is an error
        out[:] = pypto.view(a, [2, 2], [3, 0])

    with pytest.raises(KernelTraceError, match=r"k_oob.*view.*exceeds"):
        _trace(k_oob, _x(2, 2), _x(2, 2))

    def k_idx(a: F32, out: F32):
        out[0, :] = a[5, :]

    with pytest.raises(KernelTraceError, match=r"k_idx.*index 5 is out of range"):
        _trace(k_idx, _x(2, 2), _x(2, 2))


def test_matmul_errors():
    def k_mm(a: F32, b: F32, out: F32):
        out[:] = a @ b

    with pytest.raises(KernelTraceError, match=r"k_mm.*matmul.*inner dims differ"):
        _trace(k_mm, _x(2, 3), _x(2, 3), _x(2, 3))


def test_writing_an_op_result_makes_it_a_local_tensor():
    """The reference lets a kernel write into an op's result; the written temporary becomes a local tensor (kept
    in memory, its producer not fused away). Results against torch: tests/ut/language/test_shape_ops.py."""
    def k_rw(a: F32, out: F32):
        t = a + 1.0
        t[0, :] = 1.0
        out[:] = t

    k = _trace(k_rw, _x(2, 2), _x(2, 2))
    assert "local" in [st.kind for st in k.storages]


def test_value_escaping_its_loop_is_an_error():
    def k_esc(a: F32, out: F32):
        for i in pypto.loop(2):
            t = a[i, :] + 1.0
        out[0, :] = t

    with pytest.raises(KernelTraceError, match=r"k_esc.*inside a pypto.loop body"):
        _trace(k_esc, _x(2, 2), _x(2, 2))


def test_kernel_returning_a_value():
    def k_ret(a: F32, out: F32):
        return a + 1.0

    with pytest.raises(KernelTraceError, match="returns nothing") as e:
        _trace(k_ret, _x(2, 2), _x(2, 2))
    # the reference's contract too: a ParserError whose message says "Return statements are not allowed"
    assert isinstance(e.value, pypto.error.ParserError) and "Return statements are not allowed" in str(e.value)
    assert e.value.err_code == 0xF00002 and "k_ret" in str(e.value)


def test_tile_shape_validation():
    def k_tile(a: F32, out: F32, dims=(0,)):
        pypto.set_vec_tile_shapes(*dims)
        out[:] = a

    with pytest.raises(KernelTraceError, match="> 0"):
        _trace(k_tile, _x(2, 2), _x(2, 2), dims=(0,))
    with pytest.raises(KernelTraceError, match="1 to 4"):
        _trace(k_tile, _x(2, 2), _x(2, 2), dims=(1, 2, 3, 4, 5))

    def k_cube(a: F32, out: F32):
        pypto.set_cube_tile_shapes([16], [16, 16], [16, 16])

    with pytest.raises(KernelTraceError, match="m must be a list"):
        _trace(k_cube, _x(2, 2), _x(2, 2))


def test_ops_outside_a_kernel():
    with pytest.raises(KernelTraceError, match="inside a kernel"):
        pypto.exp(1.0)


def test_closure_values_are_read_at_trace_time():
    scale = 2.0

    def k_cl(a: F32, out: F32):
        out[:] = a * scale

    dk = DevKernel(k_cl)
    a, out = torch.ones(2, 2), torch.zeros(2, 2)
    dk(a, out)
    assert torch.equal(out, a * 2.0)
    scale = 3.0  # noqa: F841  (rebinding the cell: the next trace sees it)
    dk(a, out)
    assert torch.equal(out, a * 3.0)


def test_ir_printing():
    def k_ir(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
        n = x.shape[0]
        for i in pypto.loop(0, (n + 3) // 4, name="tile"):
            v = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[pypto.min(4, n - i * 4), 8])
            pypto.assemble(pypto.exp(v), [i * 4, 0], out)

    text = str(_trace(k_ir, _x(9, 8), _x(9, 8)))
    assert text.startswith("kernel k_ir(x: float32[?, 8] #t0, out: float32[?, 8] #t1)")
    assert "for tile in loop(0, ((x.shape[0] + 3) // 4), 1):" in text
    assert re.search(r"ew\(x@\(32\*tile\)\[min\(.*\), 8\]", text)
    assert "written: [1]" in text
