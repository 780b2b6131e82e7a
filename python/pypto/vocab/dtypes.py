"""pypto data types and their mapping to torch / numpy / DLPack.

The integer codes equal `PyptoDType` in include/pypto/kernel_abi.h; keep both in step.
"""
from __future__ import annotations

import enum


class DataType(enum.IntEnum):
    DT_BOOL = 0
    DT_INT8 = 1
    DT_INT16 = 2
    DT_INT32 = 3
    DT_INT64 = 4
    DT_UINT8 = 5
    DT_FP16 = 6
    DT_BF16 = 7
    DT_FP32 = 8
    DT_FP64 = 9

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self]

    @property
    def is_float(self) -> bool:
        return self in (DataType.DT_FP16, DataType.DT_BF16, DataType.DT_FP32, DataType.DT_FP64)

    @property
    def is_int(self) -> bool:
        return not self.is_float and self is not DataType.DT_BOOL

    @property
    def short(self) -> str:
        """Short name used in messages: float32, bfloat16, int32, bool ..."""
        return _SHORT[self]

    def __repr__(self) -> str:  # pypto.DT_FP32
        return f"pypto.{self.name}"

    __str__ = __repr__


_ITEMSIZE = {
    DataType.DT_BOOL: 1, DataType.DT_INT8: 1, DataType.DT_INT16: 2, DataType.DT_INT32: 4,
    DataType.DT_INT64: 8, DataType.DT_UINT8: 1, DataType.DT_FP16: 2, DataType.DT_BF16: 2,
    DataType.DT_FP32: 4, DataType.DT_FP64: 8,
}
_SHORT = {
    DataType.DT_BOOL: "bool", DataType.DT_INT8: "int8", DataType.DT_INT16: "int16",
    DataType.DT_INT32: "int32", DataType.DT_INT64: "int64", DataType.DT_UINT8: "uint8",
    DataType.DT_FP16: "float16", DataType.DT_BF16: "bfloat16", DataType.DT_FP32: "float32",
    DataType.DT_FP64: "float64",
}

DT_BOOL = DataType.DT_BOOL
DT_INT8 = DataType.DT_INT8
DT_INT16 = DataType.DT_INT16
DT_INT32 = DataType.DT_INT32
DT_INT64 = DataType.DT_INT64
DT_UINT8 = DataType.DT_UINT8
DT_FP16 = DataType.DT_FP16
DT_BF16 = DataType.DT_BF16
DT_FP32 = DataType.DT_FP32
DT_FP64 = DataType.DT_FP64

_BY_SHORT = {v: k for k, v in _SHORT.items()}


def from_torch(torch_dtype) -> DataType:
    """torch.float32 -> DT_FP32; raises TypeError for dtypes pypto does not support."""
    name = str(torch_dtype).replace("torch.", "")
    try:
        return _BY_SHORT[name]
    except KeyError:
        raise TypeError(f"torch dtype {torch_dtype} is not supported by pypto") from None


def to_torch(dt: DataType):
    import torch

    return getattr(torch, _SHORT[DataType(dt)])


def from_numpy(np_dtype) -> DataType:
    import numpy as np

    name = np.dtype(np_dtype).name
    try:
        return _BY_SHORT[name]
    except KeyError:
        raise TypeError(f"numpy dtype {np_dtype} is not supported by pypto") from None


def from_any(obj) -> DataType:
    """Accept a pypto DataType, a torch dtype or a numpy dtype."""
    if isinstance(obj, DataType):
        return obj
    mod = type(obj).__module__
    if mod.startswith("torch"):
        return from_torch(obj)
    return from_numpy(obj)
