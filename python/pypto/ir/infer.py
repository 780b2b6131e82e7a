"""Shape and dtype inference shared by the language ops.

dtype rules (torch's type promotion, which the tests compare against):
  * tensor (+) tensor: same dtype -> that dtype; float (+) float -> the wider one, with fp16 (+) bf16 -> fp32;
    int (+) float -> the float dtype; int (+) int -> the wider signed type (uint8 (+) int8 -> int16);
    bool (+) x -> x. uint16/32/64 (+) float -> the float; uint16/32/64 (+) any other dtype is refused, as torch
    refuses it (`unsigned_mix` names the pair).
  * tensor (+) Python scalar: the tensor's dtype, except int/bool tensor (+) float scalar -> fp32 and
    bool tensor (+) int scalar -> int64. Symbolic ints behave as Python ints, symbolic floats as floats.
Shape rule: numpy broadcasting, right-aligned. A symbolic dim only broadcasts against 1 or an equal (same
expression) dim; two different symbolic dims are assumed equal and checked when the kernel runs.
"""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT
from . import sym as S

_FLOAT_RANK = {DT.DT_FP16: 1, DT.DT_BF16: 1, DT.DT_FP32: 2, DT.DT_FP64: 3}
_INT_RANK = {DT.DT_BOOL: 0, DT.DT_UINT8: 1, DT.DT_INT8: 1, DT.DT_INT16: 2, DT.DT_INT32: 3, DT.DT_INT64: 4}


_WIDE_UNSIGNED = (DT.DT_UINT16, DT.DT_UINT32, DT.DT_UINT64)


def unsigned_mix(a: DT, b: DT) -> bool:
    """torch has no promotion between uint16/32/64 and another integer or bool dtype."""
    return a != b and (a in _WIDE_UNSIGNED or b in _WIDE_UNSIGNED) and not (a.is_float or b.is_float)


def promote(a: DT, b: DT) -> DT:
    if a == b:
        return a
    if a.is_float and b.is_float:
        if {a, b} == {DT.DT_FP16, DT.DT_BF16}:
            return DT.DT_FP32
        return a if _FLOAT_RANK[a] > _FLOAT_RANK[b] else b
    if a.is_float:
        return a
    if b.is_float:
        return b
    if a == DT.DT_BOOL:
        return b
    if b == DT.DT_BOOL:
        return a
    if {a, b} == {DT.DT_UINT8, DT.DT_INT8}:
        return DT.DT_INT16
    return a if _INT_RANK[a] > _INT_RANK[b] else b


def promote_scalar(t: DT, s) -> DT:
    """dtype of tensor(t) (+) scalar s (Python number or Sym)."""
    k = S.kind_of(s)
    if k == S.FLOAT and not t.is_float:
        return DT.DT_FP32
    if k == S.INT and t == DT.DT_BOOL:
        return DT.DT_INT64
    return t


# ops in which torch keeps a Python scalar at float32 precision next to an fp16/bf16 tensor (its CPU kernels
# read the "original scalar value" in the op-math type): (op, position of the scalar). Everywhere else torch
# first converts the scalar to the tensor's dtype — see round_scalar.
KEEPS_SCALAR = {("mul", 0), ("mul", 1), ("div", 1), ("floordiv", 1)}


def round_scalar(x, dt: DT):
    """A Python number as torch sees it next to an fp16/bf16 tensor: converted to float32, then rounded to
    nearest even in `dt` (torch converts double -> float -> half/bf16). Other dtypes: unchanged."""
    import struct

    if dt not in (DT.DT_FP16, DT.DT_BF16) or isinstance(x, (bool, S.Sym)):
        return x
    try:
        f = struct.unpack("<f", struct.pack("<f", float(x)))[0]
    except OverflowError:                      # beyond float32: torch's conversion gives +-inf
        f = float("inf") if x > 0 else float("-inf")
    if f != f:
        return f
    if dt == DT.DT_FP16:
        try:
            return struct.unpack("<e", struct.pack("<e", f))[0]
        except OverflowError:
            return float("inf") if f > 0 else float("-inf")
    if abs(f) == float("inf"):
        return f
    bits = struct.unpack("<I", struct.pack("<f", f))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def compute_dtype(dt: DT) -> DT:
    """The type arithmetic is done in: float for fp16/bf16/fp32 and the FP8 types (rounded back per op), double
    for fp64, uint64 for uint16/32/64 and int64 for the other integers (results wrap to the result type), bool
    for bool."""
    if dt in _WIDE_UNSIGNED:
        return DT.DT_UINT64
    if dt in (DT.DT_FP16, DT.DT_BF16, DT.DT_FP32) or dt.storage_only:
        return DT.DT_FP32
    if dt == DT.DT_FP64:
        return DT.DT_FP64
    if dt == DT.DT_BOOL:
        return DT.DT_BOOL
    return DT.DT_INT64


def broadcast_shapes(shapes, caps, fail):
    """Broadcast logical shapes (right-aligned). Returns (shape, cap, checks) where checks are symbolic
    equalities to verify at run time. `fail(msg)` builds the error to raise."""
    rank = max(len(s) for s in shapes)
    out, ocap, checks = [], [], []
    for ax in range(rank):
        dim, cap = 1, 1
        for shp, cp in zip(shapes, caps):
            i = ax - (rank - len(shp))
            if i < 0:
                continue
            d, c = shp[i], cp[i]
            if isinstance(d, int) and d == 1:
                continue
            if isinstance(dim, int) and dim == 1:
                dim, cap = d, c
                continue
            if isinstance(d, int) and isinstance(dim, int):
                if d != dim:
                    raise fail(f"shapes {[_fmt(s) for s in shapes]} cannot be broadcast together "
                               f"(dim {ax}: {dim} vs {d})")
                continue
            if isinstance(dim, S.Sym) and isinstance(d, S.Sym) and dim.key == d.key:
                cap = _min_cap(cap, c)
                continue
            # one symbolic, or two different symbolic dims: equal at run time
            checks.append((S.compare("==", dim, d), f"dim {ax}: {S.to_text(dim)} vs {S.to_text(d)}"))
            if isinstance(d, int):
                dim, cap = d, d
            else:
                cap = _min_cap(cap, c)
        out.append(dim)
        ocap.append(cap)
    return tuple(out), tuple(ocap), checks


def _min_cap(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _fmt(shape) -> list:
    return [S.to_text(d) if isinstance(d, S.Sym) else d for d in shape]


fmt_shape = _fmt


def norm_dim(dim, rank: int, fail):
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise fail(f"dim must be an int, got {dim!r}")
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise fail(f"dim {dim} is out of range for a tensor of rank {rank}")
    return dim % max(rank, 1)
