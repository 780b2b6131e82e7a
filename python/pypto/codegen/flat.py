"""Flat loops: the trailing dims of a fused elementwise statement run as one loop when every access the statement
makes (its inputs, inlined producers' inputs, tile buffers, its destination) is contiguous over them.

A tile of T rows of a [R, W] tensor is then one run of T*W elements instead of T loops of W: the vector loop's
scalar remainder (W mod the vector length: 8 of every 1000 bf16 elements at 32 lanes, a third of the
instructions of a bf16 neg) comes once per tile, not once per row. What torch's TensorIterator calls coalescing
dims. Each element is computed exactly as in the nested loops; only the loop structure changes.
"""
from __future__ import annotations

from typing import NamedTuple

from ..ir import sym as S
from ..ir.nodes import same_dim


class Flat(NamedTuple):
    """The index entry of each dim of a flat run: `var` walks all `count` dims at once, `pos` is this dim's place in
    the run (0: outermost), `is_row` whether this dim is the group's row axis (only ever the outermost)."""
    var: str
    is_row: bool
    pos: int
    count: int


class NotFlat(Exception):
    """An access of the statement is not contiguous over the run's dims (or broadcasts along one of them)."""


def check_flat(strides, idx, shape) -> int:
    """The dim of the view where its flat run starts; raises NotFlat unless the run is the view's last `count`
    dims, in order, each stride the next one's times the next extent (row-major over those dims)."""
    n = len(idx)
    dims = [d for d, e in enumerate(idx) if isinstance(e, Flat)]
    count = idx[dims[0]].count
    if shape is None or dims != list(range(n - count, n)) or [idx[d].pos for d in dims] != list(range(count)):
        raise NotFlat
    for d in dims[:-1]:
        if not same_dim(strides[d], S.mul(strides[d + 1], shape[d + 1])):
            raise NotFlat
    return dims[0]


def flat_start(dom, axis: int, stmt):
    """The first dim of the longest flat run of trailing dims of dom (at least two) over which stmt(idx) makes
    only contiguous accesses, or None. The row axis may only be the run's outermost dim (a tile covers `nr`
    consecutive rows of it, whole rows of the dims inside)."""
    k = len(dom) - 1
    if axis >= k:
        return None
    for j in range(axis, k):
        idx = [("_", d == axis) for d in range(j)]
        idx += [Flat("_", d == axis, d - j, k + 1 - j) for d in range(j, k + 1)]
        try:
            stmt(idx)
        except NotFlat:
            continue
        return j
    return None


__all__ = ["Flat", "NotFlat", "check_flat", "flat_start"]
