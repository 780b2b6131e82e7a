"""The trace builder: the state of one trace (current block, storages, tiling) and its error helpers.

Language ops reach the active builder through `current()`; outside a trace they raise a clear error.
"""
from __future__ import annotations

import os
import sys
import threading

from ..errors import KernelTraceError, UnsupportedFeatureError
from ..vocab.dtypes import DataType
from . import sym as S
from .nodes import (LOCAL, PARAM, TEMP, Assign, Block, Check, If, Loop, Op, ScalarRead, Storage, UnrolledLoop, Value,
                    row_major, same_dim)

_state = threading.local()
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def current(op: str = "pypto op") -> "Builder":
    b = getattr(_state, "builder", None)
    if b is None:
        raise KernelTraceError(f"{op}: pypto language operations can only be used inside a kernel "
                               f"decorated with @pypto.frontend.jit (while it is traced)")
    return b


def active():
    return getattr(_state, "builder", None)


class activate:
    """Context manager installing `builder` as the current one (nestable: restores the previous)."""

    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.prev = getattr(_state, "builder", None)
        _state.builder = self.builder
        return self.builder

    def __exit__(self, *exc):
        _state.builder = self.prev
        return False


_FOREIGN = ("torch", "numpy")  # libraries whose Python frames sit between a user's call and pypto's handler


def user_location() -> str:
    """file:line of the innermost frame outside the pypto package (the user's kernel or helper). Frames of torch
    and numpy are skipped too: `F.relu(x)` reaches pypto through torch's Python dispatch."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        mod = f.f_globals.get("__name__") or ""
        if not os.path.abspath(fn).startswith(_PKG_DIR + os.sep) and mod.partition(".")[0] not in _FOREIGN:
            return f"{fn}:{f.f_lineno}"
        f = f.f_back
    return "<unknown>"


class Builder:
    def __init__(self, kernel_name: str):
        self.kernel_name = kernel_name
        self.body = Block()
        self.block = self.body
        self.storages: list[Storage] = []
        self.nvalues = 0
        self.nloops = 0
        self.written: set[int] = set()
        self.vec_tile = None          # tuple of ints or None
        self.cube_tile = None         # dict or None
        self.uses_threads = False
        self.loop_index: dict = {}    # key of an iteration-index Sym -> its Loop / UnrolledLoop
        self.left_early: list = []    # locations of pypto.loops whose body was left by break / return
        self.shmem = None             # language/distributed.py's ShmemPlan, made by the first shmem op

    # ---- errors -------------------------------------------------------------------------------------------
    def error(self, op: str, msg: str) -> KernelTraceError:
        return KernelTraceError(f"kernel '{self.kernel_name}': {op}: {msg} (at {user_location()})")

    def unsupported(self, op: str, feature: str) -> UnsupportedFeatureError:
        """A reference feature this pypto cannot compute: '<feature> is not supported yet', naming the kernel."""
        return UnsupportedFeatureError(f"kernel '{self.kernel_name}': {op}: {feature} is not supported yet "
                                       f"(at {user_location()})")

    # ---- values -------------------------------------------------------------------------------------------
    def _new_vid(self) -> int:
        self.nvalues += 1
        return self.nvalues

    def new_storage(self, kind: str, dtype, shape, cap, param_index=None, param_name=None) -> Value:
        shape = tuple(shape)
        cap = tuple(cap)
        if all(c is not None for c in cap):
            strides = row_major(cap)
        else:
            strides = row_major(shape)
        scope = self.body if kind == PARAM else self.block
        st = Storage(len(self.storages), kind, dtype, shape, cap, strides, scope, param_index, param_name)
        self.storages.append(st)
        return Value(self._new_vid(), dtype, shape, cap, st, 0, strides, scope,
                     label=param_name if kind == PARAM else None)

    def new_temp(self, dtype, shape, cap=None) -> Value:
        shape = tuple(shape)
        if cap is None:
            cap = tuple(S.upper_bound(d) for d in shape)
        return self.new_storage(TEMP, dtype, shape, cap)

    def new_view(self, base: Value, offset, shape, cap, strides, dtype=None) -> Value:
        scope = base.scope
        for v in S.free_vars((offset, tuple(shape), tuple(strides))).values():
            if v.scope is not None and scope.encloses(v.scope):
                scope = v.scope
        return Value(self._new_vid(), dtype or base.dtype, shape, cap, base.storage, offset, strides, scope)

    def use(self, v, op: str):
        """Check that value / symbol `v` may be read at the current point (it is defined in an enclosing
        scope)."""
        if isinstance(v, Value):
            if not v.scope.encloses(self.block):
                if v.scope.branch is not None:
                    raise self.error(op, "this tensor was computed inside a kernel branch (`if` on a symbolic "
                                         "value) and is used outside it; values do not survive a kernel branch "
                                         "— write it into a tensor created before the `if` (x[:] = ... / "
                                         "pypto.assemble) inside the branch instead")
                raise self.error(op, "this tensor was computed inside a pypto.loop body and is used after the "
                                     "loop; values do not survive a kernel loop — write it into a tensor "
                                     "(pypto.tensor/assemble/slice write) inside the loop instead")
        elif isinstance(v, S.Sym):
            for var in S.free_vars(v).values():
                if var.args[1] is None:
                    raise self.error(op, f"the symbolic scalar `{var}` was made by pypto.SymbolicScalar("
                                         f"{var.args[0]!r}) and has no value inside a kernel; use a DYNAMIC dim, "
                                         f"a loop index or a scalar parameter")
                if var.scope is not None and not var.scope.encloses(self.block):
                    raise self.error(op, f"the loop variable `{var}` is used outside its pypto.loop")

    # ---- statements ---------------------------------------------------------------------------------------
    def emit(self, stmt):
        self.block.stmts.append(stmt)
        return stmt

    def op(self, kind: str, out: Value, ins, **attrs) -> Value:
        tile = attrs.get("tile")
        check_m = attrs.pop("check_m", True)
        if tile:
            self._check_tile(attrs.get("fn") if isinstance(attrs.get("fn"), str) else kind, out, ins, tile, check_m)
        self.emit(Op(kind, out, list(ins), attrs))
        return out

    def _check_tile(self, kind, out, ins, tile, check_m=True):
        """The tiling in effect must fit the op (as the reference checks when an op uses it: a matmul's m tile only
        when A is transposed, check_m)."""
        values = [v for v in ins if isinstance(v, Value)] + [out]
        if isinstance(tile, dict):      # cube tiles (matmul): 32-byte alignment of k and n for the input dtype
            dt = values[0].dtype
            align = 32 if dt.itemsize == 1 else 16
            # a matmul's m is the rows of A's fractals: 16 elements for every dtype (the reference runs int8 with
            # m = 176); scaled_mm keeps 32 bytes for all three
            m_align = 16 if kind == "matmul" else align
            for nm, al in ((("m", m_align),) if check_m else ()) + (("k", align), ("n", align)):
                for x in tile[nm][:2]:
                    if x % al:
                        what = (f"{al} elements (the fractal rows; k and n need 32-byte alignment)" if al != align
                                else f"{al} elements (32-byte alignment)")
                        raise self.error(kind, f"set_cube_tile_shapes: {nm} tile {x} is not aligned: with "
                                               f"{dt.short} inputs every {nm} tile size must be a multiple of "
                                               f"{what}, got m={list(tile['m'])}, k={list(tile['k'])}, "
                                               f"n={list(tile['n'])}")
            return
        # vector tiles: fewer sizes than the op's rank tile its trailing dims (the reference's rule; the code
        # generator pairs tile[-k] with dim -k and leaves the leading dims untiled)

    def assign(self, dst: Value, src, op: str):
        st = dst.storage
        if st.kind == TEMP:
            # an op's result written to (`t = pypto.add(a, b); t[:2] = ...`): from now on it is a local tensor,
            # so the code generator keeps it in memory instead of fusing its producer into the consumers
            st.kind = LOCAL
        if st.kind == PARAM:
            self.written.add(st.param_index)
        self.emit(Assign(dst, src))

    def check(self, cond, msg: str, op: str):
        """Record a run-time check; decided now when `cond` is a plain bool."""
        if isinstance(cond, S.Sym):
            self.emit(Check(cond, f"kernel '{self.kernel_name}': {op}: {msg}"))
        elif not cond:
            raise self.error(op, msg)

    # ---- loops ----------------------------------------------------------------------------------------------
    def loop(self, start, stop, step, name, parallel, unroll_list, yield_factor=False):
        """Generator behind `for i in pypto.loop(...)`: opens a loop block, yields the symbolic loop variable
        once, closes the block when the Python for-statement asks for the next item.

        With `unroll_list` the iteration space is covered by one sub-loop per factor (largest first, 1 = the
        remainder loop): for `pypto.loop` the body is traced f times per sub-loop (yielding var, var+step, ...);
        for `pypto.loop_unroll` (`yield_factor`) it is traced once per sub-loop and yields (var, f).

        Leaving the body early (`break` / `return`, which close this generator) is recorded and reported by the
        tracer; a `continue` is detected from the caller's bytecode (see `_continue_jumps`)."""
        self.nloops += 1
        lid = self.nloops
        ident = name if (name and name.isidentifier()) else "i"
        line = user_location()
        self._check_continue(sys._getframe(1), line)   # the frame whose for-statement iterates this generator
        if parallel:
            self.uses_threads = True
        saved = (self.block, self.vec_tile, self.cube_tile)
        if not unroll_list and not yield_factor:
            var = S.var(name or f"i{lid}", f"L{lid}_{ident}")
            body = Block(parent=self.block)
            stmt = Loop(var, start, stop, step, body, bool(parallel), name or "", (), line)
            body.loop = stmt
            var.scope = body
            self.loop_index[var.key] = stmt
            self.emit(stmt)
            self.block = body
            try:
                yield var
            except GeneratorExit:
                self.left_early.append(line)
                raise
            finally:
                self.block, self.vec_tile, self.cube_tile = saved
            return
        factors = sorted({int(f) for f in (unroll_list or ())} | {1}, reverse=True)
        stmt = UnrolledLoop(start, stop, step, [], bool(parallel), name or "", not yield_factor, line)
        self.emit(stmt)
        try:
            for f in factors:
                var = S.var(f"{name or f'i{lid}'}_x{f}", f"L{lid}_{ident}_x{f}")
                body = Block(parent=saved[0])
                body.loop = stmt
                var.scope = body
                stmt.parts.append((f, var, body))
                self.block = body
                self.vec_tile, self.cube_tile = saved[1], saved[2]
                if yield_factor:
                    self.loop_index[var.key] = stmt
                    yield var, f
                else:
                    for j in range(f):
                        iv = S.add(var, j * step) if j else var
                        self.loop_index[iv.key] = stmt
                        self.vec_tile, self.cube_tile = saved[1], saved[2]   # each copy starts like the body
                        yield iv
        except GeneratorExit:
            self.left_early.append(line)
            raise
        finally:
            self.block, self.vec_tile, self.cube_tile = saved

    def loop_of(self, i):
        """The Loop / UnrolledLoop whose iteration index `i` is (None when `i` is not one)."""
        if not isinstance(i, S.Sym):
            return None
        return self.loop_index.get(i.key)

    def _check_continue(self, frame, line):
        """`continue` inside a pypto.loop body of code that was not rewritten (no source: exec'd kernels,
        helpers): found from the bytecode of the caller's for-statement."""
        code = frame.f_code
        offs = _continue_jumps(code).get(frame.f_lasti)
        if offs:
            raise KernelTraceError(
                f"kernel '{self.kernel_name}': `continue` inside a pypto.loop body is not supported (at "
                f"{code.co_filename}:{offs[0]}, detected from the bytecode): the loop body is traced once into "
                f"a kernel loop, so `continue` cannot skip the rest of it; use a kernel branch "
                f"(`if pypto.cond(...)`) or a mask instead")

    def loop_upper_bound(self, x):
        """An upper bound of int expression `x` over the iterations of the enclosing kernel loops: each loop index
        in a linear form is replaced by its largest (positive coefficient) or smallest (negative) value; None
        when a loop index sits inside a non-linear term. Used to keep `x[i:i + 1]` static inside `for i in
        pypto.loop(n)`, where the stop provably never passes the end."""
        for _ in range(8):              # a loop's bounds may name the indices of enclosing loops: substitute again
            if not S.is_sym(x):
                return x
            loops = {k: self.loop_index[k] for k in S.free_vars(x) if k in self.loop_index}
            if not loops:
                return x
            if x.kind != S.INT:
                return None
            c, terms = S._as_lin(x)
            out = c
            for atom, k in terms.values():
                lp = loops.get(atom.key) if atom.op == "var" else None
                if lp is not None:
                    step = lp.step if isinstance(lp.step, int) else 1
                    # an unrolled sub-loop of factor f runs whole groups: its index is at most stop - f*step
                    f = next((fa for fa, v, _ in getattr(lp, "parts", ()) if v.key == atom.key), 1)
                    hi, lo = (S.sub(lp.stop, f * step), lp.start) if step > 0 else (lp.start, S.sub(lp.stop, f * step))
                    out = S.add(out, S.mul(hi if k > 0 else lo, k))
                elif S.free_vars(atom).keys() & loops.keys():
                    return None
                else:
                    out = S.add(out, S.mul(atom, k))
            x = out
        return None

    def read_scalar(self, v: Value, op: str):
        """The element of the 0-d integer view `v` as a runtime scalar (an int Sym), read here."""
        self.nscalars = getattr(self, "nscalars", 0) + 1
        name = f"{v.storage.param_name or 'v'}_{self.nscalars}"
        var = S.var(name, f"rs{self.nscalars}", S.INT, scope=self.block)
        self.use(v, op)
        self.emit(ScalarRead(var, v))
        return var

    # ---- branches -------------------------------------------------------------------------------------------
    @staticmethod
    def branch_tensor_conflict(stmt: If, t: Value, e: Value, name: str):
        """Why the tensors `t` (then-branch) and `e` (else-branch) of a name cannot be merged after a kernel-level
        `if` (a different dtype or shape, as known at trace time, named both ways), or None when they can."""
        where = f"kernel-level `if` at {stmt.line}"
        if t.dtype != e.dtype:
            return (f"`{name}` is a {t.dtype.short} tensor in one branch of the {where} and a {e.dtype.short} "
                    f"tensor in the other; cast one so both branches agree to use it after the `if`")
        if len(t.shape) != len(e.shape) or not all(same_dim(a, b) for a, b in zip(t.shape, e.shape)):
            return (f"`{name}` has shape {[S.to_text(d) for d in t.shape]} in one branch of the {where} and "
                    f"{[S.to_text(d) for d in e.shape]} in the other; both branches must give it the same shape "
                    f"to use it after the `if`")
        return None

    def branch_merge_tensor(self, stmt: If, t: Value, e: Value, name: str) -> Value:
        """The tensor a name holds after a kernel-level `if` that bound it to `t` in the then-branch and `e` in the
        else-branch: a local tensor allocated before the `if`, each branch copying its value into it at its end.
        Both must have the same dtype and shape (branch_tensor_conflict)."""
        why = self.branch_tensor_conflict(stmt, t, e, name)
        if why is not None:
            raise self.error("if", why)
        cap = tuple(None if a is None or b is None else max(a, b) for a, b in zip(t.cap, e.cap))
        out = self.new_storage(LOCAL, t.dtype, t.shape, cap)
        self.op("fill", out, [0])
        fill = self.block.stmts.pop()
        parent = self.block.stmts
        parent.insert(next(i for i, st in enumerate(parent) if st is stmt), fill)
        stmt.then.stmts.append(Assign(out, t))
        stmt.orelse.stmts.append(Assign(out, e))
        return out

    def branch_merge_scalar(self, stmt: If, t, e, name: str):
        """The integer scalar a name holds after a kernel-level `if` that set it to `t` / `e` in the two branches:
        `cond ? t : e` when both are readable after the `if`; when one is a scalar made inside its branch (a
        tensor element read there), a 1-element local before the `if` that each branch writes, read back after
        it (a runtime scalar of the enclosing block). None when that is not possible (a float made in a branch)."""
        def visible(x):
            return all(v.scope is None or v.scope.encloses(self.block) for v in S.free_vars(x).values())

        if visible(t) and visible(e):
            return S.select(stmt.cond, t, e)
        if any(isinstance(x, float) or (isinstance(x, S.Sym) and x.kind != S.INT) for x in (t, e)):
            return None
        out = self.new_storage(LOCAL, DataType.DT_INT64, (1,), (1,))
        parent = self.block.stmts
        parent.insert(next(i for i, st in enumerate(parent) if st is stmt), Op("fill", out, [0], {}))
        stmt.then.stmts.append(Assign(out, t))
        stmt.orelse.stmts.append(Assign(out, e))
        return self.read_scalar(self.new_view(out, 0, (), (), ()), f"if ({name})")

    def branch_begin(self, cond, line: str) -> If:
        """Open `if cond:` (a symbolic bool) at the current point; the then-block becomes current."""
        stmt = If(cond, None, None, line)
        stmt.then = Block(parent=self.block, branch=stmt)
        stmt.orelse = Block(parent=self.block, branch=stmt)
        stmt.saved = (self.block, self.vec_tile, self.cube_tile)
        self.emit(stmt)
        self.block = stmt.then
        return stmt

    def branch_else(self, stmt: If):
        if self.block is not stmt.then:
            raise self.error("if", "a kernel branch was left early (break / continue / return inside it?)")
        self.block, self.vec_tile, self.cube_tile = stmt.orelse, stmt.saved[1], stmt.saved[2]

    def branch_end(self, stmt: If):
        if self.block is not stmt.orelse:
            raise self.error("if", "a kernel branch was left early (break / continue / return inside it?)")
        self.block, self.vec_tile, self.cube_tile = stmt.saved


def _continue_jumps(code) -> dict:
    """{offset of a FOR_ITER: [line of each `continue` jumping back to it]} for `code` (cached).

    CPython compiles both the end of a loop body and `continue` to a backward jump to the FOR_ITER.
    3.11+: the implicit jump at the end of a body carries the source position of the body's last statement
    (shared with that statement's own instructions); a `continue` jump carries the position of the 8-character
    `continue` keyword and no other instruction does. A jump is reported when its position spans exactly 8
    columns of one line and differs from the position of the instruction before it.
    3.10 (line numbers only): a `continue` is a jump that starts a line of its own — the only instruction of a
    line no other instruction starts; the implicit jump (and a jump threaded out of an if/else or try) starts no
    line, or one that other instructions start too (a nested loop's `for` line)."""
    r = _CONT_CACHE.get(code)
    if r is not None:
        return r
    import dis

    r = {}
    try:
        ins = list(dis.get_instructions(code))
    except Exception:  # pragma: no cover
        ins = []
    fors = {i.offset for i in ins if i.opname == "FOR_ITER"}
    if sys.version_info < (3, 11):
        starts: dict = {}
        for i in ins:
            if i.starts_line is not None:
                starts[i.starts_line] = starts.get(i.starts_line, 0) + 1
        for i in ins:
            if ("JUMP" in i.opname and i.argval in fors and i.offset > i.argval and i.starts_line is not None
                    and starts[i.starts_line] == 1):
                r.setdefault(i.argval, []).append(i.starts_line)
        ins = []
    prev = None
    for i in ins:
        if "JUMP" in i.opname and i.argval in fors and i.offset > i.argval:
            p = getattr(i, "positions", None)
            pp = getattr(prev, "positions", None) if prev is not None else None
            if (p is not None and p.lineno is not None and p.lineno == p.end_lineno
                    and p.col_offset is not None and p.end_col_offset - p.col_offset == 8
                    and (pp is None or pp != p or prev.opname == "NOP")):
                r.setdefault(i.argval, []).append(p.lineno)
        prev = i
    if len(_CONT_CACHE) > 1024:
        _CONT_CACHE.clear()
    _CONT_CACHE[code] = r
    return r


_CONT_CACHE: dict = {}


__all__ = ["Builder", "current", "active", "activate", "user_location", "LOCAL", "TEMP", "PARAM"]
