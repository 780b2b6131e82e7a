"""`pypto.capture()`: record the kernel launches of one step once, replay them natively.

    with pypto.capture() as g:                    # each call binds, checks, keys, compiles and runs as usual,
        k1(a, b, tmp)                             # and is recorded (kernel entry + packed arguments)
        k2(tmp, out, g.slot("alpha", 2.0))        # a runtime scalar bound to a named slot
    a.copy_(next_input)                           # inputs are updated in place between replays
    g.replay()                                    # every launch again, in one native call, without the GIL
    g.replay(alpha=3.0)                           # with the slot re-bound

The rules (docs/capture.md), each enforced by `replay`, which raises pypto.CaptureError before anything runs:
tensors are the captured storage (the graph keeps them alive; one resized, re-pointed or with its storage freed
since capture is refused, never read); DYNAMIC sizes are frozen at capture; a kernel whose guarded globals or
closure variables were rebound (a call would now miss) is reported. Only pypto launches are recorded: a torch op
inside the region is refused (`torch_ops="refuse"`, the default: it would run once and never on replay) unless it
only allocates uninitialized memory, makes a view of a tensor or reads metadata; `torch_ops="eager"` lets torch
ops run once, at capture, unrecorded (listed in `g.eager_ops`). The custom ops of `kernel.as_torch_op()` are
pypto launches: recorded. `g.export(dir)` writes the sequence into a bundle that `pypto::runtime::Bundle`
replays from C++ (docs/embedding.md).

Layer 10 (docs/architecture.md): above frontend, export and torch_op (it imports errors, frontend and export); torch is imported only when
torch is already loaded. Never testing or bench.
"""
from __future__ import annotations

import sys
import types

from ..native import core as _core
from ..errors import CaptureError

TORCH_OPS = ("refuse", "eager")

# torch functions a capture lets through in "refuse" mode: they compute nothing a replay would miss
_ALLOCATING = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided"})
_METADATA = frozenset({"__get__", "size", "dim", "numel", "stride", "storage_offset", "is_contiguous", "data_ptr",
                       "element_size", "__len__", "untyped_storage", "is_floating_point", "is_complex",
                       "is_inference", "__repr__", "__format__", "__hash__"})
_VIEWS = frozenset({"__getitem__", "view", "view_as", "reshape", "reshape_as", "narrow", "select", "squeeze",
                    "unsqueeze", "flatten", "unflatten", "t", "transpose", "permute", "expand", "expand_as",
                    "as_strided", "split", "chunk", "unbind", "contiguous", "detach", "movedim", "diagonal"})


class Slot:
    """A runtime scalar (pypto.Scalar[...]) argument bound to a named slot of a capture: it passes as its value,
    and `g.replay(name=value)` re-binds every launch it was passed to."""

    __slots__ = ("name", "value")

    def __init__(self, name: str, value):
        self.name, self.value = name, value

    def __float__(self) -> float:
        return float(self.value)

    def __index__(self) -> int:
        import operator

        return operator.index(self.value)

    def __repr__(self) -> str:
        return f"pypto.capture slot {self.name!r} = {self.value!r}"


_core.set_capture_slot_type(Slot)


def _op_name(func) -> str:
    return getattr(func, "__name__", None) or str(func)


def _is_pypto_op(func) -> bool:
    return getattr(func, "namespace", None) == "pypto" or getattr(getattr(func, "_overloadpacket", None),
                                                                   "namespace", None) == "pypto"


def _aliases(result, args) -> bool:
    """Whether every tensor in `result` shares storage with a tensor argument (a view, not a copy)."""
    import torch

    outs = result if isinstance(result, (tuple, list)) else (result,)
    bases = {a.untyped_storage().data_ptr() for a in args if isinstance(a, torch.Tensor)}
    return all(not isinstance(o, torch.Tensor) or o.untyped_storage().data_ptr() in bases for o in outs)


_MODE_CLASS = None


def _torch_mode(graph: "Graph"):
    """A TorchFunctionMode that refuses (or records as eager) the torch ops the region runs itself. One class for
    every capture (a class per capture would keep its graph alive until the cycle collector ran)."""
    global _MODE_CLASS
    if _MODE_CLASS is None:
        from torch.overrides import TorchFunctionMode

        class _CaptureMode(TorchFunctionMode):
            def __init__(self, graph):
                super().__init__()
                self.graph = graph

            def __torch_function__(self, func, types_, args=(), kwargs=None):
                return _torch_function(self.graph, func, args, kwargs or {})

        _MODE_CLASS = _CaptureMode
    return _MODE_CLASS(graph)


def _torch_function(graph: "Graph", func, args, kwargs):
    caller = sys._getframe(2).f_globals.get("__name__", "")
    # pypto's own work (a miss) or torch's (autograd's version counter), or a pypto launch
    if caller.startswith(("pypto.", "torch.")) or _is_pypto_op(func):
        return func(*args, **kwargs)
    name = _op_name(func)
    if graph.torch_ops == "eager":
        graph.eager_ops.append(name)
        return func(*args, **kwargs)
    if name in _METADATA or name in _ALLOCATING:
        return func(*args, **kwargs)
    if name in _VIEWS:
        result = func(*args, **kwargs)
        if _aliases(result, args):
            return result
        why = "it copies here (the result is not a view)"
    else:
        why = "only pypto kernel launches are recorded"
    raise CaptureError(
        f"pypto.capture: the torch op '{name}' ran inside the captured region: {why}, so it would run now and "
        f"never on replay; move it out of the region (allocate with torch.empty, update inputs in place before "
        f"g.replay()), or pass pypto.capture(torch_ops='eager') to let torch ops run once at capture, unrecorded")


class Graph:
    """A captured sequence of kernel launches (`with pypto.capture() as g:`); `g.replay()` runs it again."""

    def __init__(self, torch_ops: str = "refuse"):
        if torch_ops not in TORCH_OPS:
            raise ValueError(f"pypto.capture: torch_ops must be one of {TORCH_OPS}, got {torch_ops!r}")
        self.torch_ops = torch_ops
        self.eager_ops: list[str] = []
        self._native = _core.CaptureGraph()
        self.replay = self._native.replay  # the native method itself: no Python frame per replay
        self._mode = None
        self._names: set[str] = set()

    def __enter__(self) -> "Graph":
        self._native._begin()
        if "torch" in sys.modules:
            self._mode = _torch_mode(self)
            self._mode.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        why = f"{exc_type.__name__}: {exc}" if exc_type is not None else ""
        self._native._end(exc_type is not None, why[:300])

    def slot(self, name: str, value) -> Slot:
        """A runtime-scalar argument bound to the slot `name` (re-bound by `replay(name=value)`)."""
        if not isinstance(name, str) or not name.isidentifier():
            raise CaptureError(f"pypto.capture: a slot name must be an identifier, got {name!r}")
        if isinstance(value, Slot) or not isinstance(value, (int, float)):
            raise CaptureError(f"pypto.capture: slot '{name}': the value must be an int or a float, got "
                               f"{type(value).__name__}")
        self._names.add(name)
        return Slot(name, value)

    @property
    def state(self) -> str:
        """'new', 'recording', 'done' or 'failed'."""
        return self._native.state

    def __len__(self) -> int:
        return len(self._native)

    @property
    def launches(self) -> list[str]:
        """The kernel name of each recorded launch, in order."""
        return [k.__name__ for k, *_ in self._native._launches()]

    @property
    def tensors(self) -> list:
        """The captured tensors, in the order of their first use: the buffers of the exported C++ sequence."""
        return self._native._tensors()

    @property
    def slots(self) -> dict:
        """Slot name -> [(launch index, parameter name), ...]."""
        return self._native._slots()

    def export(self, directory, name: str = "step"):
        """Write the sequence, with its kernels, into a bundle for the C++ runtime (`Bundle::sequence(name)`)."""
        from .bundle import export_sequence

        return export_sequence(self, directory, name)

    def __repr__(self) -> str:
        return f"<pypto.capture graph: {len(self)} launches, {self.state}>"


def capture(torch_ops: str = "refuse") -> Graph:
    """`with pypto.capture() as g:` records the kernel launches of the region; `g.replay()` runs them again."""
    return Graph(torch_ops)


class _CallableModule(types.ModuleType):
    """`pypto.capture(...)` makes a graph; `pypto.capture.<name>` is this module's attribute."""

    def __call__(self, torch_ops: str = "refuse") -> Graph:
        return capture(torch_ops)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["capture", "Graph", "Slot", "CaptureError", "TORCH_OPS"]
