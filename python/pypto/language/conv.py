"""`pypto.conv`: 1D / 2D / 3D convolution (NCL / NCHW / NCDHW), grouped and dilated, with per-side padding,
an optional bias and relu, accumulating in float32.

One op ("conv") computed by direct loops (codegen/cpp.py `op_conv`; verify/interp.py uses
torch.nn.functional.conv1d/2d/3d). It is a fusion barrier. Rules: docs/language.md.
"""
from __future__ import annotations

from ..vocab.enums import ReLuType
from ..ir.nodes import same_dim
from ._helpers import DT, S, check_dtype, check_enum, check_tensor, current, fmt_shape

_FLOATS = (DT.DT_FP16, DT.DT_BF16, DT.DT_FP32)
_LAYOUT = {3: "NCL", 4: "NCHW", 5: "NCDHW"}


def _static_ints(xs, n: int, lo: int, hi: int, op: str, what: str) -> list:
    b = current(op)
    if not isinstance(xs, (list, tuple)) or any(isinstance(x, bool) or not isinstance(x, int) for x in xs):
        raise b.error(op, f"{what} must be a list of {n} ints, got {xs!r}")
    if len(xs) != n:
        raise b.error(op, f"{what} must have {n} entries for this convolution, got {len(xs)} ({list(xs)})")
    bad = [x for x in xs if not lo <= x <= hi]
    if bad:
        raise b.error(op, f"{what} entries must be in [{lo}, {hi}], got {list(xs)}")
    return list(xs)


def _out_size(n, i: int, ks, st, pd, dl):
    """The output size along spatial dim i of an input size `n` (an int, or symbolic for a dynamic dim; None for
    an unknown capacity)."""
    if n is None:
        return None
    n_in = S.add(n, pd[2 * i] + pd[2 * i + 1])
    return S.add(S.floordiv(S.sub(n_in, dl[i] * (ks[i] - 1) + 1), st[i]), 1)


def _check_channels(b, op: str, x, w, groups: int) -> None:
    """Cin and the weight's Cin / kernel dims are static; Cout (the weight's dim 0: a slice of a DYNAMIC weight)
    may be symbolic without groups."""
    static = [("input_conv", x, 1)] + [("weight", w, d) for d in range(1 if groups == 1 else 0, len(w.shape))]
    for name, t, d in static:
        if isinstance(t.shape[d], S.Sym):
            raise b.unsupported(op, f"a dynamic dim {d} of {name} (the batch and spatial dims of input_conv, and "
                                    f"Cout when groups=1, may be dynamic)")
    cin, cout, cin_g = x.shape[1], w.shape[0], w.shape[1]
    if cin % groups or (isinstance(cout, int) and cout % groups):
        raise b.error(op, f"Cin ({cin}) and Cout ({S.to_text(cout)}) must be divisible by groups ({groups})")
    if cin_g * groups != cin:
        raise b.error(op, f"weight Cin ({cin_g}) * groups ({groups}) must equal input_conv Cin ({cin}); weight "
                          f"{fmt_shape(w.shape)}, input_conv {fmt_shape(x.shape)}")


def _spatial_out(b, op: str, x, ks: list, st, pd, dl):
    """(output sizes, their capacities) along the spatial dims; symbolic where the input's size is."""
    for i, k in enumerate(ks):
        if pd[2 * i] >= k or pd[2 * i + 1] >= k:
            raise b.error(op, f"paddings {pd}: each padding must be below the kernel size along its dim (kernel "
                              f"{ks})")
    if len(ks) >= 2 and any(k > 255 for k in ks[-2:]):
        raise b.error(op, f"kernel height / width must be <= 255, got kernel {ks}")
    outs, caps = [], []
    for i in range(len(ks)):
        o, cap = _out_size(x.shape[2 + i], i, ks, st, pd, dl), _out_size(x.cap[2 + i], i, ks, st, pd, dl)
        for v in (o, cap):
            if v is not None and S.compare("<", v, 1) is True:
                raise b.error(op, f"output spatial dim {i} would be {S.to_text(v)} (< 1): input "
                                  f"{fmt_shape(x.shape)}, kernel {ks}, strides {st}, paddings {pd}, dilations {dl}")
        b.check(S.compare(">=", o, 1), f"output spatial dim {i} would be {S.to_text(o)} (< 1): input "
                                       f"{fmt_shape(x.shape)}, kernel {ks}", op)
        outs.append(o)
        caps.append(cap)
    return outs, caps


def _extend(extend_params, op: str):
    """(bias, relu) from the reference's extend_params dict."""
    b = current(op)
    if extend_params is None:
        return None, False
    if not isinstance(extend_params, dict):
        raise b.error(op, f"extend_params must be a dict, got {type(extend_params).__name__}")
    unknown = sorted(set(extend_params) - {"bias_tensor", "relu_type", "scale", "scale_tensor"})
    if unknown:
        raise b.error(op, f"extend_params: unsupported key(s) {unknown}; supported: 'bias_tensor', 'relu_type'")
    for k in ("scale", "scale_tensor"):
        if extend_params.get(k) is not None:
            raise b.unsupported(op, f"extend_params['{k}'] (quantized output)")
    bias = extend_params.get("bias_tensor")
    if bias is not None:
        bias = check_tensor(bias, op, "extend_params['bias_tensor']")
    relu = check_enum(extend_params.get("relu_type", ReLuType.NO_RELU), ReLuType, op,
                      "extend_params['relu_type']") == ReLuType.RELU
    return bias, relu


def conv(input_conv, weight, out_dtype, strides, paddings, dilations, *, groups=1, transposed=False,
         output_paddings=None, extend_params=None):
    """Convolution of `input_conv` [N, Cin, *spatial] with `weight` [Cout, Cin/groups, *kernel] (rank 3, 4 or 5:
    1D, 2D or 3D). `strides` / `dilations` have one entry per spatial dim ([1, 63]); `paddings` two per spatial
    dim in dim order, low side first ([pad_d_front, pad_d_back,] [pad_h_top, pad_h_bottom,] pad_w_left,
    pad_w_right; each in [0, 255] and below the kernel size). Products are summed in float32 and the result
    rounded once to `out_dtype` (which must equal the input dtype: FP16 / BF16 / FP32).
    `extend_params={"bias_tensor": bias [Cout] (input dtype or FP32), "relu_type": ReLuType.RELU}` adds the bias
    to the float32 sum and applies relu before the rounding. `transposed=True`, `output_paddings` and
    scale / scale_tensor (quantized output) are not supported (UnsupportedFeatureError). The batch and spatial
    dims of input_conv may be dynamic (a DYNAMIC dim, or a view's symbolic valid size: the output's size along it
    is then symbolic, its capacity from the input's); Cin and the weight are static."""
    op = "conv"
    b = current(op)
    if transposed is not False:
        if transposed is True:
            raise b.unsupported(op, "transposed=True (transposed convolution)")
        raise b.error(op, f"transposed must be a bool, got {transposed!r}")
    if output_paddings:
        raise b.unsupported(op, f"output_paddings={output_paddings!r} (transposed convolution only)")
    x = check_tensor(input_conv, op, "input_conv")
    w = check_tensor(weight, op, "weight")
    bias, relu = _extend(extend_params, op)
    r = len(x.shape)
    if r not in _LAYOUT:
        raise b.error(op, f"input_conv must be rank 3, 4 or 5 (NCL / NCHW / NCDHW), got shape {fmt_shape(x.shape)}")
    if len(w.shape) != r:
        raise b.error(op, f"weight must have the rank of input_conv ({r}, {_LAYOUT[r]}), got shape "
                          f"{fmt_shape(w.shape)}")
    for name, t in (("input_conv", x), ("weight", w)):
        if t.dtype not in _FLOATS:
            raise b.error(op, f"{name} dtype must be DT_FP16, DT_BF16 or DT_FP32, got {t.dtype.name}")
    if w.dtype != x.dtype:
        raise b.error(op, f"weight dtype must equal input_conv dtype {x.dtype.name}, got {w.dtype.name}")
    odt = check_dtype(out_dtype, op)
    if odt != x.dtype:
        raise b.error(op, f"out_dtype must equal the input dtype {x.dtype.name}, got {odt.name}")
    nd = r - 2
    st = _static_ints(strides, nd, 1, 63, op, "strides")
    dl = _static_ints(dilations, nd, 1, 63, op, "dilations")
    pd = _static_ints(paddings, 2 * nd, 0, 255, op, "paddings")
    if isinstance(groups, bool) or not isinstance(groups, int) or not 1 <= groups <= 65535:
        raise b.error(op, f"groups must be an int in [1, 65535], got {groups!r}")
    _check_channels(b, op, x, w, groups)
    cout = w.shape[0]
    outs, caps = _spatial_out(b, op, x, list(w.shape[2:]), st, pd, dl)
    if bias is not None:
        if len(bias.shape) != 1 or not same_dim(bias.shape[0], cout):
            raise b.error(op, f"extend_params['bias_tensor'] must have shape [{cout}] (Cout), got "
                              f"{fmt_shape(bias.shape)}")
        if bias.dtype not in (x.dtype, DT.DT_FP32):
            raise b.error(op, f"extend_params['bias_tensor'] dtype must be {x.dtype.name} or FP32, got "
                              f"{bias.dtype.name}")
    out = b.new_temp(odt, (x.shape[0], cout, *outs), (x.cap[0], w.cap[0], *caps))
    ins = [x, w] + ([bias] if bias is not None else [])
    return b.op("conv", out, ins, strides=tuple(st), paddings=tuple(pd), dilations=tuple(dl), groups=groups,
                relu=relu, bias=bias is not None)


__all__ = ["conv"]
