"""Elementwise operations: arithmetic, math functions, comparisons, where, cast.

Every op computes on the logical (valid) region of its operands, broadcasting numpy-style. fp16/bf16 values
are computed in float32 and rounded back to the result dtype after each op (what torch does on CPU, so
results match torch bit for bit for IEEE-exact ops). The C++ scalar expression of each op lives in
codegen/templates.py (EW) under the op's template name. Rules: docs/language.md.
"""
from __future__ import annotations

import builtins

from ..ir.infer import KEEPS_SCALAR, round_scalar
from .fp4 import fp4_cast
from ._helpers import (DT, S, Value, check_dtype, check_operand, check_tensor, compute_dtype, current,
                       elementwise, result_dtype)


def _torch_scalars(fn: str, args, dt):
    """Python-number operands as torch computes with them next to an fp16/bf16 tensor (ir/infer.py)."""
    return [x if isinstance(x, Value) or (fn, i) in KEEPS_SCALAR else round_scalar(x, dt)
            for i, x in enumerate(args)]


def _binary(fn: str, a, b, op: str, out_dtype=None, float_only=False):
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


def _def_binary(name: str, fn: str, doc: str, float_only=False):
    return _named(lambda a, b: _binary(fn, a, b, name, float_only=float_only), name, doc)


# name, C++ template (codegen/templates.py EW), docstring; result dtypes: docs/language.md "dtype promotion"
add = _def_binary("add", "add", "a + b with broadcasting (a, b: tensors or scalars).")
sub = _def_binary("sub", "sub", "a - b with broadcasting.")
mul = _def_binary("mul", "mul", "a * b with broadcasting.")
div = _def_binary("div", "div", "True division a / b. Integer (or bool) operands give an FP32 result, as torch.div "
                                "does.", float_only=True)
floor_divide = _def_binary("floor_divide", "floordiv", "a // b (torch.floor_divide, bit for bit for floats). "
                                                       "Integer division by zero yields 0.")
remainder = _def_binary("remainder", "mod", "a % b with the sign of the divisor (Python / torch.remainder). "
                                            "Integer x % 0 yields 0.")
pow = _def_binary("pow", "pow", "a ** b. Integer ** integer stays integer (a negative exponent gives 0 except for "
                                "|a| == 1).")
maximum = _def_binary("maximum", "maximum", "Elementwise maximum; NaN propagates (torch.maximum).")
minimum = _def_binary("minimum", "minimum", "Elementwise minimum; NaN propagates (torch.minimum).")


def _unary(fn: str, x, op: str, float_only=False, keep_int=False):
    x = check_tensor(x, op)
    dt = x.dtype
    if float_only and not dt.is_float:
        dt = DT.DT_FP32
    if dt == DT.DT_BOOL and keep_int:
        raise current(op).error(op, "not supported for bool tensors")
    ct = compute_dtype(dt)
    return elementwise(fn, [x], dt, (ct,), op)


def _def_unary(name: str, doc: str, float_only=False, keep_int=False):
    return _named(lambda x: _unary(name, x, name, float_only=float_only, keep_int=keep_int), name, doc)


exp = _def_unary("exp", "e ** x. Integer inputs give FP32 (torch.exp).", float_only=True)
log = _def_unary("log", "Natural logarithm. Integer inputs give FP32.", float_only=True)
sqrt = _def_unary("sqrt", "Square root (correctly rounded). Integer inputs give FP32.", float_only=True)
rsqrt = _def_unary("rsqrt", "1 / sqrt(x). Integer inputs give FP32.", float_only=True)
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


def cast(x, dtype):
    """Convert to `dtype`. float -> int truncates toward zero (as torch does); -> bool is `x != 0`;
    -> fp16/bf16 rounds to nearest even; -> FP8 goes through float32 and rounds as torch's .to() does
    (e4m3fn: NaN beyond 464, e5m2: inf from 61440, e8m0fnu: the exponent, ties up). To / from the packed FP4
    pair DT_FP4_E2M1X2 (from / to fp32, fp16, bf16) the last dim halves / doubles (fp4.py)."""
    op = "cast"
    x = check_tensor(x, op)
    dtype = check_dtype(dtype, op)
    if (x.dtype == DT.DT_FP4_E2M1X2) != (dtype == DT.DT_FP4_E2M1X2):
        return fp4_cast(x, dtype, op)     # the packed pair changes the last dim (fp4.py)
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


__all__ = ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "exp", "log",
           "sqrt", "erfc", "rsqrt", "tanh", "sigmoid", "relu", "abs", "neg", "round", "trunc", "floor", "ceil",
           "logical_not", "clip", "clamp", "cast", "eq", "ne", "lt", "le", "gt", "ge", "where", "clone"]
