"""Symbolic scalars: DYNAMIC dims, loop variables, runtime scalars and arithmetic on them.

Integer expressions are kept in a canonical linear form (constant + sum of coefficient * atom), so that
`i*16 + 16 - i*16` folds to the int 16 and structurally equal shapes compare equal. Any operation whose
operands are all plain ints returns a plain int, never a Sym. `bool()` of a Sym is a trace-time error: the
value is only known when the kernel runs.
"""
from __future__ import annotations

import math

from ..errors import KernelTraceError

INT, FLOAT, BOOL = "int", "float", "bool"


def _scalar(x) -> bool:
    return isinstance(x, (int, float, Sym))


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

    # ---- arithmetic: the binary operators are installed from a table by _install_operators() below -----------
    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __invert__(self):
        return logical_not(self)

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


# ---- linear form --------------------------------------------------------------------------------------------

def _as_lin(x):
    """(const, {atom_key: [atom, coef]}) for an int or an int Sym."""
    if isinstance(x, Sym):
        if x.op == "lin":
            c, terms = x.args
            return c, {a.key: [a, k] for a, k in terms}
        if x.op == "imm":
            return x.args[0], {}
        return 0, {x.key: [x, 1]}
    return int(x), {}


def _make_lin(c: int, terms: dict):
    items = [(a, k) for a, k in terms.values() if k != 0]
    if not items:
        return c
    # min(a, b) + t -> min(a + t, b + t) (likewise max; -min(a, b) = max(-a, -b)): keeps tail sizes such as
    # min(r0 + 8, n) - r0 in the form min(8, n - r0), whose upper bound (8) sizes buffers statically.
    mm = [(a, k) for a, k in items if a.op in ("min", "max") and k in (1, -1)]
    if len(mm) == 1 and (len(items) > 1 or c != 0):
        atom, k = mm[0]
        rest = {a.key: [a, kk] for a, kk in items if a is not atom}
        rest_v = _make_lin(c, rest)
        x, y = atom.args
        if k == 1:
            f = smin if atom.op == "min" else smax
            return f(add(x, rest_v), add(y, rest_v))
        f = smax if atom.op == "min" else smin
        return f(sub(rest_v, x), sub(rest_v, y))
    if c == 0 and len(items) == 1 and items[0][1] == 1:
        return items[0][0]
    items.sort(key=lambda t: repr(t[0].key))
    return Sym("lin", (c, tuple(items)), INT, key=("lin", c, tuple((a.key, k) for a, k in items)))


def _check_operand(x, op):
    if isinstance(x, Sym) or (isinstance(x, (int, float)) and not isinstance(x, bool)):
        return
    if isinstance(x, bool):
        return
    raise TypeError(f"unsupported operand for symbolic '{op}': {x!r}")


def _both_int(a, b) -> bool:
    return kind_of(a) in (INT, BOOL) and kind_of(b) in (INT, BOOL)


def add(a, b):
    _check_operand(a, "+"), _check_operand(b, "+")
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return a + b
    if _both_int(a, b):
        ca, ta = _as_lin(a)
        cb, tb = _as_lin(b)
        for k, (atom, coef) in tb.items():
            if k in ta:
                ta[k] = [atom, ta[k][1] + coef]
            else:
                ta[k] = [atom, coef]
        return _make_lin(ca + cb, ta)
    return _fbin("+", a, b)


def neg(a):
    if not isinstance(a, Sym):
        return -a
    if a.kind == INT:
        return mul(a, -1)
    return _fbin("-", 0.0, a)


def sub(a, b):
    _check_operand(a, "-"), _check_operand(b, "-")
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return a - b
    if _both_int(a, b):
        return add(a, mul(b, -1))
    return _fbin("-", a, b)


def mul(a, b):
    _check_operand(a, "*"), _check_operand(b, "*")
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return a * b
    if _both_int(a, b):
        if not isinstance(a, Sym):
            a, b = b, a
        if not isinstance(b, Sym):
            k = int(b)
            c, terms = _as_lin(a)
            return _make_lin(c * k, {key: [atom, coef * k] for key, (atom, coef) in terms.items()})
        x, y = sorted((a, b), key=lambda s: repr(s.key))
        return Sym("mul", (x, y), INT)
    return _fbin("*", a, b)


def floordiv(a, b):
    _check_operand(a, "//"), _check_operand(b, "//")
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return a // b
    if not _both_int(a, b):
        raise KernelTraceError("symbolic '//' is supported on integers only")
    if isinstance(b, int):
        if b == 0:
            raise KernelTraceError("symbolic integer division by zero")
        if b == 1:
            return a
        if b > 0:
            c, terms = _as_lin(a)
            if c % b == 0 and all(coef % b == 0 for _, coef in terms.values()):
                return _make_lin(c // b, {k: [t, coef // b] for k, (t, coef) in terms.items()})
    return Sym("fdiv", (a, b), INT)


def mod(a, b):
    _check_operand(a, "%"), _check_operand(b, "%")
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return a % b
    if not _both_int(a, b):
        raise KernelTraceError("symbolic '%' is supported on integers only")
    if isinstance(b, int):
        if b == 0:
            raise KernelTraceError("symbolic integer modulo by zero")
        if b == 1 or b == -1:
            return 0
        c, terms = _as_lin(a)
        if b > 0 and c % b == 0 and all(coef % b == 0 for _, coef in terms.values()):
            return 0
    return Sym("mod", (a, b), INT)


def truediv(a, b):
    _check_operand(a, "/"), _check_operand(b, "/")
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return a / b
    return _fbin("/", a, b)


def _fbin(op, a, b):
    return Sym("fbin", (op, a, b), FLOAT)


def _const_diff(a, b):
    """a - b as an int when it is a constant, else None (int expressions only)."""
    if not _both_int(a, b):
        if not isinstance(a, Sym) and not isinstance(b, Sym):
            return a - b
        return None
    d = sub(a, b)
    return d if not isinstance(d, Sym) else None


def smin(a, b):
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return min(a, b)
    d = _const_diff(a, b)
    if d is not None:
        return a if d <= 0 else b
    x, y = sorted((a, b), key=lambda s: repr(_key(s)))
    return Sym("min", (x, y), INT if _both_int(a, b) else FLOAT)


def smax(a, b):
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return max(a, b)
    d = _const_diff(a, b)
    if d is not None:
        return a if d >= 0 else b
    x, y = sorted((a, b), key=lambda s: repr(_key(s)))
    return Sym("max", (x, y), INT if _both_int(a, b) else FLOAT)


_PY_CMP = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
           ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y}


def compare(op, a, b):
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return _PY_CMP[op](a, b)
    if not isinstance(a, (Sym, int, float)) or not isinstance(b, (Sym, int, float)):
        return NotImplemented
    d = _const_diff(a, b)
    if d is not None:
        return _PY_CMP[op](d, 0)
    return Sym("cmp", (op, a, b), BOOL)


def logical(op, a, b):
    if not isinstance(a, Sym) and not isinstance(b, Sym):
        return (bool(a) and bool(b)) if op == "and" else (bool(a) or bool(b))
    for x, y in ((a, b), (b, a)):
        if not isinstance(x, Sym):
            if op == "and":
                return y if x else False
            return True if x else y
    return Sym(op, (a, b), BOOL)


def logical_not(a):
    if not isinstance(a, Sym):
        return not a
    return Sym("not", (a,), BOOL)


def select(cond, a, b):
    """`a if cond else b` where `cond` may be symbolic: the value of a name assigned differently in the two
    branches of a kernel-level `if`. Ints and floats mix as in Python (the result is a float then)."""
    for v in (a, b):
        if not _scalar(v):
            raise KernelTraceError(f"select: {v!r} is not a scalar")
    if not isinstance(cond, Sym):
        return a if cond else b
    if a is b or (isinstance(a, Sym) and a.same(b)) or (type(a) is type(b) and not isinstance(a, Sym) and a == b):
        return a
    kinds = {kind_of(a), kind_of(b)}
    kind = FLOAT if FLOAT in kinds else INT if INT in kinds else BOOL
    return Sym("select", (cond, a, b), kind)


def upper_bound(x):
    """A static upper bound of int expression `x`, or None when unknown."""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if not isinstance(x, Sym) or x.kind != INT:
        return None
    if x.op == "imm":
        return x.args[0]
    if x.op == "min":
        bs = [b for b in (upper_bound(x.args[0]), upper_bound(x.args[1])) if b is not None]
        return min(bs) if bs else None
    if x.op in ("max", "select"):
        a, b = (upper_bound(x.args[0]), upper_bound(x.args[1])) if x.op == "max" else \
            (upper_bound(x.args[1]), upper_bound(x.args[2]))
        return None if a is None or b is None else max(a, b)
    return None


def all_of(conds):
    r = True
    for c in conds:
        r = logical("and", r, c)
    return r


# ---- inspection -------------------------------------------------------------------------------------------

def free_vars(x, out=None) -> dict:
    """{key: var Sym} of the vars `x` reads."""
    if out is None:
        out = {}
    if isinstance(x, Sym):
        if x.op == "var":
            out[x.key] = x
        elif x.op == "imm":
            pass
        elif x.op == "lin":
            for a, _ in x.args[1]:
                free_vars(a, out)
        else:
            for a in x.args:
                free_vars(a, out)
    elif isinstance(x, tuple):
        for a in x:
            free_vars(a, out)
    return out


def evaluate(x, env: dict, key=lambda var: var.args[0]):
    """The value of `x` with each variable looked up in `env` by `key(var)` (default: its display name; the
    verify interpreter keys by variable id). The one evaluator of symbolic scalars: it follows the generated
    C++ (integer // and % by zero give 0; float division by zero gives a signed inf or nan)."""
    if not isinstance(x, Sym):
        return x
    op, a = x.op, x.args
    ev = (lambda y: evaluate(y, env, key))
    if op == "var":
        return env[key(x)]
    if op == "imm":
        return a[0]
    if op == "lin":
        return a[0] + sum(k * ev(t) for t, k in a[1])
    if op == "mul":
        return ev(a[0]) * ev(a[1])
    if op in ("fdiv", "mod"):
        q, d = ev(a[0]), ev(a[1])
        return 0 if d == 0 else (q // d if op == "fdiv" else q % d)
    if op == "min":
        return min(ev(a[0]), ev(a[1]))
    if op == "max":
        return max(ev(a[0]), ev(a[1]))
    if op == "cmp":
        return _PY_CMP[a[0]](ev(a[1]), ev(a[2]))
    if op == "and":
        return bool(ev(a[0])) and bool(ev(a[1]))
    if op == "or":
        return bool(ev(a[0])) or bool(ev(a[1]))
    if op == "not":
        return not ev(a[0])
    if op == "select":
        return ev(a[1]) if ev(a[0]) else ev(a[2])
    if op == "fbin":
        lhs, rhs = float(ev(a[1])), float(ev(a[2]))
        if a[0] == "/":
            return lhs / rhs if rhs else (math.copysign(math.inf, lhs) if lhs else math.nan)
        return {"+": lhs + rhs, "-": lhs - rhs, "*": lhs * rhs}[a[0]]
    if op == "tofloat":
        return float(ev(a[0]))
    if op == "neg":
        return -ev(a[0])
    raise ValueError(f"cannot evaluate symbolic op {op}")


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


def _install_operators():
    """Sym's binary operators: `+ - * // % /` (and the reflected forms), comparisons (-> symbolic bools) and
    `& |` (logical and/or). Each returns NotImplemented for a non-scalar operand, so that e.g. a tensor's
    reflected operator runs for `i * tensor`."""
    def make(fn, reflected):
        def method(self, o):
            if not _scalar(o):
                return NotImplemented
            return fn(o, self) if reflected else fn(self, o)
        return method

    for name, fn in (("add", add), ("sub", sub), ("mul", mul), ("floordiv", floordiv), ("mod", mod),
                     ("truediv", truediv)):
        setattr(Sym, f"__{name}__", make(fn, False))
        setattr(Sym, f"__r{name}__", make(fn, True))
    for name, op in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="), ("ne", "!=")):
        setattr(Sym, f"__{name}__", make(lambda a, b, op=op: compare(op, a, b), False))
    for name in ("and", "or"):
        setattr(Sym, f"__{name}__", make(lambda a, b, name=name: logical(name, a, b), False))
    # the reference's scalar methods: `(n - i).min(16)` is min(n - i, 16)
    Sym.min = lambda self, o: smin(self, o)
    Sym.max = lambda self, o: smax(self, o)


_install_operators()
