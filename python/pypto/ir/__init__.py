"""pypto.ir — layer 2: symbolic scalars, tensor values, statements, the tracer and a printable form (`str(kernel)`).

May import: errors, vocab. Never language (which installs the tensor operators on `nodes.Value` itself),
codegen, compiler, verify, frontend, export, bench.
"""
from . import sym
from .builder import Builder, activate, current
from .nodes import Assign, Block, Check, Kernel, Loop, Op, Storage, Value, format_kernel
from .tracer import trace

__all__ = ["sym", "Builder", "activate", "current", "Assign", "Block", "Check", "Kernel", "Loop", "Op",
           "Storage", "Value", "format_kernel", "trace"]
