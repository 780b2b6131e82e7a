"""Tensors made inside a kernel: `full`, `zeros`, `ones`, `pypto.tensor` (a local tensor, or the annotation
outside a trace), `arange` and `one_hot`.

Each is a fresh, writable local (or temporary) tensor; the views and writes on it are `shape_ops.py`'s.
"""
from __future__ import annotations

import builtins
import math

from ..ir.builder import active
from ..ir.nodes import LOCAL
from ..vocab.annotations import Tensor, TileOpFormat
from ._helpers import DT, S, Value, check_dtype, check_int_list, check_operand, check_tensor, current, fmt_shape
from .elementwise import cast, eq
from .shape_ops import unsqueeze, view


def _local(shape, dtype, value, op):
    b = current(op)
    shape = check_int_list(shape, op, "shape")
    for ax, d in enumerate(shape):
        b.check(S.compare(">=", d, 0), f"size {S.to_text(d)} of dim {ax} is negative", op)
    dtype = check_dtype(dtype, op)
    value = check_operand(value, op, "fill value")
    if isinstance(value, Value):
        raise b.error(op, "the fill value must be a scalar")
    cap = tuple(d if isinstance(d, int) else None for d in shape)
    out = b.new_storage(LOCAL, dtype, tuple(shape), cap)
    return b.op("fill", out, [value], tile=b.vec_tile)


def full(size=None, fill_value=None, dtype=None, valid_shape=None, *, shape=None, value=None):
    """A local tile of `size` filled with `fill_value` (converted to `dtype`). It is writable. With `valid_shape`
    (possibly symbolic) only that leading region is the tensor's logical region, as view(..., valid_shape=).
    The reference's keywords are `size` / `fill_value`; `shape` / `value` are this package's earlier names."""
    op = "full"
    shape = _one_of(size, shape, "size", "shape", op)
    value = _one_of(fill_value, value, "fill_value", "value", op)
    if dtype is None:
        raise current(op).error(op, "missing the dtype: pypto.full(size, fill_value, dtype)")
    if valid_shape is None:
        return _local(shape, dtype, value, op)
    shape = check_int_list(shape, op, "shape")
    valid = check_int_list(valid_shape, op, "valid_shape")
    if len(valid) != len(shape):
        raise current(op).error(op, f"valid_shape must have {len(shape)} entries (one per dim of shape), got "
                                    f"{fmt_shape(valid)}")
    if any(isinstance(d, S.Sym) for d in shape):  # no static tile to carve from: the valid region is the tensor
        return _local(valid, dtype, value, op)
    return view(_local(shape, dtype, value, op), shape, [0] * len(shape), valid_shape=valid)


def _one_of(given, alias, name: str, alias_name: str, op: str):
    """The argument given under its reference name or its alias (exactly one of the two)."""
    if (given is None) == (alias is None):
        what = "both" if given is not None else "neither"
        raise current(op).error(op, f"pass {name} (or its alias {alias_name}) exactly once, got {what}")
    return alias if given is None else given


class _TensorFactory:
    """`pypto.tensor`: two things under one name, as in the reference.

    Inside a kernel, `pypto.tensor(shape, dtype, name=None)` makes a local (zero-initialised) tensor; write it with
    slice writes / assemble. Outside a trace (in a signature), `pypto.tensor`, `pypto.tensor(...)` and
    `pypto.tensor[...]` are the annotation `pypto.Tensor` with the same arguments. The parameter table recognises
    the bare name through `__pypto_annotation__` (vocab cannot import this layer).
    """

    __pypto_annotation__ = Tensor

    def __call__(self, shape=None, dtype=None, name=None, format=TileOpFormat.TILEOP_ND):
        if active() is None:
            return Tensor(shape, dtype, name, format)
        op = "tensor"
        if shape is None or dtype is None:
            raise current(op).error(op, "a local tensor needs a shape and a dtype: pypto.tensor(shape, dtype)")
        if name is not None and not isinstance(name, str):
            raise current(op).error(op, f"name must be a str, got {name!r}")
        return _local(shape, dtype, 0, op)

    def __getitem__(self, item):
        return Tensor[item]

    def __repr__(self) -> str:
        return "pypto.tensor"


tensor = _TensorFactory()


def _sizes_and_dtype(size, dtype, op: str):
    """The reference's `*size, dtype=None` convention (zeros / ones): ints, or one list/tuple of ints (possibly
    symbolic); dtype defaults to DT_FP32. A dtype given positionally after the sizes is taken as the dtype
    (`zeros(shape, dtype)`, this package's earlier signature)."""
    if size and isinstance(size[-1], DT) and dtype is None:
        size, dtype = size[:-1], size[-1]
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    return list(size), DT.DT_FP32 if dtype is None else dtype


def zeros(*size, dtype=None):
    """A local tensor of shape `size` filled with 0, of `dtype` (default DT_FP32): pypto.zeros(2, 3),
    pypto.zeros([2, 3], dtype=pypto.DT_INT32); zeros(shape, dtype) also works."""
    shape, dt = _sizes_and_dtype(size, dtype, "zeros")
    return _local(shape, dt, 0, "zeros")


def ones(*size, dtype=None):
    """A local tensor of shape `size` filled with 1, of `dtype` (default DT_FP32): pypto.ones(2, 3),
    pypto.ones([2, 3], dtype=pypto.DT_INT32) (the reference's signature)."""
    shape, dt = _sizes_and_dtype(size, dtype, "ones")
    return _local(shape, dt, 1, "ones")


def arange(start, stop=None, step=1, dtype=None):
    """[start, start+step, ...) below `stop` (1-D). Bounds may be symbolic ints; dtype defaults to INT64 for
    int arguments and FP32 when any argument is a float."""
    op = "arange"
    b = current(op)
    if stop is None:
        start, stop = 0, start
    for v in (start, stop, step):
        if isinstance(v, bool) or not isinstance(v, (int, float, S.Sym)):
            raise b.error(op, f"bounds must be numbers or symbolic ints, got {v!r}")
    if isinstance(step, (int, float)) and step == 0:
        raise b.error(op, "step must be non-zero")
    is_float = any(isinstance(v, float) for v in (start, stop, step))
    if is_float:
        if any(isinstance(v, S.Sym) for v in (start, stop, step)):
            raise b.error(op, "float bounds must be static")
        n = builtins.max(0, math.ceil((stop - start) / step))
    elif isinstance(step, int) and step > 0:
        n = S.smax(0, S.floordiv(S.add(S.sub(stop, start), step - 1), step))
    elif isinstance(step, int):
        n = S.smax(0, S.floordiv(S.add(S.sub(start, stop), -step - 1), -step))
    else:
        raise b.error(op, "a symbolic step is not supported")
    dtype = check_dtype(dtype, op) if dtype is not None else (DT.DT_FP32 if is_float else DT.DT_INT64)
    out = b.new_temp(dtype, (n,))
    return b.op("iota", out, [], start=start, step=step, fp=is_float or dtype.is_float)


def one_hot(t, num_classes):
    """INT64 tensor of shape t.shape + [num_classes] with 1 where the class equals t (integer t)."""
    op = "one_hot"
    b = current(op)
    t = check_tensor(t, op)
    if t.dtype.is_float or t.dtype == DT.DT_BOOL:
        raise b.error(op, f"needs an integer tensor, got {t.dtype.short}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes <= 0:
        raise b.error(op, f"num_classes must be a positive static int, got {num_classes!r}")
    return cast(eq(unsqueeze(t, -1), arange(num_classes)), DT.DT_INT64)


__all__ = ["full", "tensor", "zeros", "ones", "arange", "one_hot"]
