"""Data-dependent indexing: gather, scatter_update (also named scatter, as in the reference), topk (torch semantics,
see docs/language.md).

All three compute on the logical (valid) region of their operands. Index tensors may have any integer dtype;
an index value outside [0, size) of the indexed dim makes the kernel fail with KernelRuntimeError (nothing
is written to the outputs: the op's result is a fresh temporary that is only copied out after it is
complete). Negative index values are out of range (as in torch.gather / torch.scatter).
"""
from __future__ import annotations

from ..ir.infer import compute_dtype, norm_dim
from ._helpers import DT, S, Value, check_operand, check_tensor, current, fmt_shape

_INDEX_DTYPES = (DT.DT_INT8, DT.DT_UINT8, DT.DT_INT16, DT.DT_INT32, DT.DT_INT64)


def _check_index(t: Value, index, op: str, what: str = "index") -> Value:
    b = current(op)
    index = check_tensor(index, op, what)
    if index.dtype not in _INDEX_DTYPES:
        raise b.error(op, f"{what} must be an integer tensor (int8/uint8/int16/int32/int64), got "
                          f"{index.dtype.short}")
    if len(index.shape) != len(t.shape):
        raise b.error(op, f"{what} must have the rank of the input ({len(t.shape)}), got shape "
                          f"{fmt_shape(index.shape)} for input shape {fmt_shape(t.shape)}")
    return index


def _check_le(small: Value, big: Value, axes, op: str, small_name: str, big_name: str):
    """small.shape[ax] <= big.shape[ax] for ax in axes (static: now; symbolic: a run-time check)."""
    b = current(op)
    for ax in axes:
        s, g = small.shape[ax], big.shape[ax]
        if isinstance(s, int) and isinstance(g, int):
            if s > g:
                raise b.error(op, f"{small_name} shape {fmt_shape(small.shape)} exceeds {big_name} shape "
                                  f"{fmt_shape(big.shape)} in dim {ax} ({s} > {g})")
        else:
            b.check(S.compare("<=", s, g), f"{small_name} dim {ax} ({S.to_text(s)}) exceeds {big_name} dim "
                                           f"{ax} ({S.to_text(g)})", op)


def _operands(t, dim, index, op: str):
    """The checks gather and scatter_update share: input tensor of rank >= 1, dim, index (integer, same rank,
    index.shape[d] <= t.shape[d] for d != dim). Returns (builder, t, normalized dim, index)."""
    b = current(op)
    t = check_tensor(t, op, "input")
    if len(t.shape) == 0:
        raise b.error(op, "the input must have rank >= 1, got a rank-0 tensor")
    d = norm_dim(dim, len(t.shape), lambda m: b.error(op, m))
    index = _check_index(t, index, op)
    _check_le(index, t, [ax for ax in range(len(t.shape)) if ax != d], op, "index", "input")
    return b, t, d, index


def _range_msg(b, op: str, what: str, d: int, t: Value) -> str:
    return (f"kernel '{b.kernel_name}': {op}: a value of {what} is out of range for dim {d} of the input "
            f"(expected 0 <= index < {S.to_text(t.shape[d])})")


def gather(t, dim, index):
    """torch.gather: out[p] = t[p with p[dim] replaced by index[p]] for every position p of `index`.

    `index` is an integer tensor of t's rank with index.shape[d] <= t.shape[d] for d != dim; the result has
    index's shape and t's dtype. Index values must lie in [0, t.shape[dim]) (checked when the kernel runs)."""
    op = "gather"
    b, t, d, index = _operands(t, dim, index, op)
    out = b.new_temp(t.dtype, index.shape, index.cap)
    return b.op("gather", out, [t, index], dim=d, msg=_range_msg(b, op, "index", d, t))


def scatter_update(t, dim, index, src):
    """torch.scatter (out of place): a copy of `t` in which, for every position p of `index`,
    out[p with p[dim] replaced by index[p]] = src[p].

    `src` is a tensor of t's dtype and rank with index.shape[d] <= src.shape[d] for every d (only the
    leading index-shaped part of src is used), or a scalar. index.shape[d] <= t.shape[d] for d != dim.
    When several positions write the same element, the last one in row-major order of `index` wins
    (torch leaves this undefined). To update `t` itself write `t[:] = pypto.scatter_update(t, ...)`."""
    return _scatter(t, dim, index, src, "scatter_update")


def scatter(t, dim, index, src, *, reduce=None):
    """torch.scatter(t, dim, index, src, reduce=...) out of place: the reference's name for scatter_update (same
    rules). `reduce`: None (write), 'add' or 'multiply' (combine each src value into the element, in index order,
    as torch.scatter(..., reduce=) does), or a pypto.ScatterMode (NONE, ADD, MULTIPLY)."""
    return _scatter(t, dim, index, src, "scatter", reduce)


_REDUCE = {None: None, "add": "add", "multiply": "mul"}


def _reduce_of(reduce, op: str):
    from ..vocab.enums import ScatterMode
    if isinstance(reduce, ScatterMode):
        return {ScatterMode.NONE: None, ScatterMode.ADD: "add", ScatterMode.MULTIPLY: "mul"}[reduce]
    if isinstance(reduce, str) and reduce in _REDUCE or reduce is None:
        return _REDUCE[reduce]
    raise current(op).error(op, f"reduce must be None, 'add', 'multiply' or a pypto.ScatterMode, got {reduce!r}")


def _scatter(t, dim, index, src, op: str, reduce=None):
    red = _reduce_of(reduce, op)
    b, t, d, index = _operands(t, dim, index, op)
    if red is not None and t.dtype == DT.DT_BOOL:
        raise b.error(op, f"reduce={reduce!r} is not supported for bool tensors")
    src = check_operand(src, op, "src")
    if isinstance(src, Value):
        if src.dtype != t.dtype:
            raise b.error(op, f"src dtype must equal the input dtype {t.dtype.short}, got {src.dtype.short}; "
                              f"convert with pypto.cast")
        if len(src.shape) != len(t.shape):
            raise b.error(op, f"src must have the rank of the input ({len(t.shape)}), got shape "
                              f"{fmt_shape(src.shape)}")
        _check_le(index, src, range(len(t.shape)), op, "index", "src")
    elif isinstance(src, S.Sym) and src.kind == S.BOOL:
        raise b.error(op, f"src must be a tensor or a number, got {src!r}")
    out = b.new_temp(t.dtype, t.shape, t.cap)
    return b.op("scatter", out, [t, index, src], dim=d, msg=_range_msg(b, op, "index", d, t), reduce=red,
                ct=compute_dtype(t.dtype))


def topk(t, k, dim=-1, largest=True, algo=None, *, sorted=True):
    """torch.topk: the k largest (largest=False: smallest) elements along `dim` -> (values, indices).

    values has t's dtype, indices is INT64 (as in torch); both have t's shape with dim replaced by k.
    Results are always sorted (best first; `sorted=False` is accepted and gives the same order). Ties go to
    the lower index; NaN counts as larger than every number (as torch.sort does). `k` is a static int with
    0 <= k <= t.shape[dim] (checked when the kernel runs if that dim is symbolic). `dim=None` is the last dim.
    `algo` (pypto.TopKAlgo, the reference's fifth argument): both algorithms select the same elements; a bool
    there is torch's `sorted`."""
    op = "topk"
    b = current(op)
    if isinstance(algo, bool):
        sorted, algo = algo, None
    if algo is not None:
        from ..vocab.enums import TopKAlgo
        if not isinstance(algo, TopKAlgo):
            raise b.error(op, f"algo must be a pypto.TopKAlgo (MERGE_SORT, RADIX_SELECT), got {algo!r}")
    if dim is None:
        dim = -1
    t = check_tensor(t, op, "input")
    if len(t.shape) == 0:
        raise b.error(op, "cannot take topk of a rank-0 tensor")
    if t.dtype == DT.DT_BOOL:
        raise b.error(op, "bool tensors are not supported; cast to an integer dtype first")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise b.error(op, f"k must be a static int >= 0, got {k!r}")
    for name, v in (("largest", largest), ("sorted", sorted)):
        if not isinstance(v, bool):
            raise b.error(op, f"{name} must be a bool, got {v!r}")
    d = norm_dim(dim, len(t.shape), lambda m: b.error(op, m))
    n = t.shape[d]
    if isinstance(n, int) and k > n:
        raise b.error(op, f"k ({k}) exceeds the size of dim {d} ({n}) of shape {fmt_shape(t.shape)}")
    b.check(S.compare("<=", k, n), f"k ({k}) exceeds the size of dim {d} ({S.to_text(n)})", op)
    shape, cap = list(t.shape), list(t.cap)
    shape[d], cap[d] = k, k
    idx = b.new_temp(DT.DT_INT64, tuple(shape), tuple(cap))
    b.op("topk", idx, [t], dim=d, k=k, largest=largest, ct=compute_dtype(t.dtype))
    vals = b.new_temp(t.dtype, tuple(shape), tuple(cap))
    b.op("gather", vals, [t, idx], dim=d, msg=_range_msg(b, op, "indices", d, t))
    return vals, idx


__all__ = ["gather", "scatter", "scatter_update", "topk"]
