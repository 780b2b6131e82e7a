"""`pypto.pypto_impl`: the reference's native module by name, with the names its programs and tests use.

In the reference this is the C++ extension; here the same names are Python objects over our own types:
`ExternalError` (the error codes, as `pypto.errors` encodes them), `TileL1Info` / `TileL0Info` (conv tiling,
`pypto.set_conv_tile_shapes`), `ConvReLuType` (conv's `relu_type`: the same enum as `pypto.ReLuType`, whose members
have the same values), `ir.DataType` and `LogTopFolder()` (the folder pass verify writes `verify/interpreter.log`
into, `pypto.verify.verify_log`). The reference's other internals reached through it (device tensors, verify data)
have no meaning without its runtime: reading one is an AttributeError that says so.
"""
from __future__ import annotations

import enum

from ..errors import ERR_UNKNOWN
from ..language.hints import TileL0Info, TileL1Info
from ..verify.verify_log import log_top_folder as LogTopFolder
from ..vocab.enums import ReLuType
from . import ir

ConvReLuType = ReLuType


class ExternalError(enum.IntEnum):
    """The reference's error kinds; an error's `err_code` is 0xF00000 | the kind (`pypto.errors.err_code_of`)."""
    INVALID_TYPE = 0x00001
    INVALID_VAL = 0x00002
    RUNTIME_ERROR = 0x00003
    NAME_ERROR = 0x00004
    NOT_IMPLEMENTED_ERROR = 0x00005
    KEY_ERROR = 0x00006
    INVALID_OPERATION = 0x00007
    OUT_OF_RANGE = 0x00008
    UNKNOWN = 0x0FFFF


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"pypto.pypto_impl.{name}: the reference's native internals are not supported yet here "
                         f"(supported: {', '.join(__all__)})")


__all__ = ["ExternalError", "TileL1Info", "TileL0Info", "ConvReLuType", "LogTopFolder", "ir"]
assert ERR_UNKNOWN | ExternalError.INVALID_VAL == 0xF00002
