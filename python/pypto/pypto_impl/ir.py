"""`pypto.pypto_impl.ir`: the reference's native IR module by name; `DataType` is `pypto.DataType`."""
from __future__ import annotations

from ..vocab.dtypes import DataType

__all__ = ["DataType"]
