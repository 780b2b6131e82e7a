"""Parameter annotations: pypto.Tensor, dimension markers, pypto.Scalar.

These objects only describe a kernel's signature. They are read once, at decoration, into the parameter
table (vocab/params.py) that the native core checks arguments against.
"""
from __future__ import annotations

import enum
from typing import Sequence

from .dtypes import DataType


class TileOpFormat(enum.IntEnum):
    TILEOP_ND = 0
    TILEOP_NZ = 1

    def __repr__(self) -> str:
        return f"pypto.TileOpFormat.{self.name}"

    __str__ = __repr__


class _DimMarker:
    """STATIC / DYNAMIC markers. STATIC: any size, keyed. DYNAMIC: any size, passed at run time."""

    __slots__ = ("kind",)

    def __init__(self, kind: str):
        self.kind = kind

    def __repr__(self) -> str:
        return f"pypto.{self.kind}"


STATIC = _DimMarker("STATIC")
DYNAMIC = _DimMarker("DYNAMIC")
DYN = DYNAMIC


class StatusType:
    """The reference's namespace of the dim markers: StatusType.STATIC / DYNAMIC / DYN are pypto.STATIC / DYNAMIC /
    DYN (the reference's is an enum; here the markers are the objects annotations take)."""
    STATIC = STATIC
    DYNAMIC = DYNAMIC
    DYN = DYN


class DynamicDim:
    """A named symbolic dimension: every dim carrying the same name must agree at call time."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"pypto.frontend.dynamic(name): name must be an identifier, got {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"pypto.frontend.dynamic({self.name!r})"

    def __eq__(self, other):
        return isinstance(other, DynamicDim) and other.name == self.name

    def __hash__(self):
        return hash(("DynamicDim", self.name))


def dynamic(name: str) -> DynamicDim:
    return DynamicDim(name)


def _check_dim(d, where: str):
    if d is STATIC or d is DYNAMIC or isinstance(d, DynamicDim):
        return d
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError(f"{where}: a dimension must be an int, pypto.STATIC, pypto.DYNAMIC or "
                        f"pypto.frontend.dynamic(name), got {d!r}")
    if d < 0:
        raise ValueError(f"{where}: a dimension must be >= 0, got {d}")
    return d


class _TensorMeta(type):
    """Also makes `isinstance(x, pypto.Tensor)` true for the tensors of a kernel body: this layer cannot import
    the IR, so the language layer registers the IR's tensor class with `register_tensor_class`."""
    _kernel_tensor_classes: tuple = ()
    _kernel_factory = None      # the language's local-tensor maker: pypto.Tensor(shape, dtype) in a kernel body

    def register_tensor_class(cls, klass: type) -> None:
        if klass not in _TensorMeta._kernel_tensor_classes:
            _TensorMeta._kernel_tensor_classes += (klass,)

    def register_kernel_factory(cls, make) -> None:
        """`make(shape, dtype, name, format)` -> a local tensor while a kernel is traced, else None."""
        _TensorMeta._kernel_factory = make

    def __call__(cls, *args, **kwargs):
        # inside a kernel body the reference's `pypto.Tensor([2, 4], pypto.DT_INT32)` makes a local tensor
        make = _TensorMeta._kernel_factory
        if make is not None and cls is Tensor:
            made = make(*args, **kwargs)
            if made is not None:
                return made
        return super().__call__(*args, **kwargs)

    def __instancecheck__(cls, obj) -> bool:
        return type.__instancecheck__(cls, obj) or isinstance(obj, _TensorMeta._kernel_tensor_classes)

    def __getitem__(cls, item):
        # pypto.Tensor[[shape], dtype, ...] : positional only (Python's subscript has no keywords);
        # a trailing dict supplies keyword arguments, e.g. pypto.Tensor[[4], pypto.DT_FP32, {"format": NZ}].
        if item == ():
            raise TypeError("pypto.Tensor[] needs at least a shape: pypto.Tensor[[shape], dtype]")
        if item is Ellipsis:                    # pypto.Tensor[...]: any shape, any dtype
            return cls()
        if not isinstance(item, tuple):
            item = (item,)
        kwargs = {}
        if item and isinstance(item[-1], dict):
            kwargs = dict(item[-1])
            item = item[:-1]
        return cls(*item, **kwargs)


class Tensor(metaclass=_TensorMeta):
    """Tensor parameter annotation.

    `pypto.Tensor` bare, `pypto.Tensor()`, `pypto.Tensor(dtype=dt)`, an empty shape (`pypto.Tensor([], dt)`,
    `pypto.Tensor[[], dt]`) and a shape of `[...]` (`pypto.Tensor[...]`): any rank and shape (rank and sizes
    keyed, all dims STATIC), the dtype checked when given -- the reference reads an empty shape this way, so a
    0-d parameter is written `pypto.Tensor(...)` too.
    `pypto.Tensor(shape, dtype, name=None, format=TileOpFormat.TILEOP_ND)`: shape entries are ints (fixed),
    pypto.STATIC, pypto.DYNAMIC / pypto.DYN, pypto.frontend.dynamic("N"); a trailing `...` means the
    remaining dims (any number) are STATIC.
    """

    __slots__ = ("shape", "dtype", "name", "format", "ellipsis")

    def __init__(self, shape: Sequence | None = None, dtype: DataType | None = None, name: str | None = None,
                 format: TileOpFormat = TileOpFormat.TILEOP_ND):
        if isinstance(shape, DataType) and dtype is None:
            shape, dtype = None, shape          # pypto.Tensor(pypto.DT_FP32): a dtype alone, any shape
        if shape is Ellipsis or (isinstance(shape, (list, tuple)) and len(shape) == 0):
            shape = None                        # `[]` / `...`: any shape, as in the reference
        if shape is not None:
            if isinstance(shape, (int, _DimMarker, DynamicDim)):
                shape = [shape]
            if not isinstance(shape, (list, tuple)):
                raise TypeError(f"pypto.Tensor: shape must be a list or tuple, got {shape!r}")
            dims = list(shape)
            ellipsis = bool(dims) and dims[-1] is Ellipsis
            if ellipsis:
                dims = dims[:-1]
            if any(d is Ellipsis for d in dims):
                raise TypeError("pypto.Tensor: `...` may only appear as the last shape entry")
            self.shape = tuple(_check_dim(d, "pypto.Tensor") for d in dims)
            self.ellipsis = ellipsis
        else:
            self.shape = None
            self.ellipsis = False
        if dtype is not None and not isinstance(dtype, DataType):
            raise TypeError(f"pypto.Tensor: dtype must be a pypto dtype such as pypto.DT_FP32, got {dtype!r}")
        if not isinstance(format, TileOpFormat):
            raise TypeError(f"pypto.Tensor: format must be a pypto.TileOpFormat, got {format!r}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"pypto.Tensor: name must be a str, got {name!r}")
        self.dtype = dtype
        self.name = name
        self.format = format

    def __repr__(self) -> str:
        if self.shape is None:
            return "pypto.Tensor()" if self.dtype is None else f"pypto.Tensor(dtype={self.dtype!r})"
        dims = list(self.shape) + ([...] if self.ellipsis else [])
        return f"pypto.Tensor({dims!r}, {self.dtype!r}, format={self.format!r})"


class _ScalarMeta(type):
    def __getitem__(cls, dtype):
        return cls(dtype)


class Scalar(metaclass=_ScalarMeta):
    """`pypto.Scalar[dtype]`: a runtime scalar parameter, passed by value and never part of the key."""

    __slots__ = ("dtype",)

    def __init__(self, dtype: DataType = DataType.DT_FP32):
        if not isinstance(dtype, DataType):
            raise TypeError(f"pypto.Scalar[dtype]: dtype must be a pypto dtype, got {dtype!r}")
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"pypto.Scalar[{self.dtype!r}]"
