"""IR -> C++ source implementing the pypto kernel ABI."""
from .cpp import generate
from .templates import CTYPE, EW, ctype

__all__ = ["generate", "CTYPE", "EW", "ctype"]
