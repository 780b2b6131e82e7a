"""A specialization's key as data: the tensors' dtypes and shapes and the constants' values, in the typed JSON
encoding a bundle manifest records them in (`pypto.export`, read by the C++ runtime's manifest loader).

Every compiled library carries its key (`spec_key` text, exported by the generated C++ as `pypto_spec_key()`), and
every loader checks it against the key it loads the library for: the native core on a miss (src/python/jit_slow.cpp)
and the C++ runtime for each manifest entry (src/runtime/manifest_stages.cpp). A library paired with the wrong key
(a swapped manifest entry, a mixed-up cache file) is then a load error, never a launch on the wrong layout.
"""
from __future__ import annotations

import enum
import json
import struct
from typing import Any

from ..native import core as _core
from .params import DynDim


class UnrecordableValue(ValueError):
    """A constant whose value has no typed encoding (a dataclass config, an arbitrary object)."""


def encode_value(v: Any, where: str) -> dict:
    """A constant's value, typed and exact (the C++ runtime matches call arguments against it)."""
    if v is None:
        return {"type": "none"}
    if isinstance(v, bool):
        return {"type": "bool", "value": v}
    if isinstance(v, enum.Enum):
        value = v.value
        if isinstance(value, bool) or not isinstance(value, int):
            raise UnrecordableValue(f"{where}: enum member {v!r} has a non-integer value; it cannot be exported")
        return {"type": "enum", "name": f"{type(v).__name__}.{v.name}", "value": int(value)}
    if isinstance(v, int):
        if type(v) is not int:
            raise UnrecordableValue(f"{where}: constant {v!r} is of int subclass {type(v).__name__}, which the "
                                    f"C++ runtime cannot tell from int; pass a plain int")
        if not -(1 << 63) <= v < (1 << 63):
            raise UnrecordableValue(f"{where}: integer constant {v} does not fit in 64 bits")
        return {"type": "int", "value": v}
    if isinstance(v, float):
        if type(v) is not float:
            raise UnrecordableValue(f"{where}: constant {v!r} is of float subclass {type(v).__name__}; pass a "
                                    f"plain float")
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        return {"type": "float", "bits": f"0x{bits:016x}", "repr": repr(v)}
    if isinstance(v, str):
        if type(v) is not str:
            raise UnrecordableValue(f"{where}: constant {v!r} is of str subclass {type(v).__name__}; pass a "
                                    f"plain str")
        return {"type": "str", "value": v}
    if type(v) in (tuple, list):
        return {"type": "tuple" if type(v) is tuple else "list", "items": [encode_value(x, where) for x in v]}
    raise UnrecordableValue(f"{where}: constant {v!r} of type {type(v).__name__} cannot be recorded in a bundle "
                            f"(exportable: None, bool, int, float, str, enums, tuples/lists of those)")


def tensors_json(request) -> list:
    """Per tensor parameter: its name, dtype and shape (an int per fixed dim, null per DYNAMIC dim, the name of a
    named dynamic dim)."""
    out = []
    for t in request.tensors:
        shape = [(None if d.name is None else d.name) if isinstance(d, DynDim) else int(d) for d in t.dims]
        out.append({"param": t.param, "dtype": _core.DTYPE_NAMES[int(t.dtype)], "shape": shape})
    return out


def spec_key(request) -> str:
    """The key a library is compiled for, as canonical JSON text: {"constants": {name: encoding}, "tensors": [...]}.
    A constant without a typed encoding is {"type": "opaque"} (such a kernel cannot be exported; the native core
    keys its value itself)."""
    constants = {}
    for name, v in request.constants.items():
        try:
            constants[name] = encode_value(v, name)
        except UnrecordableValue:
            constants[name] = {"type": "opaque"}
    return json.dumps({"constants": constants, "tensors": tensors_json(request)}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=True)


__all__ = ["UnrecordableValue", "encode_value", "spec_key", "tensors_json"]
