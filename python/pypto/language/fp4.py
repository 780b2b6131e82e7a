"""Casts to and from the packed FP4 pair DT_FP4_E2M1X2 (pypto.cast, quant_mx and scaled_mm use them): the packed
side counts bytes in its last dim, as torch.float4_e2m1fn_x2 does; the conversion itself is C++
(include/pypto/kernel_quant.h, emitted by codegen/quant.py)."""
from __future__ import annotations

from ._helpers import DT, S, Value, current, fmt_shape

FP4 = DT.DT_FP4_E2M1X2
WIDE = (DT.DT_FP32, DT.DT_FP16, DT.DT_BF16)      # the dtypes the packed pair converts to and from


def _names(dts) -> str:
    return ", ".join(d.name for d in dts)


# ---- FP4 E2M1 x2 casts ------------------------------------------------------------------------------------------
def halve_last(b, t: Value, op: str, what: str):
    """Shape and cap of t with its last dim halved (two FP4 values per byte); the dim must be even."""
    last = t.shape[-1]
    msg = (f"{what} has an odd last dim (shape {fmt_shape(t.shape)}): DT_FP4_E2M1X2 packs two values per byte, so "
           f"the last dim must be even")
    if isinstance(last, int) and last % 2:
        raise b.error(op, msg)
    b.check(S.compare("==", S.mod(last, 2), 0), msg, op)
    cap = t.cap[-1]
    return (t.shape[:-1] + (S.floordiv(last, 2),),
            t.cap[:-1] + ((cap // 2) if isinstance(cap, int) else None,))


def fp4_cast(x: Value, dtype: DT, op: str = "cast") -> Value:
    """pypto.cast to or from DT_FP4_E2M1X2 (one side is the packed pair, the other fp32/fp16/bf16). Unpacking
    doubles the last dim (byte j gives elements 2j (low nibble) and 2j+1 (high)); packing halves it (even dims
    only), rounding to nearest even with saturation to +-6 (inf too; NaN becomes +6)."""
    b = current(op)
    other = dtype if x.dtype == FP4 else x.dtype
    if other not in WIDE:
        raise b.error(op, f"casting between {x.dtype.short} and {dtype.short} is not supported: the packed FP4 pair "
                          f"DT_FP4_E2M1X2 converts to and from {_names(WIDE)} only")
    if len(x.shape) == 0:
        raise b.error(op, "a DT_FP4_E2M1X2 cast needs a tensor of rank >= 1 (it packs along the last dim), got a "
                          "rank-0 tensor")
    if x.dtype == FP4:
        cap = x.cap[-1]
        out = b.new_temp(dtype, x.shape[:-1] + (S.mul(x.shape[-1], 2),),
                         x.cap[:-1] + ((cap * 2) if isinstance(cap, int) else None,))
        return b.op("fp4_unpack", out, [x])
    shape, cap = halve_last(b, x, op, "the input")
    return b.op("fp4_pack", b.new_temp(FP4, shape, cap), [x])


__all__ = ["FP4", "WIDE", "fp4_cast", "halve_last"]
