"""C++ spellings: element types, compute types and the scalar expression of every elementwise op.

An elementwise template receives its arguments already converted to their compute type (float for
fp16/bf16/fp32, double for fp64, int64_t for integers, uint64_t for uint16/32/64, bool for bool) as {0}, {1},
..., with the "u" template where an op differs for unsigned; {ct} is the C++
compute type of the result. The generated store converts the expression to the result dtype with
pypto_rt::Cvt (round to nearest even for fp16/bf16, truncation toward zero for float -> int).
"""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT

CTYPE = {
    DT.DT_BOOL: "bool", DT.DT_INT8: "int8_t", DT.DT_INT16: "int16_t", DT.DT_INT32: "int32_t",
    DT.DT_INT64: "int64_t", DT.DT_UINT8: "uint8_t", DT.DT_FP16: "pypto_rt::half", DT.DT_BF16: "pypto_rt::bf16",
    DT.DT_FP32: "float", DT.DT_FP64: "double", DT.DT_UINT16: "uint16_t", DT.DT_UINT32: "uint32_t",
    DT.DT_UINT64: "uint64_t", DT.DT_FP8E4M3: "pypto_rt::fp8_e4m3fn", DT.DT_FP8E5M2: "pypto_rt::fp8_e5m2",
    DT.DT_FP8E8M0: "pypto_rt::fp8_e8m0fnu", DT.DT_FP4_E2M1X2: "pypto_rt::fp4_e2m1x2", DT.DT_HF8: "pypto_rt::hifloat8",
    DT.DT_FP4_E2M1: "pypto_rt::fp4_e2m1",   # one value per byte once unpacked (kernel_quant.h)
}


def ctype(dt) -> str:
    return CTYPE[DT(dt)]


def _fi(f: str, i: str, u: str | None = None):
    """(float template, integer template, unsigned 64-bit template when it differs)."""
    return {"f": f, "i": i, "u": u or i}


EW = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "div": "({0} / {1})",
    "floordiv": _fi("pypto_k::floor_divide<{ct}>({0}, {1})", "pypto_rt::floordiv({0}, {1})",
                    "pypto_rt::ufloordiv({0}, {1})"),
    "mod": _fi("pypto_rt::fremainder<{ct}>({0}, {1})", "pypto_rt::floormod({0}, {1})", "pypto_rt::ufloormod({0}, {1})"),
    "pow": _fi("pypto_rt::pow_({0}, {1})", "pypto_rt::ipow({0}, {1})", "pypto_rt::uipow({0}, {1})"),
    "maximum": "pypto_rt::maximum<{ct}>({0}, {1})",
    "minimum": "pypto_rt::minimum<{ct}>({0}, {1})",
    "exp": "pypto_rt::exp_({0})",
    "log": "pypto_rt::log_({0})",
    "sqrt": "pypto_rt::sqrt_({0})",
    "rsqrt": "(({ct})1 / pypto_rt::sqrt_({0}))",
    "tanh": "pypto_rt::tanh_({0})",
    "sigmoid": "pypto_rt::sigmoid<{ct}>({0})",
    "erfc": "pypto_rt::erfc_({0})",
    "erf": "pypto_rt::erf_({0})",
    "exp2": "pypto_rt::exp2_({0})",
    "expm1": "pypto_rt::expm1_({0})",
    "log2": "pypto_rt::log2_({0})",
    "log10": "pypto_rt::log10_({0})",
    "log1p": "pypto_rt::log1p_({0})",
    "cbrt": "pypto_rt::cbrt_({0})",
    "sin": "pypto_rt::sin_({0})",
    "cos": "pypto_rt::cos_({0})",
    "tan": "pypto_rt::tan_({0})",
    "asin": "pypto_rt::asin_({0})",
    "acos": "pypto_rt::acos_({0})",
    "atan": "pypto_rt::atan_({0})",
    "sinh": "pypto_rt::sinh_({0})",
    "cosh": "pypto_rt::cosh_({0})",
    "asinh": "pypto_rt::asinh_({0})",
    "acosh": "pypto_rt::acosh_({0})",
    "atanh": "pypto_rt::atanh_({0})",
    "reciprocal": "(({ct})1 / {0})",
    "atan2": "pypto_rt::atan2_({0}, {1})",
    "hypot": "pypto_rt::hypot_({0}, {1})",
    "fmod": _fi("pypto_rt::fmod_({0}, {1})", "pypto_rt::ifmod({0}, {1})"),
    "gcd": "pypto_rt::gcd_({0}, {1})",
    "bitwise_and": "({0} & {1})",
    "bitwise_or": "({0} | {1})",
    "bitwise_xor": "({0} ^ {1})",
    "bitwise_not": "(~{0})",
    "shl": "pypto_rt::shl({0}, {1})",
    "shr": "pypto_rt::shr({0}, {1})",
    "logical_and": "({0} && {1})",
    "sign": "(({ct})(({0} > 0) - ({0} < 0)))",
    "signbit": "pypto_rt::signbit_({0})",
    "isnan": "pypto_rt::isnan_({0})",
    "isfinite": "pypto_rt::isfinite_({0})",
    "lrelu": "({0} > 0 ? {0} : {0} * {1})",
    "prelu": "({0} > 0 ? {0} : {1} * {0})",
    "relu": "pypto_rt::maximum<{ct}>({0}, ({ct})0)",
    "abs": _fi("pypto_rt::fabs_({0})", "({0} < 0 ? -{0} : {0})", "{0}"),
    "neg": "(-{0})",
    "round": _fi("pypto_rt::rint_({0})", "{0}"),
    "trunc": _fi("pypto_rt::trunc_({0})", "{0}"),
    "floor": _fi("pypto_rt::floor_({0})", "{0}"),
    "ceil": _fi("pypto_rt::ceil_({0})", "{0}"),
    "logical_not": "(!{0})",
    "eq": "({0} == {1})",
    "ne": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "where": "({0} ? {1} : {2})",
    "cast": "{0}",
}


BLOCK_FNS = {"exp": "exp", "sin": "sin", "cos": "cos", "tan": "tan"}   # fp32 ops elem_loop runs a block at a time
# bf16 -> bf16 ops whose block (kernel_vmath.h sin_bf16_block & co.) relies on the argument being a bf16 value: a
# float-only reduction for |x| < 512, whose results round to the same bf16 as sin_/cos_ on every bf16 input
BF16_BLOCK_FNS = {"sin": "sin_bf16", "cos": "cos_bf16"}
# ...and those with a cheaper scalar form for a bf16 value whose result rounds to the same bf16 on every input
# (kernel_vmath.h erf_bf16_), used in vector lanes and the scalar tail alike
BF16_FNS = {"erf": "pypto_rt::erf_bf16_({0})"}


def ew_expr(fn: str, args: list, ct_dtype, hoist=None) -> str:
    """The expression of fn on args. `hoist(arg, fn) -> expression`, when given, takes the argument of a float32
    exp (also the one inside sigmoid), sin, cos or tan and returns what stands for fn of it: the emitter computes
    those a block at a time (pypto_rt::exp16 16 lanes at a time, pypto_rt::sin_block & co. a block with the fast
    argument reduction where the block allows it), with the scalar function's bits (emitter.py
    `EmitterCore.elem_loop`)."""
    if hoist is not None and ct_dtype is not None and DT(ct_dtype) == DT.DT_FP32 and (
            fn in BLOCK_FNS or fn == "sigmoid"):
        if fn == "sigmoid":
            return f"((float)1 / ((float)1 + {hoist(f'(-{args[0]})', 'exp')}))"     # sigmoid<float>, step for step
        return hoist(args[0], BLOCK_FNS[fn])
    t = EW[fn]
    if isinstance(t, dict):
        t = (t["f"] if ct_dtype is not None and DT(ct_dtype).is_float
             else t["u"] if ct_dtype is not None and DT(ct_dtype) == DT.DT_UINT64 else t["i"])
    ct = ctype(ct_dtype) if ct_dtype is not None else "auto"
    return t.format(*args, ct=ct)


# Ops whose result, computed in float from inputs that are all bf16 values, is itself a bf16 value (or a NaN): one
# of the inputs (maximum, minimum; relu's other side is 0), the input with its sign changed (neg, abs), an integer
# of at most 8 significant bits (floor, ceil, round, trunc: below 2^7 the result is an integer of magnitude <= 2^7,
# from 2^7 on bf16 holds only integers and the result is x itself), or -1, 0, 1 (sign). Rounding such a result
# to bf16 changes nothing, so its store narrows with pypto_rt::bf16_exact: the same bits, fewer instructions.
EXACT_OPS = frozenset({"neg", "abs", "relu", "maximum", "minimum", "floor", "ceil", "round", "trunc", "sign"})
# ...and of those, the ones that only touch the sign bit run on the bf16 bits themselves (kernel_rt.h)
SIGN_BIT_OPS = {"neg": "pypto_rt::bf16_neg({0})", "abs": "pypto_rt::bf16_abs({0})"}


def ew_store(fn: str, ins: list, cts: list, out_dtype, raw: list, args: list, hoist=None) -> str:
    """The value an elementwise op stores, in out_dtype: `Cvt<out>::from(<fn on args>)`, except where the result is
    a bf16 value by construction (EXACT_OPS, every input a bf16 value computed in float): then the exact narrowing,
    and for neg/abs the op on the input's bits. ins: the op's inputs (Values, or constants); raw: each input's load
    in its own dtype (its bf16 expression); args: the same converted to its compute type (ew_expr's arguments)."""
    from ..ir.nodes import Value

    out = DT(out_dtype)
    exact = (out == DT.DT_BF16 and fn in EXACT_OPS and len(ins) == len(cts) and all(
        isinstance(v, Value) and DT(v.dtype) == DT.DT_BF16 and ct is not None and DT(ct) == DT.DT_FP32
        for v, ct in zip(ins, cts)))
    if exact and fn in SIGN_BIT_OPS and len(raw) == 1:
        return SIGN_BIT_OPS[fn].format(raw[0])
    bf16_of_bf16 = (out == DT.DT_BF16 and len(ins) == 1 and len(cts) == 1 and isinstance(ins[0], Value)
                    and DT(ins[0].dtype) == DT.DT_BF16 and cts[0] is not None and DT(cts[0]) == DT.DT_FP32)
    if bf16_of_bf16 and hoist is not None and fn in BF16_BLOCK_FNS:
        return f"pypto_rt::Cvt<pypto_rt::bf16>::from({hoist(args[0], BF16_BLOCK_FNS[fn])})"
    if bf16_of_bf16 and fn in BF16_FNS:
        return f"pypto_rt::Cvt<pypto_rt::bf16>::from({BF16_FNS[fn].format(args[0])})"
    expr = ew_expr(fn, args, cts[-1], hoist)
    if exact:
        return f"pypto_rt::bf16_exact({expr})"
    return f"pypto_rt::Cvt<{ctype(out)}>::from({expr})"


REDUCE_INIT = {
    ("sum", "f"): "({ct})0", ("sum", "i"): "({ct})0",
    ("prod", "f"): "({ct})1", ("prod", "i"): "({ct})1",
    ("amax", "f"): "(-({ct})__builtin_inf())", ("amax", "i"): "(-INT64_C(9223372036854775807) - 1)",
    ("amin", "f"): "(({ct})__builtin_inf())", ("amin", "i"): "INT64_C(9223372036854775807)",
    ("sum", "u"): "({ct})0", ("prod", "u"): "({ct})1", ("amax", "u"): "({ct})0", ("amin", "u"): "(~({ct})0)",
}
REDUCE_STEP = {
    "sum": "{acc} + {v}",
    "prod": "{acc} * {v}",
    "amax": "pypto_rt::amax_step<{ct}>({acc}, {v})",
    "amin": "pypto_rt::amin_step<{ct}>({acc}, {v})",
}


# Helpers the generated code defines itself (source.py adds them only when a kernel uses `pypto_k::`).
# floor_divide is torch's div_floor_floating (c10/util/generic_math.h) step for step, so results (and the sign
# of zero) match torch bit for bit.
PRELUDE = """namespace pypto_k {
template <class T>
static inline T floor_divide(T a, T b) {
  if (b == 0) return a / b;
  T mod = pypto_rt::fmod_(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
  if (div == 0) return __builtin_copysign(T(0), a / b);
  T fl = pypto_rt::floor_(div);
  if (div - fl > T(0.5)) fl += T(1);
  return fl;
}
}  // namespace pypto_k"""


def c_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.append("?")
    return '"' + "".join(out) + '"'
