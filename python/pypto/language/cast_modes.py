"""`pypto.cast(x, dtype, mode=CastMode..., satmode=SaturationMode...)`: the reference's rounding and saturation
modes, composed from exact elementwise ops (no op of its own, so the generated code and the verify interpreter
need nothing new).

Rounding (docs/zh/api/datatype/CastMode.md): CAST_NONE is the conversion's default (TRUNC for float -> int, RINT
otherwise); a mode the conversion does not support (CAST_ODD outside fp32 -> fp16) falls back to that default, as
in the reference; widening conversions ignore the mode. A float -> same float cast with a mode other than NONE
rounds to an integral value (the reference's "same-type rounding"). Narrowing float -> float and int -> float
conversions with CAST_ROUND/FLOOR/CEIL/TRUNC (and fp32 -> fp16 CAST_ODD, round to odd) are computed on the bits
(cast_bits.py); an int64 / uint64 source with those modes is not supported yet (UnsupportedFeatureError).

Saturation: SaturationMode.ON clamps a float -> int or narrowing int -> int conversion to the target's range (NaN
gives 0); OFF (the default) converts as C++ does (ints wrap; an out-of-range float has no defined result).
"""
from __future__ import annotations

import math

from ..vocab.enums import CastMode, SaturationMode
from ._helpers import DT, check_enum, current
from .cast_bits import directed

_INT_RANGE = {DT.DT_INT8: (-2 ** 7, 2 ** 7 - 1), DT.DT_INT16: (-2 ** 15, 2 ** 15 - 1),
              DT.DT_INT32: (-2 ** 31, 2 ** 31 - 1), DT.DT_INT64: (-2 ** 63, 2 ** 63 - 1), DT.DT_UINT8: (0, 255)}


def _round_half_away(E, x):
    t = E.trunc(x)
    frac = E.sub(x, t)                                  # exact: |x - trunc(x)| < 1
    step = E.cast(E.where(E.lt(x, 0), -1.0, 1.0), x.dtype)
    return E.where(E.ge(E.abs(frac), 0.5), E.add(t, step), t)


def _round_integral(E, x, mode):
    """x (a float tensor) rounded to an integral value of its own dtype by `mode` (exact)."""
    if mode == CastMode.CAST_RINT:
        return E.round(x)
    if mode == CastMode.CAST_ROUND:
        return _round_half_away(E, x)
    if mode == CastMode.CAST_FLOOR:
        return E.floor(x)
    if mode == CastMode.CAST_CEIL:
        return E.ceil(x)
    return E.trunc(x)


def _saturate_float_to_int(E, x, dtype):
    lo, hi = _INT_RANGE[dtype]
    y = x if x.dtype == DT.DT_FP64 else E.cast(x, DT.DT_FP64)   # every float and every int <= 32 bits is exact
    y = E.where(E.ne(y, y), 0.0, y)                             # NaN -> 0
    if dtype == DT.DT_INT64:                                    # 2**63 - 1 is not a double: clamp below, then fix
        r = E.cast(E.clip(y, float(lo), math.nextafter(2.0 ** 63, 0.0)), dtype)
        return E.where(E.ge(y, 2.0 ** 63), hi, r)
    return E.cast(E.clip(y, float(lo), float(hi)), dtype)


def _directed(E, x, dtype, mode):
    if dtype not in (DT.DT_FP32, DT.DT_FP16, DT.DT_BF16) or x.dtype.storage_only:
        raise current("cast").unsupported("cast", f"mode=CastMode.{mode.name} for {x.dtype.short} -> "
                                                  f"{dtype.short} (directed rounding reaches fp32, fp16 and bf16)")
    return directed(E, x, dtype, mode)


def cast_with_modes(E, x, dtype, mode, satmode):
    """The cast of `x` to `dtype` under `mode`/`satmode` (E: the elementwise module)."""
    op = "cast"
    b = current(op)
    mode = check_enum(mode, CastMode, op, "mode")
    satmode = check_enum(satmode, SaturationMode, op, "satmode")
    src = x.dtype
    sat = satmode == SaturationMode.ON and dtype in _INT_RANGE
    if src.is_float and dtype.is_float:
        if src == dtype:
            return E.clone(x) if mode == CastMode.CAST_NONE else _round_integral(E, x, mode)
        if mode in (CastMode.CAST_NONE, CastMode.CAST_RINT) or dtype.itemsize > src.itemsize:
            return E.cast(x, dtype)
        if mode == CastMode.CAST_ODD and not (src == DT.DT_FP32 and dtype == DT.DT_FP16):
            return E.cast(x, dtype)                     # ODD is fp32 -> fp16 only: the default elsewhere
        return _directed(E, x, dtype, mode)
    if src.is_float and dtype.is_int:
        if mode != CastMode.CAST_ODD and mode != CastMode.CAST_NONE:
            x = _round_integral(E, x, mode)
        else:
            x = E.trunc(x)                              # the default (and ODD's fallback): toward zero
        return _saturate_float_to_int(E, x, dtype) if sat else E.cast(x, dtype)
    if src.is_int and dtype.is_float:
        if mode in (CastMode.CAST_NONE, CastMode.CAST_RINT, CastMode.CAST_ODD):
            return E.cast(x, dtype)
        if src.itemsize > 4:                            # not exact in the double the comparison is made in
            raise b.unsupported(op, f"mode=CastMode.{mode.name} for {src.short} -> {dtype.short} (64-bit "
                                    f"integers; sources of up to 32 bits are supported)")
        if dtype == DT.DT_FP64:
            return E.cast(x, dtype)                     # exact
        return _directed(E, x, dtype, mode)
    if sat and src.is_int:
        lo, hi = _INT_RANGE[dtype]
        wide = x if src == DT.DT_INT64 else E.cast(x, DT.DT_INT64)
        return E.cast(E.clip(wide, lo, hi), dtype)
    return E.cast(x, dtype)
