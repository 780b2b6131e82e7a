"""Reductions (sum, amax, amin, prod, mean), composite ops built on them (softmax, rms_norm) and matmul.

Reductions cover the logical (valid) region only. fp16/bf16 are accumulated in float32 and rounded once at
the end; integer sums keep the input dtype (wrapping), unlike torch.sum which widens to int64.
"""
from __future__ import annotations

from ..ir.infer import norm_dim
from ..vocab.enums import ReLuType, TransMode
from ._helpers import (DT, S, Value, check_computable, check_dtype, check_enum, check_tensor, compute_dtype, current,
                       fmt_shape)
from . import elementwise as E
from . import quant_fixpipe as fixpipe
from .cast_bits import tf32
from .shape_ops import reshape, transpose


def _reduce(fn: str, t, dim, keepdim: bool, op: str, out_dtype=None) -> Value:
    b = current(op)
    t = check_tensor(t, op)
    r = len(t.shape)
    if r == 0:
        raise b.error(op, "cannot reduce a rank-0 tensor")
    if dim is None:
        dims = list(range(r))
    elif isinstance(dim, (list, tuple)):
        dims = sorted({norm_dim(d, r, lambda m: b.error(op, m)) for d in dim})
    else:
        dims = [norm_dim(dim, r, lambda m: b.error(op, m))]
    if not isinstance(keepdim, bool):
        raise b.error(op, f"keepdim must be a bool, got {keepdim!r}")
    if fn in ("amax", "amin"):
        for d in dims:
            b.check(S.compare(">", t.shape[d], 0), f"cannot reduce over an empty dim {d}", op)
    shape, cap = [], []
    for ax in range(r):
        if ax in dims:
            if keepdim:
                shape.append(1)
                cap.append(1)
        else:
            shape.append(t.shape[ax])
            cap.append(t.cap[ax])
    dt = out_dtype or t.dtype
    check_computable(op, t.dtype)
    out = b.new_temp(dt, tuple(shape), tuple(cap))
    ct = compute_dtype(t.dtype) if t.dtype != DT.DT_BOOL else DT.DT_INT64
    return b.op("reduce", out, [t], fn=fn, dims=tuple(dims), keepdim=keepdim, ct=ct, tile=b.vec_tile)


def sum(t, dim=None, keepdim=False):
    """Sum over `dim` (an int, negative allowed, a list of ints, or None = all dims)."""
    t_ = check_tensor(t, "sum")
    return _reduce("sum", t, dim, keepdim, "sum", DT.DT_INT64 if t_.dtype == DT.DT_BOOL else None)


def amax(t, dim=None, keepdim=False):
    """Maximum over `dim`; NaN propagates."""
    return _reduce("amax", t, dim, keepdim, "amax")


def amin(t, dim=None, keepdim=False):
    """Minimum over `dim`; NaN propagates."""
    return _reduce("amin", t, dim, keepdim, "amin")


def prod(t, dim=None, keepdim=False):
    """Product over `dim`."""
    return _reduce("prod", t, dim, keepdim, "prod")


def mean(t, dim=None, keepdim=False):
    """Mean over `dim` (float tensors)."""
    op = "mean"
    b = current(op)
    t = check_tensor(t, op)
    if not t.dtype.is_float:
        raise b.error(op, f"needs a float tensor, got {t.dtype.short}")
    s = sum(t, dim, keepdim)
    r = len(t.shape)
    dims = range(r) if dim is None else ([dim] if isinstance(dim, int) else dim)
    n = 1
    for d in dims:
        n = S.mul(n, t.shape[norm_dim(d, r, lambda m: b.error(op, m))])
    return E.div(s, n)


def softmax(t, dim=-1):
    """exp(t - amax) * (1 / sum(exp(t - amax))) along `dim` (computed in the input's float dtype; the
    reciprocal is rounded to that dtype, then multiplies each element, as torch's CPU softmax does: one
    division per row instead of one per element)."""
    op = "softmax"
    t = check_tensor(t, op)
    m = amax(t, dim, keepdim=True)
    e = E.exp(E.sub(t, m))
    return E.mul(e, E.div(1, sum(e, dim, keepdim=True)))


def rms_norm(t, weight=None, eps=1e-6, dim=-1):
    """t / sqrt(mean(t*t, dim) + eps) (* weight). Computed in float32 for fp16/bf16 inputs and cast back."""
    op = "rms_norm"
    t = check_tensor(t, op)
    x = t if t.dtype in (DT.DT_FP32, DT.DT_FP64) else E.cast(t, DT.DT_FP32)
    ms = mean(E.mul(x, x), dim, keepdim=True)
    y = E.mul(x, E.rsqrt(E.add(ms, float(eps))))
    if weight is not None:
        w = check_tensor(weight, op, "weight")
        y = E.mul(y, w if w.dtype == y.dtype else E.cast(w, y.dtype))
    return y if y.dtype == t.dtype else E.cast(y, t.dtype)


def cumsum(t, dim):
    """Inclusive prefix sum along `dim` (fp16/bf16 accumulate in float32)."""
    return _scan("sum", t, dim, "cumsum")


def cumprod(t, dim):
    """Inclusive prefix product along `dim` (torch.cumprod; fp16/bf16 accumulate in float32 and each output is
    rounded once; integers keep the input dtype and wrap, unlike torch.cumprod which widens to int64)."""
    return _scan("prod", t, dim, "cumprod")


def _scan(fn: str, t, dim, op: str) -> Value:
    b = current(op)
    t = check_tensor(t, op)
    if fn == "prod" and t.dtype == DT.DT_BOOL:
        raise b.error(op, "bool tensors are not supported; cast to an integer dtype first")
    d = norm_dim(dim, len(t.shape), lambda m: b.error(op, m))
    out = b.new_temp(t.dtype, t.shape, t.cap)
    return b.op("cumsum", out, [t], dim=d, ct=compute_dtype(t.dtype), fn=fn)


def matmul(a, b, out_dtype=None, a_trans=False, b_trans=False, extend_params=None):
    """a @ b for rank-2 tensors (or rank-3 with a leading batch dim on either side, or rank-4 with two batch
    dims), accumulating in float32 (float64 for fp64 inputs; int64 for integers) and converting to `out_dtype`
    at the end. `a_trans`/`b_trans` use the transpose of the operand (a view, no copy). `out_dtype` defaults to
    a's dtype for fp32/fp64/int inputs and FP32 for fp16/bf16 inputs.

    Rank 4: a is [B0, B1, M, K] and b either [B0, B1, K, N] (same batch dims) or [K, N]; the batch dims are
    folded into one (a copy where an operand is a strided view) and unfolded in the result.
    `extend_params={"bias_tensor": bias}` (the reference's spelling; "bias" is accepted too) adds `bias`
    (broadcast to the result, e.g. [1, N]) to the product in out_dtype, as the reference's fused bias does;
    "relu_type": pypto.ReLuType.RELU applies relu to the result (after the bias); "trans_mode"
    TransMode.CAST_RINT / CAST_ROUND rounds FP32 operands to tf32 first (cast_bits.py). "scale" / "scale_tensor": the reference's output
    quantization (quant_fixpipe.py): the bias is then added in the accumulator's type (INT32 / FP32), relu
    applied, the result scaled in FP32 and converted once to out_dtype (FP16 / BF16 / FP32 / INT8)."""
    op = "matmul"
    bld = current(op)
    bias, relu, scale, trans = None, False, None, TransMode.CAST_NONE
    if extend_params is not None:
        if not isinstance(extend_params, dict):
            raise bld.error(op, f"extend_params must be a dict, got {type(extend_params).__name__}")
        unknown = sorted(set(extend_params) - {"bias_tensor", "bias", "relu_type", "trans_mode", "scale",
                                               "scale_tensor"})
        if unknown:
            raise bld.error(op, f"extend_params: unsupported key(s) {unknown}; supported: 'bias_tensor', "
                                f"'relu_type', 'trans_mode', 'scale', 'scale_tensor'")
        scale = fixpipe.parse(extend_params, op)
        bias = extend_params.get("bias_tensor", extend_params.get("bias"))
        if bias is not None:
            bias = check_tensor(bias, op, "bias_tensor")
        relu = check_enum(extend_params.get("relu_type", ReLuType.NO_RELU), ReLuType, op,
                          "extend_params['relu_type']") == ReLuType.RELU
        trans = check_enum(extend_params.get("trans_mode", TransMode.CAST_NONE), TransMode, op,
                           "extend_params['trans_mode']")
    a = check_tensor(a, op, "a")
    b = check_tensor(b, op, "b")
    if trans != TransMode.CAST_NONE:          # tf32 inputs (the reference: FP32 operands and result only)
        odt = check_dtype(out_dtype, op) if out_dtype is not None else DT.DT_FP32
        if a.dtype != DT.DT_FP32 or b.dtype != DT.DT_FP32 or odt != DT.DT_FP32:
            raise bld.error(op, f"extend_params['trans_mode']=TransMode.{trans.name} needs FP32 operands and "
                                f"out_dtype, got {a.dtype.short} @ {b.dtype.short} -> {odt.short}")
        a, b = tf32(E, a, trans, op), tf32(E, b, trans, op)
    final = None
    if scale is not None:                     # accumulate, then quantize on the way out
        final = check_dtype(out_dtype if out_dtype is not None else DT.DT_FP16, op)
        out_dtype = DT.DT_INT32 if a.dtype in (DT.DT_INT8, DT.DT_UINT8) else DT.DT_FP32
    if len(a.shape) == 4 or len(b.shape) == 4:
        r = _matmul4(a, b, out_dtype, a_trans, b_trans, op)
    else:
        r = _matmul(a, b, out_dtype, a_trans, b_trans, op)
    if bias is not None:
        r = E.add(r, bias if bias.dtype == r.dtype else E.cast(bias, r.dtype))
    r = E.relu(r) if relu else r
    return r if scale is None else fixpipe.apply(r, scale, final, op)


def _matmul4(a, b, out_dtype, a_trans, b_trans, op):
    bld = current(op)
    if len(a.shape) != 4 or len(b.shape) not in (2, 4):
        raise bld.error(op, f"with a rank-4 operand, a must be rank 4 and b rank 4 or 2; got a "
                            f"{fmt_shape(a.shape)}, b {fmt_shape(b.shape)}")
    if a_trans:
        a = transpose(a, -1, -2)
    if b_trans:
        b = transpose(b, -1, -2)
    b0, b1 = a.shape[0], a.shape[1]
    if len(b.shape) == 4:
        for ax in (0, 1):
            x, y = a.shape[ax], b.shape[ax]
            if isinstance(x, int) and isinstance(y, int) and x != y:
                raise bld.error(op, f"batch dim {ax} differs: a is {fmt_shape(a.shape)}, b is {fmt_shape(b.shape)}")
            bld.check(S.compare("==", x, y), f"batch dim {ax} differs at run time ({S.to_text(x)} vs "
                                             f"{S.to_text(y)})", op)
    folded = S.mul(b0, b1)
    a3 = reshape(a, [folded, a.shape[2], a.shape[3]])
    b3 = reshape(b, [folded, b.shape[2], b.shape[3]]) if len(b.shape) == 4 else b
    r = _matmul(a3, b3, out_dtype, False, False, op)
    return reshape(r, [b0, b1, r.shape[1], r.shape[2]])


def _matmul(a, b, out_dtype, a_trans, b_trans, op):
    bld = current(op)
    if a.dtype != b.dtype:
        raise bld.error(op, f"operand dtypes differ: a is {a.dtype.short}, b is {b.dtype.short}")
    if a.dtype == DT.DT_BOOL:
        raise bld.error(op, "bool operands are not supported")
    if a.dtype == DT.DT_FP4_E2M1X2:   # the values of the packed pairs, unpacked along the stored last dim as
        from .fp4 import fp4_cast      # scaled_mm reads them (its FP32 form is exact)
        a, b = fp4_cast(a, DT.DT_FP32, op), fp4_cast(b, DT.DT_FP32, op)
        out_dtype = DT.DT_FP32 if out_dtype is None else out_dtype
    if out_dtype is None:  # FP8 operands (the reference's fp8 matmul) are read as float, like fp16/bf16
        out_dtype = DT.DT_FP32 if a.dtype in (DT.DT_FP16, DT.DT_BF16) or a.dtype.storage_only else a.dtype
    out_dtype = check_dtype(out_dtype, op)
    check_computable(op, out_dtype)
    for name, x in (("a", a), ("b", b)):
        if len(x.shape) not in (2, 3):
            raise bld.error(op, f"{name} must be rank 2 or 3, got shape {fmt_shape(x.shape)}")
    if a_trans:
        a = transpose(a, -1, -2)
    if b_trans:
        b = transpose(b, -1, -2)
    M, K = a.shape[-2], a.shape[-1]
    K2, N = b.shape[-2], b.shape[-1]
    if isinstance(K, int) and isinstance(K2, int) and K != K2:
        raise bld.error(op, f"inner dims differ: a is {fmt_shape(a.shape)}, b is {fmt_shape(b.shape)} "
                            f"(after transposes)")
    bld.check(S.compare("==", K, K2), f"inner dims differ at run time ({S.to_text(K)} vs {S.to_text(K2)})", op)
    batch, bcap = (), ()
    if len(a.shape) == 3 or len(b.shape) == 3:
        ba = a.shape[0] if len(a.shape) == 3 else 1
        bb = b.shape[0] if len(b.shape) == 3 else 1
        if isinstance(ba, int) and ba == 1:
            batch, bcap = (bb,), ((b.cap[0] if len(b.shape) == 3 else 1),)
        else:
            if not (isinstance(bb, int) and bb == 1):
                bld.check(S.compare("==", ba, bb), "batch dims differ", op)
            batch, bcap = (ba,), (a.cap[0],)
    out = bld.new_temp(out_dtype, batch + (M, N), bcap + (a.cap[-2], b.cap[-1]))
    ct = DT.DT_FP64 if a.dtype == DT.DT_FP64 else (DT.DT_FP32 if a.dtype.is_float else DT.DT_INT64)
    return bld.op("matmul", out, [a, b], ct=ct, tile=bld.cube_tile, check_m=a_trans)


__all__ = ["sum", "amax", "amin", "prod", "mean", "softmax", "rms_norm", "cumsum", "cumprod", "matmul"]
