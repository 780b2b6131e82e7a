"""`pypto.experimental`: the reference's custom operations (docs/zh/api/operation/pypto-experimental-*.md).

Each is composed from the exact ops of this package, following the reference's formulas, so it needs no code of
its own in codegen or the verify interpreter. The NPU-only constraints (vector tile rows >= scores rows, 32-byte
alignment) are not needed by the simulator and are not checked; the operands' dtypes and shapes are.
"""
from __future__ import annotations

import threading

from ..ir.builder import active
from . import elementwise as E
from . import indexing as I
from . import reduce as R
from . import shape_ops as SO
from ._helpers import DT, check_tensor, current, fmt_shape
from .distributed import nop, shmem_load, shmem_store  # the reference's experimental shmem ops

__all__ = ["online_softmax", "online_softmax_update", "transposed_batchmatmul", "gather_in_l1", "gather_in_ub",
           "set_operation_options", "get_operation_options", "shmem_load", "shmem_store", "nop"]


def _check(x, op: str, what: str, dtypes, rank: int = 2):
    b = current(op)
    x = check_tensor(x, op, what)
    if x.dtype not in dtypes:
        raise b.error(op, f"{what} must have dtype {' or '.join(d.short for d in dtypes)}, got {x.dtype.short}")
    if len(x.shape) != rank:
        raise b.error(op, f"{what} must be rank {rank}, got shape {fmt_shape(x.shape)}")
    return x


def online_softmax(scores, scale):
    """One block of an online (flash-attention) softmax over dim 0 of `scores` [k_len, q_len] (FP32):
    s = scores * scale; column_max = max of s over dim 0 ([1, q_len]); e = exp(s - column_max);
    returns (e as BF16, column_max, column_sum = sum of e over dim 0 in FP32). The BF16 conversion rounds to
    nearest even (the NPU rounds ties away from zero: a difference only on exact ties)."""
    op = "online_softmax"
    scores = _check(scores, op, "scores", (DT.DT_FP32,))
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise current(op).error(op, f"scale must be a float, got {scale!r}")
    s = E.mul(scores, float(scale))
    cmax = R.amax(s, 0, keepdim=True)
    e = E.exp(E.sub(s, cmax))
    return E.cast(e, DT.DT_BF16), cmax, R.sum(e, 0, keepdim=True)


def online_softmax_update(previous_max, previous_sum, previous_output, current_max, current_sum, current_output):
    """Merge a block's softmax state into the running one (all FP32; max/sum [1, q_len], outputs
    [head_dim, q_len]): m = max(previous_max, current_max); p = exp(previous_max - m); c = exp(current_max - m);
    returns (m, p * previous_sum + c * current_sum, previous_output * p + current_output * c)."""
    op = "online_softmax_update"
    b = current(op)
    f32 = (DT.DT_FP32,)
    pm, ps, po = (_check(x, op, n, f32) for x, n in ((previous_max, "previous_max"), (previous_sum, "previous_sum"),
                                                     (previous_output, "previous_output")))
    cm, cs, co = (_check(x, op, n, f32) for x, n in ((current_max, "current_max"), (current_sum, "current_sum"),
                                                     (current_output, "current_output")))
    if tuple(map(str, po.shape)) != tuple(map(str, co.shape)):
        raise b.error(op, f"current_output must have the shape of previous_output {fmt_shape(po.shape)}, got "
                          f"{fmt_shape(co.shape)}")
    m = E.maximum(pm, cm)
    p = E.exp(E.sub(pm, m))
    c = E.exp(E.sub(cm, m))
    total = E.add(E.mul(p, ps), E.mul(c, cs))
    out = E.add(E.mul(po, p), E.mul(co, c))
    return m, total, out


def transposed_batchmatmul(tensor_a, tensor_b, out_dtype):
    """a [M, B, K] and b [B, K, N] (FP16/BF16) -> [M, B, N]: the batched product of a's [B, M, K] transpose and b,
    transposed back (accumulated in FP32, converted to out_dtype FP16/BF16)."""
    op = "transposed_batchmatmul"
    b = current(op)
    half = (DT.DT_FP16, DT.DT_BF16)
    a = _check(tensor_a, op, "tensor_a", half, 3)
    bb = _check(tensor_b, op, "tensor_b", half, 3)
    if out_dtype not in half:
        raise b.error(op, f"out_dtype must be DT_FP16 or DT_BF16, got {out_dtype!r}")
    r = R.matmul(SO.permute(a, [1, 0, 2]), bb, out_dtype)
    return SO.permute(r, [1, 0, 2])


def _paged_rows(op, indices, block_table, block_size):
    """The physical rows of the logical token ids `indices` [1, n] through the page table [1, blocks]:
    block_table[0, id // block_size] * block_size + id % block_size, as a [n, 1] INT64 tensor."""
    b = current(op)
    idx = _check(indices, op, "indices", (DT.DT_INT32, DT.DT_INT64))
    table = _check(block_table, op, "block_table", (DT.DT_INT32,))
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size <= 0:
        raise b.error(op, f"block_size must be a static int > 0, got {block_size!r}")
    if idx.shape[0] != 1 or table.shape[0] != 1:
        raise b.error(op, f"indices and block_table must have shape [1, n], got {fmt_shape(idx.shape)} and "
                          f"{fmt_shape(table.shape)}")
    idx = E.cast(idx, DT.DT_INT64)
    phys = E.cast(I.gather(table, 1, E.floor_divide(idx, block_size)), DT.DT_INT64)
    rows = E.add(E.mul(phys, block_size), E.remainder(idx, block_size))
    return SO.transpose(rows, 0, 1)


def _gather_rows(op, src, rows, ncols):
    n = rows.shape[0]
    index = SO.expand_clone(rows, [n, ncols])
    part = SO.view(src, [src.shape[0], ncols], [0, 0]) if ncols != src.shape[1] else src
    return I.gather(part, 0, index)


def gather_in_ub(param, indices, block_table, block_size, axis):
    """Paged-attention gather of selected tokens: out[i, :] = param[block_table[0, t // block_size] * block_size
    + t % block_size, :] for t = indices[0, i]; param [tokens, hidden] (FP32/FP16), indices and block_table
    [1, n] INT32; axis must be -2. A row outside param fails the kernel (KernelRuntimeError)."""
    op = "gather_in_ub"
    p = _check(param, op, "param", (DT.DT_FP32, DT.DT_FP16))
    if axis != -2 or isinstance(axis, bool):
        raise current(op).error(op, f"axis must be -2, got {axis!r}")
    if indices is not None and getattr(indices, "dtype", None) == DT.DT_INT64:
        raise current(op).error(op, "indices must have dtype INT32, got INT64")
    return _gather_rows(op, p, _paged_rows(op, indices, block_table, block_size), p.shape[1])


def gather_in_l1(src, indices, block_table, block_size, size, is_b_matrix, is_trans):
    """As gather_in_ub, taking the first `size` columns of each selected row: out [n, size]; src FP32/FP16/BF16/
    INT8, indices INT32/INT64. `is_b_matrix` and `is_trans` say how the NPU lays the tile out in L1 for a matmul;
    the values are the same, so here they are validated bools with no effect."""
    op = "gather_in_l1"
    b = current(op)
    s = _check(src, op, "src", (DT.DT_FP32, DT.DT_FP16, DT.DT_BF16, DT.DT_INT8))
    for name, v in (("is_b_matrix", is_b_matrix), ("is_trans", is_trans)):
        if not isinstance(v, bool):
            raise b.error(op, f"{name} must be a bool, got {v!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0 or (
            isinstance(s.shape[1], int) and size > s.shape[1]):
        raise b.error(op, f"size must be a static int in [1, {s.shape[1]}] (the columns of src), got {size!r}")
    return _gather_rows(op, s, _paged_rows(op, indices, block_table, block_size), size)


# ---- operation options --------------------------------------------------------------------------------------
_OPTION_TYPES = {"combine_axis": bool}
_DEFAULTS = {"combine_axis": False}
_outside = threading.local()    # values set outside a kernel (this thread)


def _store():
    b = active()
    if b is not None:
        if not hasattr(b, "operation_options"):
            b.operation_options = dict(getattr(_outside, "values", _DEFAULTS))
        return b.operation_options
    if not hasattr(_outside, "values"):
        _outside.values = dict(_DEFAULTS)
    return _outside.values


def set_operation_options(*, combine_axis=None):
    """`combine_axis` (bool): the NPU code generator broadcasts a contiguous [n, 1] operand inline. Validated and
    readable back with get_operation_options(); inside a kernel it holds for the rest of that trace. The generated
    C++ here broadcasts without copies either way, so it has no effect on the simulator."""
    given = {"combine_axis": combine_axis}
    store = _store()
    for k, v in given.items():
        if v is None:
            continue
        if not isinstance(v, _OPTION_TYPES[k]):
            msg = f"set_operation_options: {k} must be a {_OPTION_TYPES[k].__name__}, got {v!r}"
            b = active()
            raise b.error("set_operation_options", msg.partition(": ")[2]) if b is not None else TypeError(msg)
        store[k] = v


def get_operation_options() -> dict:
    """The operation options in effect: {'combine_axis': bool}."""
    return dict(_store())
