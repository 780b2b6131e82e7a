"""The symbolic scalar's type: `Sym`, its constructors and kinds, and how it prints (text for IR dumps and
messages, C++ for the generated kernel).

The arithmetic that builds Syms (the canonical linear form, comparisons, select) and the operators on `Sym`
live in `sym.py`, which re-exports every public name here: callers use `from ..ir import sym as S`.
"""
from __future__ import annotations

from ..errors import KernelTraceError

INT, FLOAT, BOOL = "int", "float", "bool"


class Sym:
    """An immutable symbolic scalar. `op` is one of: var, lin, mul, fdiv, mod, min, max, cmp, and, or, not,
    fbin (float arithmetic), tofloat, neg (float), select (cond ? a : b), imm (a concrete int made by the
    public constructor, args (value, name)).

    Public face: `pypto.SymbolicScalar` (= `pypto.symbolic_scalar`) is this class; `isinstance(n,
    pypto.SymbolicScalar)` holds for a DYNAMIC dim, a loop index, a runtime scalar and arithmetic on them.
    Calling it as the reference does (`SymbolicScalar()`, `(10)`, `("x")`, `("x", 10)`, `(other)`) goes
    through `Sym.__new__` to `symbolic_scalar()` below; the IR builds its own Syms with `(op, args, kind)`."""

    def __new__(cls, *args, **kw):
        if len(args) >= 3 or "kind" in kw:
            return object.__new__(cls)
        return symbolic_scalar(*args, **kw)

    __slots__ = ("op", "args", "kind", "key", "_hash", "scope")

    def __init__(self, op: str = None, args: tuple = None, kind: str = None, key=None, scope=None):
        if kind is None or not isinstance(args, tuple):   # the public constructor: built by __new__
            return
        self.op = op
        self.args = args
        self.kind = kind
        self.key = key if key is not None else (op, kind) + tuple(_key(a) for a in args)
        self._hash = hash(self.key)
        self.scope = scope          # for vars: the loop block that defines them (None = kernel entry)

    # ---- the reference's SymbolicScalar methods ---------------------------------------------------------
    def is_concrete(self) -> bool:
        """True when the value is known now (an immediate)."""
        return self.op == "imm"

    def concrete(self) -> int:
        """The value of an immediate; ValueError for a value known only when the kernel runs."""
        if self.op != "imm":
            raise KernelTraceError(f"Not concrete value: `{self}` is only known when the kernel runs")
        return self.args[0]

    def is_symbol(self) -> bool:
        """True for a free symbol (a DYNAMIC dim, a loop index, a runtime scalar, SymbolicScalar("x"))."""
        return self.op == "var"

    def is_expression(self) -> bool:
        """True for arithmetic on symbols (neither a symbol nor an immediate)."""
        return self.op not in ("var", "imm")

    def is_immediate(self) -> bool:
        """True for a constant (SymbolicScalar(10))."""
        return self.op == "imm"

    def as_variable(self) -> None:
        """The reference marks an expression as an intermediate variable (an NPU code-size hint). The generated
        C++ here already evaluates each symbolic expression once per use site; accepted, no effect."""
        return None

    # ---- trace-time misuse ----------------------------------------------------------------------------
    def __bool__(self):
        if self.op == "imm":
            return bool(self.args[0])
        raise KernelTraceError(
            f"the symbolic value `{self}` is only known when the kernel runs; a Python `if`/`while`/`and`/`or` "
            f"cannot branch on it. Use a static (compile-time) value, pypto.min/pypto.max, pypto.where, or "
            f"pypto.cond for a kernel-level branch")

    def __index__(self):
        if self.op == "imm":
            return self.args[0]
        raise KernelTraceError(
            f"the symbolic value `{self}` cannot be used where Python needs a concrete int (range(), list "
            f"index, ...); use pypto.loop(...) for loops with symbolic bounds")

    def __int__(self):
        return self.__index__()

    def __float__(self):
        return float(self.__index__())

    def __hash__(self):
        return self._hash

    def same(self, other) -> bool:
        return isinstance(other, Sym) and other.key == self.key

    # ---- arithmetic: the operators are installed by sym._install_operators (the arithmetic lives there) -------
    def __pos__(self):
        return self

    def __repr__(self):
        return to_text(self)

    __str__ = __repr__


def _key(a):
    if isinstance(a, Sym):
        return a.key
    if isinstance(a, tuple):
        return tuple(_key(x) for x in a)
    if isinstance(a, float):
        return ("f", a.hex())
    return a


def symbolic_scalar(arg0=None, arg1=None) -> Sym:
    """The reference's SymbolicScalar constructor: () an unnamed symbol; (int) an immediate; (str) a named
    symbol; (str, int) a named immediate (the name is kept for printing); (Sym) that value. A symbol made here
    has no value inside a kernel: reading it there is a trace error (builder.use)."""
    if isinstance(arg0, Sym):
        return arg0
    if isinstance(arg0, bool):
        raise TypeError(f"SymbolicScalar: expected an int, a name or a SymbolicScalar, got {arg0!r}")
    if isinstance(arg0, int):
        return imm(arg0)
    if arg0 is None or isinstance(arg0, str):
        name = arg0 if arg0 else "sym"
        if arg1 is None:
            return var(name, None)
        if isinstance(arg1, bool) or not isinstance(arg1, int):
            raise TypeError(f"SymbolicScalar: the value of {name!r} must be an int, got {arg1!r}")
        return imm(arg1, name)
    raise TypeError(f"SymbolicScalar: expected an int, a name or a SymbolicScalar, got {type(arg0).__name__} "
                    f"{arg0!r}")


def imm(value: int, name=None) -> Sym:
    """An immediate int Sym (what SymbolicScalar(10) returns). Arithmetic on it folds to plain ints; the
    language layer turns it into its int where a size or scalar operand is read (concrete_int)."""
    return Sym("imm", (int(value), name), INT, key=("imm", int(value)))


def concrete_int(x):
    """x, or the int of an immediate Sym."""
    return x.args[0] if isinstance(x, Sym) and x.op == "imm" else x


def var(name: str, cname: str, kind: str = INT, scope=None) -> Sym:
    """A free symbol. `cname` is the C++ expression that reads it (a local variable name)."""
    return Sym("var", (name, cname), kind, key=("var", kind, cname), scope=scope)


def is_sym(x) -> bool:
    return isinstance(x, Sym)


def is_int_like(x) -> bool:
    return (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, Sym) and x.kind == INT)


def kind_of(x) -> str:
    if isinstance(x, Sym):
        return x.kind
    if isinstance(x, bool):
        return BOOL
    if isinstance(x, int):
        return INT
    if isinstance(x, float):
        return FLOAT
    raise TypeError(f"not a scalar: {x!r}")


# ---- printing ----------------------------------------------------------------------------------------------

# How each Sym op prints, as text (IR dumps, messages) and as C++ (int64_t for INT, double for FLOAT, bool for
# BOOL). "var" and "lin" are printed by code; cmp/fbin carry their operator in args[0] ({op}). A (op, kind) key
# overrides the op's entry for that kind.
_TEXT = {"mul": "{0}*{1}", "fdiv": "({0} // {1})", "mod": "({0} % {1})", "min": "min({0}, {1})",
         "max": "max({0}, {1})", "cmp": "({1} {op} {2})", "and": "({0} and {1})", "or": "({0} or {1})",
         "not": "(not {0})", "fbin": "({1} {op} {2})", "select": "({1} if {0} else {2})"}
_CPP = {"mul": "({0} * {1})", "fdiv": "pypto_rt::floordiv({0}, {1})", "mod": "pypto_rt::floormod({0}, {1})",
        ("min", INT): "pypto_rt::imin({0}, {1})", ("max", INT): "pypto_rt::imax({0}, {1})",
        ("min", FLOAT): "pypto_rt::fmin_((double){0}, (double){1})",
        ("max", FLOAT): "pypto_rt::fmax_((double){0}, (double){1})",
        "cmp": "({1} {op} {2})", "and": "({0} && {1})", "or": "({0} || {1})", "not": "(!{0})",
        "fbin": "((double){1} {op} (double){2})", ("select", INT): "({0} ? (int64_t){1} : (int64_t){2})",
        ("select", FLOAT): "({0} ? (double){1} : (double){2})", ("select", BOOL): "({0} ? (bool){1} : (bool){2})"}


def _render(x, rec, table):
    """x printed with `table`, its operands with `rec`; None when the table has no entry."""
    t = table.get((x.op, x.kind), table.get(x.op))
    if t is None:
        return None
    if x.op in ("cmp", "fbin"):
        return t.format(None, rec(x.args[1]), rec(x.args[2]), op=x.args[0])
    return t.format(*(rec(v) for v in x.args))


def _lin_terms(args, rec, scaled, const) -> list:
    """The printed terms of a linear form (const, ((atom, coef), ...)): `scaled(k, atom_text)` for k != 1."""
    parts = [rec(t) if k == 1 else scaled(k, rec(t)) for t, k in args[1]]
    if args[0]:
        parts.append(const(args[0]))
    return parts


def to_text(x) -> str:
    if not isinstance(x, Sym):
        return repr(x)
    op, a = x.op, x.args
    if op == "var":
        return a[0]
    if op == "imm":
        return str(a[0])
    if op == "lin":
        out = " + ".join(_lin_terms(a, to_text, lambda k, s: f"-{s}" if k == -1 else f"{k}*{s}", str))
        return f"({out.replace('+ -', '- ')})"
    r = _render(x, to_text, _TEXT)
    return r if r is not None else f"{op}{a}"


def cpp_float_literal(v: float) -> str:
    v = float(v)
    if v != v:
        return "__builtin_nan(\"\")"
    if v in (float("inf"), float("-inf")):
        return "__builtin_inf()" if v > 0 else "(-__builtin_inf())"
    return f"{v.hex()}" if v >= 0 else f"(-{(-v).hex()})"


def cpp_int_literal(v: int) -> str:
    v = int(v)
    if not -(2 ** 63) <= v < 2 ** 63:  # would wrap silently in C++ (docs/security.md: constants keep their value)
        raise OverflowError(f"integer constant {v} does not fit the kernel's 64-bit integers")
    if -(2 ** 31) < v < 2 ** 31:
        return str(v) if v >= 0 else f"({v})"
    if v == -(2 ** 63):
        return "(-INT64_C(9223372036854775807) - 1)"
    return f"INT64_C({v})" if v >= 0 else f"(INT64_C({v}))"


def to_cpp(x) -> str:
    """C++ expression (int64_t arithmetic for INT, double for FLOAT, bool for BOOL)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return cpp_int_literal(x)
    if isinstance(x, float):
        return cpp_float_literal(x)
    op, a = x.op, x.args
    if op == "var":
        if a[1] is None:
            raise ValueError(f"the symbolic scalar `{a[0]}` made by pypto.SymbolicScalar has no value in a kernel")
        return a[1]
    if op == "imm":
        return cpp_int_literal(a[0])
    if op == "lin":
        return "(" + " + ".join(_lin_terms(a, to_cpp, lambda k, s: f"{cpp_int_literal(k)} * {s}",
                                           cpp_int_literal)) + ")"
    r = _render(x, to_cpp, _CPP)
    if r is not None:
        return r
    raise ValueError(op)
