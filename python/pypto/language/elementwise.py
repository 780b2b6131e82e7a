"""Elementwise operations: arithmetic, math functions, comparisons, where, cast.

Every op computes on the logical (valid) region of its operands, broadcasting numpy-style. fp16/bf16 values
are computed in float32 and rounded back to the result dtype after each op (what torch does on CPU, so
results match torch bit for bit for IEEE-exact ops). The C++ scalar expression of each op lives in
codegen/templates.py (EW) under the op's template name. Rules: docs/language.md.
"""
from __future__ import annotations

import builtins
import math
import sys

from ..ir.infer import KEEPS_SCALAR, round_scalar
from .fp4 import fp4_cast
from ._helpers import (DT, S, Value, check_dtype, check_enum, check_operand, check_tensor, compute_dtype, current,
                       elementwise, result_dtype)


def _torch_scalars(fn: str, args, dt):
    """Python-number operands as torch computes with them next to an fp16/bf16 tensor (ir/infer.py)."""
    return [x if isinstance(x, Value) or (fn, i) in KEEPS_SCALAR else round_scalar(x, dt)
            for i, x in enumerate(args)]


def _check_precision(precision_type, op: str) -> None:
    """The reference's precision_type (pypto.PrecisionType: INTRINSIC / HIGH_PRECISION) chooses between hardware
    instruction sequences; the simulator computes every op as documented whichever is chosen, so both give the
    same (exact, torch) result here. None or a member; anything else is a trace error naming the parameter."""
    if precision_type is not None:
        from ..vocab.enums import PrecisionType
        check_enum(precision_type, PrecisionType, op, "precision_type")


def _binary(fn: str, a, b, op: str, out_dtype=None, float_only=False, precision_type=None):
    _check_precision(precision_type, op)
    a = check_operand(a, op, "first operand")
    b = check_operand(b, op, "second operand")
    dt = result_dtype([a, b], op)
    if float_only and not dt.is_float:
        dt = DT.DT_FP32
    ct = compute_dtype(dt)
    return elementwise(fn, _torch_scalars(fn, [a, b], dt), out_dtype or dt, (ct, ct), op)


def _named(fn, name: str, doc: str):
    """Give a table-made op its public name (also in Python's own messages, e.g. a missing argument)."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn.__module__ = __name__
    code = fn.__code__.replace(co_name=name)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=name)
    fn.__code__ = code
    return fn


def _def_binary(name: str, fn: str, doc: str, float_only=False, precision=False):
    if precision:   # the reference's optional precision_type argument (no effect here: _check_precision)
        return _named(lambda a, b, precision_type=None: _binary(fn, a, b, name, float_only=float_only,
                                                                precision_type=precision_type), name, doc)
    return _named(lambda a, b: _binary(fn, a, b, name, float_only=float_only), name, doc)


# name, C++ template (codegen/templates.py EW), docstring; result dtypes: docs/language.md "dtype promotion"
add = _def_binary("add", "add", "a + b with broadcasting (a, b: tensors or scalars).")
sub = _def_binary("sub", "sub", "a - b with broadcasting.")
mul = _def_binary("mul", "mul", "a * b with broadcasting.")
div = _def_binary("div", "div", "True division a / b. Integer (or bool) operands give an FP32 result, as torch.div "
                                "does.", float_only=True, precision=True)
floor_divide = _def_binary("floor_divide", "floordiv", "a // b (torch.floor_divide, bit for bit for floats). "
                                                       "Integer division by zero yields 0.")
floor_div = _def_binary("floor_div", "floordiv", "The reference's name of floor_divide: a // b, floored (torch."
                                                 "floor_divide). Integer division by zero yields 0.")
remainder = _def_binary("remainder", "mod", "a % b with the sign of the divisor (Python / torch.remainder). "
                                            "Integer x % 0 yields 0.", precision=True)
pow = _def_binary("pow", "pow", "a ** b. Integer ** integer stays integer (a negative exponent gives 0 except for "
                                "|a| == 1).", precision=True)
maximum = _def_binary("maximum", "maximum", "Elementwise maximum; NaN propagates (torch.maximum).")
minimum = _def_binary("minimum", "minimum", "Elementwise minimum; NaN propagates (torch.minimum).")


def _unary(fn: str, x, op: str, float_only=False, keep_int=False, precision_type=None):
    _check_precision(precision_type, op)
    x = check_tensor(x, op)
    dt = x.dtype
    if float_only and not dt.is_float:
        dt = DT.DT_FP32
    if dt == DT.DT_BOOL and keep_int:
        raise current(op).error(op, "not supported for bool tensors")
    ct = compute_dtype(dt)
    return elementwise(fn, [x], dt, (ct,), op)


def _def_unary(name: str, doc: str, float_only=False, keep_int=False, precision=False):
    if precision:   # the reference's optional precision_type argument (no effect here: _check_precision)
        return _named(lambda x, precision_type=None: _unary(name, x, name, float_only=float_only, keep_int=keep_int,
                                                            precision_type=precision_type), name, doc)
    return _named(lambda x: _unary(name, x, name, float_only=float_only, keep_int=keep_int), name, doc)


exp = _def_unary("exp", "e ** x. Integer inputs give FP32 (torch.exp).", float_only=True, precision=True)
log = _def_unary("log", "Natural logarithm. Integer inputs give FP32.", float_only=True, precision=True)
sqrt = _def_unary("sqrt", "Square root (correctly rounded). Integer inputs give FP32.", float_only=True, precision=True)
rsqrt = _def_unary("rsqrt", "1 / sqrt(x). Integer inputs give FP32.", float_only=True, precision=True)
tanh = _def_unary("tanh", "Hyperbolic tangent. Integer inputs give FP32.", float_only=True)
sigmoid = _def_unary("sigmoid", "1 / (1 + exp(-x)). Integer inputs give FP32.", float_only=True)
erfc = _def_unary("erfc", "Complementary error function 1 - erf(x), accurate for large x (torch.erfc). Integer "
                          "inputs give FP32.", float_only=True)
relu = _def_unary("relu", "max(x, 0) (NaN propagates). Not for bool.", keep_int=True)
abs = _def_unary("abs", "|x|. Not for bool.", keep_int=True)
neg = _def_unary("neg", "-x. Not for bool.", keep_int=True)
_round0 = _def_unary("round", "Round half to even (torch.round). Integers are returned unchanged (copied).")


def round(x, decimals=0):
    """Round half to even (torch.round); integers are returned unchanged (copied). With `decimals` (a static int),
    round to that many decimal places as torch.round(x, decimals=d) does: rint(x * 10**d) / 10**d, and for d < 0
    rint(x / 10**-d) * 10**-d (fp16/bf16: in float32, rounded once at the end)."""
    op = "round"
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise current(op).error(op, f"decimals must be a static int, got {decimals!r}")
    x = check_tensor(x, op)
    if decimals == 0 or not x.dtype.is_float:
        return _round0(x)
    p = float(10 ** builtins.abs(decimals))
    narrow = x.dtype in (DT.DT_FP16, DT.DT_BF16)  # torch keeps the three steps in float, rounding once at the end
    y = cast(x, DT.DT_FP32) if narrow else x
    y = div(_round0(mul(y, p)), p) if decimals > 0 else mul(_round0(div(y, p)), p)
    return cast(y, x.dtype) if narrow else y


# Math functions of the reference (torch's names and results): float dtypes are kept (fp16/bf16 computed in
# float32 and rounded once), integer and bool inputs give FP32 as in torch. The C++ is the C library's function
# (include/pypto/kernel_rt.h), within an ulp or two of torch's own (docs/language.md).
erf = _def_unary("erf", "Error function (torch.erf). Integer inputs give FP32.", float_only=True)
exp2 = _def_unary("exp2", "2 ** x (torch.exp2). Integer inputs give FP32.", float_only=True)
expm1 = _def_unary("expm1", "e ** x - 1, accurate near 0 (torch.expm1). Integer inputs give FP32.", float_only=True)
log1p = _def_unary("log1p", "log(1 + x), accurate near 0 (torch.log1p). Integer inputs give FP32.", float_only=True)
cbrt = _def_unary("cbrt", "Cube root (negative for negative x). Integer inputs give FP32.", float_only=True)
sin = _def_unary("sin", "Sine. Integer inputs give FP32.", float_only=True)
cos = _def_unary("cos", "Cosine. Integer inputs give FP32.", float_only=True)
tan = _def_unary("tan", "Tangent. Integer inputs give FP32.", float_only=True)
asin = _def_unary("asin", "Arcsine (NaN for |x| > 1). Integer inputs give FP32.", float_only=True)
acos = _def_unary("acos", "Arccosine (NaN for |x| > 1). Integer inputs give FP32.", float_only=True)
atan = _def_unary("atan", "Arctangent. Integer inputs give FP32.", float_only=True)
sinh = _def_unary("sinh", "Hyperbolic sine. Integer inputs give FP32.", float_only=True)
cosh = _def_unary("cosh", "Hyperbolic cosine. Integer inputs give FP32.", float_only=True)
asinh = _def_unary("asinh", "Inverse hyperbolic sine. Integer inputs give FP32.", float_only=True)
acosh = _def_unary("acosh", "Inverse hyperbolic cosine (NaN for x < 1). Integer inputs give FP32.", float_only=True)
atanh = _def_unary("atanh", "Inverse hyperbolic tangent (+-inf at +-1, NaN beyond). Integer inputs give FP32.",
                   float_only=True)

log2 = _def_unary("log2", "Base-2 logarithm (NaN below 0, -inf at 0). Integer inputs give FP32.", float_only=True,
                  precision=True)
log10 = _def_unary("log10", "Base-10 logarithm. Integer inputs give FP32.", float_only=True, precision=True)
reciprocal = _def_unary("reciprocal", "1 / x, correctly rounded (torch.reciprocal). Integer inputs give FP32.",
                        float_only=True, precision=True)


def sign(input):
    """-1, 0 or 1 in the input's dtype (torch.sign: NaN and -0.0 give 0). Not for bool."""
    return _unary("sign", input, "sign", keep_int=True)


def _predicate(fn: str, x, op: str):
    x = check_tensor(x, op, "input")
    if x.dtype == DT.DT_BOOL:
        raise current(op).error(op, "input must be a float or integer tensor, got a bool tensor")
    return elementwise(fn, [x], DT.DT_BOOL, (compute_dtype(x.dtype),), op)


def signbit(input):
    """Bool mask: the sign bit is set (negative numbers, -0.0, -inf and a NaN with the sign bit, as
    torch.signbit). Integer inputs: x < 0."""
    return _predicate("signbit", input, "signbit")


def isnan(input):
    """Bool mask of NaN elements (torch.isnan; integers: all False)."""
    return _predicate("isnan", input, "isnan")


def isfinite(input):
    """Bool mask of finite elements (not inf, -inf or NaN; integers: all True), as torch.isfinite."""
    return _predicate("isfinite", input, "isfinite")


def atan2(y, x):
    """Elementwise arctangent of y / x in the quadrant of (x, y), with broadcasting (torch.atan2). Integer
    operands give FP32."""
    return _binary("atan2", y, x, "atan2", float_only=True)


def hypot(input, other):
    """sqrt(input ** 2 + other ** 2) without intermediate overflow, with broadcasting (torch.hypot; fp16/bf16
    computed in float32). Integer operands give FP32 (torch.hypot refuses them)."""
    return _binary("hypot", input, other, "hypot", float_only=True)


def fmod(input, other, precision_type=None):
    """C-style remainder: input - trunc(input / other) * other, the sign of the dividend (torch.fmod), with
    broadcasting; `other` a tensor or a number. Integers: x fmod 0 is 0 here (torch raises). `precision_type`
    is accepted (no effect)."""
    return _binary("fmod", input, other, "fmod", precision_type=precision_type)


_INT_NAMES = "int8, int16, int32, int64, uint8"


def _integer_binary(fn: str, a, b, op: str, names=("input", "other"), allow_bool=False):
    """A binary op on integers (and bool where torch allows it); floats are refused naming the operand."""
    a = check_operand(a, op, names[0])
    b = check_operand(b, op, names[1])
    for v, what in ((a, names[0]), (b, names[1])):
        bad = (v.dtype.is_float or (v.dtype == DT.DT_BOOL and not allow_bool)) if isinstance(v, Value) else \
            (isinstance(v, float) or (isinstance(v, S.Sym) and S.kind_of(v) == S.FLOAT))
        if bad:
            got = f"a {v.dtype.short} tensor" if isinstance(v, Value) else f"{v!r}"
            allowed = _INT_NAMES + (", bool" if allow_bool else "")
            raise current(op).error(op, f"{what} must be an integer tensor or int ({allowed}), got {got}")
    dt = result_dtype([a, b], op)
    ct = compute_dtype(dt)
    return elementwise(fn, [a, b], dt, (ct, ct), op)


def gcd(input, other):
    """Greatest common divisor of |input| and |other|, with broadcasting (torch.gcd); `other` a tensor or an
    int. Integer dtypes only."""
    return _integer_binary("gcd", input, other, "gcd")


def bitwise_and(input, other):
    """input & other, with broadcasting; integer or bool tensors, `other` may be an int (torch.bitwise_and)."""
    return _integer_binary("bitwise_and", input, other, "bitwise_and", allow_bool=True)


def bitwise_or(input, other):
    """input | other, with broadcasting; integer or bool tensors (torch.bitwise_or)."""
    return _integer_binary("bitwise_or", input, other, "bitwise_or", allow_bool=True)


def bitwise_xor(input, other):
    """input ^ other, with broadcasting; integer or bool tensors (torch.bitwise_xor)."""
    return _integer_binary("bitwise_xor", input, other, "bitwise_xor", allow_bool=True)


def bitwise_left_shift(input, other):
    """input << other in the result dtype's width (torch.bitwise_left_shift: a count >= the width or negative
    gives 0). Either operand may be an int."""
    return _integer_binary("shl", input, other, "bitwise_left_shift")


def bitwise_right_shift(input, other):
    """input >> other, arithmetic for signed dtypes (torch.bitwise_right_shift: a count >= the width or negative
    fills with the sign bit). Either operand may be an int."""
    return _integer_binary("shr", input, other, "bitwise_right_shift")


def bitwise_not(input):
    """~input: bitwise NOT of integers, logical NOT of bool (torch.bitwise_not)."""
    op = "bitwise_not"
    x = check_tensor(input, op, "input")
    if x.dtype == DT.DT_BOOL:
        return elementwise("logical_not", [x], DT.DT_BOOL, (DT.DT_BOOL,), op)
    if x.dtype.is_float:
        raise current(op).error(op, f"input must be an integer or bool tensor ({_INT_NAMES}, bool), got a "
                                    f"{x.dtype.short} tensor")
    ct = compute_dtype(x.dtype)
    return elementwise("bitwise_not", [x], x.dtype, (ct,), op)


def logical_and(input, other):
    """Elementwise AND of truth values (nonzero / NaN is true), with broadcasting; the operands may have
    different dtypes; the result is a bool tensor (torch.logical_and)."""
    op = "logical_and"
    a = check_tensor(input, op, "input")
    b = check_tensor(other, op, "other")
    return elementwise("logical_and", [a, b], DT.DT_BOOL, (DT.DT_BOOL, DT.DT_BOOL), op)


def lrelu(input, negative_slope=0.01):
    """Leaky ReLU: x if x > 0 else negative_slope * x (torch.nn.functional.leaky_relu; the slope is applied in
    float32 for fp16/bf16/fp32, then rounded once). Float tensors only; the slope a finite number >= 0, as the
    reference requires."""
    op = "lrelu"
    x = check_tensor(input, op, "input")
    if not x.dtype.is_float:
        raise current(op).error(op, f"input must be a float tensor (float16, bfloat16, float32, float64), got a "
                                    f"{x.dtype.short} tensor")
    s = negative_slope
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s < 0:
        raise current(op).error(op, f"negative_slope must be a finite number >= 0, got {negative_slope!r}")
    ct = compute_dtype(x.dtype)
    return elementwise("lrelu", [x, float(s)], x.dtype, (ct, ct), op)


trunc = _def_unary("trunc", "Round toward zero (torch.trunc). Integers unchanged.")
floor = _def_unary("floor", "Round toward -inf. Integers unchanged.")
ceil = _def_unary("ceil", "Round toward +inf. Integers unchanged.")


def logical_not(x):
    """Elementwise not; the result is a bool tensor (nonzero -> False)."""
    x = check_tensor(x, "logical_not")
    return elementwise("logical_not", [x], DT.DT_BOOL, (DT.DT_BOOL,), "logical_not")


def clip(x, min=None, max=None):
    """Clamp x to [min, max] (either bound may be None; bounds are scalars or tensors). NaN propagates. The
    result dtype promotes x with the bounds, as torch.clamp does (int tensor, float bound -> FP32)."""
    op = "clip"
    x = check_tensor(x, op)
    if min is None and max is None:
        raise current(op).error(op, "at least one of min/max must be given")
    r = x
    if min is not None:
        r = maximum(r, min)
    if max is not None:
        r = minimum(r, max)
    return r


clamp = clip


def cast(x, dtype, mode=None, satmode=None):
    """Convert to `dtype`. float -> int truncates toward zero (as torch does); -> bool is `x != 0`;
    -> fp16/bf16 rounds to nearest even; -> FP8 goes through float32 and rounds as torch's .to() does
    (e4m3fn: NaN beyond 464, e5m2: inf from 61440, e8m0fnu: the exponent, ties up). To / from the packed FP4
    pair DT_FP4_E2M1X2 (from / to fp32, fp16, bf16) the last dim halves / doubles (fp4.py). `mode`
    (pypto.CastMode) and `satmode` (pypto.SaturationMode): the reference's rounding and saturation modes
    (cast_modes.py)."""
    op = "cast"
    x = check_tensor(x, op)
    dtype = check_dtype(dtype, op)
    if dtype == DT.DT_FP4_E2M1 and x.dtype != dtype:
        raise current(op).error(op, f"casting {x.dtype.short} to fp4_e2m1 is not supported: DT_FP4_E2M1 values "
                                    f"come only from kernel arguments; cast to DT_FP4_E2M1X2 (packed) instead")
    if dtype == DT.DT_HF8 and x.dtype.is_float and satmode is None:
        mode = None   # the reference converts to HiFloat8 with CAST_ROUND whatever mode is asked (kernel_hifloat8.h)
    if (x.dtype == DT.DT_FP4_E2M1X2) != (dtype == DT.DT_FP4_E2M1X2):
        if mode is not None or satmode is not None:
            raise current(op).error(op, f"mode / satmode are not supported yet for casts of the packed FP4 pair "
                                        f"(DT_FP4_E2M1X2): it rounds to nearest even and saturates at 6")
        return fp4_cast(x, dtype, op)     # the packed pair changes the last dim (fp4.py)
    if mode is not None or satmode is not None:   # the reference's rounding / saturation modes (cast_modes.py)
        from . import cast_modes
        from ..vocab.enums import CastMode, SaturationMode
        return cast_modes.cast_with_modes(sys.modules[__name__], x, dtype, CastMode.CAST_NONE if mode is None
                                          else mode, SaturationMode.OFF if satmode is None else satmode)
    return elementwise("cast", [x], dtype, (None,), op)


def _compare(fn: str, a, b, op: str):
    a = check_operand(a, op, "first operand")
    b = check_operand(b, op, "second operand")
    dt = result_dtype([a, b], op)
    ct = compute_dtype(dt)
    return elementwise(fn, _torch_scalars(fn, [a, b], dt), DT.DT_BOOL, (ct, ct), op)


def _def_compare(name: str, sym: str):
    return _named(lambda a, b: _compare(name, a, b, name), name,
                  f"a {sym} b -> bool mask (compared in the promoted dtype of a and b).")


eq = _def_compare("eq", "==")
ne = _def_compare("ne", "!=")
lt = _def_compare("lt", "<")
le = _def_compare("le", "<=")
gt = _def_compare("gt", ">")
ge = _def_compare("ge", ">=")


def where(mask, a, b):
    """mask ? a : b, broadcasting all three; `a`/`b` may be scalars. The result dtype promotes a and b."""
    op = "where"
    mask = check_tensor(mask, op, "mask")
    a = check_operand(a, op, "second operand")
    b = check_operand(b, op, "third operand")
    if isinstance(a, Value) or isinstance(b, Value):
        dt = result_dtype([a, b], op)
    else:
        dt = DT.DT_FP32 if (S.kind_of(a) == S.FLOAT or S.kind_of(b) == S.FLOAT) else DT.DT_INT64
    ct = compute_dtype(dt)
    return elementwise("where", [mask, a, b], dt, (DT.DT_BOOL, ct, ct), op)


def clone(x):
    """A fresh copy of x (its valid region)."""
    x = check_tensor(x, "clone")
    return elementwise("cast", [x], x.dtype, (None,), "clone")


__all__ = ["add", "sub", "mul", "div", "floor_divide", "floor_div", "remainder", "pow", "maximum", "minimum", "exp",
           "log",
           "sqrt", "erfc", "rsqrt", "tanh", "sigmoid", "relu", "abs", "neg", "round", "trunc", "floor", "ceil",
           "logical_not", "clip", "clamp", "cast", "eq", "ne", "lt", "le", "gt", "ge", "where", "clone",
           # math functions of the reference
           "erf", "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "reciprocal", "sin", "cos", "tan", "asin",
           "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "hypot", "fmod", "sign", "signbit",
           "isnan", "isfinite", "gcd", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
           "bitwise_left_shift", "bitwise_right_shift", "logical_and", "lrelu"]
