"""The kernel body as the tracer runs it: `PreparedKernel` (made once, at decoration, by frontend/rewrite.py) and the
objects its rewritten code calls while it is traced.

`TraceRuntime` is what rewritten code reaches as `__pypto_rt__`: the errors for `break` / `continue` / `return`
inside a kernel loop, the `return` and rebinding checks, and `branch`, which starts an `if`. A `Branch` is one
executed `if`: a concrete condition picks the branch now (plain Python); a symbolic one becomes a kernel branch whose
two bodies are traced and whose names are merged afterwards (`Undefined` marks a name that cannot be merged: any use
raises, saying why). These are the language's semantics of `if` and loops, so they live in the language layer; the
frontend only rewrites the source to call them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import KernelSyntaxError, KernelTraceError
from ..ir import sym as S
from ..ir.builder import active, user_location
from ..ir.nodes import PARAM, Value
from .control import KERNEL_BUILTINS


class TraceRuntime:
    """The object rewritten code calls into (`__pypto_rt__`)."""

    __slots__ = ("kernel_name", "filename")
    builtins = KERNEL_BUILTINS

    def __init__(self, kernel_name: str, filename: str):
        self.kernel_name = kernel_name
        self.filename = filename

    def control_error(self, what: str, lineno: int):
        raise KernelTraceError(
            f"kernel '{self.kernel_name}': `{what}` inside a pypto.loop body is not supported (at "
            f"{self.filename}:{lineno}): the loop body is traced once into a kernel loop, so `{what}` cannot "
            f"leave it; compute a mask/valid shape instead")

    def branch(self, cond, lineno: int, loc: dict, names: tuple):
        """Start an `if`: concrete conditions pick a branch now; symbolic ones become a kernel branch."""
        return Branch(self, cond, lineno, loc, names)

    def jump_check(self, branches: tuple, what: str, lineno: int):
        for br in branches:
            if br.sym:
                raise KernelTraceError(
                    f"kernel '{self.kernel_name}': `{what}` inside a kernel-level branch (an `if` on a symbolic "
                    f"value, at {self.filename}:{br.lineno}) is not supported (at {self.filename}:{lineno}): both "
                    f"branches are compiled into the kernel, so `{what}` cannot leave one of them at trace time")

    def return_error(self, lineno: int):
        """Called first thing in a kernel body that contains `return <value>` anywhere (the reference's parser
        checks every `return` before it runs the body, reached or not)."""
        raise KernelSyntaxError(
            f"kernel '{self.kernel_name}': Return statements are not allowed to give a value: a kernel returns "
            f"nothing, but the `return` at {self.filename}:{lineno} gives one; write results into an output tensor "
            f"parameter with out[:] = ..., out.move(...) or pypto.assemble(...)")

    def check_rebind(self, current, name: str, lineno: int):
        if isinstance(current, Value) and current.storage.kind == PARAM and current.is_root:
            # the reference's parser: "Input tensor 'c' cannot be reassigned" (a ParserError)
            raise KernelSyntaxError(
                f"kernel '{self.kernel_name}': Input tensor '{name}' cannot be reassigned: `{name} = ...` rebinds "
                f"the tensor parameter and writes nothing; use {name}[:] = ... or {name}.move(...) to write the "
                f"output (at {self.filename}:{lineno})")


_MISSING = object()   # a name a branch did not bind


class Undefined:
    """The value of a name after a kernel-level `if` when the branches disagree (or never bound it): any use
    raises a KernelTraceError explaining why."""

    __slots__ = ("_msg",)

    def __init__(self, msg: str):
        self._msg = msg

    def _fail(self, *a, **k):
        raise KernelTraceError(f"{self._msg} (used at {user_location()})")

    def __repr__(self):
        return f"<undefined after a kernel branch: {self._msg}>"

    def __getattr__(self, name):
        # also reached by the ops' argument checks (getattr of a marker attribute): the use raises this error
        raise KernelTraceError(f"{self._msg} (used at {user_location()})")

    __bool__ = __index__ = __int__ = __float__ = __len__ = __iter__ = __call__ = __getitem__ = __setitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _fail
    __neg__ = __pos__ = __abs__ = __lt__ = __le__ = __gt__ = __ge__ = _fail


class Branch:
    """One executed `if` statement of a rewritten kernel (see _Rewriter.visit_If)."""

    __slots__ = ("rt", "sym", "taken", "stmt", "lineno", "names", "pre", "then_vals", "builder", "cond")

    def __init__(self, rt, cond, lineno, loc, names):
        self.rt, self.lineno, self.names = rt, lineno, names
        self.stmt = None
        b = active()
        if isinstance(cond, S.Sym) and b is not None:
            b.use(cond, "if")
            if cond.kind != S.BOOL:
                cond = S.compare("!=", cond, 0)
            self.sym = True
            self.cond = cond
            self.taken = None
            self.builder = b
            self.pre = {n: loc[n] for n in names if n in loc}
            self.stmt = b.branch_begin(cond, f"{rt.filename}:{lineno}")
        else:
            self.sym = False
            self.taken = bool(cond)

    def then_(self) -> bool:
        return True if self.sym else self.taken

    def mid(self, loc):
        if self.sym:
            self.then_vals = {n: loc[n] for n in self.names if n in loc}
            self.builder.branch_else(self.stmt)

    def restore(self, name):
        v = self.pre.get(name, _MISSING)
        if v is _MISSING:
            return Undefined(f"kernel '{self.rt.kernel_name}': `{name}` is not bound before the kernel-level `if` "
                              f"at {self.rt.filename}:{self.lineno} and its else-branch reads it")
        return v

    def else_(self) -> bool:
        return True if self.sym else not self.taken

    def end(self):
        if self.sym:
            self.builder.branch_end(self.stmt)

    def merge(self, loc) -> dict:

        out = {}
        where = f"{self.rt.filename}:{self.lineno}"
        for n in self.names:
            t = self.then_vals.get(n, _MISSING)
            e = loc.get(n, _MISSING)
            t = _MISSING if isinstance(t, Undefined) else t
            e = _MISSING if isinstance(e, Undefined) else e
            if t is e and t is not _MISSING:
                out[n] = t
            elif (isinstance(t, S.Sym) and isinstance(e, S.Sym) and t.same(e)) or (
                    type(t) in (int, float, bool, str) and type(t) is type(e) and t == e):
                out[n] = t
            elif isinstance(t, (int, float, S.Sym)) and isinstance(e, (int, float, S.Sym)) and (
                    merged := self.builder.branch_merge_scalar(self.stmt, t, e, n)) is not None:
                out[n] = merged    # a scalar set differently in each branch: cond ? t : e (or a merge slot)
            elif isinstance(t, Value) and isinstance(e, Value):
                # a tensor from each branch: both copy into one local tensor made before the `if`; tensors that
                # differ in dtype or shape are branch-local (the reference's branches bind a name freely, the
                # name then holds whichever ran): a use after the `if` is the error
                why = self.builder.branch_tensor_conflict(self.stmt, t, e, n)
                out[n] = self.builder.branch_merge_tensor(self.stmt, t, e, n) if why is None else \
                    Undefined(f"kernel '{self.rt.kernel_name}': if: {why}")
            elif t is _MISSING or e is _MISSING:
                out[n] = Undefined(
                    f"kernel '{self.rt.kernel_name}': `{n}` is assigned in only one branch of the kernel-level "
                    f"`if` at {where} (its condition is symbolic, so both branches are compiled and `{n}` has "
                    f"no single value after it); assign it before the `if` or in both branches alike")
            else:
                out[n] = Undefined(
                    f"kernel '{self.rt.kernel_name}': `{n}` gets values in the two branches of the kernel-level "
                    f"`if` at {where} that cannot be merged (its condition is only known when the kernel runs; "
                    f"two tensors or two numbers can be), so it cannot be used after the `if`; write results into "
                    f"a tensor created before the `if` (t[:] = ... / pypto.assemble) in each branch, or use "
                    f"pypto.where")
        return out


@dataclass
class PreparedKernel:
    """A kernel function processed once at decoration."""
    name: str
    fn: Callable
    filename: str
    firstlineno: int
    factory: Callable | None            # factory(*cell values, rt) -> rewritten kernel function
    freevars: tuple = ()
    global_names: frozenset = frozenset()   # names the body reads that are not local (globals/builtins)
    rewritten: bool = False
    runtime: Any = None
    notes: list = field(default_factory=list)

    def instantiate(self) -> Callable:
        """The function to call for one trace (closure cells are read now)."""
        if self.factory is None:
            return self.fn
        cells = self.fn.__closure__ or ()
        values = []
        for name, cell in zip(self.freevars, cells):
            try:
                values.append(cell.cell_contents)
            except ValueError:
                raise KernelTraceError(f"kernel '{self.name}': the closure variable '{name}' is not bound yet "
                                       f"when the kernel is traced") from None
        return self.factory(*values, self.runtime)

    def call(self, args: tuple, kwargs: dict):
        return self.instantiate()(*args, **kwargs)


__all__ = ["Branch", "PreparedKernel", "TraceRuntime", "Undefined"]
