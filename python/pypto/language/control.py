"""Kernel control flow and tiling: pypto.loop, pypto.min/max of scalars, set_vec/cube_tile_shapes."""
from __future__ import annotations

import builtins
import threading

from ..ir.builder import active
from ._helpers import DT, S, Value, check_int_like, current


def loop(*args, name=None, unroll_list=None, parallel=False, step=None, idx_name=None, submit_before_loop=False,
         _factor=False):
    """`for i in pypto.loop(stop)` / `pypto.loop(start, stop, step=1, name=None, unroll_list=None,
    parallel=False)`: a loop of the kernel itself (emitted as a C++ loop; the body is traced once).

    Bounds may be symbolic (e.g. from a DYNAMIC dim); the loop variable is a symbolic int. `step` is a non-zero
    int, static or symbolic (see _symbolic_step_loop; not with unroll_list). `parallel=True` lets iterations run concurrently on up to
    runtime_options['sim_threads'] threads (the CPU simulator's): iterations must be independent.
    `unroll_list=[f, ...]`: the iteration space is covered by unrolled main loops (the body repeated f times
    per pass, largest factor first) and a remainder loop (factor 1).
    `idx_name` (a name for the index) and `submit_before_loop` (an NPU scheduling hint) are accepted as in
    the reference. `break`/`continue`/`return` inside the body are errors."""
    op = "loop_unroll" if _factor else "loop"
    b = current(op)
    if idx_name is not None:          # the reference's name of the index variable: used for the IR / C++ names
        if not isinstance(idx_name, str):
            raise b.error(op, f"idx_name must be a str, got {idx_name!r}")
        name = idx_name
    if len(args) == 1:
        start, stop, st = 0, args[0], 1
    elif len(args) == 2:
        (start, stop), st = args, 1
    elif len(args) == 3:
        start, stop, st = args
    else:
        raise b.error(op, f"takes 1 to 3 positional arguments (stop | start, stop[, step]), got {len(args)}")
    if step is not None:
        if len(args) == 3:
            raise b.error(op, "step given twice")
        st = step
    start = check_int_like(start, op, "start")
    stop = check_int_like(stop, op, "stop")
    sym_step = S.is_sym(st) and st.kind == S.INT
    if not sym_step and (isinstance(st, bool) or not isinstance(st, int) or st == 0):
        raise b.error(op, f"step must be a non-zero int (static or symbolic), got {st!r}")
    if sym_step and (unroll_list is not None or _factor):
        raise b.error(op, f"unroll_list needs a static step, got the symbolic step {S.to_text(st)}")
    if name is not None and not isinstance(name, str):
        raise b.error(op, f"name must be a str, got {name!r}")
    if unroll_list is not None:
        if not isinstance(unroll_list, (list, tuple)) or not builtins.all(
                isinstance(u, int) and not isinstance(u, bool) and u > 0 for u in unroll_list):
            raise b.error(op, f"unroll_list must be a list of positive ints, got {unroll_list!r}")
    if not isinstance(parallel, bool):
        raise b.error(op, f"parallel must be a bool, got {parallel!r}")
    if not isinstance(submit_before_loop, bool):
        raise b.error(op, f"submit_before_loop must be a bool, got {submit_before_loop!r}")
    if sym_step:
        return _symbolic_step_loop(b, op, start, stop, st, name, parallel)
    return b.loop(start, stop, st, name, parallel, unroll_list, yield_factor=_factor)


class _SymStepLoop:
    """What is_loop_begin / is_loop_end read for the index of a loop with a symbolic step."""
    __slots__ = ("start", "stop", "step", "last")

    def __init__(self, start, stop, step, last):
        self.start, self.stop, self.step, self.last = start, stop, step, last


def _symbolic_step_loop(b, op, start, stop, step, name, parallel):
    """`pypto.loop(start, stop, step)` with a symbolic step (e.g. a step set differently in the two branches of a
    kernel-level `if`, as the reference allows): a kernel loop over the trip count k = 0 .. n-1, n =
    max(0, ceil((stop - start) / step)) for either sign of the step, whose index is start + k * step. A step
    that is 0 when the kernel runs fails the kernel (a run-time check)."""
    b.check(S.compare("!=", step, 0), f"step must not be 0, got {S.to_text(step)} = 0 when the kernel ran", op)
    count = S.smax(0, S.neg(S.floordiv(S.sub(start, stop), step)))   # ceil(a / s) = -floor(-a / s), any sign
    for k in b.loop(0, count, 1, name, parallel, None):
        i = S.add(start, S.mul(k, step))
        if S.is_sym(i):
            b.loop_index[i.key] = _SymStepLoop(start, stop, step, S.add(start, S.mul(S.sub(count, 1), step)))
        yield i


def loop_unroll(*args, unroll_list=None, name=None, idx_name=None, **kw):
    """`for i, f in pypto.loop_unroll(start, stop, step, unroll_list=[4, 2, 1])`: the reference's unrolled
    loop. The factors are de-duplicated, sorted largest first and always include 1. Each factor f gets its own
    sub-loop (the body is traced once per factor): one pass of it covers the f iterations i, i+step, ...,
    i+(f-1)*step, so the body processes f tiles at once; the factor-1 sub-loop handles the remainder."""
    return loop(*args, unroll_list=list(unroll_list or [1]), name=name, idx_name=idx_name, _factor=True, **kw)


def cond(c):
    """`if pypto.cond(c):` — the explicit form of a kernel-level branch: `c` is a symbolic bool (e.g.
    pypto.is_loop_end(i), n > 16) or a concrete value. Inside a kernel `if`/`elif`/`else` on a symbolic value
    becomes a kernel branch with or without pypto.cond."""
    op = "cond"
    b = current(op)
    if isinstance(c, S.Sym):
        b.use(c, op)
        if c.kind != S.BOOL:
            return S.compare("!=", c, 0)
        return c
    if isinstance(c, (bool, int, float)) or c is None:
        return bool(c)
    raise b.error(op, f"expects a symbolic or concrete scalar condition, got {type(c).__name__} {c!r}")


def _loop_of(i, op):
    b = current(op)
    lp = b.loop_of(i)
    if lp is None:
        raise b.error(op, f"expects the index of a pypto.loop, got {i!r}")
    return lp


def is_loop_begin(i):
    """Symbolic bool: `i` is the first iteration of its pypto.loop."""
    lp = _loop_of(i, "is_loop_begin")
    return S.compare("==", i, lp.start)


def is_loop_end(i):
    """Symbolic bool: `i` is the last iteration of its pypto.loop."""
    lp = _loop_of(i, "is_loop_end")
    if isinstance(lp, _SymStepLoop):
        return S.compare("==", i, lp.last)
    nxt = S.add(i, lp.step)
    return S.compare(">=" if lp.step > 0 else "<=", nxt, lp.stop)


def _scalar_minmax(args, fn, op):
    b = current(op)
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    if len(args) < 2:
        raise b.error(op, "expects at least two scalars")
    for a in args:
        if isinstance(a, bool) or not isinstance(a, (int, float, S.Sym)):
            raise b.error(op, f"expects ints/floats or symbolic scalars, got {a!r}; for tensors use "
                              f"pypto.minimum/pypto.maximum")
    r = args[0]
    for a in args[1:]:
        r = fn(r, a)
    return r


def min(*args):
    """Minimum of scalars (ints, floats, symbolic ints) — e.g. the valid size of a tail tile:
    pypto.min(16, n - i*16). Works outside kernels too on plain numbers."""
    if not builtins.any(isinstance(a, S.Sym) for a in args):
        return builtins.min(*args)
    return _scalar_minmax(args, S.smin, "min")


def max(*args):
    """Maximum of scalars (ints, floats, symbolic ints)."""
    if not builtins.any(isinstance(a, S.Sym) for a in args):
        return builtins.max(*args)
    return _scalar_minmax(args, S.smax, "max")


def _has_sym(args) -> bool:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.any(isinstance(a, S.Sym) for a in args)


def builtin_min(*args, **kwargs):
    """What the name `min` means inside a kernel body (the reference maps it): pypto.min when a symbolic scalar
    is among the arguments, Python's min otherwise (keys, defaults and iterators keep their meaning)."""
    if kwargs or not _has_sym(args):
        return builtins.min(*args, **kwargs)
    return min(*args)


def builtin_max(*args, **kwargs):
    """`max` inside a kernel body: pypto.max on symbolic scalars, Python's max otherwise."""
    if kwargs or not _has_sym(args):
        return builtins.max(*args, **kwargs)
    return max(*args)


KERNEL_BUILTINS = {"min": builtin_min, "max": builtin_max}   # names the frontend rebinds in kernel bodies


def ceildiv(a, b):
    """`pypto.ceildiv(a, b)` = ceil(a / b) for ints or symbolic ints (b > 0): (a + b - 1) // b."""
    if isinstance(a, bool) or isinstance(b, bool) or not (S.is_int_like(a) and S.is_int_like(b)):
        raise TypeError(f"pypto.ceildiv expects ints or symbolic ints, got {a!r} and {b!r}")
    if not isinstance(a, S.Sym) and not isinstance(b, S.Sym):
        if b == 0:
            raise ZeroDivisionError("pypto.ceildiv: division by zero")
        return -(-a // b)
    return (a + b - 1) // b


def ceil_div(self, other):
    """`pypto.ceil_div(self, other)`: ceil(self / other) elementwise for DT_INT32 tensors (other a DT_INT32 tensor or
    an int; shapes broadcast), computed exactly as -((-self) // other) with floored division, so negative operands
    round toward +inf (ceil(-7 / 2) = -3). With ints / symbolic ints on both sides it is `pypto.ceildiv`."""
    if not isinstance(self, Value) and not isinstance(other, Value):
        return ceildiv(self, other)
    from . import elementwise as E
    op = "ceil_div"
    b = current(op)
    for what, x in (("self", self), ("other", other)):
        if isinstance(x, Value):
            if x.dtype != DT.DT_INT32:
                raise b.error(op, f"{what} must be a DT_INT32 tensor, got {x.dtype.name}")
        elif isinstance(x, bool) or not isinstance(x, int):
            raise b.error(op, f"{what} must be a DT_INT32 tensor or an int, got {x!r}")
    if not isinstance(self, Value):
        raise b.error(op, f"self must be a DT_INT32 tensor, got {self!r}")
    if isinstance(other, int) and other == 0:
        raise b.error(op, "other must not be 0")
    return E.neg(E.floor_divide(E.neg(self), other))


def _sym_abs(x):
    return S.smax(x, -x)


def install_scalar_methods() -> None:
    """Symbolic scalars get `abs()` (the IR's Sym has no __abs__; this layer adds it, as tensor_methods does for
    tensors), so `abs(n - m)` in a kernel means max(n - m, m - n)."""
    S.Sym.__abs__ = _sym_abs


# The tile size used for a symbolic tile size without a static upper bound (docs/compat.md).
DEFAULT_SYMBOLIC_TILE = 128


def _static_tile(b, op, d) -> int:
    """A tile size as a static int: an int as is; a symbolic int (a DYNAMIC dim, `x.shape[0]` of a view with a
    symbolic valid size) by its static upper bound when it has one, else DEFAULT_SYMBOLIC_TILE. Tile sizes
    only block loop nests (results do not depend on them), and the generated code needs static blocks."""
    if S.is_sym(d) and d.kind == S.INT:
        ub = S.upper_bound(d)
        return DEFAULT_SYMBOLIC_TILE if ub is None or ub <= 0 else ub
    if isinstance(d, bool) or not isinstance(d, int):
        raise b.error(op, f"tile sizes must be ints (static or symbolic), got {d!r}")
    return d


def set_vec_tile_shapes(*dims):
    """Tile sizes for the vector (elementwise / reduction) ops that follow in the same scope: their loop nests
    are blocked by these sizes (trailing dims of the operand get the trailing tile sizes). 1 to 4 positive
    ints; a symbolic size stands for its static upper bound, or DEFAULT_SYMBOLIC_TILE when it has none (tile
    sizes do not change results). An op whose operand has more dims than the tile shape is an error (as in the
    reference)."""
    op = "set_vec_tile_shapes"
    b = current(op)
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if not 1 <= len(dims) <= 4:
        raise b.error(op, f"expects 1 to 4 tile sizes, got {len(dims)}")
    dims = tuple(_static_tile(b, op, d) for d in dims)
    for d in dims:
        if d <= 0:
            raise b.error(op, f"tile sizes must be > 0, got {d}")
    b.vec_tile = dims
    _last_tiles.vec = b.vec_tile


def set_cube_tile_shapes(m, k, n, enable_split_k=False):
    """Tile sizes for the matmuls that follow: m=[m0, m1], k=[k0, k1] (or [k0, k1, k2]), n=[n0, n1]. The CPU
    code blocks its i-k-j loop nest by (m0, k0, n0). Validated as in the reference: positive, x0 <= x1 and
    x1 % x0 == 0 here; at each matmul every size must be 32-byte aligned for the input dtype (16 elements for
    fp16/bf16/fp32 — the reference's fp32 rule —, 32 for 1-byte types)."""
    op = "set_cube_tile_shapes"
    b = current(op)
    for nm, v, lens in (("m", m, (2,)), ("k", k, (2, 3)), ("n", n, (2,))):
        if not isinstance(v, (list, tuple)) or len(v) not in lens:
            raise b.error(op, f"{nm} must be a list of {' or '.join(map(str, lens))} ints, got {v!r}")
        for d in v:
            if isinstance(d, bool) or not isinstance(d, int) or d <= 0:
                raise b.error(op, f"{nm} tile sizes must be positive static ints, got {v!r}")
        # the reference's relation between the L0 and L1 tiles: 0 < x0 <= x1 and x1 % x0 == 0
        if v[0] > v[1] or v[1] % v[0]:
            raise b.error(op, f"{nm}: the L1 tile {nm}[1]={v[1]} must be a multiple of the L0 tile {nm}[0]={v[0]} "
                              f"(0 < {nm}L0 <= {nm}L1 and {nm}L1 % {nm}L0 == 0), got {list(v)}")
    if not isinstance(enable_split_k, bool):
        raise b.error(op, f"enable_split_k must be a bool, got {enable_split_k!r}")
    b.cube_tile = {"m": tuple(m), "k": tuple(k), "n": tuple(n), "split_k": enable_split_k}
    _last_tiles.cube = b.cube_tile


# The tiling most recently set by a trace in this thread: what get_*_tile_shapes() report outside a kernel (the
# reference keeps it in a process-wide scope, so a test reads it back after the call).
_last_tiles = threading.local()


def get_vec_tile_shapes():
    """The vector tile shapes in effect (inside a kernel) or last set by a traced kernel; [] if none."""
    b = active()
    tiles = b.vec_tile if b is not None else getattr(_last_tiles, "vec", None)
    return list(tiles) if tiles else []


def get_cube_tile_shapes():
    """(m, k, n, enable_split_k) of the cube tiling in effect or last set, as in the reference; None if none."""
    b = active()
    t = b.cube_tile if b is not None else getattr(_last_tiles, "cube", None)
    return None if t is None else (list(t["m"]), list(t["k"]), list(t["n"]), t["split_k"])


__all__ = ["loop", "loop_unroll", "cond", "set_verify_golden_data", "is_loop_begin", "is_loop_end", "min", "max", "set_vec_tile_shapes",
           "set_cube_tile_shapes"]
