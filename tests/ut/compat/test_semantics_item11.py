"""Reference semantics of issue 11 item 11, each against torch: an integer tensor's element is a runtime scalar
(loop bound, offset, size, `if` condition); a slice stop past the end clamps; an op's result is writable; a tensor
bound in both branches of a kernel-level `if` is usable after it; reshape(valid_shape=) of a padded view."""
import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

from callpath._util import fails_untouched as _fails_untouched

F32, D = pypto.DT_FP32, pypto.DYNAMIC


# ---- t[i] of an integer tensor is a runtime scalar -----------------------------------------------------------

@pypto.frontend.jit
def k_counts(cnt: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([8, 16], F32), out: pypto.Tensor([8, 16], F32)):
    n = cnt[0]
    off = cnt[1]
    assert isinstance(n, pypto.SymbolicScalar)
    for i in pypto.loop(n):                               # a loop bound
        out[i:i + 1, :] = x[off + i:off + i + 1, :] * 2.0  # an offset
    if cnt[2] > 0:                                        # an `if` condition
        out[7:8, :] = x[0:1, :] + 100.0
    else:
        out[7:8, :] = x[0:1, :] - 100.0


@pytest.mark.parametrize("n,off,flag", [(3, 2, 1), (0, 0, 0), (5, 3, -4)])
def test_element_of_an_int_tensor_is_a_loop_bound_offset_and_condition(n, off, flag):
    cnt = torch.tensor([n, off, flag, 0], dtype=torch.int32)
    x, out = torch.randn(8, 16), torch.zeros(8, 16)
    k_counts(cnt, x, out)
    ref = torch.zeros(8, 16)
    ref[0:n] = x[off:off + n] * 2
    ref[7] = x[0] + 100 if flag > 0 else x[0] - 100
    assert torch.equal(out, ref)


@pypto.frontend.jit
def k_seq_lens(lens: pypto.Tensor([2, 3], pypto.DT_INT64), x: pypto.Tensor([D, 16], F32),
               out: pypto.Tensor([D, 16], F32), b: int, j: int):
    n = lens[b, j]
    rows = (n - 1).max(1)                                  # the reference's idiom on the scalar
    v = pypto.view(x, [8, 16], [0, 0], valid_shape=[rows, 16])   # a size
    out[:] = x * 0.0
    pypto.assemble(v + 1.0, [0, 0], out)


def test_two_index_element_read_gives_a_size():
    lens = torch.tensor([[0, 0, 0], [0, 0, 6]])
    x, out = torch.randn(8, 16), torch.full((8, 16), 3.0)
    k_seq_lens(lens, x, out, 1, 2)
    ref = torch.zeros(8, 16)
    ref[:5] = x[:5] + 1
    assert torch.equal(out, ref)


def test_element_read_inside_a_loop_reads_each_iteration():
    @pypto.frontend.jit
    def k_ragged(starts: pypto.Tensor([4], pypto.DT_INT64), x: pypto.Tensor([4, 8], F32),
                 out: pypto.Tensor([4, 8], F32)):
        out[:] = x * 0.0
        for r in pypto.loop(4):
            s = starts[r]
            out[r:r + 1, s:8] = x[r:r + 1, s:8]

    starts = torch.tensor([0, 3, 8, 5])
    x, out = torch.randn(4, 8), torch.zeros(4, 8)
    k_ragged(starts, x, out)
    ref = torch.zeros(4, 8)
    for r, s in enumerate(starts.tolist()):
        ref[r, s:] = x[r, s:]
    assert torch.equal(out, ref)


def test_element_read_out_of_range_fails_and_writes_nothing():
    @pypto.frontend.jit
    def k_oob(cnt: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([8, 16], F32), out: pypto.Tensor([8, 16], F32),
              i: int):
        n = cnt[i]
        out[:] = x * 0.0
        out[0:n, :] = x[0:n, :]

    out = torch.full((8, 16), 4.0)
    _fails_untouched(KernelTraceError, lambda: k_oob(torch.ones(4, dtype=torch.int32), torch.ones(8, 16), out, 4),
                     out, "kernel 'k_oob'", "getitem")


def test_element_of_a_float_tensor_stays_a_tensor():
    @pypto.frontend.jit
    def k_float_elem(x: pypto.Tensor([4], F32), out: pypto.Tensor([4], F32)):
        out[:] = x * x[2]

    x, out = torch.randn(4), torch.zeros(4)
    k_float_elem(x, out)
    assert torch.equal(out, x * x[2])


# ---- slice stops past the end clamp ------------------------------------------------------------------------------

@pypto.frontend.jit
def k_blocks(x: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 3) // 4):
        out[i * 4:(i + 1) * 4, :] = x[i * 4:(i + 1) * 4, :] * 3.0


@pytest.mark.parametrize("n", [4, 6, 9])
def test_symbolic_slice_stop_past_the_end_clamps(n):
    x, out = torch.randn(n, 16), torch.zeros(n, 16)
    k_blocks(x, out)
    assert torch.equal(out, x * 3)


def test_static_slice_stop_past_the_end_clamps():
    @pypto.frontend.jit
    def k_tail(x: pypto.Tensor([6, 16], F32), out: pypto.Tensor([2, 16], F32)):
        out[:] = x[4:100, :] * 3.0

    x, out = torch.randn(6, 16), torch.zeros(2, 16)
    k_tail(x, out)
    assert torch.equal(out, x[4:100] * 3)


def test_a_symbolic_stop_outside_a_loop_is_still_checked():
    @pypto.frontend.jit
    def k_bad_start(x: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
        n = x.shape[0]
        out[:] = x * 1.0
        out[0:1, :] = x[n + 1:n + 2, :]

    out = torch.full((3, 16), 2.0)
    _fails_untouched(KernelTraceError, lambda: k_bad_start(torch.ones(3, 16), out), out,
                     "kernel 'k_bad_start'", "getitem: slice stop (x.shape[0] + 2) exceeds dim 0 of size "
                                             "x.shape[0]")


# ---- an op's result is writable -----------------------------------------------------------------------------------

@pypto.frontend.jit
def k_write_result(a: pypto.Tensor([4, 16], F32), b: pypto.Tensor([4, 16], F32), out: pypto.Tensor([4, 16], F32)):
    t = pypto.add(a, b)
    t[1:2, :] = a[1:2, :] * 0.0
    t[:, 0:2] = 5.0
    out[:] = t * 2.0


def test_op_result_is_writable():
    a, b, out = torch.randn(4, 16), torch.randn(4, 16), torch.zeros(4, 16)
    k_write_result(a, b, out)
    ref = a + b
    ref[1] = 0
    ref[:, 0:2] = 5
    assert torch.equal(out, ref * 2)


def test_writing_an_op_result_leaves_its_operands_alone():
    @pypto.frontend.jit
    def k_keep(a: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 8], F32), out2: pypto.Tensor([4, 8], F32)):
        t = pypto.exp(a)
        u = t + 1.0
        t[:] = 0.0
        out[:] = u
        out2[:] = t + a

    a, out, out2 = torch.randn(4, 8), torch.zeros(4, 8), torch.zeros(4, 8)
    k_keep(a, out, out2)
    torch.testing.assert_close(out, torch.exp(a) + 1, rtol=1e-6, atol=1e-6)
    assert torch.equal(out2, a)


# ---- a tensor bound in both branches of a kernel-level `if` -----------------------------------------------------

@pypto.frontend.jit
def k_branches(a: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
    if a.shape[0] > 4:
        t = a * 2.0
    else:
        t = a + 1.0
    out[:] = t - 3.0


@pytest.mark.parametrize("n", [3, 4, 6])
def test_tensor_bound_in_both_branches_is_usable_after_the_if(n):
    a, out = torch.randn(n, 16), torch.zeros(n, 16)
    k_branches(a, out)
    assert torch.equal(out, (a * 2 if n > 4 else a + 1) - 3)


def test_both_branches_inside_a_loop_on_element_reads():
    @pypto.frontend.jit
    def k_loop_branch(flags: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([4, 8], F32),
                      out: pypto.Tensor([4, 8], F32)):
        for r in pypto.loop(4):
            row = x[r:r + 1, :]
            if flags[r] != 0:
                y = pypto.exp(row)
            else:
                y = pypto.neg(row)
            out[r:r + 1, :] = y

    flags = torch.tensor([1, 0, 0, 1], dtype=torch.int32)
    x, out = torch.randn(4, 8), torch.zeros(4, 8)
    k_loop_branch(flags, x, out)
    ref = torch.where(flags[:, None] != 0, torch.exp(x), -x)
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)   # exp: within an ulp of torch


def test_branches_must_agree_on_dtype_and_shape():
    @pypto.frontend.jit
    def k_dtypes(a: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
        if a.shape[0] > 4:
            t = a * 2.0
        else:
            t = pypto.cast(a, pypto.DT_FP16)
        out[:] = t

    @pypto.frontend.jit
    def k_shapes(a: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
        if a.shape[0] > 4:
            t = a[:, 0:8]
        else:
            t = a
        out[:] = t

    out = torch.full((3, 16), 1.0)
    _fails_untouched(KernelTraceError, lambda: k_dtypes(torch.ones(3, 16), out), out, "kernel 'k_dtypes'",
                     "`t` is a float32 tensor in one branch", "float16 tensor in the other")
    _fails_untouched(KernelTraceError, lambda: k_shapes(torch.ones(3, 16), out), out, "kernel 'k_shapes'",
                     "`t` has shape", "must give it the same shape")


# ---- reshape(valid_shape=) of a padded view ------------------------------------------------------------------------

@pypto.frontend.jit
def k_reshape_valid(a: pypto.Tensor([D, 8], F32), out: pypto.Tensor([D, 2, 4], F32)):
    n = a.shape[0]
    v = pypto.view(a, [16, 8], [0, 0], valid_shape=[n, 8])
    r = pypto.reshape(v, [16, 2, 4], valid_shape=[n, 2, 4])
    out[:] = r * 1.0


@pytest.mark.parametrize("n", [1, 5, 16])
def test_reshape_with_valid_shape_reshapes_the_valid_data(n):
    a, out = torch.randn(n, 8), torch.zeros(n, 2, 4)
    k_reshape_valid(a, out)
    assert torch.equal(out, a.reshape(n, 2, 4))


# ---- the verify interpreter runs the same semantics ---------------------------------------------------------------

def _verified_body(cnt: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([D, 8], F32), idx: pypto.Tensor([D, 3],
                   pypto.DT_INT64), out: pypto.Tensor([D, 8], F32)):
    n = x.shape[0]
    t = pypto.scatter(x, 1, idx, x[:, 0:3], reduce="add")
    t[0:1, :] = 0.0                                       # an op result written
    if cnt[0] > 1:                                        # an element read as a condition
        y = t * 2.0
    else:
        y = t - 1.0                                       # merged after the if
    for i in pypto.loop(0, (n + 2) // 3):
        out[i * 3:(i + 1) * 3, :] = y[i * 3:(i + 1) * 3, :]   # the last block clamps


@pytest.mark.parametrize("flag,n", [(2, 7), (0, 6)])
def test_the_verify_interpreter_agrees(flag, n):
    k = pypto.frontend.jit(_verified_body, verify_options={"enable_pass_verify": True})
    g = torch.Generator().manual_seed(n)
    cnt, x = torch.tensor([flag, 0, 0, 0], dtype=torch.int32), torch.randn(n, 8, generator=g)
    idx = torch.randint(0, 8, (n, 3), generator=g)
    out = torch.zeros(n, 8)
    k(cnt, x, idx, out)
    t = x.scatter_reduce(1, idx, x[:, 0:3], "sum", include_self=True)
    t[0] = 0
    assert torch.equal(out, t * 2 if flag > 1 else t - 1)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
