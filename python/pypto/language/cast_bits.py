"""Conversions computed on the bits of a float, composed from exact integer ops over `bitcast` views (no op of
their own: the generated code and the verify interpreter need nothing new):

- tf32 rounding of matmul inputs (`extend_params['trans_mode']`, the reference's TransMode): an FP32 value keeps
  1 + 8 + 10 bits; CAST_RINT rounds to nearest even, CAST_ROUND to nearest, ties away from zero. NaN / inf are
  kept; a value past the largest tf32 rounds to inf, as IEEE rounding to that format does.
- directed rounding of narrowing float -> float and int -> float casts (`pypto.cast(mode=)`: FLOOR, CEIL, TRUNC,
  ROUND = nearest with ties away from zero, ODD = round to odd, for fp32 -> fp16): the nearest-even result is
  moved one step toward the wanted side where it lies on the other side of the exact value.
"""
from __future__ import annotations

from ..ir.nodes import row_major
from ..vocab.enums import CastMode
from ._helpers import DT, S, Value, current

# E: the elementwise module, passed in by the callers (it imports cast_modes, which imports this module)

_SAME_SIZE_INT = {DT.DT_FP32: DT.DT_INT32, DT.DT_FP16: DT.DT_INT16, DT.DT_BF16: DT.DT_INT16}


def bits_as(x: Value, dtype, op: str) -> Value:
    """x's bytes read as `dtype` (same itemsize, or a divisor of it: the last dim grows), packed row-major."""
    b = current(op)
    ratio = x.dtype.itemsize // dtype.itemsize
    shape = tuple(x.shape[:-1]) + (S.mul(x.shape[-1], ratio),)
    n = 1
    for d in shape:
        n = S.mul(n, d)
    flat = b.op("bitcast", b.new_temp(dtype, (n,)), [x])
    cap = tuple(d if isinstance(d, int) else S.upper_bound(d) for d in shape)
    return b.new_view(flat, flat.offset, shape, cap, row_major(shape))


def tf32(E, x: Value, mode, op: str) -> Value:
    """FP32 x rounded to tf32 (kept as FP32) by TransMode.CAST_RINT or CAST_ROUND."""
    w = E.cast(bits_as(x, DT.DT_INT32, op), DT.DT_INT64)      # int64: the rounding carry cannot overflow
    if mode.name == "CAST_RINT":
        bias = E.add(E.bitwise_and(E.bitwise_right_shift(w, 13), 1), 0xFFF)
    else:
        bias = 0x1000
    rounded = E.bitwise_and(E.add(w, bias), -0x2000)
    special = E.eq(E.bitwise_and(w, 0x7F800000), 0x7F800000)   # NaN / inf: kept
    return bits_as(E.cast(E.where(special, w, rounded), DT.DT_INT32), DT.DT_FP32, op)


def _step(E, y: Value, up) -> Value:
    """The neighbour of each value of float tensor y toward +inf where `up` (a bool tensor), else toward -inf; from
    zero to the smallest subnormal of that sign, from inf to the largest finite value (NaN is never stepped: the
    callers' comparisons are false for it)."""
    it = _SAME_SIZE_INT[y.dtype]
    sign_bit = -(1 << (8 * y.dtype.itemsize - 1))
    bits = E.cast(bits_as(y, it, "cast"), DT.DT_INT32)
    # sign-magnitude: raw bits + 1 moves away from zero and - 1 toward it, for either sign
    away = E.ne(E.lt(bits, 0), up)
    stepped = E.where(away, E.add(bits, 1), E.sub(bits, 1))
    from_zero = E.where(up, 1, sign_bit | 1)
    out = E.where(E.eq(E.bitwise_and(bits, ~sign_bit), 0), from_zero, stepped)
    return bits_as(E.cast(out, it), y.dtype, "cast")


def directed(E, x: Value, dtype, mode: CastMode) -> Value:
    """x (float, or an integer of <= 32 bits) converted to the narrower float `dtype` by a directed mode."""
    y = E.cast(x, dtype)                                       # nearest even
    exact = E.cast(x, DT.DT_FP64)                              # every such source is exact in double
    back = E.cast(y, DT.DT_FP64)
    above, below = E.gt(back, exact), E.lt(back, exact)
    if mode == CastMode.CAST_ROUND:                            # nearest, ties away: a tie went to even toward 0
        other = _step(E, y, below)
        o = E.cast(other, DT.DT_FP64)
        tie = E.eq(E.abs(E.sub(o, exact)), E.abs(E.sub(back, exact)))
        return E.where(E.logical_and(tie, E.gt(E.abs(o), E.abs(back))), other, y)
    if mode == CastMode.CAST_FLOOR:
        fix, up = above, E.logical_not(above)
    elif mode == CastMode.CAST_CEIL:
        fix, up = below, below
    elif mode == CastMode.CAST_TRUNC:                          # y farther from zero than x: step toward zero
        neg = E.lt(exact, 0.0)
        fix = E.bitwise_or(E.logical_and(above, E.gt(exact, 0.0)), E.logical_and(below, neg))
        up = neg
    else:                                                      # CAST_ODD: an inexact result gets an odd last bit
        even = E.eq(E.bitwise_and(E.cast(bits_as(y, _SAME_SIZE_INT[dtype], "cast"), DT.DT_INT32), 1), 0)
        fix, up = E.logical_and(E.bitwise_or(above, below), even), below
    return E.where(fix, _step(E, y, up), y)


__all__ = ["bits_as", "tf32", "directed"]
