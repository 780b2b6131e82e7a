"""Data-dependent indexing: gather, scatter_update (also named scatter, as in the reference), topk (torch semantics,
see docs/language.md).

All three compute on the logical (valid) region of their operands. Index tensors may have any integer dtype;
an index value outside [0, size) of the indexed dim makes the kernel fail with KernelRuntimeError (nothing
is written to the outputs: the op's result is a fresh temporary that is only copied out after it is
complete). Negative index values are out of range (as in torch.gather / torch.scatter).
"""
from __future__ import annotations

from ..ir.infer import compute_dtype, norm_dim
from ._helpers import DT, S, Value, check_operand, check_tensor, current, fmt_shape, require_equal
from .shape_ops import reshape, write

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
    return _gather(b, t, d, index, op)


def _gather(b, t, d, index, op):
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
    """torch.scatter(t, dim, index, src, reduce=None) out of place (the reference's scatter; without reduce the
    same rules as scatter_update). reduce='add' / 'multiply' (or a pypto.ScatterMode: NONE, ADD, MULTIPLY) combines
    every src value with the element it lands on (duplicates in `index` all accumulate, in row-major order of
    `index`), computed in float32 for fp16/bf16 and int64 for integers and rounded back once per update, as torch
    does."""
    return _scatter(t, dim, index, src, "scatter", reduce)


def scatter_(t, dim, index, src, *, reduce=None):
    """In-place scatter (the reference's scatter_): writes `pypto.scatter(t, dim, index, src, reduce=reduce)`
    into `t` and returns `t`. `t` must be writable (a tensor parameter, a local tensor or a view of one). An
    index out of range fails the kernel before anything is written."""
    op = "scatter_"
    r = _scatter(t, dim, index, src, op, reduce)
    write(t, r, op)
    return t


_REDUCE = {None: None, "add": "add", "multiply": "mul"}


def _reduce_of(reduce, op: str):
    from ..vocab.enums import ScatterMode
    if isinstance(reduce, ScatterMode):
        return {ScatterMode.NONE: None, ScatterMode.ADD: "add", ScatterMode.MULTIPLY: "mul"}[reduce]
    if isinstance(reduce, str) and reduce in _REDUCE or reduce is None:
        return _REDUCE[reduce]
    raise current(op).error(op, f"reduce must be None, 'add', 'multiply' or a pypto.ScatterMode, got {reduce!r}")


def _scatter(t, dim, index, src, op: str, reduce=None, alpha=1):
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
    extra = {} if red is None else {"reduce": red, "ct": compute_dtype(t.dtype), "alpha": alpha}
    return b.op("scatter", out, [t, index, src], dim=d, msg=_range_msg(b, op, "index", d, t), **extra)


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


def _index_vector(index, op: str, what: str = "index", ranks=(1,)) -> Value:
    b = current(op)
    index = check_tensor(index, op, what)
    if index.dtype not in _INDEX_DTYPES:
        raise b.error(op, f"{what} must be an integer tensor (int8/uint8/int16/int32/int64), got "
                          f"{index.dtype.short}")
    if len(index.shape) not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise b.error(op, f"{what} must have rank {want}, got shape {fmt_shape(index.shape)}")
    return index


def _along(b, index: Value, shape, cap, d: int) -> Value:
    """A read-only view of the 1-D `index` as a tensor of `shape` whose dim d walks the index and every other
    dim repeats it (stride 0): the index tensor gather/scatter take, without a copy."""
    strides = [0] * len(shape)
    strides[d] = index.strides[0]
    return b.new_view(index, index.offset, tuple(shape), tuple(cap), tuple(strides))


def _same_dims(b, a: Value, c: Value, axes, op: str, a_name: str, c_name: str):
    """a.shape[ax] == c.shape[ax] for ax in axes (static: now; symbolic: a run-time check)."""
    for ax in axes:
        x, y = a.shape[ax], c.shape[ax]
        require_equal(b, x, y, op, f"{a_name} shape {fmt_shape(a.shape)} and {c_name} shape {fmt_shape(c.shape)} "
                                   f"differ in dim {ax} ({x} vs {y})",
                      f"{a_name} dim {ax} ({S.to_text(x)}) differs from {c_name} dim {ax} ({S.to_text(y)})")


def index_select(input, dim, index):
    """torch.index_select (the reference's, which also takes a 2-D index): the slices of `input` along `dim`
    picked by `index`. With a 1-D index of length I the result has input's shape with dim replaced by I; with
    a 2-D index [I0, I1] that dim is replaced by I0, I1 (numpy.take). Index values must lie in
    [0, input.shape[dim]) (checked when the kernel runs; negative values are out of range)."""
    op = "index_select"
    b = current(op)
    t = check_tensor(input, op, "input")
    if len(t.shape) == 0:
        raise b.error(op, "the input must have rank >= 1, got a rank-0 tensor")
    d = norm_dim(dim, len(t.shape), lambda m: b.error(op, m))
    index = _index_vector(index, op, ranks=(1, 2))
    flat = index if len(index.shape) == 1 else reshape(index, [S.mul(index.shape[0], index.shape[1])])
    shape, cap = list(t.shape), list(t.cap)
    shape[d], cap[d] = flat.shape[0], flat.cap[0]
    out = _gather(b, t, d, _along(b, flat, shape, cap, d), op)
    if len(index.shape) == 1:
        return out
    return reshape(out, list(t.shape[:d]) + list(index.shape) + list(t.shape[d + 1:]))


def _index_add(input, dim, index, source, alpha, op: str) -> Value:
    """input with alpha * source[..., i, ...] added to input[..., index[i], ...] for every i (out of place)."""
    b = current(op)
    t = check_tensor(input, op, "input")
    if len(t.shape) == 0:
        raise b.error(op, "the input must have rank >= 1, got a rank-0 tensor")
    if t.dtype == DT.DT_BOOL:
        raise b.error(op, "bool tensors are not supported")
    d = norm_dim(dim, len(t.shape), lambda m: b.error(op, m))
    index = _index_vector(index, op)
    src = check_tensor(source, op, "source")
    if src.dtype != t.dtype:
        raise b.error(op, f"source dtype must equal the input dtype {t.dtype.short}, got {src.dtype.short}")
    if len(src.shape) != len(t.shape):
        raise b.error(op, f"source must have the rank of the input ({len(t.shape)}), got shape "
                          f"{fmt_shape(src.shape)}")
    _same_dims(b, src, t, [ax for ax in range(len(t.shape)) if ax != d], op, "source", "input")
    x, n = src.shape[d], index.shape[0]
    require_equal(b, x, n, op, f"source has {x} slices along dim {d} but index has {n} entries (they must be equal)",
                  f"source dim {d} ({S.to_text(x)}) differs from the length of index ({S.to_text(n)})")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise b.error(op, f"alpha must be a number, got {alpha!r}")
    if isinstance(alpha, float) and not t.dtype.is_float:
        raise b.error(op, f"alpha must be an int for an integer input ({t.dtype.short}), got {alpha!r}")
    return _scatter(t, d, _along(b, index, src.shape, src.cap, d), src, op, "add", alpha)


def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add out of place: a copy of `input` with alpha * source[..., i, ...] added to
    input[..., index[i], ...] for every i along `dim`. `index` is 1-D (any integer dtype) with one entry per
    slice of `source` along dim; source has input's dtype and rank and input's size in every other dim.
    Duplicate indices accumulate (in index order); each update is computed in float32 for fp16/bf16 (int64 for
    integers) and rounded back once. Index values must lie in [0, input.shape[dim]) (checked at run time)."""
    return _index_add(input, dim, index, source, alpha, "index_add")


def index_add_(input, dim, index, source, *, alpha=1):
    """In-place index_add (torch.Tensor.index_add_): updates `input` and returns it. An index out of range fails
    the kernel before anything is written."""
    op = "index_add_"
    write(input, _index_add(input, dim, index, source, alpha, op), op)
    return input


def index_add_ub(input, dim, index, source, *, alpha=1):
    """The reference's on-chip-buffer variant of index_add: on the simulator the same op as index_add."""
    return _index_add(input, dim, index, source, alpha, "index_add_ub")


def index_add__ub(input, dim, index, source, *, alpha=1):
    """The reference's on-chip-buffer variant of index_add_: on the simulator the same op as index_add_."""
    op = "index_add__ub"
    write(input, _index_add(input, dim, index, source, alpha, op), op)
    return input


def index_put_(input, indices, values, accumulate=False):
    """torch.Tensor.index_put_ with a tuple of k 1-D index tensors (the reference's form): for every t,
    input[indices[0][t], ..., indices[k-1][t], ...] = values[t, ...] (accumulate=True: +=). All index tensors
    have the same length T; values has shape [T] + input.shape[k:] and input's dtype (no broadcasting, as in
    the reference). Returns None. Duplicate positions: the last one in index order wins (accumulate=False) or
    all accumulate, in index order (accumulate=True; computed in float32 for fp16/bf16, int64 for integers).
    Each index value must lie in [0, input.shape[j]) for its dim j (checked when the kernel runs; nothing is
    written when one is out of range)."""
    op = "index_put_"
    b = current(op)
    t = check_tensor(input, op, "input")
    if isinstance(indices, Value) or not isinstance(indices, (tuple, list)) or not indices:
        raise b.error(op, f"indices must be a non-empty tuple of 1-D index tensors, got {indices!r}")
    if len(indices) > len(t.shape):
        raise b.error(op, f"too many index tensors ({len(indices)}) for an input of rank {len(t.shape)}")
    idx = [_index_vector(ix, op, f"indices[{j}]") for j, ix in enumerate(indices)]
    if not isinstance(accumulate, bool):
        raise b.error(op, f"accumulate must be a bool, got {accumulate!r}")
    if accumulate and t.dtype == DT.DT_BOOL:
        raise b.error(op, "accumulate=True is not supported for bool tensors")
    v = check_tensor(values, op, "values")
    if v.dtype != t.dtype:
        raise b.error(op, f"values dtype must equal the input dtype {t.dtype.short}, got {v.dtype.short}")
    k = len(idx)
    if len(v.shape) != len(t.shape) - k + 1:
        raise b.error(op, f"values must have shape [T] + input.shape[{k}:] (rank {len(t.shape) - k + 1}), got "
                          f"shape {fmt_shape(v.shape)} for input shape {fmt_shape(t.shape)} and {k} index "
                          f"tensor(s)")
    n = v.shape[0]
    for j, ix in enumerate(idx):
        x = ix.shape[0]
        if isinstance(x, int) and isinstance(n, int):
            if x != n:
                raise b.error(op, f"indices[{j}] has length {x}, values has {n} rows (they must be equal)")
        else:
            b.check(S.compare("==", x, n), f"indices[{j}] length ({S.to_text(x)}) differs from the number of "
                                           f"rows of values ({S.to_text(n)})", op)
    for ax in range(1, len(v.shape)):
        x, y = v.shape[ax], t.shape[k - 1 + ax]
        if isinstance(x, int) and isinstance(y, int):
            if x != y:
                raise b.error(op, f"values shape {fmt_shape(v.shape)} does not match input shape "
                                  f"{fmt_shape(t.shape)} after the {k} indexed dim(s)")
        else:
            b.check(S.compare("==", x, y), f"values dim {ax} ({S.to_text(x)}) differs from input dim "
                                           f"{k - 1 + ax} ({S.to_text(y)})", op)
    out = b.new_temp(t.dtype, t.shape, t.cap)
    msgs = tuple(_range_msg(b, op, f"indices[{j}]", j, t) for j in range(k))
    r = b.op("index_put", out, [t, v] + idx, accumulate=accumulate, msgs=msgs, ct=compute_dtype(t.dtype))
    write(t, r, op)
    return None


__all__ = ["gather", "scatter", "scatter_", "scatter_update", "topk", "index_select", "index_add", "index_add_",
           "index_add_ub", "index_add__ub", "index_put_"]
