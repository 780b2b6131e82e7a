"""Quantization ops of the reference: quantize / dequantize (per-channel int8 / uint8), quant_mx (MX block scaling,
FP8 E4M3 or packed FP4 E2M1 with E8M0 shared scales), scaled_mm (matmul of FP8 / FP4 operands with MX scales),
pack / unpack (bytes of a tensor as uint8 and back) and expand_exp_dif (the casts to and from the packed FP4 pair
DT_FP4_E2M1X2 are in fp4.py). Each follows docs/zh/api/operation/pypto-<name>.md of the reference; the
differences are in docs/compat.md and the exact rules in docs/language.md ("Quantization"). The FP4 / MX
conversions themselves are C++ (include/pypto/kernel_quant.h, emitted by codegen/quant.py); the rest is composed
from the other ops.
"""
from __future__ import annotations

import enum

from ..ir.infer import norm_dim
from ._helpers import DT, S, Value, check_dtype, check_tensor, current, fmt_shape
from . import elementwise as E
from .fp4 import FP4 as _FP4, WIDE as _WIDE, fp4_cast, halve_last as _halve_last
from . import quant_fixpipe as fixpipe
from .reduce import matmul
from .shape_ops import _numel, expand_clone, getitem, reshape, transpose, unsqueeze


class DequantScaleRoundingMode(enum.IntEnum):
    """How quant_mx picks a block's shared exponent: ROUND_DOWN (OCP MX: floor, the largest value may clip)
    or ROUND_UP (NV: ceil(log2(amax / largest element)), nothing clips)."""
    ROUND_UP = 0
    ROUND_DOWN = 1


ROUND_UP = DequantScaleRoundingMode.ROUND_UP
ROUND_DOWN = DequantScaleRoundingMode.ROUND_DOWN

_FP8 = (DT.DT_FP8E4M3, DT.DT_FP8E5M2)
MX_BLOCK = 32                       # values per shared exponent
_MX_ELEM = {DT.DT_FP8E4M3: (8, 448.0), _FP4: (2, 6.0)}   # element format: largest exponent, largest value


def _names(dts) -> str:
    return ", ".join(d.name for d in dts)


# ---- quantize / dequantize ----------------------------------------------------------------------------------------
def _quant_axis(x: Value, axis, op: str) -> int:
    b = current(op)
    r = len(x.shape)
    if not 1 <= r <= 4:
        raise b.error(op, f"input must have rank 1 to 4, got shape {fmt_shape(x.shape)}")
    d = norm_dim(axis, r, lambda m: b.error(op, m))
    if d < r - 2 or (r == 1 and d != 0):
        raise b.error(op, f"axis must be one of the last two dims (-1 or -2; -1 for a 1-D input), got {axis!r} "
                          f"for an input of shape {fmt_shape(x.shape)}")
    return d


def _per_channel(p, x: Value, d: int, what: str, op: str) -> Value:
    """scale / zero_points: x's shape without dim d (or with d kept as 1); returned broadcastable to x."""
    b = current(op)
    p = check_tensor(p, op, what)
    if p.dtype != DT.DT_FP32:
        raise b.error(op, f"{what} must be DT_FP32, got {p.dtype.short}")
    got_shape = fmt_shape(p.shape)
    want = x.shape[:d] + x.shape[d + 1:]
    keep = x.shape[:d] + (1,) + x.shape[d + 1:]
    if len(p.shape) == len(x.shape) and isinstance(p.shape[d], int) and p.shape[d] == 1:
        dims = list(zip(p.shape, keep))
    elif len(p.shape) == len(want):
        dims = list(zip(p.shape, want))
        p = unsqueeze(p, d)
    else:
        raise b.error(op, f"{what} must have the input's shape without dim {d} ({fmt_shape(want)}, or "
                          f"{fmt_shape(keep)}), got {fmt_shape(p.shape)} for an input of shape {fmt_shape(x.shape)}")
    for got, exp in dims:
        if isinstance(got, int) and isinstance(exp, int) and got != exp:
            raise b.error(op, f"{what} must have the input's shape without dim {d} ({fmt_shape(want)}), got "
                              f"{got_shape} for an input of shape {fmt_shape(x.shape)}")
        b.check(S.compare("==", got, exp), f"{what} shape {got_shape} does not match the input shape "
                                           f"{fmt_shape(x.shape)} without dim {d}", op)
    return p


_QRANGE = {DT.DT_INT8: (-128, 127), DT.DT_UINT8: (0, 255)}


def quantize(input, scale, otype, axis, zero_points=None):
    """DT_FP32 -> DT_INT8 / DT_UINT8 per channel: round(input * scale (+ zero_points)), the rounding half to
    even, saturated to the range of `otype` (NaN gives 0). `scale` / `zero_points` (DT_FP32) have the input's
    shape without dim `axis` (the last or second-last dim; a kept dim of size 1 is accepted too): one factor
    per line along `axis`. otype DT_INT8 is the reference's symmetric and DT_UINT8 (with zero_points) its
    asymmetric quantization."""
    op = "quantize"
    b = current(op)
    x = check_tensor(input, op, "input")
    if x.dtype != DT.DT_FP32:
        raise b.error(op, f"input must be DT_FP32, got {x.dtype.short}")
    otype = check_dtype(otype, op)
    if otype not in _QRANGE:
        raise b.error(op, f"otype must be DT_INT8 or DT_UINT8, got {otype!r}")
    d = _quant_axis(x, axis, op)
    y = E.mul(x, _per_channel(scale, x, d, "scale", op))
    if zero_points is not None:
        y = E.add(y, _per_channel(zero_points, x, d, "zero_points", op))
    lo, hi = _QRANGE[otype]
    y = E.clip(E.round(y), float(lo), float(hi))
    return E.cast(E.where(E.ne(y, y), 0.0, y), otype)


def dequantize(input, scale, otype, axis, zero_points=None):
    """DT_INT8 / DT_INT16 (and DT_UINT8) -> DT_FP32 per channel: (float(input) + zero_points) * scale, with
    `scale` / `zero_points` shaped as in quantize."""
    op = "dequantize"
    b = current(op)
    x = check_tensor(input, op, "input")
    if x.dtype not in (DT.DT_INT8, DT.DT_INT16, DT.DT_UINT8):
        raise b.error(op, f"input must be DT_INT8, DT_INT16 or DT_UINT8, got {x.dtype.short}")
    otype = check_dtype(otype, op)
    if otype != DT.DT_FP32:
        raise b.error(op, f"otype must be DT_FP32, got {otype!r}")
    d = _quant_axis(x, axis, op)
    y = E.cast(x, DT.DT_FP32)
    s = _per_channel(scale, x, d, "scale", op)
    if zero_points is not None:
        y = E.add(y, _per_channel(zero_points, x, d, "zero_points", op))
    return E.mul(y, s)


# ---- quant_mx ------------------------------------------------------------------------------------------------------
def quant_mx(input, quant_dtype=DT.DT_FP8E4M3, mode=ROUND_DOWN, axis=-1, performance_mode=True):
    """MX quantization of a rank 1-4 FP16/BF16/FP32 tensor along `axis` (-1 or -2): every block of 32 values
    shares an E8M0 scale 2^(e-127); returns (quantized, scale). quantized = encode(x * 2^(127-e)) in
    `quant_dtype` (DT_FP8E4M3: nearest even, saturating to +-448; DT_FP4_E2M1X2: nearest even, saturating to
    +-6, two values per byte, so its last dim is half the input's). scale (DT_FP8E8M0):
    axis=-1: [*input.shape[:-1], ceil(input.shape[-1] / 64), 2] (block 2g+h covers values 64g+32h ..; a block
    past the end is 0); axis=-2: [*input.shape[:-2], input.shape[-2] / 64, input.shape[-1], 2] (the second-last
    dim a multiple of 64). `mode` ROUND_DOWN (OCP): e = exponent field of the block's largest magnitude minus 8
    (E4M3) or 2 (E2M1); ROUND_UP (NV): e = 127 + ceil(log2(amax / 448 or 6)). e is clamped to [0, 254]; a NaN
    in the block gives the NaN scale 0xff and NaN / +6 values. `performance_mode` is accepted (a tiling hint of
    the reference) and changes nothing."""
    op = "quant_mx"
    b = current(op)
    x = check_tensor(input, op, "input")
    if x.dtype not in _WIDE:
        raise b.error(op, f"input must be one of {_names(_WIDE)}, got {x.dtype.short}")
    qdt = check_dtype(quant_dtype, op)
    if qdt not in _MX_ELEM:
        raise b.error(op, f"quant_dtype must be DT_FP8E4M3 or DT_FP4_E2M1X2, got {qdt!r}")
    if not isinstance(mode, DequantScaleRoundingMode):
        raise b.error(op, f"mode must be pypto.ROUND_DOWN or pypto.ROUND_UP, got {mode!r}")
    if not isinstance(performance_mode, bool):
        raise b.error(op, f"performance_mode must be a bool, got {performance_mode!r}")
    r = len(x.shape)
    if not 1 <= r <= 4:
        raise b.error(op, f"input must have rank 1 to 4, got shape {fmt_shape(x.shape)}")
    d = norm_dim(axis, r, lambda m: b.error(op, m))
    if d not in (r - 1, r - 2) or (d == r - 2 and r < 2):
        raise b.error(op, f"axis must be -1 or -2, got {axis!r} for an input of shape {fmt_shape(x.shape)}")
    if d == r - 1:
        groups = S.floordiv(S.add(x.shape[-1], 63), 64)
        sshape = x.shape[:-1] + (groups, 2)
    else:
        rows = x.shape[-2]
        msg = f"with axis=-2 the second-last dim must be a multiple of 64, got shape {fmt_shape(x.shape)}"
        if isinstance(rows, int) and rows % 64:
            raise b.error(op, msg)
        b.check(S.compare("==", S.mod(rows, 64), 0), msg, op)
        sshape = x.shape[:-2] + (S.floordiv(rows, 64), x.shape[-1], 2)
    scale = b.op("mx_scale", b.new_temp(DT.DT_FP8E8M0, sshape), [x], axis=d, nv=mode == ROUND_UP,
                 emax=_MX_ELEM[qdt][0], max_elem=_MX_ELEM[qdt][1])
    if qdt == _FP4:
        qshape, qcap = _halve_last(b, x, op, "the input")
        q = b.new_temp(qdt, qshape, qcap)
    else:
        q = b.new_temp(qdt, x.shape, x.cap)
    return b.op("mx_quant", q, [x, scale], axis=d), scale


# ---- scaled_mm -------------------------------------------------------------------------------------------------
def _mx_operand(m: Value, trans: bool) -> Value:
    """An FP8 / packed FP4 matrix as FP32 in its logical [rows, cols] orientation (FP4 unpacks along the stored
    last dim, as the reference's operands are packed)."""
    f = E.cast(m, DT.DT_FP32) if m.dtype != _FP4 else fp4_cast(m, DT.DT_FP32, "scaled_mm")
    return transpose(f, -2, -1) if trans else f


def _scale_rows(s: Value, trans: bool, rows, k, what: str, op: str) -> Value:
    """An MX scale [rows, G, 2] (or [G, rows, 2] when trans) as FP32 factors [rows, k] (each repeated 32x)."""
    b = current(op)
    g = S.floordiv(S.add(k, 63), 64)
    want = (g, rows, 2) if trans else (rows, g, 2)
    if len(s.shape) != 3:
        raise b.error(op, f"{what} must have rank 3 ({fmt_shape(want)}), got {fmt_shape(s.shape)}")
    for got, exp in zip(s.shape, want):
        if isinstance(got, int) and isinstance(exp, int) and got != exp:
            raise b.error(op, f"{what} must have shape {fmt_shape(want)} (K = {S.to_text(k)}), got "
                              f"{fmt_shape(s.shape)}")
        b.check(S.compare("==", got, exp), f"{what} shape {fmt_shape(s.shape)} differs from {fmt_shape(want)}", op)
    saved, b.vec_tile = b.vec_tile, None     # small internal rank-3 steps: not tiled by the user's rank-2 tiles
    try:
        f = E.cast(s, DT.DT_FP32)
        if trans:
            f = transpose(f, 0, 1)
        f = reshape(f, [rows, S.mul(g, 2), 1])
        f = reshape(expand_clone(f, [rows, S.mul(g, 2), MX_BLOCK]), [rows, S.mul(g, 64)])
    finally:
        b.vec_tile = saved
    return getitem(f, (slice(None), slice(0, k)), op)


def _check_mx_operands(b, op: str, da: DT, db: DT) -> None:
    """FP8 operands mix freely; packed FP4 pairs, or the values of DT_FP4_E2M1 arguments, go together."""
    for fp4 in (_FP4, DT.DT_FP4_E2M1):
        if (da == fp4) != (db == fp4):
            raise b.error(op, f"{fp4.name} operands go together: mat_a {da.short}, mat_b {db.short}")
    if da not in _FP8 + (_FP4, DT.DT_FP4_E2M1) or db not in _FP8 + (_FP4, DT.DT_FP4_E2M1):
        raise b.error(op, f"mat_a and mat_b must be DT_FP8E4M3 / DT_FP8E5M2, both DT_FP4_E2M1X2 or both "
                          f"DT_FP4_E2M1, got {da.short} and {db.short}")


def scaled_mm(mat_a, mat_b, out_dtype, scale_a, scale_b, *, a_trans=False, b_trans=False, scale_a_trans=False,
              scale_b_trans=False, c_matrix_nz=False, extend_params=None):
    """(mat_a * scale_a) @ (mat_b * scale_b) for MX operands: FP8 (DT_FP8E4M3 / DT_FP8E5M2, mixed freely), both
    DT_FP4_E2M1X2 (packed along the stored last dim) or both DT_FP4_E2M1 (shapes count values), with DT_FP8E8M0
    scales, one per 32 values along K:
    scale_a [M, ceil(K/64), 2] ([ceil(K/64), M, 2] with scale_a_trans), scale_b [ceil(K/64), N, 2]
    ([N, ceil(K/64), 2] with scale_b_trans), entry [.., g, .., h] scaling K indices 64g+32h .. 64g+32h+31.
    Products accumulate in FP32; extend_params 'bias_tensor' (FP16/BF16/FP32, broadcast to [M, N]) is added and
    'relu_type' RELU applied in FP32 before the one rounding to out_dtype (FP16/BF16/FP32); 'scale' /
    'scale_tensor' quantize that result first (quant_fixpipe.py; out_dtype DT_INT8 needs one of them).
    Operands of rank 2, or batched (rank 3 / 4, a batch dim of 1 broadcast): the scales, rank 3, serve every
    batch."""
    op = "scaled_mm"
    b = current(op)
    a = check_tensor(mat_a, op, "mat_a")
    bm = check_tensor(mat_b, op, "mat_b")
    sa = check_tensor(scale_a, op, "scale_a")
    sb = check_tensor(scale_b, op, "scale_b")
    odt = check_dtype(out_dtype, op)
    for nm, v in (("a_trans", a_trans), ("b_trans", b_trans), ("scale_a_trans", scale_a_trans),
                  ("scale_b_trans", scale_b_trans), ("c_matrix_nz", c_matrix_nz)):
        if not isinstance(v, bool):
            raise b.error(op, f"{nm} must be a bool, got {v!r}")
    if c_matrix_nz:
        raise b.error(op, "c_matrix_nz=True is not supported: the result is ND (the reference supports only False)")
    _check_mx_operands(b, op, a.dtype, bm.dtype)
    for nm, s in (("scale_a", sa), ("scale_b", sb)):
        if s.dtype != DT.DT_FP8E8M0:
            raise b.error(op, f"{nm} must be DT_FP8E8M0, got {s.dtype.short}")
    if odt not in _WIDE + (DT.DT_INT8,):
        raise b.error(op, f"out_dtype must be one of {_names(_WIDE + (DT.DT_INT8,))}, got {odt!r}")
    if not 2 <= len(a.shape) <= 4 or not 2 <= len(bm.shape) <= 4:
        raise b.error(op, f"mat_a and mat_b must have rank 2 to 4, got {fmt_shape(a.shape)} and "
                          f"{fmt_shape(bm.shape)}")
    bias, relu, scale = None, False, None
    if extend_params is not None:
        if not isinstance(extend_params, dict):
            raise b.error(op, f"extend_params must be a dict, got {type(extend_params).__name__}")
        unknown = sorted(set(extend_params) - {"bias_tensor", "relu_type", "scale", "scale_tensor"})
        if unknown:
            raise b.error(op, f"extend_params: unknown key(s) {unknown}; supported: 'bias_tensor', 'relu_type', "
                              f"'scale', 'scale_tensor'")
        scale = fixpipe.parse(extend_params, op)
        if extend_params.get("bias_tensor") is not None:
            bias = check_tensor(extend_params["bias_tensor"], op, "bias_tensor")
            if bias.dtype not in _WIDE:
                raise b.error(op, f"bias_tensor must be one of {_names(_WIDE)}, got {bias.dtype.short}")
        rt = extend_params.get("relu_type")
        if rt is not None:
            name = getattr(rt, "name", rt)
            if name not in ("RELU", "NO_RELU"):
                raise b.error(op, f"relu_type must be ReLuType.RELU or ReLuType.NO_RELU, got {rt!r}")
            relu = name == "RELU"
    if b.cube_tile:                              # the 1-byte operands' alignment, not that of their FP32 form
        b._check_tile(op, a, [a, bm], b.cube_tile)
    if odt == DT.DT_INT8 and scale is None:
        raise b.error(op, "out_dtype DT_INT8 needs extend_params 'scale' or 'scale_tensor' (the quantization)")
    af = _mx_operand(a, a_trans)                 # [..., M, K]
    bf = _mx_operand(bm, b_trans)                # [..., K, N]
    m, k = af.shape[-2:]
    k2, n = bf.shape[-2:]
    if isinstance(k, int) and isinstance(k2, int) and k != k2:
        raise b.error(op, f"inner dims differ: mat_a gives K={k} (shape {fmt_shape(a.shape)}, a_trans={a_trans}), "
                          f"mat_b K={k2} (shape {fmt_shape(bm.shape)}, b_trans={b_trans})")
    b.check(S.compare("==", k, k2), f"inner dims differ: K={S.to_text(k)} vs {S.to_text(k2)}", op)
    af = E.mul(af, _scale_rows(sa, scale_a_trans, m, k, "scale_a", op))
    bf = E.mul(bf, transpose(_scale_rows(sb, not scale_b_trans, n, k, "scale_b", op), 0, 1))
    r = matmul(*_broadcast_batches(af, bf, op), DT.DT_FP32)
    if bias is not None:
        r = E.add(r, bias if bias.dtype == DT.DT_FP32 else E.cast(bias, DT.DT_FP32))
    if relu:
        r = E.relu(r)
    if scale is not None:
        return fixpipe.apply(r, scale, odt, op)
    return r if odt == DT.DT_FP32 else E.cast(r, odt)


def _broadcast_batches(af: Value, bf: Value, op: str):
    """Rank-4 operands whose batch dims differ where one is 1: that one is expanded (matmul of rank 4 takes equal
    batch dims)."""
    if len(af.shape) != 4 or len(bf.shape) != 4:
        return af, bf
    b = current(op)
    sa, sb = list(af.shape[:2]), list(bf.shape[:2])
    for ax in (0, 1):
        x, y = sa[ax], sb[ax]
        if isinstance(x, int) and x == 1 and not (isinstance(y, int) and y == 1):
            sa[ax] = y
        elif isinstance(y, int) and y == 1 and not (isinstance(x, int) and x == 1):
            sb[ax] = x
        elif isinstance(x, int) and isinstance(y, int) and x != y:
            raise b.error(op, f"batch dim {ax} differs: mat_a {fmt_shape(af.shape)}, mat_b {fmt_shape(bf.shape)}")
    if sa != list(af.shape[:2]):
        af = expand_clone(af, sa + list(af.shape[2:]))
    if sb != list(bf.shape[:2]):
        bf = expand_clone(bf, sb + list(bf.shape[2:]))
    return af, bf


# ---- pack / unpack -------------------------------------------------------------------------------------------
_BYTE_TYPES = (DT.DT_BF16, DT.DT_FP16, DT.DT_FP32, DT.DT_INT64, DT.DT_UINT64, DT.DT_INT32, DT.DT_UINT32,
               DT.DT_INT16, DT.DT_UINT16, DT.DT_INT8, DT.DT_UINT8)


def pack(self):
    """The bytes of a rank 1-4 tensor, flattened in row-major order, as a 1-D DT_UINT8 tensor of
    numel * itemsize elements (little-endian, as the memory holds them)."""
    op = "pack"
    b = current(op)
    x = check_tensor(self, op, "input")
    if x.dtype not in _BYTE_TYPES:
        raise b.error(op, f"input dtype must be one of {_names(_BYTE_TYPES)}, got {x.dtype.short}")
    if not 1 <= len(x.shape) <= 4:
        raise b.error(op, f"input must have rank 1 to 4, got shape {fmt_shape(x.shape)}")
    n = S.mul(_numel(x.shape), x.dtype.itemsize)
    return b.op("bitcast", b.new_temp(DT.DT_UINT8, (n,)), [x])


def unpack(self, dstDataType):
    """A 1-D DT_UINT8 tensor's bytes read as `dstDataType` elements: n bytes give n / itemsize elements
    (n must be a multiple of the itemsize)."""
    op = "unpack"
    b = current(op)
    x = check_tensor(self, op, "input")
    if x.dtype != DT.DT_UINT8 or len(x.shape) != 1:
        raise b.error(op, f"input must be a 1-D DT_UINT8 tensor, got {x.dtype.short} of shape {fmt_shape(x.shape)}")
    dst = check_dtype(dstDataType, op)
    if dst not in _BYTE_TYPES:
        raise b.error(op, f"dstDataType must be one of {_names(_BYTE_TYPES)}, got {dst!r}")
    size, n = dst.itemsize, x.shape[0]
    msg = f"the input's {S.to_text(n)} bytes are not a multiple of {size} ({dst.short} elements)"
    if isinstance(n, int) and n % size:
        raise b.error(op, msg)
    b.check(S.compare("==", S.mod(n, size), 0), msg, op)
    return b.op("bitcast", b.new_temp(dst, (S.floordiv(n, size),)), [x])


# ---- expand_exp_dif ------------------------------------------------------------------------------------------------
def expand_exp_dif(input, other):
    """exp(input - other) with broadcasting; FP16/FP32/BF16 tensors of one dtype. fp16/bf16 are computed in
    float32 and rounded once."""
    op = "expand_exp_dif"
    b = current(op)
    x = check_tensor(input, op, "input")
    y = check_tensor(other, op, "other")
    for nm, t in (("input", x), ("other", y)):
        if t.dtype not in _WIDE:
            raise b.error(op, f"{nm} must be one of {_names(_WIDE)}, got {t.dtype.short}")
    if x.dtype != y.dtype:
        raise b.error(op, f"input and other must have the same dtype, got {x.dtype.short} and {y.dtype.short}")
    if x.dtype == DT.DT_FP32:
        return E.exp(E.sub(x, y))
    r = E.exp(E.sub(E.cast(x, DT.DT_FP32), E.cast(y, DT.DT_FP32)))
    return E.cast(r, x.dtype)


__all__ = ["quantize", "dequantize", "quant_mx", "scaled_mm", "pack", "unpack", "expand_exp_dif",
           "DequantScaleRoundingMode", "ROUND_UP", "ROUND_DOWN"]
