"""Register one kernel with torch.library: schema, real implementation, fake implementation.

The real implementation binds the op's arguments back onto the kernel's parameters (allocating returned tensors),
checks a specialization's written mask against the schema the first time that specialization is seen, then
launches through the kernel's normal call path (so it hits the native cache like any other call). The fake
implementation checks the same arguments against the annotations and allocates the returned tensors as fakes.
"""
from __future__ import annotations

from ..frontend.verified import VerifiedKernel
from ..vocab.annotations import DynamicDim
from ..vocab.dtypes import to_torch
from ..vocab.params import TENSOR
from .errors import TorchOpError
from .fake import check_arguments
from .schema import op_args, raw_annotations, schema_string
from .written import check_specialization, declared_written, infer_written


def register(front, name: str, mutates_args, returns):
    import torch

    native = front._native_ref()
    callee = VerifiedKernel(front, native) if front.options.verify["enable_pass_verify"] else native
    inferred = isinstance(mutates_args, str) and mutates_args == "infer"
    written = infer_written(front) if inferred else declared_written(front, mutates_args)
    allocate = _allocators(front, returns, written, inferred)
    args = op_args(front.name, front.params, raw_annotations(front.fn), written, list(allocate))
    schema = schema_string(front.name, args)
    op_inputs = [a for a in args if not a.returned]
    by_schema_name = {a.schema_name: a.name for a in op_inputs}
    allowed = written | set(allocate)
    tensor_params = [a.param for a in args if a.param.kind == TENSOR and not a.returned]
    checked: set[bytes] = set()   # specialization keys whose written mask was checked against the schema

    def bind(op_pos, op_kw) -> dict:
        """The op's arguments by parameter name, defaults filled in, list constants back to tuples."""
        values = {by_schema_name.get(k, k): v for k, v in op_kw.items()}
        for a, v in zip((a for a in op_inputs if not a.param.keyword_only), op_pos):
            values[a.name] = v
        for a in op_inputs:
            if a.name not in values:
                values[a.name] = a.param.default
            elif a.as_tuple and isinstance(values[a.name], list):
                values[a.name] = tuple(values[a.name])
        return values

    def outputs(values, named) -> list:
        device = next((values[p.name].device for p in tensor_params), torch.device("cpu"))
        return [fn(values, named, device) for fn in allocate.values()]

    def kernel_call(values):
        pos = [values[p.name] for p in front.params if not p.keyword_only]
        kw = {p.name: values[p.name] for p in front.params if p.keyword_only}
        return pos, kw

    def real(*op_pos, **op_kw):
        values = bind(op_pos, op_kw)
        named: dict = {}
        if allocate:  # the returned tensors are sized from checked inputs; otherwise `_probe` checks them all
            check_arguments(front.name, [(p, values[p.name]) for p in tensor_params], named)
        outs = outputs(values, named)
        values.update(zip(allocate, outs))
        pos, kw = kernel_call(values)
        hit, key, _meta = native._probe(*pos, **kw)
        if key not in checked:
            if not hit:
                native.compile(*pos, **kw)
                hit, key, _meta = native._probe(*pos, **kw)
            info = next((i for k, i, _l, _s in native._specializations() if (k or b"") == (key or b"")), None)
            if info is not None:
                check_specialization(front, name, info["result"].written, allowed)
            checked.add(key)
        callee(*pos, **kw)
        return _result(outs)

    def fake(*op_pos, **op_kw):
        values = bind(op_pos, op_kw)
        named: dict = {}
        check_arguments(front.name, [(p, values[p.name]) for p in tensor_params], named)
        return _result(outputs(values, named))

    mutated = tuple(a.name for a in args if a.mutable)
    op_def = torch.library.custom_op(f"pypto::{name}", real, mutates_args=mutated, schema=schema)
    op_def.register_fake(fake)
    return getattr(torch.ops.pypto, name)


def _result(outs: list):
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else tuple(outs)


def _allocators(front, returns, written: set[str], inferred: bool) -> dict:
    """name -> fn(values, named, device) -> a new tensor, for each tensor the op returns."""
    if returns is None:
        return {}
    if isinstance(returns, str):
        raise TorchOpError(f"kernel '{front.name}': as_torch_op: returns must be a list of output names or a dict, "
                           f"got the string {returns!r} (write [{returns!r}])")
    spec = dict(returns) if isinstance(returns, dict) else {n: None for n in returns}
    params = {p.name: p for p in front.params}
    tensors = [p.name for p in front.params if p.kind == TENSOR]
    out = {}
    for n, how in spec.items():
        p = params.get(n)
        if p is None or p.kind != TENSOR:
            raise TorchOpError(f"kernel '{front.name}': as_torch_op: returns names {n!r}, which is not a tensor "
                               f"parameter; expected some of {tensors}")
        if inferred and n not in written:
            raise TorchOpError(f"kernel '{front.name}': as_torch_op: returns names '{n}', which the kernel does not "
                               f"write (it writes {sorted(written)}); a returned tensor must be an output")
        out[n] = _allocator(front, p, how, tensors, set(spec))
    if len(out) == len(tensors):
        raise TorchOpError(f"kernel '{front.name}': as_torch_op: returns names every tensor parameter; the op "
                           f"would have no tensor input")
    return out


def _allocator(front, p, how, tensors, skip: set[str]):
    ann = p.annotation
    head = f"kernel '{front.name}': as_torch_op: returned tensor '{p.name}'"
    if callable(how):
        def by_callable(values, named, device):
            import torch
            inputs = [q for q in front.params if q.name in values and q.name not in skip]
            shape, dtype = how(*[values[q.name] for q in inputs if not q.keyword_only],
                               **{q.name: values[q.name] for q in inputs if q.keyword_only})
            return torch.empty(tuple(shape), dtype=dtype, device=device)
        return by_callable
    if isinstance(how, str):
        if how not in tensors or how == p.name:
            raise TorchOpError(f"{head}: allocate like {how!r}, which is not another tensor parameter; expected one "
                               f"of {[t for t in tensors if t != p.name]}")

        def like(values, named, device):
            import torch
            src = values[how]
            dtype = to_torch(ann.dtype) if ann.dtype is not None else src.dtype
            return torch.empty(src.shape, dtype=dtype, device=device)
        return like
    if how is not None:
        raise TorchOpError(f"{head}: expected None, the name of an input tensor or a callable returning "
                           f"(shape, dtype), got {how!r}")
    free = [] if ann.shape is None else [d for d in ann.shape if not isinstance(d, (int, DynamicDim))]
    if ann.shape is None or ann.ellipsis or free or ann.dtype is None:
        raise TorchOpError(f"{head}: its annotation {ann!r} does not fix its shape and dtype (STATIC, DYNAMIC, any "
                           f"shape or no dtype); say how to allocate it: returns={{'{p.name}': 'x'}} (like input x) "
                           f"or returns={{'{p.name}': lambda *args: (shape, dtype)}}")
    dims = [d for d in ann.shape if isinstance(d, DynamicDim)]
    missing = [d.name for d in dims if not any(
        q.kind == TENSOR and q.name != p.name and q.annotation.shape and d in q.annotation.shape
        for q in front.params)]
    if missing:
        raise TorchOpError(f"{head}: its named dimension(s) {missing} appear on no input tensor, so their sizes "
                           f"are unknown; pass returns={{'{p.name}': ...}} to say how to allocate it")

    def from_annotation(values, named, device):
        import torch
        shape = [named[d.name][0] if isinstance(d, DynamicDim) else d for d in ann.shape]
        return torch.empty(shape, dtype=to_torch(ann.dtype), device=device)
    return from_annotation
