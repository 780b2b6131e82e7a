"""Helpers shared by the language ops: argument checking and the elementwise-op constructor."""
from __future__ import annotations

from ..vocab.dtypes import DataType, from_any
from ..vocab.element import Element
from ..ir import sym as S
from ..ir.builder import current
from ..ir.infer import broadcast_shapes, compute_dtype, fmt_shape, promote, promote_scalar, unsigned_mix
from ..ir.nodes import Value, same_dim

DT = DataType


def check_tensor(x, op: str, what: str = "argument") -> Value:
    b = current(op)
    if not isinstance(x, Value):
        raise b.error(op, f"{what} must be a pypto tensor, got {describe(x)}")
    b.use(x, op)
    return x


def check_operand(x, op: str, what: str = "operand"):
    """A tensor or a scalar (Python number / symbolic scalar)."""
    b = current(op)
    if isinstance(x, Value):
        b.use(x, op)
        return x
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, S.Sym):
        b.use(x, op)
        return S.concrete_int(x)
    if isinstance(x, Element):
        return x.value
    raise b.error(op, f"{what} must be a pypto tensor or a scalar, got {describe(x)}")


def describe(x) -> str:
    """A wrong argument for an error message: short, and for a torch/numpy array what to do instead."""
    getattr(x, "__pypto_operand__", None)  # a name left undefined by a kernel branch raises its own error here
    lib = type(x).__module__.partition(".")[0]
    if lib in ("torch", "numpy") and hasattr(x, "shape") and getattr(x, "ndim", 0):
        return (f"a {lib} {type(x).__name__} of shape {list(x.shape)}: arrays from outside the kernel (a global "
                f"or closure variable?) cannot be used in it; pass it as a tensor parameter")
    text = repr(x)
    return f"{type(x).__name__} {text[:200] + '...' if len(text) > 200 else text}"


def check_dtype(dt, op: str) -> DataType:
    if not isinstance(dt, DataType):
        try:
            dt = from_any(dt)
        except Exception:
            raise current(op).error(op, f"dtype must be a pypto dtype such as pypto.DT_FP32, got {dt!r}") from None
    if not dt.native:
        raise current(op).error(op, f"dtype {dt!r} is not supported yet inside kernels (supported: "
                                    f"{', '.join(d.short for d in DataType if d.native)})")
    return dt


def check_int_like(x, op: str, what: str):
    b = current(op)
    if isinstance(x, bool) or not (isinstance(x, int) or (isinstance(x, S.Sym) and x.kind == S.INT)):
        raise b.error(op, f"{what} must be an int or a symbolic int, got {x!r}")
    if isinstance(x, S.Sym):
        b.use(x, op)
    return S.concrete_int(x)


def check_int_list(xs, op: str, what: str, allow_sym=True) -> list:
    b = current(op)
    if isinstance(xs, (int, S.Sym)):
        xs = [xs]
    if not isinstance(xs, (list, tuple)):
        raise b.error(op, f"{what} must be a list of ints, got {xs!r}")
    out = []
    for x in xs:
        if not allow_sym and isinstance(x, S.Sym):
            raise b.error(op, f"{what} must be static ints, got symbolic {x}")
        out.append(check_int_like(x, op, what))
    return out


def result_dtype(args, op: str) -> DataType:
    """Promoted dtype of a mix of tensors and scalars (see ir/infer.py for the rules)."""
    tensors = [a for a in args if isinstance(a, Value)]
    if not tensors:
        raise current(op).error(op, "at least one operand must be a tensor")
    dt = tensors[0].dtype
    for t in tensors[1:]:
        if unsigned_mix(dt, t.dtype):
            raise current(op).error(op, f"operands of dtypes {dt.short} and {t.dtype.short} cannot be combined: "
                                        f"uint16/uint32/uint64 promote only with themselves and float dtypes (as "
                                        f"in torch); cast one operand first")
        dt = promote(dt, t.dtype)
    for a in args:
        if not isinstance(a, Value):
            dt = promote_scalar(dt, a)
    return dt


_ORDINAL = ("first", "second", "third", "fourth")


def broadcast(args, op: str):
    b = current(op)
    tensors = [a for a in args if isinstance(a, Value)]
    named = ", ".join(f"{_ORDINAL[i] if i < len(_ORDINAL) else f'#{i + 1}'} operand {fmt_shape(a.shape)}"
                      for i, a in enumerate(args) if isinstance(a, Value))
    params = [f"{fmt_shape(a.shape)} is parameter {a.label!r}" for a in tensors if a.label]
    todo = (f"; {' and '.join(params)} (the arguments' shapes): call with shapes that are equal or 1 in each "
            f"dim" if params else "")
    shape, cap, checks = broadcast_shapes([t.shape for t in tensors], [t.cap for t in tensors],
                                          lambda m: b.error(op, f"{m}; expected broadcastable shapes, got "
                                                                f"{named}{todo}"))
    for cond, msg in checks:
        b.check(cond, f"operand shapes differ at run time ({msg}); shapes {[fmt_shape(t.shape) for t in tensors]}",
                op)
    return shape, cap


def check_computable(op: str, *dtypes):
    """Refuse arithmetic on the storage-only dtypes (FP8, packed FP4): they are moved and cast, not computed on."""
    for dt in dtypes:
        if dt is not None and DataType(dt).storage_only:
            raise current(op).error(op, f"not supported for dtype {dt.short} ({dt!r}): pypto computes on FP8/FP4 "
                                        f"tensors only through pypto.cast (and copies, views, assemble); cast it "
                                        f"to DT_FP32, DT_FP16 or DT_BF16 first")


def elementwise(fn: str, args, out_dtype: DataType, cts, op: str) -> Value:
    """Emit `out = fn(args)` elementwise with broadcasting. `cts`: per-argument compute dtype (None = load the
    stored value unconverted, used by cast)."""
    b = current(op)
    if fn != "cast":
        check_computable(op, out_dtype, *(a.dtype for a in args if isinstance(a, Value)))
    shape, cap = broadcast(args, op)
    out = b.new_temp(out_dtype, shape, cap)
    return b.op("ew", out, args, fn=fn, cts=tuple(cts), tile=b.vec_tile)


__all__ = ["DT", "Value", "S", "current", "check_tensor", "check_operand", "check_dtype", "check_computable",
           "check_int_like", "check_int_list", "result_dtype", "broadcast", "elementwise", "compute_dtype",
           "fmt_shape"]


def check_enum(v, enum_cls, op: str, what: str):
    """A member of one of the reference's enums (vocab/enums.py), or a trace error naming the parameter."""
    if not isinstance(v, enum_cls):
        members = ", ".join(f"{enum_cls.__name__}.{m.name}" for m in enum_cls)
        raise current(op).error(op, f"{what} must be a pypto.{enum_cls.__name__} ({members}), got {describe(v)}")
    return v


def require_equal(b, x, y, op: str, static_msg: str, runtime_msg: str) -> None:
    """Two sizes that must be equal: both static and different -> a trace error (static_msg); symbolic and not
    provably the same -> a run-time check failing with runtime_msg; otherwise nothing."""
    if isinstance(x, int) and isinstance(y, int):
        if x != y:
            raise b.error(op, static_msg)
    elif not same_dim(x, y):
        b.check(S.compare("==", x, y), runtime_msg, op)
