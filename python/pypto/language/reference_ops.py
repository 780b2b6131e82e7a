"""The reference's op names that are spelled differently here or not supported yet: `greater` (= `gt`),
`copysign`, and the NPU sort primitives `sort32` / `mrgsort` and the conv parameter record `ConvParams`, which raise
UnsupportedFeatureError naming themselves (use `pypto.topk` / `pypto.conv`)."""
from __future__ import annotations

from ..errors import not_supported
from ._helpers import check_tensor, current
from .elementwise import abs as _abs
from .elementwise import gt, neg, signbit, where


def greater(input, other):
    """Bool mask input > other (the reference's name of `pypto.gt`)."""
    return gt(input, other)


def copysign(input, other):
    """|input| with the sign (bit) of `other`, as torch.copysign (-0.0 counts as negative). Float tensors only."""
    op = "copysign"
    for name, t in (("input", input), ("other", other)):
        t = check_tensor(t, op, name)
        if not t.dtype.is_float:
            raise current(op).error(op, f"{name} must be a float tensor, got {t.dtype.short}")
    mag = _abs(input)
    return where(signbit(other), neg(mag), mag)


def sort32(input, index=None):
    raise not_supported("pypto.sort32 (the NPU's 32-element sort primitive)", "use pypto.topk")


def mrgsort(input, mergesize):
    raise not_supported("pypto.mrgsort (the NPU's merge-sort primitive)", "use pypto.topk")


class ConvParams:
    """The reference's internal record of a conv call's parameters: not supported yet (call pypto.conv)."""

    def __init__(self, *args, **kwargs):
        raise not_supported("pypto.ConvParams (the reference's conv parameter record)", "call pypto.conv")


__all__ = ["greater", "copysign", "sort32", "mrgsort", "ConvParams"]
