"""`pypto.frontend.function` (a reusable kernel sub-function) and `pypto.function(name, *tensors)` (the reference's
graph scope), inside `@pypto.frontend.jit` kernels.

A `@pypto.frontend.function` is inlined where a kernel calls it, at trace time, exactly as a plain helper function
is (its globals are guarded like the helper's: collect_guards follows `__pypto_inline__`). As the reference
documents, it is called by name from inside a jit kernel only, with every parameter given positionally (no keyword
arguments, no defaults used), and not recursively.
"""
from __future__ import annotations

import functools
import inspect
import threading

from ..errors import KernelDefinitionError, UnsupportedFeatureError
from ..ir.builder import active
from ..ir.nodes import Value

__all__ = ["function", "function_scope"]

_calling = threading.local()


def function(fn=None):
    """Decorator: `fn` becomes a sub-function of jit kernels (inlined when a kernel calls it)."""
    if fn is None:
        return function
    if not inspect.isfunction(fn):
        raise KernelDefinitionError(f"pypto.frontend.function decorates a function, got {type(fn).__name__}")
    params = list(inspect.signature(fn).parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise KernelDefinitionError(f"pypto.frontend.function '{fn.__qualname__}': parameters must be plain "
                                    f"positional parameters (no *args, **kwargs or keyword-only)")
    name, n = fn.__qualname__, len(params)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        b = active()
        if b is None:
            raise UnsupportedFeatureError(f"pypto.frontend.function '{name}' can only be called inside a "
                                          f"@pypto.frontend.jit kernel; calling it directly is not supported yet")
        if kwargs:
            raise b.error(name, f"a pypto.frontend.function takes its arguments by position only, got keyword "
                                f"argument(s) {sorted(kwargs)}")
        if len(args) != n:
            raise b.error(name, f"expects {n} argument(s) ({', '.join(p.name for p in params)}), got {len(args)}")
        stack = getattr(_calling, "stack", None)
        if stack is None:
            stack = _calling.stack = []
        if fn in stack:
            raise b.error(name, "recursive pypto.frontend.function calls are not supported")
        stack.append(fn)
        try:
            return fn(*args)
        finally:
            stack.pop()

    call.__pypto_inline__ = fn
    return call


class function_scope:
    """`with pypto.function("main", a, b, c):` inside a jit kernel: the reference names the graph built in the
    block; here the block is simply part of the kernel (the name is checked to be a str, the arguments to be the
    kernel's tensors). Outside a kernel (the reference's graph-building API) it is not supported."""

    def __init__(self, name, *args, **kwargs):
        b = active()
        if b is None:
            raise UnsupportedFeatureError("pypto.function(...) outside a @pypto.frontend.jit kernel is not "
                                          "supported yet; write the body in a jit kernel")
        if not isinstance(name, str):
            raise b.error("function", f"name must be a str, got {name!r}")
        for a in args:
            if not isinstance(a, Value):
                raise b.error("function", f"arguments must be the kernel's tensors, got {type(a).__name__}")
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Function:
    """The reference's graph function object (its graph-building API): not supported yet — kernels here are
    `@pypto.frontend.jit` functions, traced on their first call."""

    def __init__(self, *args, **kwargs):
        raise UnsupportedFeatureError("pypto.Function (the reference's graph function object) is not supported yet "
                                      "by this pypto; write a @pypto.frontend.jit kernel")


def get_last_function():
    raise UnsupportedFeatureError("pypto.get_last_function (the reference's graph function objects) is not "
                                  "supported yet by this pypto; a kernel's IR: kernel.explain / PYPTO_LOG=debug")


def get_current_function():
    raise UnsupportedFeatureError("pypto.get_current_function (the reference's graph function objects) is not "
                                  "supported yet by this pypto")
