"""pypto IR: symbolic scalars, tensor values, statements, the tracer and a printable form (`str(kernel)`)."""
from . import sym
from .builder import Builder, activate, current
from .nodes import Assign, Block, Check, Kernel, Loop, Op, Storage, Value, format_kernel
from .tracer import trace

__all__ = ["sym", "Builder", "activate", "current", "Assign", "Block", "Check", "Kernel", "Loop", "Op",
           "Storage", "Value", "format_kernel", "trace"]
