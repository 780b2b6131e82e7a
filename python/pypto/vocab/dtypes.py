"""pypto data types and their mapping to torch / numpy / DLPack.

The integer codes equal `PyptoDType` in include/pypto/kernel_abi.h; keep both in step. `native` dtypes have a
storage layout in the kernel ABI: tensors of them can be passed, computed and returned. The others (int4, the
unpacked 4-bit floats, hifloat) can be named (annotations, dtype maps) but a kernel taking or computing one
raises an error naming the dtype.

The FP8 types and the packed FP4 pair are `storage_only`: they are passed in and out, copied, viewed,
assembled and converted with `pypto.cast` (exactly as torch's `.to()`), but arithmetic on them is refused with
an error naming the op (the reference computes on them only through cast, quant and matmul). The packed pair
DT_FP4_E2M1X2 holds two values per byte as torch.float4_e2m1fn_x2 does: its shapes count bytes, element 2i in
the low nibble and 2i+1 in the high nibble; casting it to bf16/fp32 doubles the last dim, and back halves it.
DT_HF8 (HiFloat8) is storage-only too; torch has no such dtype, so its tensors are uint8 tensors holding the
encoded bytes (as the reference's callers pass them). DT_FP4_E2M1 arguments are uint8 tensors of packed pairs
(as DT_FP4_E2M1X2) whose kernel shape counts values: the last dim is twice the bytes (ir/tracer.py unpacks them,
one value per byte, on entry); they are inputs only.
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
    # From here on: the reference's other dtypes (see `native` and `storage_only`).
    DT_UINT16 = 10
    DT_UINT32 = 11
    DT_UINT64 = 12
    DT_INT4 = 13
    DT_FP8 = 14
    DT_FP8E4M3 = 15
    DT_FP8E5M2 = 16
    DT_FP8E8M0 = 17
    DT_FP4_E2M1 = 18
    DT_FP4_E2M1X2 = 19      # two FP4 E2M1 values packed in one byte (torch.float4_e2m1fn_x2)
    DT_FP4_E1M2 = 20
    DT_FP4_E1M2X2 = 21
    DT_HF4 = 22
    DT_HF8 = 23
    DT_BOTTOM = 24          # the reference's "no dtype" marker

    @property
    def native(self) -> bool:
        """Whether the kernel ABI and the native binder carry this dtype (tensors of it can be passed)."""
        return self in _NATIVE

    @property
    def storage_only(self) -> bool:
        """Stored, moved and cast, never computed on (FP8 and the packed FP4 pair)."""
        return self in _STORAGE_ONLY

    @property
    def is_unsigned(self) -> bool:
        return self in (DataType.DT_UINT8, DataType.DT_UINT16, DataType.DT_UINT32, DataType.DT_UINT64)

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self]

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_int(self) -> bool:
        return not self.is_float and self not in (DataType.DT_BOOL, DataType.DT_BOTTOM)

    @property
    def short(self) -> str:
        """Short name used in messages: float32, bfloat16, int32, bool ..."""
        return _SHORT[self]

    def __repr__(self) -> str:  # pypto.DT_FP32
        return f"pypto.{self.name}"

    __str__ = __repr__


_STORAGE_ONLY = frozenset((DataType.DT_FP8E4M3, DataType.DT_FP8E5M2, DataType.DT_FP8E8M0, DataType.DT_FP4_E2M1X2,
                           DataType.DT_HF8, DataType.DT_FP4_E2M1))
_NATIVE = frozenset([d for d in DataType if d.value < 13] + list(_STORAGE_ONLY))
_FLOATS = frozenset((DataType.DT_FP16, DataType.DT_BF16, DataType.DT_FP32, DataType.DT_FP64, DataType.DT_FP8,
                     DataType.DT_FP8E4M3, DataType.DT_FP8E5M2, DataType.DT_FP8E8M0, DataType.DT_FP4_E2M1,
                     DataType.DT_FP4_E2M1X2, DataType.DT_FP4_E1M2, DataType.DT_FP4_E1M2X2, DataType.DT_HF4,
                     DataType.DT_HF8))
# Bytes per element; the x2 FP4 types hold two values in one byte (as torch.float4_e2m1fn_x2 does); the unpacked
# 4-bit types are stored one per byte.
_ITEMSIZE = {
    DataType.DT_BOOL: 1, DataType.DT_INT8: 1, DataType.DT_INT16: 2, DataType.DT_INT32: 4,
    DataType.DT_INT64: 8, DataType.DT_UINT8: 1, DataType.DT_FP16: 2, DataType.DT_BF16: 2,
    DataType.DT_FP32: 4, DataType.DT_FP64: 8, DataType.DT_UINT16: 2, DataType.DT_UINT32: 4,
    DataType.DT_UINT64: 8, DataType.DT_INT4: 1, DataType.DT_FP8: 1, DataType.DT_FP8E4M3: 1,
    DataType.DT_FP8E5M2: 1, DataType.DT_FP8E8M0: 1, DataType.DT_FP4_E2M1: 1, DataType.DT_FP4_E2M1X2: 1,
    DataType.DT_FP4_E1M2: 1, DataType.DT_FP4_E1M2X2: 1, DataType.DT_HF4: 1, DataType.DT_HF8: 1,
    DataType.DT_BOTTOM: 0,
}
# The short names are torch's where torch has the type (so from_torch/to_torch map both ways by name).
_SHORT = {
    DataType.DT_BOOL: "bool", DataType.DT_INT8: "int8", DataType.DT_INT16: "int16",
    DataType.DT_INT32: "int32", DataType.DT_INT64: "int64", DataType.DT_UINT8: "uint8",
    DataType.DT_FP16: "float16", DataType.DT_BF16: "bfloat16", DataType.DT_FP32: "float32",
    DataType.DT_FP64: "float64", DataType.DT_UINT16: "uint16", DataType.DT_UINT32: "uint32",
    DataType.DT_UINT64: "uint64", DataType.DT_INT4: "int4", DataType.DT_FP8: "fp8",
    DataType.DT_FP8E4M3: "float8_e4m3fn", DataType.DT_FP8E5M2: "float8_e5m2", DataType.DT_FP8E8M0: "float8_e8m0fnu",
    DataType.DT_FP4_E2M1: "fp4_e2m1", DataType.DT_FP4_E2M1X2: "float4_e2m1fn_x2", DataType.DT_FP4_E1M2: "fp4_e1m2",
    DataType.DT_FP4_E1M2X2: "fp4_e1m2_x2", DataType.DT_HF4: "hifloat4", DataType.DT_HF8: "hifloat8",
    DataType.DT_BOTTOM: "bottom",
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
DT_DOUBLE = DataType.DT_FP64        # the reference's second name for float64
DT_UINT16 = DataType.DT_UINT16
DT_UINT32 = DataType.DT_UINT32
DT_UINT64 = DataType.DT_UINT64
DT_INT4 = DataType.DT_INT4
DT_FP8 = DataType.DT_FP8
DT_FP8E4M3 = DataType.DT_FP8E4M3
DT_FP8E5M2 = DataType.DT_FP8E5M2
DT_FP8E8M0 = DataType.DT_FP8E8M0
DT_FP4_E2M1 = DataType.DT_FP4_E2M1
DT_FP4_E2M1X2 = DataType.DT_FP4_E2M1X2
DT_FP4_E1M2 = DataType.DT_FP4_E1M2
DT_FP4_E1M2X2 = DataType.DT_FP4_E1M2X2
DT_HF4 = DataType.DT_HF4
DT_HF8 = DataType.DT_HF8
DT_BOTTOM = DataType.DT_BOTTOM
ALL_DTYPE_NAMES = tuple(m.name for m in DataType) + ("DT_DOUBLE",)

_BY_SHORT = {v: k for k, v in _SHORT.items()}


def from_torch(torch_dtype) -> DataType:
    """torch.float32 -> DT_FP32; raises TypeError for dtypes pypto does not support."""
    name = str(torch_dtype).replace("torch.", "")
    try:
        return _BY_SHORT[name]
    except KeyError:
        raise TypeError(f"torch dtype {torch_dtype} is not supported by pypto") from None


def to_torch(dt: DataType):
    """DT_FP32 -> torch.float32; TypeError when the installed torch has no such dtype."""
    import torch

    t = getattr(torch, _SHORT[DataType(dt)], None)
    if not isinstance(t, torch.dtype):
        raise TypeError(f"{DataType(dt)!r} has no torch dtype in torch {torch.__version__}")
    return t


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


def bytes_of(dtype) -> int:
    """`pypto.bytes_of(dtype)`: bytes per element of a dtype (the reference's table: 1 for the 8-bit and 4-bit
    types, a packed x2 FP4 pair is one byte). Accepts a pypto DataType (or a torch / numpy dtype)."""
    try:
        dt = from_any(dtype)
    except Exception:
        raise TypeError(f"bytes_of: expected a pypto DataType such as pypto.DT_FP32, got {dtype!r}") from None
    return dt.itemsize
