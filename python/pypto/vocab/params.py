"""The parameter table: a kernel's signature, read once at decoration.

Also the description of one specialization (`SpecializationRequest`) handed to the tracer on a cache miss.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .annotations import DYNAMIC, STATIC, DynamicDim, Scalar, Tensor, TileOpFormat
from .dtypes import DataType
from ..errors import KernelDefinitionError

if TYPE_CHECKING:
    from .options import ResolvedOptions

TENSOR, CONSTEXPR, SCALAR = "tensor", "constexpr", "scalar"

_EMPTY = inspect.Parameter.empty


@dataclass
class Param:
    """One kernel parameter as the signature gives it. (A docstring also keeps Python 3.10's dataclass from
    rendering the __init__ signature, which fails on a field whose default is inspect.Parameter.empty.)"""
    name: str
    kind: str                      # TENSOR / CONSTEXPR / SCALAR
    position: int                  # index among all parameters
    kind_index: int                # index among parameters of the same kind
    annotation: Any = None         # Tensor / Scalar / None
    default: Any = _EMPTY          # inspect.Parameter.empty when there is none
    keyword_only: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not _EMPTY


def _resolve_string_annotation(kernel_name: str, fn, name: str, text: str):
    """A string annotation (`from __future__ import annotations`), evaluated once at decoration in the kernel's
    globals and the values of its closure cells (as typing.get_type_hints does for globals)."""
    ns = dict(fn.__globals__)
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            ns[var] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    try:
        return eval(text, ns)  # noqa: S307 - the user's own annotation, evaluated like typing.get_type_hints
    except Exception as e:
        raise KernelDefinitionError(
            f"kernel '{kernel_name}': parameter '{name}': cannot evaluate the string annotation {text!r} (from "
            f"`from __future__ import annotations`) in the kernel's module: {type(e).__name__}: {e}; define the "
            f"annotation at module level or drop the __future__ import") from None


def packing_refusal(kernel_name: str, fn) -> str | None:
    """Why the reference's parser refuses `fn`'s signature, or None: a parameter that packs arguments (`*args`,
    then `**kwargs`, the order its parser checks them in). `jit` decorates such a kernel and raises this at every
    call, as the reference does (its parser reads the signature at the call)."""
    code = fn.__code__
    where = f"{code.co_filename}:{code.co_firstlineno}"
    for p in inspect.signature(fn).parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return (f"kernel '{kernel_name}': parameter '*{p.name}': Variable-length arguments (*args) are not "
                    f"supported in a kernel signature; use a fixed number of parameters (kernel defined at {where})")
    for p in inspect.signature(fn).parameters.values():
        if p.kind == p.VAR_KEYWORD:
            return (f"kernel '{kernel_name}': parameter '**{p.name}': Keyword argument packing (**kwargs) is not "
                    f"supported in a kernel signature; name each keyword parameter (kernel defined at {where})")
    return None


def build_params(kernel_name: str, fn) -> list[Param]:
    """Read `fn`'s signature into Params; enforce 'tensor parameters first'."""
    sig = inspect.signature(fn)
    params: list[Param] = []
    counts = {TENSOR: 0, CONSTEXPR: 0, SCALAR: 0}
    seen_non_tensor = None
    for pos, p in enumerate(sig.parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise KernelDefinitionError(f"kernel '{kernel_name}': parameter '{p.name}': *args/**kwargs are not "
                                        f"supported in a pypto kernel signature")
        ann = p.annotation
        if isinstance(ann, str):
            ann = _resolve_string_annotation(kernel_name, fn, p.name, ann)
        if ann is Tensor or getattr(type(ann), "__pypto_annotation__", None) is Tensor:
            ann = Tensor()          # bare `pypto.Tensor`, or `pypto.tensor` (language/creation.py)
        if isinstance(ann, Tensor):
            kind = TENSOR
            if ann.dtype is not None and not ann.dtype.native:
                raise KernelDefinitionError(
                    f"kernel '{kernel_name}': parameter '{p.name}': tensor dtype {ann.dtype!r} is not supported yet "
                    f"by the native core (kernel arguments may be {', '.join(d.short for d in DataType if d.native)})")
            if seen_non_tensor is not None:
                raise KernelDefinitionError(
                    f"kernel '{kernel_name}': tensor parameter '{p.name}' comes after non-tensor parameter "
                    f"'{seen_non_tensor}'; tensor parameters must come first")
            if p.default is not _EMPTY:
                raise KernelDefinitionError(f"kernel '{kernel_name}': tensor parameter '{p.name}' may not have "
                                            f"a default value")
        elif ann is Scalar:
            raise KernelDefinitionError(f"kernel '{kernel_name}': parameter '{p.name}': write pypto.Scalar[dtype], "
                                        f"e.g. pypto.Scalar[pypto.DT_FP32]")
        elif isinstance(ann, Scalar):
            kind = SCALAR
            sdt = getattr(ann, "dtype", None)
            if isinstance(sdt, DataType) and (not sdt.native or sdt.storage_only):
                raise KernelDefinitionError(
                    f"kernel '{kernel_name}': parameter '{p.name}': scalar dtype {sdt!r} is not supported for "
                    f"pypto.Scalar (scalars may be integer, bool or fp16/bf16/fp32/fp64)")
        elif ann is _EMPTY or ann is None:
            kind = CONSTEXPR
            ann = None
        else:
            # any other annotation (int, float, typing hints) marks a compile-time constant
            kind = CONSTEXPR
            ann = None
        if kind != TENSOR:
            seen_non_tensor = seen_non_tensor or p.name
        params.append(Param(p.name, kind, pos, counts[kind], ann, p.default, p.kind == p.KEYWORD_ONLY))
        counts[kind] += 1
    return params


# ---------------------------------------------------------------------------------------------------------
# One specialization, as the tracer sees it.


@dataclass(frozen=True)
class DynDim:
    """A dimension whose size is read at run time from the argument's shape (never baked into code)."""
    param: str          # tensor parameter name
    axis: int
    name: str | None    # pypto.frontend.dynamic name, or None for plain DYNAMIC


@dataclass
class TensorArg:
    param: str
    index: int                      # tensor index in the kernel ABI (order of tensor parameters)
    dtype: DataType
    dims: tuple                     # each: int (static, baked) or DynDim
    format: TileOpFormat = TileOpFormat.TILEOP_ND


@dataclass
class ScalarArg:
    param: str
    index: int                      # scalar index in the kernel ABI
    dtype: DataType


@dataclass
class SpecializationRequest:
    """Everything a tracer needs for one specialization."""
    kernel_name: str
    params: list[Param]
    tensors: list[TensorArg]
    scalars: list[ScalarArg]
    constants: dict[str, Any]       # constexpr parameter name -> value
    options: "ResolvedOptions"      # every option group, resolved (vocab/options.py)

    def arg_for(self, name: str):
        for t in self.tensors:
            if t.param == name:
                return t
        for s in self.scalars:
            if s.param == name:
                return s
        return self.constants[name]


def describe(kernel_name: str, params: list[Param], args: tuple, tensor_meta: tuple,
             options: "ResolvedOptions") -> SpecializationRequest:
    """The specialization selected by the bound arguments `args` (one per parameter): `tensor_meta` holds
    (dtype code, shape) per tensor argument, as the native core read them. A dim the annotation makes DYNAMIC or
    names is a DynDim (read at run time); every other dim is keyed by its size. The one description of a
    specialization: the frontend's miss and `pypto.testing` both build theirs here."""
    tensors, scalars, constants = [], [], {}
    for p, a in zip(params, args):
        if p.kind == TENSOR:
            ann = p.annotation
            dtype_code, shape = tensor_meta[p.kind_index]
            dims = []
            for axis, size in enumerate(shape):
                d = ann.shape[axis] if ann.shape is not None and axis < len(ann.shape) else STATIC
                if d is DYNAMIC:
                    dims.append(DynDim(p.name, axis, None))
                elif isinstance(d, DynamicDim):
                    dims.append(DynDim(p.name, axis, d.name))
                else:
                    dims.append(int(size))
            # the annotation's dtype where it names one: a uint8 tensor is the storage of a DT_HF8 parameter
            dtype = ann.dtype if ann.dtype is not None else DataType(dtype_code)
            tensors.append(TensorArg(p.name, p.kind_index, dtype, tuple(dims), ann.format))
        elif p.kind == SCALAR:
            scalars.append(ScalarArg(p.name, p.kind_index, p.annotation.dtype))
        else:
            constants[p.name] = a
    return SpecializationRequest(kernel_name, list(params), tensors, scalars, constants, options)


def dim_kind(d) -> str:
    if d is STATIC:
        return "STATIC"
    if d is DYNAMIC:
        return "DYNAMIC"
    if isinstance(d, DynamicDim):
        return "NAMED"
    return "FIXED"
