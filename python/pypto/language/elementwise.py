"""Elementwise operations: arithmetic, math functions, comparisons, where, cast.

Every op computes on the logical (valid) region of its operands, broadcasting numpy-style. fp16/bf16 values
are computed in float32 and rounded back to the result dtype after each op (what torch does on CPU, so
results match torch bit for bit for IEEE-exact ops). The C++ scalar expression of each op lives in
codegen/elementwise.py under the same name.
"""
from __future__ import annotations

from ._helpers import (DT, S, Value, check_dtype, check_operand, check_tensor, compute_dtype, current,
                       elementwise, result_dtype)


def _binary(fn: str, a, b, op: str, out_dtype=None, float_only=False):
    a = check_operand(a, op, "first operand")
    b = check_operand(b, op, "second operand")
    dt = result_dtype([a, b], op)
    if float_only and not dt.is_float:
        dt = DT.DT_FP32
    ct = compute_dtype(dt)
    return elementwise(fn, [a, b], out_dtype or dt, (ct, ct), op)


def add(a, b):
    """a + b with broadcasting; see ir/infer.py for the result dtype."""
    return _binary("add", a, b, "add")


def sub(a, b):
    """a - b with broadcasting."""
    return _binary("sub", a, b, "sub")


def mul(a, b):
    """a * b with broadcasting."""
    return _binary("mul", a, b, "mul")


def div(a, b):
    """True division a / b. Integer (or bool) operands give an FP32 result, as torch.div does."""
    return _binary("div", a, b, "div", float_only=True)


def floor_divide(a, b):
    """a // b (floor division, torch.floor_divide). Integer division by zero yields 0."""
    return _binary("floordiv", a, b, "floor_divide")


def remainder(a, b):
    """a % b with the sign of the divisor (Python / torch.remainder semantics)."""
    return _binary("mod", a, b, "remainder")


def pow(a, b):
    """a ** b. Integer ** integer stays integer (negative exponents follow torch: 0 except for |a| == 1)."""
    return _binary("pow", a, b, "pow")


def maximum(a, b):
    """Elementwise maximum; NaN propagates (torch.maximum)."""
    return _binary("maximum", a, b, "maximum")


def minimum(a, b):
    """Elementwise minimum; NaN propagates (torch.minimum)."""
    return _binary("minimum", a, b, "minimum")


def _unary(fn: str, x, op: str, float_only=False, keep_int=False):
    x = check_tensor(x, op)
    dt = x.dtype
    if float_only and not dt.is_float:
        dt = DT.DT_FP32
    if dt == DT.DT_BOOL and keep_int:
        raise current(op).error(op, "not supported for bool tensors")
    ct = compute_dtype(dt)
    return elementwise(fn, [x], dt, (ct,), op)


def exp(x):
    """e ** x. Integer inputs give FP32 (torch.exp)."""
    return _unary("exp", x, "exp", float_only=True)


def log(x):
    """Natural logarithm. Integer inputs give FP32."""
    return _unary("log", x, "log", float_only=True)


def sqrt(x):
    """Square root. Integer inputs give FP32."""
    return _unary("sqrt", x, "sqrt", float_only=True)


def rsqrt(x):
    """1 / sqrt(x). Integer inputs give FP32."""
    return _unary("rsqrt", x, "rsqrt", float_only=True)


def tanh(x):
    """Hyperbolic tangent. Integer inputs give FP32."""
    return _unary("tanh", x, "tanh", float_only=True)


def sigmoid(x):
    """1 / (1 + exp(-x)). Integer inputs give FP32."""
    return _unary("sigmoid", x, "sigmoid", float_only=True)


def relu(x):
    """max(x, 0) (NaN propagates)."""
    return _unary("relu", x, "relu", keep_int=True)


def abs(x):
    """|x|."""
    return _unary("abs", x, "abs", keep_int=True)


def neg(x):
    """-x."""
    return _unary("neg", x, "neg", keep_int=True)


def round(x):
    """Round half to even (torch.round). Integers are returned unchanged (copied)."""
    return _unary("round", x, "round")


def floor(x):
    """Round toward -inf."""
    return _unary("floor", x, "floor")


def ceil(x):
    """Round toward +inf."""
    return _unary("ceil", x, "ceil")


def logical_not(x):
    """Elementwise not; the result is a bool tensor (nonzero -> False)."""
    x = check_tensor(x, "logical_not")
    return elementwise("logical_not", [x], DT.DT_BOOL, (DT.DT_BOOL,), "logical_not")


def clip(x, min=None, max=None):
    """Clamp x to [min, max] (either bound may be None; bounds are scalars or tensors). NaN propagates."""
    op = "clip"
    x = check_tensor(x, op)
    if min is None and max is None:
        raise current(op).error(op, "at least one of min/max must be given")
    r = x
    if min is not None:
        r = maximum(r, min)
    if max is not None:
        r = minimum(r, max)
    if r.dtype != x.dtype:
        r = cast(r, x.dtype)
    return r


clamp = clip


def cast(x, dtype):
    """Convert to `dtype`. float -> int truncates toward zero (as torch does); -> bool is `x != 0`;
    -> fp16/bf16 rounds to nearest even."""
    op = "cast"
    x = check_tensor(x, op)
    dtype = check_dtype(dtype, op)
    return elementwise("cast", [x], dtype, (None,), op)


def _compare(fn: str, a, b, op: str):
    a = check_operand(a, op, "first operand")
    b = check_operand(b, op, "second operand")
    ct = compute_dtype(result_dtype([a, b], op))
    return elementwise(fn, [a, b], DT.DT_BOOL, (ct, ct), op)


def eq(a, b):
    """a == b -> bool mask."""
    return _compare("eq", a, b, "eq")


def ne(a, b):
    """a != b -> bool mask."""
    return _compare("ne", a, b, "ne")


def lt(a, b):
    """a < b -> bool mask."""
    return _compare("lt", a, b, "lt")


def le(a, b):
    """a <= b -> bool mask."""
    return _compare("le", a, b, "le")


def gt(a, b):
    """a > b -> bool mask."""
    return _compare("gt", a, b, "gt")


def ge(a, b):
    """a >= b -> bool mask."""
    return _compare("ge", a, b, "ge")


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
           "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "abs", "neg", "round", "floor", "ceil", "logical_not",
           "clip", "clamp", "cast", "eq", "ne", "lt", "le", "gt", "ge", "where", "clone"]
