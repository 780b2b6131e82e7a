"""Rules the reference's own test suite pins down (docs/compat.md, "the rules"): `pypto.full(size=, fill_value=)`
and the phrases of the reference's argument errors ("does not match the dtype / shape / number of dimensions").
Kernels against torch; errors with message and untouched outputs."""
import torch

import pypto
from pypto.errors import KernelTraceError

from callpath._util import fails_untouched, rand, sentinel

D = pypto.DYNAMIC
F32 = pypto.DT_FP32


# ---- pypto.full: the reference's keywords ------------------------------------------------------------------------


@pypto.frontend.jit
def full_keywords(x: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 8], F32), out2: pypto.Tensor([4, 8], F32)):
    out[:] = x + pypto.full(size=[4, 8], fill_value=1.5, dtype=F32)
    out2[:] = x * pypto.full([4, 8], fill_value=2.0, dtype=F32, valid_shape=[4, 8])


def test_full_takes_the_references_keywords():
    x = rand(4, 8, seed=1)
    out, out2 = sentinel(4, 8), sentinel(4, 8)
    full_keywords(x, out, out2)
    torch.testing.assert_close(out, x + 1.5)
    torch.testing.assert_close(out2, x * 2.0)


def test_full_size_given_twice_is_refused():
    @pypto.frontend.jit
    def full_twice(x: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 8], F32)):
        out[:] = x + pypto.full([4, 8], 1.0, F32, shape=[4, 8])

    out = sentinel(4, 8)
    fails_untouched(KernelTraceError, lambda: full_twice(rand(4, 8), out), out, "full_twice", "size", "shape",
                    "exactly once", "both")


# ---- the reference's phrases in argument errors -----------------------------------------------------------------


def test_dtype_and_shape_errors_carry_the_references_phrases():
    @pypto.frontend.jit
    def phrases(a: pypto.Tensor([pypto.STATIC, 32], pypto.DT_INT32), out: pypto.Tensor([4, 32], pypto.DT_INT32)):
        out[:] = a + 1

    out = sentinel(4, 32, dtype=torch.int32)
    fails_untouched(TypeError, lambda: phrases(torch.ones(4, 32), out), out, "kernel 'phrases'", "parameter 'a'",
                    "expected dtype int32", "got float32", "does not match the dtype")
    fails_untouched(ValueError, lambda: phrases(torch.ones(4, 31, dtype=torch.int32), out), out, "kernel 'phrases'",
                    "parameter 'a'", "dimension 1 must be 32", "got 31", "does not match the shape")
    fails_untouched(ValueError, lambda: phrases(torch.ones(4, 32, 1, dtype=torch.int32), out), out,
                    "kernel 'phrases'", "parameter 'a'", "expected 2 dimensions", "got 3",
                    "does not match the number of dimensions")


# ---- int64 written into an int32 tensor is cast -----------------------------------------------------------------


@pypto.frontend.jit
def topk_index_int32(x: pypto.Tensor([4, 16], F32), idx: pypto.Tensor([4, 3], pypto.DT_INT32)):
    _, i = pypto.topk(x, 3, -1, True)   # int64 indices, as torch's
    idx[:] = i


def test_int64_written_into_int32_is_cast():
    x = rand(4, 16, seed=5)
    idx = sentinel(4, 3, dtype=torch.int32)
    topk_index_int32(x, idx)
    assert torch.equal(idx, torch.topk(x, 3, -1, True).indices.to(torch.int32))


def test_other_dtype_mismatches_in_a_write_are_refused():
    @pypto.frontend.jit
    def write_f32_into_i32(x: pypto.Tensor([4, 16], F32), out: pypto.Tensor([4, 16], pypto.DT_INT32)):
        out[:] = x

    out = sentinel(4, 16, dtype=torch.int32)
    fails_untouched(KernelTraceError, lambda: write_f32_into_i32(rand(4, 16), out), out, "write_f32_into_i32",
                    "dtype mismatch", "writing float32 into a int32 tensor")
