"""`pypto.Element(dtype, value)`: the reference's typed scalar constant (docs/zh/api/element).

An operand of an op (`pypto.add(x, pypto.Element(pypto.DT_FP32, 2))`, a scatter `src`) means its value; the
tensor operand's dtype decides the computation, as for a Python number.
"""
from __future__ import annotations

from .dtypes import DataType, from_any


class Element:
    """A scalar constant with a dtype. `dtype` and `value` are read-only; the value is held as the dtype's kind
    (an int for integer and bool dtypes, a float for float dtypes)."""

    __slots__ = ("_dtype", "_value")

    def __init__(self, dtype, value):
        dt = dtype if isinstance(dtype, DataType) else from_any(dtype)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"pypto.Element: value must be an int or a float, got {type(value).__name__} "
                            f"{value!r}")
        if dt.is_float:
            value = float(value)
        elif dt == DataType.DT_BOOL:
            value = int(bool(value))
        else:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(f"pypto.Element: value {value!r} is not an integer, but dtype is {dt!r}")
            value = int(value)
        object.__setattr__(self, "_dtype", dt)
        object.__setattr__(self, "_value", value)

    @property
    def dtype(self) -> DataType:
        return self._dtype

    @property
    def value(self):
        return self._value

    def __setattr__(self, name, value):
        raise AttributeError(f"pypto.Element is read-only (cannot set {name!r})")

    def __reduce__(self):        # a constant kernel argument is keyed by what rebuilds it (vocab/constkey.py)
        return (Element, (self._dtype, self._value))

    def __eq__(self, other):
        return isinstance(other, Element) and (self._dtype, self._value) == (other._dtype, other._value)

    def __hash__(self):
        return hash((self._dtype, self._value))

    def __repr__(self) -> str:
        return f"pypto.Element({self._dtype!r}, {self._value!r})"
