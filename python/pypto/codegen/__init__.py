"""pypto.codegen — layer 4: IR -> C++ source implementing the pypto kernel ABI (include/pypto/kernel_abi.h).

May import: errors, vocab, ir, language. Never compiler, verify, frontend, export, bench.
"""
from .source import generate
from .templates import CTYPE, EW, ctype

__all__ = ["generate", "CTYPE", "EW", "ctype"]
