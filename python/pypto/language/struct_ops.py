"""Structural ops of the reference: arg-reductions and sorting (argmax, argmin, argsort), triangles (tril, triu),
var, ones, padding (pad, fillpad), gathermask, interleave / deinterleave, and the in-place updates axpy_ and
atomic_add. Each follows the reference's documented behaviour (docs/zh/api/operation/pypto-<name>.md) with the
differences listed in docs/compat.md; results are exact on the simulator.
"""
from __future__ import annotations

from ..ir.infer import norm_dim
from ._helpers import (DT, S, Value, check_int_like, check_operand, check_tensor, compute_dtype, current, fmt_shape,
                       require_equal)
from . import elementwise as E
from .reduce import mean, sum as _sum
from .creation import _local, arange
from .shape_ops import _window, concat, getitem, reshape, unsqueeze, write

_INDEX_OUT = DT.DT_INT32      # argmax / argmin / argsort indices (the reference's DT_INT32)


# ---- argmax / argmin / argsort ----------------------------------------------------------------------------------
def _arg_input(input, dim, op: str):
    b = current(op)
    t = check_tensor(input, op, "input")
    if len(t.shape) == 0:
        raise b.error(op, "needs a tensor of rank >= 1, got a rank-0 tensor")
    if t.dtype == DT.DT_BOOL:
        raise b.error(op, "bool tensors are not supported; cast to an integer dtype first")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise b.error(op, f"dim must be a single static int, got {dim!r}")
    return b, t, norm_dim(dim, len(t.shape), lambda m: b.error(op, m))


def _argext(input, dim, keepdim, largest: bool, op: str) -> Value:
    b, t, d = _arg_input(input, dim, op)
    if not isinstance(keepdim, bool):
        raise b.error(op, f"keepdim must be a bool, got {keepdim!r}")
    b.check(S.compare(">", t.shape[d], 0), f"cannot reduce over an empty dim {d}", op)
    shape, cap = list(t.shape), list(t.cap)
    if keepdim:
        shape[d], cap[d] = 1, 1
    else:
        del shape[d], cap[d]
    out = b.new_temp(_INDEX_OUT, tuple(shape), tuple(cap))
    return b.op("argext", out, [t], dim=d, keepdim=keepdim, largest=largest, ct=compute_dtype(t.dtype))


def argmax(input, dim=-1, keepdim=False):
    """Index (DT_INT32) of the largest element along `dim` (torch.argmax with a dim): the first one on ties; a
    NaN counts as the largest (the first NaN wins), as in torch. keepdim=True keeps `dim` with size 1."""
    return _argext(input, dim, keepdim, True, "argmax")


def argmin(input, dim=-1, keepdim=False):
    """Index (DT_INT32) of the smallest element along `dim` (torch.argmin with a dim): the first one on ties; a
    NaN wins over every number (the first NaN), as in torch."""
    return _argext(input, dim, keepdim, False, "argmin")


def argsort(input, dim=None, descending=False):
    """Indices (DT_INT32) that sort `input` along `dim` (default: the last dim), ascending unless
    `descending=True`. The sort is stable (equal values keep their order, as the reference documents and as
    torch.sort(stable=True) does); NaN sorts as larger than every number."""
    op = "argsort"
    b, t, d = _arg_input(input, -1 if dim is None else dim, op)
    if not isinstance(descending, bool):
        raise b.error(op, f"descending must be a bool, got {descending!r}")
    out = b.new_temp(_INDEX_OUT, t.shape, t.cap)
    return b.op("argsort", out, [t], dim=d, descending=descending, ct=compute_dtype(t.dtype))


# ---- tril / triu ----------------------------------------------------------------------------------------------
def _triangle(input, diagonal, lower: bool, op: str) -> Value:
    b = current(op)
    t = check_tensor(input, op, "input")
    if len(t.shape) < 2:
        raise b.error(op, f"needs a tensor of rank >= 2, got shape {fmt_shape(t.shape)}")
    diagonal = check_int_like(diagonal, op, "diagonal")
    rows = unsqueeze(arange(t.shape[-2]), -1)
    cols = arange(t.shape[-1])
    offset = E.sub(cols, rows)                        # j - i, [rows, cols]
    keep = E.le(offset, diagonal) if lower else E.ge(offset, diagonal)
    return E.where(keep, t, False if t.dtype == DT.DT_BOOL else 0)


def tril(input, diagonal=0):
    """The lower triangle of the last two dims (torch.tril): elements with column - row <= diagonal are kept,
    the others are 0. `diagonal` may be a symbolic int. Batch dims in front are allowed."""
    return _triangle(input, diagonal, True, "tril")


def triu(input, diagonal=0):
    """The upper triangle of the last two dims (torch.triu): elements with column - row >= diagonal are kept,
    the others are 0."""
    return _triangle(input, diagonal, False, "triu")


# ---- var --------------------------------------------------------------------------------------------------------
def var(input, dim=None, correction=1, keepdim=False):
    """Variance over `dim` (an int, a list of ints, or None / [] = every dim) with `correction` (torch.var):
    sum((x - mean)^2) / max(0, N - correction), N the number of reduced elements. Float tensors only;
    fp16/bf16 are computed in float32 and rounded once. The reference documents `correction` as
    keyword-only; it is also accepted as the third positional argument, as its implementation does."""
    op = "var"
    b = current(op)
    t = check_tensor(input, op, "input")
    if not t.dtype.is_float:
        raise b.error(op, f"needs a float tensor, got {t.dtype.short}")
    if len(t.shape) == 0:
        raise b.error(op, "needs a tensor of rank >= 1, got a rank-0 tensor")
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise b.error(op, f"correction must be a number, got {correction!r}")
    if not isinstance(keepdim, bool):
        raise b.error(op, f"keepdim must be a bool, got {keepdim!r}")
    r = len(t.shape)
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        dims = list(range(r))
    elif isinstance(dim, (list, tuple)):
        dims = [norm_dim(x, r, lambda m: b.error(op, m)) for x in dim]
        if len(set(dims)) != len(dims):
            raise b.error(op, f"dim has repeated entries: {list(dim)}")
    else:
        dims = [norm_dim(dim, r, lambda m: b.error(op, m))]
    x = t if t.dtype in (DT.DT_FP32, DT.DT_FP64) else E.cast(t, DT.DT_FP32)
    dev = E.sub(x, mean(x, dims, keepdim=True))
    ss = _sum(E.mul(dev, dev), dims, keepdim)
    n = 1
    for d in dims:
        n = S.mul(n, t.shape[d])
    divisor = S.smax(0.0, S.sub(n, float(correction)))
    y = E.div(ss, divisor)
    return y if y.dtype == t.dtype else E.cast(y, t.dtype)


# ---- pad / fillpad ----------------------------------------------------------------------------------------------
def _pad_args(t: Value, mode, value, op: str):
    b = current(op)
    if mode != "constant":
        raise b.error(op, f"mode {mode!r} is not supported (only 'constant', as in the reference)")
    if isinstance(value, str) and t.dtype.is_float:
        try:
            value = float(value)
        except ValueError:
            raise b.error(op, f"value {value!r} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise b.error(op, f"value must be an int or a float, got {value!r}")
    if isinstance(value, float) and not t.dtype.is_float:
        raise b.error(op, f"value must be an int for an integer tensor ({t.dtype.short}), got {value!r}")
    return value


def pad(input, pad, mode="constant", value=0):
    """torch.nn.functional.pad, constant mode: `pad` = (left, right[, top, bottom, ...]) pads the last dim,
    then the one before, ... (non-negative static ints, an even count, at most two per dim) with `value`
    (an int for integer tensors). The reference supports only right/bottom padding (left/top = 0); here any
    non-negative amounts work. Returns a fresh tensor."""
    op = "pad"
    b = current(op)
    t = check_tensor(input, op, "input")
    if isinstance(pad, (str, bytes)) or not isinstance(pad, (list, tuple)):
        raise b.error(op, f"pad must be a list or tuple of ints, got {pad!r}")
    if any(isinstance(p, bool) or not isinstance(p, int) for p in pad):
        raise b.error(op, f"pad must hold static ints, got {list(pad)}")
    if len(pad) % 2 or len(pad) // 2 > len(t.shape):
        raise b.error(op, f"pad must have an even length of at most {2 * len(t.shape)} (two per dim), got "
                          f"{list(pad)}")
    if any(p < 0 for p in pad):
        raise b.error(op, f"negative padding is not supported, got {list(pad)}")
    value = _pad_args(t, mode, value, op)
    shape, offs = list(t.shape), [0] * len(t.shape)
    for k in range(len(pad) // 2):
        ax = len(t.shape) - 1 - k
        shape[ax] = S.add(S.add(shape[ax], pad[2 * k]), pad[2 * k + 1])
        offs[ax] = pad[2 * k]
    out = _local(shape, t.dtype, value, op)
    b.assign(_window(out, offs, t.shape, t.cap, op), t, op)
    return out


def fillpad(input, mode="constant", value=0):
    """The tile of `input` (its static shape) with the padding region — the part past its valid_shape (see
    pypto.view(..., valid_shape=)) — set to `value`; the valid region keeps the input's values. The result is
    a fresh tensor of the tile's shape. A tensor without a static tile (a DYNAMIC dim) has no padding region:
    the result is a copy. `value` may be "inf" / "-inf" (a string, as in the reference's example) for float
    tensors."""
    op = "fillpad"
    b = current(op)
    t = check_tensor(input, op, "input")
    value = _pad_args(t, mode, value, op)
    tile = list(t.cap) if all(c is not None for c in t.cap) else list(t.shape)
    out = _local(tile, t.dtype, value, op)
    b.assign(_window(out, [0] * len(tile), t.shape, t.cap, op), t, op)
    return out


# ---- gathermask ------------------------------------------------------------------------------------------------
_PATTERNS = {1: (0, 2), 2: (1, 2), 3: (0, 4), 4: (1, 4), 5: (2, 4), 6: (3, 4), 7: (0, 1)}


def _last_dim_multiple(b, t: Value, k: int, op: str):
    n = t.shape[-1]
    if isinstance(n, int):
        if n % k:
            raise b.error(op, f"the last dim ({n}) of shape {fmt_shape(t.shape)} must be a multiple of {k}")
    else:
        b.check(S.compare("==", S.mod(n, k), 0), f"the last dim ({S.to_text(n)}) must be a multiple of {k}", op)


def gathermask(self, pattern_mode):
    """The elements of the last dim picked by a built-in pattern (the reference's gathermask): 1 / 2 = the
    first / second of every 2, 3..6 = the first..fourth of every 4, 7 = all. The last dim must be a multiple
    of the group size (2 or 4). Returns a fresh tensor."""
    op = "gathermask"
    b = current(op)
    t = check_tensor(self, op, "input")
    if len(t.shape) == 0:
        raise b.error(op, "needs a tensor of rank >= 1, got a rank-0 tensor")
    if isinstance(pattern_mode, bool) or pattern_mode not in _PATTERNS:
        raise b.error(op, f"pattern_mode must be an int in 1..7, got {pattern_mode!r}")
    start, step = _PATTERNS[pattern_mode]
    _last_dim_multiple(b, t, step, op)
    return E.clone(getitem(t, (Ellipsis, slice(start, None, step)), op))


# ---- interleave / deinterleave ----------------------------------------------------------------------------------
def _pair(input, other, op: str):
    b = current(op)
    a = check_tensor(input, op, "input")
    o = check_tensor(other, op, "other")
    if len(a.shape) == 0:
        raise b.error(op, "needs tensors of rank >= 1, got a rank-0 tensor")
    if a.dtype != o.dtype:
        raise b.error(op, f"input and other must have the same dtype, got {a.dtype.short} and {o.dtype.short}")
    if len(a.shape) != len(o.shape):
        raise b.error(op, f"input and other must have the same shape, got {fmt_shape(a.shape)} and "
                          f"{fmt_shape(o.shape)}")
    for ax, (x, y) in enumerate(zip(a.shape, o.shape)):
        require_equal(b, x, y, op, f"input and other must have the same shape, got {fmt_shape(a.shape)} and "
                                   f"{fmt_shape(o.shape)}",
                      f"input dim {ax} ({S.to_text(x)}) differs from other dim {ax} ({S.to_text(y)})")
    return b, a, o


def _even_odd(t: Value, op: str):
    """(t[..., 0::2], t[..., 1::2])."""
    return (getitem(t, (Ellipsis, slice(0, None, 2)), op), getitem(t, (Ellipsis, slice(1, None, 2)), op))


def interleave(input, other):
    """Interleave the last dims of two same-shape tensors into the stream input[0], other[0], input[1], ... and
    split it in the middle: returns (first half, second half), each of input's shape (the reference's
    interleave; deinterleave(out0, out1) gives back (input, other))."""
    op = "interleave"
    b, a, o = _pair(input, other, op)
    n = a.shape[-1]
    stream = concat([unsqueeze(a, -1), unsqueeze(o, -1)], -1)            # [..., n, 2]
    stream = reshape(stream, list(a.shape[:-1]) + [S.mul(n, 2)])
    return getitem(stream, (Ellipsis, slice(0, n)), op), getitem(stream, (Ellipsis, slice(n, None)), op)


def deinterleave(input, other=None):
    """Split an interleaved stream into its even and odd elements along the last dim -> (even, odd).
    deinterleave(x): x holds the whole stream (its last dim must be even; each result has half of it).
    deinterleave(a, b): the stream is a followed by b (same shape and dtype); each result has a's shape.
    Returns fresh tensors."""
    op = "deinterleave"
    b = current(op)
    if other is None:
        t = check_tensor(input, op, "input")
        if len(t.shape) == 0:
            raise b.error(op, "needs a tensor of rank >= 1, got a rank-0 tensor")
        _last_dim_multiple(b, t, 2, op)
        ev, od = _even_odd(t, op)
        return E.clone(ev), E.clone(od)
    b, a, o = _pair(input, other, op)
    return _even_odd(concat([a, o], -1), op)


# ---- in-place updates -------------------------------------------------------------------------------------------
_AXPY = {(DT.DT_FP32, DT.DT_FP32), (DT.DT_FP16, DT.DT_FP16), (DT.DT_BF16, DT.DT_BF16), (DT.DT_FP32, DT.DT_FP16)}


def axpy_(y, x, alpha=1.0):
    """y = alpha * x + y in place; returns y. x broadcasts to y's shape (y does not broadcast). dtypes (y, x):
    fp32+fp32, fp16+fp16, bf16+bf16 (computed in float32, rounded once) and fp32+fp16 (x converted), as the
    reference supports. `alpha` is a number or a symbolic scalar."""
    op = "axpy_"
    b = current(op)
    y = check_tensor(y, op, "y")
    x = check_tensor(x, op, "x")
    if (y.dtype, x.dtype) not in _AXPY:
        raise b.error(op, f"unsupported dtypes y={y.dtype.short}, x={x.dtype.short} (supported: fp32+fp32, "
                          f"fp16+fp16, bf16+bf16, fp32 y + fp16 x)")
    alpha = check_operand(alpha, op, "alpha")
    if isinstance(alpha, Value) or isinstance(alpha, bool) or (isinstance(alpha, S.Sym) and alpha.kind == S.BOOL):
        raise b.error(op, f"alpha must be a number or a symbolic scalar, got {alpha!r}")
    if len(x.shape) != len(y.shape):
        raise b.error(op, f"x and y must have the same rank, got x {fmt_shape(x.shape)} and y {fmt_shape(y.shape)}")
    xf = x if x.dtype == DT.DT_FP32 else E.cast(x, DT.DT_FP32)
    yf = y if y.dtype == DT.DT_FP32 else E.cast(y, DT.DT_FP32)
    r = E.add(E.mul(xf, alpha), yf)
    write(y, r if y.dtype == DT.DT_FP32 else E.cast(r, y.dtype), op)
    return y


def atomic_add(src, offsets, dst):
    """dst[offsets[0]:offsets[0]+src.shape[0], ...] += src (the reference's atomic_add; returns None).

    src and dst have the same dtype and rank; the region must lie inside dst (checked: at trace time when
    static, else when the kernel runs — the reference leaves an out-of-bounds region undefined). Updates are
    applied in program order, so overlapping atomic_adds give a deterministic result: a pypto.loop(
    parallel=True) whose body contains an atomic_add runs its iterations serially, in order (on the device the
    order of concurrent adds is unspecified). fp16/bf16 add in float32 and round once per update."""
    op = "atomic_add"
    b = current(op)
    s = check_tensor(src, op, "src")
    d = check_tensor(dst, op, "dst")
    if s.dtype != d.dtype:
        raise b.error(op, f"src dtype {s.dtype.short} differs from dst dtype {d.dtype.short}")
    if s.dtype == DT.DT_BOOL:
        raise b.error(op, "bool tensors are not supported")
    offsets = [check_int_like(o, op, "offsets") for o in
               (offsets if isinstance(offsets, (list, tuple)) else [offsets])]
    if not (len(offsets) == len(s.shape) == len(d.shape)):
        raise b.error(op, f"offsets {fmt_shape(offsets)}, src shape {fmt_shape(s.shape)} and dst shape "
                          f"{fmt_shape(d.shape)} must have the same length")
    region = _window(d, offsets, s.shape, s.cap, op)
    write(region, E.add(region, s), op)
    blk = b.block
    while blk is not None:               # deterministic order: the enclosing parallel loops run serially
        if blk.loop is not None and getattr(blk.loop, "parallel", False):
            blk.loop.parallel = False
        blk = blk.parent
    return None


__all__ = ["argmax", "argmin", "argsort", "tril", "triu", "var", "pad", "fillpad", "gathermask",
           "interleave", "deinterleave", "axpy_", "atomic_add"]
