"""Random elementwise/reduction expression kernels (hypothesis) compared with the same expressions in torch.

Each example draws 1-3 inputs (random broadcast-compatible shapes, dtypes from the group, mixed dtypes
included), a random seed for their data, and EXPRS_PER_KERNEL distinct random expression trees (depth <= 3)
over the inputs and Python scalars, each optionally ending in a reduction (sum / amax / amin / mean over a
random dim or all dims, keepdim random). By default every example is its own kernel with one expression
(4 groups x 55 examples = 220 kernels, each traced, generated and compiled with g++ and compared with torch); the
test asserts that at least 50 distinct ones (expression text, dtypes, shapes) were checked per group, i.e. >= 200
in all. PYPTO_HYPOTHESIS_EXPRS_PER_KERNEL=10 batches expressions into multi-output kernels (one output each) for
long soak runs with PYPTO_HYPOTHESIS_EXAMPLES.

The torch reference evaluates the same tree with the same dtypes (torch also rounds fp16/bf16 after every op).
Tolerances:
  * integer results, and float results whose tree has only correctly rounded ops (+ - * / abs neg relu
    maximum minimum where comparisons floor round remainder floor_divide, amax/amin): bit-exact;
    discontinuous ops (comparisons, floor, round, //, %) are only drawn over such exact subtrees;
  * otherwise (exp, log, tanh, sigmoid, rsqrt from a different libm; sums in a different order):
    |got - want| <= tol * (1 + |want|) + tol * scale, tol = 8e-6 (fp32), 4e-3 (fp16), 3.2e-2 (bf16) for the
    least precise dtype among the expression's inputs and its result (mixed-dtype trees round there), where
    scale is the largest magnitude of any intermediate value (times the reduced element count for sum), which
    bounds the error that cancellation can expose.
"""
import os

import pytest
import torch
from hypothesis import HealthCheck, Phase, assume, given, seed, settings
from hypothesis import strategies as st

import pypto

from _multi import multi_kernel

EXPRS_PER_KERNEL = int(os.environ.get("PYPTO_HYPOTHESIS_EXPRS_PER_KERNEL", "1"))  # >1: several outputs per kernel
EXAMPLES = int(os.environ.get("PYPTO_HYPOTHESIS_EXAMPLES", "55"))   # raise it for a longer soak run
SOAK_SEED = os.environ.get("PYPTO_HYPOTHESIS_SEED")                  # set: other (still reproducible) examples
MIN_DISTINCT = 50
TOL = {torch.float32: 8e-6, torch.float16: 4e-3, torch.bfloat16: 3.2e-2}
GROUPS = {
    "fp32": [torch.float32, torch.float32, torch.int32],
    "fp16": [torch.float16, torch.float16, torch.float32],
    "bf16": [torch.bfloat16, torch.bfloat16, torch.float16],
    "int32": [torch.int32, torch.int32, torch.int16],
}
DIMS = [1, 2, 3, 5, 7, 8, 13, 33]
F_SCALARS = [0.1, 0.5, 1.3, 2, 3, -1.5, -0.7, 7]
I_SCALARS = [2, 3, -1, 5, -7, 0.5]


class Node:
    """One expression: `run(lib, xs)` evaluates it with lib = pypto or torch; exact = no inexact op inside."""

    def __init__(self, text, run, exact, shape, inputs):
        self.text, self.run, self.exact, self.shape, self.inputs = text, run, exact, shape, inputs

    def __repr__(self):
        return self.text


def _bshape(*shapes):
    return tuple(torch.broadcast_shapes(*shapes))


def _safe(lib, x):
    """|x| + 1: a divisor that is never zero."""
    return abs(x) + 1 if isinstance(x, (int, float)) else lib.abs(x) + 1


# name -> (text format, fn(lib, x) or fn(lib, x, y), exact, needs exact operands, allowed for ints)
UNARY = {
    "neg": ("-{0}", lambda L, x: -x, True, False, True),
    "abs": ("abs({0})", lambda L, x: L.abs(x), True, False, True),
    "relu": ("relu({0})", lambda L, x: L.relu(x), True, False, True),
    "sqrt": ("sqrt(|{0}|)", lambda L, x: L.sqrt(L.abs(x)), False, False, False),  # torch: not always correctly rounded
    "exp": ("exp(clip({0}))", lambda L, x: L.exp(L.clamp(x, -4.0, 4.0)), False, False, False),
    "tanh": ("tanh({0})", lambda L, x: L.tanh(x), False, False, False),
    "sigmoid": ("sigmoid({0})", lambda L, x: L.sigmoid(x), False, False, False),
    "log": ("log(|{0}|+1)", lambda L, x: L.log(L.abs(x) + 1.0), False, False, False),
    "rsqrt": ("rsqrt(|{0}|+1)", lambda L, x: L.rsqrt(L.abs(x) + 1.0), False, False, False),
    "floor": ("floor({0})", lambda L, x: L.floor(x), True, True, False),
    "round": ("round({0})", lambda L, x: L.round(x), True, True, False),
}
BINARY = {
    "add": ("({0} + {1})", lambda L, x, y: x + y, True, False, True),
    "sub": ("({0} - {1})", lambda L, x, y: x - y, True, False, True),
    "mul": ("({0} * {1})", lambda L, x, y: x * y, True, False, True),
    "div": ("({0} / (|{1}|+1))", lambda L, x, y: x / _safe(L, y), True, False, False),
    "max": ("maximum({0}, {1})", lambda L, x, y: L.maximum(x, y), True, False, True),
    "min": ("minimum({0}, {1})", lambda L, x, y: L.minimum(x, y), True, False, True),
    "where": ("where({0} > {1}, {0} - {1}, {1})", lambda L, x, y: L.where(x > y, x - y, y), True, True, True),
    "floordiv": ("({0} // (|{1}|+1))", lambda L, x, y: x // _safe(L, y), True, True, True),
    "mod": ("({0} % (|{1}|+1))", lambda L, x, y: x % _safe(L, y), True, True, True),
}


class _Lib:
    """The op names above on pypto or torch."""

    def __init__(self, mod):
        self.m = mod

    def __getattr__(self, name):
        if self.m is pypto and name == "clamp":
            return pypto.clip
        if self.m is torch and name in ("maximum", "minimum"):   # torch.maximum takes no scalars: clamp does
            f = getattr(torch, name)
            key = "min" if name == "maximum" else "max"
            return lambda x, y: torch.clamp(x, **{key: y}) if _scalar_operand(y) else f(x, y)
        return getattr(self.m, name)


PP, TH = _Lib(pypto), _Lib(torch)


def _scalar_operand(x):
    return isinstance(x, (int, float))


@st.composite
def expr(draw, shapes, is_int, depth):
    n_in = len(shapes)
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        i = draw(st.integers(0, n_in - 1))
        return Node(f"x{i}", lambda L, xs, i=i: xs[i], True, shapes[i], {i})
    unary = draw(st.booleans())
    table = UNARY if unary else BINARY
    names = [n for n, v in table.items() if v[4] or not is_int]
    name = draw(st.sampled_from(names))
    fmt, fn, exact, needs_exact, _ = table[name]
    if unary:
        a = draw(expr(shapes, is_int, depth - 1))
        if needs_exact and not a.exact:
            return a
        return Node(fmt.format(a.text), lambda L, xs: fn(L, a.run(L, xs)), exact and a.exact, a.shape, a.inputs)
    a = draw(expr(shapes, is_int, depth - 1))
    if draw(st.integers(0, 3)) == 0:           # one operand is a Python scalar
        s = draw(st.sampled_from(I_SCALARS if is_int else F_SCALARS))
        if draw(st.booleans()) and name not in ("where", "max", "min"):
            if needs_exact and not a.exact:
                return a
            # scalar on the left: a Python operator with a scalar first (radd, rsub, rtruediv, ...)
            return Node(fmt.format(repr(s), a.text), lambda L, xs: fn(L, s, a.run(L, xs)),
                        exact and a.exact, a.shape, a.inputs)
        b = Node(repr(s), lambda L, xs: s, True, (), set())
    else:
        b = draw(expr(shapes, is_int, depth - 1))
    if needs_exact and not (a.exact and b.exact):
        return a
    return Node(fmt.format(a.text, b.text), lambda L, xs: fn(L, a.run(L, xs), b.run(L, xs)),
                exact and a.exact and b.exact, _bshape(a.shape, b.shape), a.inputs | b.inputs)


@st.composite
def reduced(draw, shapes, is_int):
    e = draw(expr(shapes, is_int, 3))
    if not e.inputs:                            # scalar-only trees are not kernels: use an input
        e = Node("x0", lambda L, xs: xs[0], True, shapes[0], {0})
    if len(e.shape) == 0 or draw(st.integers(0, 2)):
        return e, None
    kind = draw(st.sampled_from(["sum", "amax", "amin"] + ([] if is_int else ["mean"])))
    dim = draw(st.sampled_from(list(range(len(e.shape))) + [None]))
    keep = draw(st.booleans()) if dim is not None else False
    return e, (kind, dim, keep)


@st.composite
def case(draw, group):
    rank = draw(st.integers(1, 3))
    full = [draw(st.sampled_from(DIMS)) for _ in range(rank)]
    n_in = draw(st.integers(1, 3))
    shapes, dtypes = [], []
    for _ in range(n_in):
        r = draw(st.integers(1, rank))               # fewer dims: broadcast from the left
        shp = tuple(1 if draw(st.integers(0, 3)) == 0 else d for d in full[rank - r:])
        shapes.append(shp)
        dtypes.append(draw(st.sampled_from(GROUPS[group])))
    is_int = group == "int32"
    exprs = draw(st.lists(reduced(shapes, is_int), min_size=EXPRS_PER_KERNEL, max_size=EXPRS_PER_KERNEL,
                          unique_by=lambda er: (er[0].text, er[1])))
    seed = draw(st.integers(0, 2 ** 16))
    return shapes, dtypes, exprs, seed


def _inputs(shapes, dtypes, seed):
    g = torch.Generator().manual_seed(seed)
    xs = []
    for shp, dt in zip(shapes, dtypes):
        if dt.is_floating_point:
            xs.append((torch.rand(shp, generator=g, dtype=torch.float64) * 4 - 2).to(dt))
        else:
            xs.append(torch.randint(-9, 10, shp, generator=g, dtype=dt))
    return xs


def _finish(L, e, red, xs):
    v = e.run(L, xs)
    if red is None:
        return v
    kind, dim, keep = red
    is_float = v.is_floating_point() if L is TH else v.dtype.is_float
    if kind == "mean" and not is_float:        # an integer expression in a float group: mean is float-only
        kind = "sum"
    if L is TH:
        dims = dim if dim is not None else list(range(v.dim()))
        if kind == "sum":
            r = v.sum(dims, keepdim=keep)
            return r.to(v.dtype)                    # torch widens integer sums to int64; pypto keeps the dtype
        if kind == "mean":
            return v.mean(dims, keepdim=keep)
        return getattr(torch, kind)(v, dims, keepdim=keep)
    return getattr(pypto, kind)(v, dim, keepdim=keep)


def _magnitude(e, red, xs):
    """Largest |value| over every intermediate of the tree in float64 (times the reduced count for sum)."""
    seen = [1.0]

    class Rec(_Lib):
        def __getattr__(self, name):
            f = super().__getattr__(name)
            if not callable(f):
                return f

            def g(*a, **k):
                r = f(*a, **k)
                if isinstance(r, torch.Tensor) and r.is_floating_point() and r.numel():
                    seen.append(float(r.double().nan_to_num(0, 0, 0).abs().max()))
                return r
            return g

    v = e.run(Rec(torch), [x.double() for x in xs])
    seen.append(float(v.double().abs().max()) if v.numel() else 0.0)
    m = max(seen)
    if red is not None and red[0] in ("sum", "mean"):
        m *= (v.numel() if red[1] is None else v.shape[red[1]]) if v.dim() else 1
    return m


@pytest.mark.parametrize("group", list(GROUPS))
def test_random_expressions(group):
    checked = set()

    # no shrinking phase: every shrink step would compile a kernel; a failure's label names the expression
    @seed(int(SOAK_SEED or 0))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=SOAK_SEED is None, database=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(c=case(group))
    def run(c):
        shapes, dtypes, exprs, seed = c
        # an example already checked is not a new one (early examples repeat small trees): draw another
        assume(any((e.text, red, tuple(shapes), tuple(dtypes)) not in checked for e, red in exprs))
        xs = _inputs(shapes, dtypes, seed)
        xs3 = xs + [xs[0]] * (3 - len(xs))
        wants = [_finish(TH, e, red, xs) for e, red in exprs]
        outs = [torch.full(w.shape, 77, dtype=w.dtype) for w in wants]
        fns = [lambda a, b, c, e=e, red=red: _finish(PP, e, red, [a, b, c]) for e, red in exprs]
        pad = [torch.zeros(1) for _ in range(24 - len(fns))]
        multi_kernel(fns)(*xs3, *outs, *pad)
        for (e, red), got, want in zip(exprs, outs, wants):
            label = f"{e.text} {red} shapes={shapes} dtypes={dtypes} seed={seed}"
            assert got.dtype == want.dtype, label
            inexact = (not e.exact) or (red is not None and red[0] in ("sum", "mean"))
            if not inexact or not want.is_floating_point():
                assert torch.equal(got, want) or (got.isnan() == want.isnan()).all() and torch.equal(
                    got.nan_to_num(0), want.nan_to_num(0)), \
                    f"{label}: not bit-exact, max err {float((got.double() - want.double()).abs().max())}"
            else:
                # the least precise float dtype the expression computes in sets the tolerance
                t = max(TOL.get(dt, TOL[torch.float32]) for dt in [want.dtype] + [dtypes[i] for i in e.inputs])
                bound = t * (1 + want.double().abs()) + t * _magnitude(e, red, xs)
                err = (got.double() - want.double()).abs()
                assert bool((err <= bound).all()), f"{label}: max err {float(err.max())}"
            checked.add((e.text, red, tuple(shapes), tuple(dtypes)))

    run()
    assert len(checked) >= MIN_DISTINCT, f"only {len(checked)} distinct expressions checked"
