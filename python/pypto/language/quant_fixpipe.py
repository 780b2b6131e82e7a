"""The matmul output stage of the reference (the Ascend fixpipe): extend_params `scale` (per tensor) and
`scale_tensor` (per channel) quantize or dequantize the product on its way out, as docs/zh/api/operation/
pypto-matmul.md of the reference describes (its tables 2, 4, 5). Shared by matmul and scaled_mm.

The rule, the reference's (its test golden, st/operation/matmul/test_matmul_quant.py): the product accumulates in
INT32 (int8 operands) or FP32, the bias is added in that type, relu applied, then the result is multiplied in FP32
by the scale and converted once to out_dtype (DT_INT8: rounded to nearest even and saturated, NaN -> 0). The scale
takes part as the hardware reads it: 1 sign + 8 exponent + 10 mantissa bits (its float32 bits & 0xFFFFE000,
truncated). A `scale_tensor` is [1, N] (broadcast to every row and batch) of DT_UINT64 / DT_INT64 whose low 32
bits are the float32 scale (the reference's layout; for an INT8 output the reference builds it with
torch_npu.npu_trans_quant_param, whose bits above 32 carry an offset that is not read here), or, beyond the
reference, a DT_FP32 tensor of the scales themselves. Composed from the other ops (bit views are `bitcast`).
"""
from __future__ import annotations

import struct

from ..vocab.enums import CastMode, SaturationMode
from ._helpers import DT, S, Value, check_tensor, current, fmt_shape
from . import elementwise as E
from .cast_bits import bits_as
from .shape_ops import getitem, reshape

MASK19 = 0xFFFFE000                       # the bits of a float32 scale the fixpipe reads
_OUT = (DT.DT_FP16, DT.DT_BF16, DT.DT_FP32, DT.DT_INT8)
_TENSOR_DTYPES = (DT.DT_UINT64, DT.DT_INT64, DT.DT_FP32)


def mask19(x: float) -> float:
    """x as the fixpipe reads a float32 scale: its low 13 mantissa bits cleared (toward zero)."""
    bits = struct.unpack("<I", struct.pack("<f", float(x)))[0] & MASK19
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def parse(extend_params: dict, op: str):
    """The scale given in extend_params, or None: a Python float (masked) or a scale_tensor Value. A scale of 0
    (the reference's 'not set') means no quantization."""
    b = current(op)
    scale, tensor = extend_params.get("scale"), extend_params.get("scale_tensor")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise b.error(op, f"extend_params['scale'] must be a float, got {type(scale).__name__} {scale!r}")
    if scale == 0:
        scale = None
    if scale is not None and tensor is not None:
        raise b.error(op, "extend_params: give 'scale' (per tensor) or 'scale_tensor' (per channel), not both")
    if tensor is not None:
        t = check_tensor(tensor, op, "extend_params['scale_tensor']")
        if t.dtype not in _TENSOR_DTYPES:
            raise b.error(op, f"extend_params['scale_tensor'] must be DT_UINT64 / DT_INT64 (float32 bits in the low "
                              f"32, the reference's layout) or DT_FP32, got {t.dtype.short}")
        if len(t.shape) != 2 or not (isinstance(t.shape[0], int) and t.shape[0] == 1):
            raise b.error(op, f"extend_params['scale_tensor'] must have shape [1, N] with a static 1 (a DYNAMIC "
                              f"tensor: slice it, t[0:1, ...]), got {fmt_shape(t.shape)}")
        return t
    return None if scale is None else mask19(scale)


def scale_row(t: Value) -> Value:
    """The per-channel scales of a scale_tensor as FP32 [1, N], masked to the bits the fixpipe reads."""
    f = t
    if t.dtype != DT.DT_FP32:            # little-endian: word 0 of each 64-bit entry holds the float32 bits
        words = reshape(bits_as(t, DT.DT_FP32, "matmul"), [1, t.shape[1], 2])
        f = reshape(getitem(words, (slice(None), slice(None), slice(0, 1)), "matmul"), [1, t.shape[1]])
    masked = E.bitwise_and(bits_as(f, DT.DT_INT32, "matmul"), MASK19 - (1 << 32))   # 0xFFFFE000 as an int32
    return bits_as(masked, DT.DT_FP32, "matmul")


def apply(r: Value, scale, out_dtype, op: str) -> Value:
    """r (the accumulated product with bias and relu applied) times the scale, converted to out_dtype."""
    b = current(op)
    if out_dtype not in _OUT:
        raise b.error(op, f"with extend_params 'scale' / 'scale_tensor' out_dtype must be one of "
                          f"{', '.join(d.short for d in _OUT)}, got {out_dtype.short}")
    n = r.shape[-1]
    f = r if r.dtype == DT.DT_FP32 else E.cast(r, DT.DT_FP32)
    if isinstance(scale, Value):
        row = scale_row(scale)
        if isinstance(n, int) and isinstance(row.shape[1], int) and row.shape[1] != n:
            raise b.error(op, f"extend_params['scale_tensor'] has {row.shape[1]} channels, the result {n} "
                              f"(shape {fmt_shape(r.shape)})")
        b.check(S.compare("==", row.shape[1], n), f"extend_params['scale_tensor'] channels differ from the "
                                                   f"result's N at run time", op)
        f = E.mul(f, row)
    else:
        f = E.mul(f, scale)
    if out_dtype == DT.DT_INT8:
        return E.cast(f, DT.DT_INT8, mode=CastMode.CAST_RINT, satmode=SaturationMode.ON)
    return f if out_dtype == DT.DT_FP32 else E.cast(f, out_dtype)


__all__ = ["MASK19", "mask19", "parse", "apply", "scale_row"]
