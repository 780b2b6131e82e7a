"""Which tensors a kernel writes, known before any call: declared by the user, or read off one trace.

The schema must name the mutated tensors when the op is registered, but pypto learns a specialization's written
mask only when it builds it. `infer_written` traces the kernel once from its annotations alone (fixed dims as
given, every other dim symbolic, constants at their defaults); it neither generates code nor compiles. Since the
written set may depend on a constant or a shape, every specialization is checked again before its first launch
(`check_specialization`).
"""
from __future__ import annotations

from ..ir import trace
from ..vocab.annotations import DYNAMIC, STATIC, DynamicDim
from ..vocab.dtypes import DataType
from ..vocab.params import (CONSTEXPR, SCALAR, TENSOR, DynDim, ScalarArg, SpecializationRequest, TensorArg)
from .errors import TorchOpError


def declared_written(front, mutates_args) -> set[str]:
    """The user's `mutates_args`, checked against the tensor parameters."""
    if isinstance(mutates_args, str):
        raise TorchOpError(f"kernel '{front.name}': as_torch_op: mutates_args must be \"infer\" or a list of tensor "
                           f"parameter names, got {mutates_args!r}")
    names = list(mutates_args)
    tensors = [p.name for p in front.params if p.kind == TENSOR]
    for n in names:
        if n not in tensors:
            raise TorchOpError(f"kernel '{front.name}': as_torch_op: mutates_args names {n!r}, which is not a "
                               f"tensor parameter; expected some of {tensors}")
    return set(names)


def infer_written(front) -> set[str]:
    """Trace the kernel from its annotations (no codegen, no compile) and return the tensors it writes."""
    tensors, scalars, constants, missing = [], [], {}, []
    for p in front.params:
        if p.kind == TENSOR:
            ann = p.annotation
            if ann.shape is None or ann.ellipsis:
                missing.append(f"tensor '{p.name}' has no fixed rank ({ann!r})")
                continue
            dims = tuple(DynDim(p.name, ax, d.name if isinstance(d, DynamicDim) else None)
                         if d is STATIC or d is DYNAMIC or isinstance(d, DynamicDim) else int(d)
                         for ax, d in enumerate(ann.shape))
            dtype = ann.dtype if ann.dtype is not None else DataType.DT_FP32
            tensors.append(TensorArg(p.name, p.kind_index, dtype, dims, ann.format))
        elif p.kind == SCALAR:
            scalars.append(ScalarArg(p.name, p.kind_index, p.annotation.dtype))
        elif p.kind == CONSTEXPR:
            if p.has_default:
                constants[p.name] = p.default
            else:
                missing.append(f"constant '{p.name}' has no default")
    if missing:
        raise TorchOpError(_cannot_infer(front, "; ".join(missing)))
    request = SpecializationRequest(front.name, front.params, tensors, scalars, constants, front.options)
    try:
        kernel_ir = trace(front.prepared, request)
    except Exception as e:  # a trace that needs concrete sizes or constants: the user must declare
        raise TorchOpError(_cannot_infer(front, f"tracing it from its annotations failed: {type(e).__name__}: "
                                                f"{e}")) from e
    by_index = {t.index: t.param for t in tensors}
    return {by_index[i] for i in kernel_ir.written}


def _cannot_infer(front, why: str) -> str:
    tensors = [p.name for p in front.params if p.kind == TENSOR]
    return (f"kernel '{front.name}': as_torch_op cannot infer which tensors the kernel writes ({why}); declare "
            f"them: as_torch_op(mutates_args=[...]) with names from {tensors}")


def check_specialization(front, name: str, written_indices, allowed: set[str]) -> None:
    """Raise before launch when a specialization writes a tensor the op's schema does not declare written."""
    by_index = {p.kind_index: p.name for p in front.params if p.kind == TENSOR}
    extra = sorted(by_index[i] for i in written_indices if by_index[i] not in allowed)
    if extra:
        raise TorchOpError(
            f"kernel '{front.name}': torch op 'pypto::{name}': this specialization writes {extra}, which the op "
            f"does not declare written (expected writes only to {sorted(allowed)}); register the op with "
            f"as_torch_op(mutates_args=[...]) naming every tensor any specialization writes")
