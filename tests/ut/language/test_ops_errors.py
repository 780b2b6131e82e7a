"""Trace-time errors of the ops: KernelTraceError naming the kernel, the op, the operand, what was expected and
what was given (and the user's line); outputs are untouched because nothing is launched."""
import re

import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

T = pypto.Tensor


def _f(*s):
    return torch.zeros(s)


def _i(*s):
    return torch.zeros(s, dtype=torch.int32)


def k_bcast(a: T, b: T, o: T):
    o[:] = a + b


def k_write_dtype(a: T, o: T):
    o[:] = a * 2


def k_write_shape(a: T, o: T):
    o[:] = a


def k_reduce_dim(a: T, o: T):
    o[:] = pypto.sum(a, 2)


def k_keepdim(a: T, o: T):
    o[:] = pypto.amax(a, 0, keepdim=1)


def k_mean_int(a: T, o: T):
    o[:] = pypto.mean(a, 0)


def k_matmul_inner(a: T, b: T, o: T):
    o[:] = a @ b


def k_matmul_dtype(a: T, b: T, o: T):
    o[:] = pypto.matmul(a, b)


def k_cast_dtype(a: T, o: T):
    o[:] = pypto.cast(a, "float7")


def k_not_tensor(a: T, o: T):
    o[:] = pypto.exp(3.0)


def k_where_mask(a: T, o: T):
    o[:] = pypto.where(1.0, a, a)


def k_concat(a: T, b: T, o: T):
    o[:] = pypto.concat([a, b], 0)


def k_expand(a: T, o: T):
    o[:] = pypto.expand_clone(a, [4, 3])


def k_transpose(a: T, o: T):
    o[:] = pypto.transpose(a, 0, 3)


def k_clip(a: T, o: T):
    o[:] = pypto.clip(a)


def k_abs_bool(a: T, o: T):
    o[:] = -(a > 0)


def k_local_value(a: T, o: T):
    o[:] = pypto.full([2, 3], a, pypto.DT_FP32)


def k_invert_int(a: T, o: T):
    o[:] = ~a


def k_slice(a: T, o: T):
    o[:] = a[0:2, 5]


CASES = [
    (k_bcast, (_f(3, 5), _f(4), _f(3, 5)),
     ["add", "cannot be broadcast", "dim 1: 5 vs 4", "first operand [3, 5], second operand [4]"]),
    (k_write_dtype, (_f(2, 3), _i(2, 3)),
     ["setitem", "dtype mismatch: writing float32 into a int32 tensor", "pypto.cast"]),
    (k_write_shape, (_f(2, 3), _f(3, 2)),
     ["setitem", "shape mismatch", "[2, 3]", "[3, 2]"]),
    (k_reduce_dim, (_f(2, 3), _f(2)), ["sum", "dim 2 is out of range for a tensor of rank 2"]),
    (k_keepdim, (_f(2, 3), _f(3)), ["amax", "keepdim must be a bool, got 1"]),
    (k_mean_int, (_i(2, 3), _i(3)), ["mean", "needs a float tensor, got int32"]),
    (k_matmul_inner, (_f(2, 3), _f(4, 5), _f(2, 5)), ["matmul", "inner dims differ", "[2, 3]", "[4, 5]"]),
    (k_matmul_dtype, (_f(2, 3), _i(3, 5), _f(2, 5)), ["matmul", "operand dtypes differ", "a is float32",
                                                       "b is int32"]),
    (k_cast_dtype, (_f(2, 3), _f(2, 3)), ["cast", "dtype must be a pypto dtype", "'float7'"]),
    (k_not_tensor, (_f(2, 3), _f(2, 3)), ["exp", "argument must be a pypto tensor, got float 3.0"]),
    (k_where_mask, (_f(2, 3), _f(2, 3)), ["where", "mask must be a pypto tensor, got float 1.0"]),
    (k_concat, (_f(2, 3), _f(2, 4), _f(4, 3)), ["concat", "tensor 1 has shape [2, 4], incompatible with [2, 3]"]),
    (k_expand, (_f(2, 3), _f(4, 3)), ["expand_clone", "cannot expand dim 0 of size 2 to 4"]),
    (k_transpose, (_f(2, 3), _f(3, 2)), ["transpose", "dim 3 is out of range for a tensor of rank 2"]),
    (k_clip, (_f(2, 3), _f(2, 3)), ["clip", "at least one of min/max must be given"]),
    (k_abs_bool, (_f(2, 3), _f(2, 3)), ["neg", "not supported for bool tensors"]),
    (k_local_value, (_f(2, 3), _f(2, 3)), ["full", "the fill value must be a scalar"]),
    (k_invert_int, (_i(2, 3), _i(2, 3)), ["invert", "`~x` needs a bool mask, got a int32 tensor",
                                          "pypto.logical_not"]),
    (k_slice, (_f(2, 3), _f(2)), ["getitem", "index 5 is out of range for dim 1 of size 3"]),
]


@pytest.mark.parametrize("fn,args,parts", CASES, ids=[c[0].__name__ for c in CASES])
def test_trace_error(fn, args, parts):
    k = pypto.frontend.jit(fn)
    before = [a.clone() for a in args]
    with pytest.raises(KernelTraceError) as ei:
        k(*args)
    msg = str(ei.value)
    assert f"kernel '{fn.__name__}'" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)
    assert re.search(r"\(at .*test_ops_errors\.py:\d+\)", msg), msg      # the user's line
    for a, b in zip(args, before):
        assert torch.equal(a, b)
