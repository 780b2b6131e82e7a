"""Symbolic scalars: DYNAMIC dims, loop variables, runtime scalars and arithmetic on them.

Integer expressions are kept in a canonical linear form (constant + sum of coefficient * atom), so that
`i*16 + 16 - i*16` folds to the int 16 and structurally equal shapes compare equal. Any operation whose
operands are all plain ints returns a plain int, never a Sym. `bool()` of a Sym is a trace-time error: the
value is only known when the kernel runs.

This module is the one face of symbolic scalars (`from ..ir import sym as S`): the arithmetic, inspection and
the operators are here; the type, its constructors and printing live in `sym_expr.py` and are re-exported.
"""
from __future__ import annotations

import math

from ..errors import KernelTraceError
from .sym_expr import (BOOL, FLOAT, INT, Sym, _key, concrete_int, cpp_float_literal, cpp_int_literal,  # noqa: F401
                       imm, is_int_like, is_sym, kind_of, symbolic_scalar, to_cpp, to_text, var)


def _scalar(x) -> bool:
    return isinstance(x, (int, float, Sym))


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


def _cancel_shifted(c: int, items: list):
    """min(p, q) - min(p - k, q - k) = k (likewise max): the pairs of such atoms in `items` (coefficients +1 and -1)
    folded into the constant, so that a slice `t[m - 1:m]` of a tail size m has the size 1."""
    for a, ka in items:
        for b, kb in items:
            if ka != 1 or kb != -1 or a.op != b.op or a.op not in ("min", "max"):
                continue
            for p2, q2 in (b.args, b.args[::-1]):
                d = _const_diff(a.args[0], p2)
                if d is not None and d == _const_diff(a.args[1], q2):
                    rest = [(x, k) for x, k in items if x is not a and x is not b]
                    return _cancel_shifted(c + d, rest)
    return c, items


def _make_lin(c: int, terms: dict):
    items = [(a, k) for a, k in terms.values() if k != 0]
    c, items = _cancel_shifted(c, items)
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


def _install_operators():
    """Sym's operators: `+ - * // % /` (and the reflected forms), comparisons (-> symbolic bools), `& |`
    (logical and/or), unary `-` and `~` (logical not). Each binary one returns NotImplemented for a non-scalar
    operand, so that e.g. a tensor's reflected operator runs for `i * tensor`."""
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
    setattr(Sym, "__neg__", neg)
    setattr(Sym, "__invert__", logical_not)
    # the reference's scalar methods: `(n - i).min(16)` is min(n - i, 16)
    Sym.min = lambda self, o: smin(self, o)
    Sym.max = lambda self, o: smax(self, o)


_install_operators()
