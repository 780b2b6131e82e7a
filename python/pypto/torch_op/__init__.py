"""`kernel.as_torch_op()`: a pypto kernel as a torch custom op, first-class under torch.compile and torch.export.

    add_op = add_kernel.as_torch_op()              # torch.ops.pypto.add_kernel(a, b, out, alpha=2.0) -> None
    sq = square.as_torch_op(returns=["out"])       # functional: torch.ops.pypto.square(x) -> out
    torch.library.register_autograd("pypto::square", backward, setup_context=...)

A pypto kernel called directly inside a compiled function is an opaque C callable: Dynamo breaks the graph around
it. Registered through `torch.library`, the kernel gets a schema (from the parameter table, `schema.py`), a fake
implementation that checks shapes and dtypes against the annotations without touching data (`fake.py`) and a real
implementation that calls the native kernel, so FakeTensor tracing, functionalization and Inductor treat it like
any other op.

Layer 9: above frontend, beside export (it imports errors, vocab, ir, frontend); it installs `as_torch_op` on the
frontend's kernels the way `export` installs `export`. torch is imported only when an op is registered, so
`import pypto` stays torch-free. Never testing or bench.
"""
from __future__ import annotations

import threading

from ..frontend.jit import JITKernel
from .errors import TorchOpError
from .register import register

_LOCK = threading.Lock()
_BY_NAME: dict[str, tuple] = {}     # op name -> (JITKernel, request tuple, op packet)


def _front(kernel) -> JITKernel:
    """The Python-side JITKernel of a decorated kernel (the native object falls back to it for attributes)."""
    if isinstance(kernel, JITKernel):
        return kernel
    front = getattr(getattr(kernel, "as_torch_op", None), "__self__", None)
    if isinstance(front, JITKernel):
        return front
    raise TypeError(f"pypto.torch_op: expected a @pypto.frontend.jit kernel, got {kernel!r}")


def as_torch_op(kernel, name: str | None = None, *, mutates_args="infer", returns=None):
    """Register `kernel` with torch.library as `torch.ops.pypto.<name>` and return that op.

    name: the op name (default: the kernel's name); an identifier, unique within the `pypto` namespace.
    mutates_args: "infer" (default) traces the kernel once from its annotations, without compiling or running
        it, and declares the tensors it writes; or an iterable of tensor parameter names the user asserts are
        the union written by every specialization. Either way each new specialization is checked before it is
        first launched: a kernel writing a tensor the op does not declare raises TorchOpError.
    returns: None (default): the op takes every parameter, writes its outputs in place and returns nothing.
        Otherwise the written tensor parameters the op allocates and returns (a functional op, the form
        `torch.library.register_autograd` accepts): a list of names (shapes from the annotation: fixed and named
        dims), or a dict name -> the name of an input tensor to allocate like, or a callable taking the op's
        arguments and returning (shape, torch.dtype).
    """
    front = _front(kernel)
    name = front.name if name is None else name
    if not isinstance(name, str) or not name.isidentifier():
        raise TorchOpError(f"kernel '{front.name}': as_torch_op: the op name must be an identifier, got {name!r}")
    request = (_freeze(mutates_args), _freeze(returns))
    with _LOCK:
        seen = _BY_NAME.get(name)
        if seen is not None:
            if seen[0] is front and seen[1] == request:
                return seen[2]  # the same registration again: the same op
            owner = "the same kernel with other arguments" if seen[0] is front else f"kernel '{seen[0].name}'"
            raise TorchOpError(f"kernel '{front.name}': as_torch_op: the op name 'pypto::{name}' is already "
                               f"registered by {owner}; pass another name=")
        op = register(front, name, mutates_args, returns)
        _BY_NAME[name] = (front, request, op)
        return op


def _freeze(v):
    """A hashable, comparable form of an as_torch_op argument (callables compare by identity)."""
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple, set, frozenset)):
        return tuple(sorted(map(str, v))) if isinstance(v, (set, frozenset)) else tuple(_freeze(x) for x in v)
    return v if isinstance(v, (str, type(None))) else id(v)


def _kernel_as_torch_op(self, name=None, *, mutates_args="infer", returns=None):
    return as_torch_op(self, name, mutates_args=mutates_args, returns=returns)


_kernel_as_torch_op.__doc__ = as_torch_op.__doc__
JITKernel.as_torch_op = _kernel_as_torch_op

__all__ = ["as_torch_op", "TorchOpError"]
