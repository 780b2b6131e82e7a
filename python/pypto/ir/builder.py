"""The trace builder: the state of one trace (current block, storages, tiling) and its error helpers.

Language ops reach the active builder through `current()`; outside a trace they raise a clear error.
"""
from __future__ import annotations

import os
import sys
import threading

from ..errors import KernelTraceError
from . import sym as S
from .nodes import LOCAL, PARAM, TEMP, Assign, Block, Check, Loop, Op, Storage, Value, row_major

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


def user_location() -> str:
    """file:line of the innermost frame outside the pypto package (the user's kernel or helper)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(_PKG_DIR + os.sep):
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

    # ---- errors -------------------------------------------------------------------------------------------
    def error(self, op: str, msg: str) -> KernelTraceError:
        return KernelTraceError(f"kernel '{self.kernel_name}': {op}: {msg} (at {user_location()})")

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
                raise self.error(op, "this tensor was computed inside a pypto.loop body and is used after the "
                                     "loop; values do not survive a kernel loop — write it into a tensor "
                                     "(pypto.tensor/assemble/slice write) inside the loop instead")
        elif isinstance(v, S.Sym):
            for var in S.free_vars(v).values():
                if var.scope is not None and not var.scope.encloses(self.block):
                    raise self.error(op, f"the loop variable `{var}` is used outside its pypto.loop")

    # ---- statements ---------------------------------------------------------------------------------------
    def emit(self, stmt):
        self.block.stmts.append(stmt)
        return stmt

    def op(self, kind: str, out: Value, ins, **attrs) -> Value:
        self.emit(Op(kind, out, list(ins), attrs))
        return out

    def assign(self, dst: Value, src, op: str):
        st = dst.storage
        if not st.writable:
            raise self.error(op, "the target is not writable: only tensor parameters, local tensors "
                                 "(pypto.tensor / pypto.full) and views of them can be written")
        if st.kind == PARAM:
            self.written.add(st.param_index)
        self.emit(Assign(dst, src))

    def check(self, cond, msg: str, op: str):
        """Record a run-time check; decided now when `cond` is a plain bool."""
        if isinstance(cond, S.Sym):
            self.emit(Check(cond, f"kernel '{self.kernel_name}': {op}: {msg}"))
        elif not cond:
            raise self.error(op, msg)

    # ---- loops --------------------------------------------------------------------------------------------
    def loop(self, start, stop, step, name, parallel, unroll_list):
        """Generator behind `for i in pypto.loop(...)`: opens a loop block, yields the symbolic loop variable
        once, closes the block when the Python for-statement asks for the next item."""
        self.nloops += 1
        ident = name if (name and name.isidentifier()) else "i"
        cname = f"L{self.nloops}_{ident}"
        var = S.var(name or f"i{self.nloops}", cname)
        body = Block(parent=self.block)
        stmt = Loop(var, start, stop, step, body, bool(parallel), name or "", tuple(unroll_list or ()),
                    user_location())
        body.loop = stmt
        var.scope = body
        self.emit(stmt)
        if parallel:
            self.uses_threads = True
        saved = (self.block, self.vec_tile, self.cube_tile)
        self.block = body
        try:
            yield var
        finally:
            self.block, self.vec_tile, self.cube_tile = saved


__all__ = ["Builder", "current", "active", "activate", "user_location", "LOCAL", "TEMP", "PARAM"]
