"""The op's fake (meta) implementation: check tensors against the annotations, touch no data.

Under FakeTensor tracing (torch.compile, torch.export, opcheck) sizes may be symbolic. A fixed dim is checked with
a plain comparison when the size is concrete and with `torch._check` when it is symbolic (which records the fact
instead of specializing on it); every dim sharing a `pypto.frontend.dynamic` name is checked equal the same way.
STATIC and DYNAMIC dims are free. The messages match the native core's (kernel, parameter, expected, got).
"""
from __future__ import annotations

from ..vocab.annotations import DynamicDim
from ..vocab.dtypes import to_torch


def _equal(size, want, message: str) -> None:
    import torch

    if isinstance(size, int) and isinstance(want, int):
        if size != want:
            raise ValueError(message)
        return
    torch._check(size == want, lambda: message)


def check_tensor(kernel: str, param, t, named: dict) -> None:
    """Check one tensor argument against its annotation; `named` collects the first size seen per dim name."""
    import torch

    head = f"kernel '{kernel}': parameter '{param.name}': "
    if not isinstance(t, torch.Tensor):
        raise TypeError(head + f"expected a torch.Tensor, got {type(t).__name__}")
    ann = param.annotation
    if ann.dtype is not None and t.dtype != to_torch(ann.dtype):
        raise TypeError(head + f"expected dtype {ann.dtype.short}, got {str(t.dtype).replace('torch.', '')}")
    if ann.shape is None:
        return
    rank = len(ann.shape)
    if (t.dim() < rank) if ann.ellipsis else (t.dim() != rank):
        want = f"at least {rank}" if ann.ellipsis else str(rank)
        raise ValueError(head + f"expected {want} dimensions, got {t.dim()} (shape {tuple(t.shape)})")
    for axis, d in enumerate(ann.shape):
        size = t.shape[axis]
        if isinstance(d, DynamicDim):
            if d.name in named:
                first, where = named[d.name]
                _equal(size, first, head + f"dimension {axis} is the named dimension '{d.name}', expected {first} "
                                           f"(as {where}), got {size}")
            else:
                named[d.name] = (size, f"'{param.name}' dimension {axis}")
        elif isinstance(d, int):
            _equal(size, d, head + f"dimension {axis} must be {d}, got {size}")


def check_arguments(kernel: str, tensor_args, named: dict) -> None:
    """Check every (param, tensor) pair, named dims across parameters included; `named` receives each dim
    name's (size, where) (returned tensors are allocated from it)."""
    for param, t in tensor_args:
        check_tensor(kernel, param, t, named)
