"""The tracer: run a prepared kernel once with symbolic/proxy arguments and record its IR.

Tensor parameters become root values (static dims are ints, DYNAMIC dims symbolic vars read from the
argument's shape at run time; named dynamic dims share one var); runtime scalars (pypto.Scalar[...]) become
symbolic vars; constexpr parameters are passed as their Python values.
"""
from __future__ import annotations

from ..errors import KernelTraceError
from ..vocab.params import CONSTEXPR, SCALAR, TENSOR, DynDim, SpecializationRequest
from . import sym as S
from .builder import Builder, activate
from ..vocab.dtypes import DataType as DT
from .nodes import PARAM, TEMP, Kernel


def _cident(name: str) -> str:
    """An injective C++ identifier spelling of `name` (codegen/names.py's `mangle`): ASCII letters and digits
    stay, `_` doubles, anything else is `_x<hex>_`. Distinct names never collide, and the `_d<axis>` suffix of a
    dim variable can never be produced by a name (a mangled `_` is always followed by `_` or `x`)."""
    return "".join(ch if (ch.isascii() and ch.isalnum()) else "__" if ch == "_" else f"_x{ord(ch):x}_"
                   for ch in name)


def _unpacked_fp4(kernel: str, b: Builder, t, packed):
    """A DT_FP4_E2M1 parameter as the kernel body sees it: its packed pairs (bytes, element 2i in the low nibble)
    unpacked to one value per byte, the last dim doubled (the reference's logical shape)."""
    name = t.param
    if t.dims and isinstance(t.dims[-1], DynDim) and t.dims[-1].name is not None:
        raise KernelTraceError(f"kernel '{kernel}': parameter '{name}': the last dim of a DT_FP4_E2M1 tensor (two "
                               f"values per byte) cannot be a named dim; use pypto.DYNAMIC or STATIC")
    if not packed.shape:
        raise KernelTraceError(f"kernel '{kernel}': parameter '{name}': a DT_FP4_E2M1 tensor needs rank >= 1 (two "
                               f"values per byte along the last dim), got a rank-0 tensor")
    last, cap = packed.shape[-1], packed.cap[-1]
    out = b.new_temp(DT.DT_FP4_E2M1, packed.shape[:-1] + (S.mul(last, 2),),
                     packed.cap[:-1] + (cap * 2 if isinstance(cap, int) else None,))
    return b.op("fp4_unpack", out, [packed])


def _check_fp4_inputs(request: SpecializationRequest, args: dict, where: str) -> None:
    """The unpacked values of a DT_FP4_E2M1 parameter were not written (they would never reach the caller)."""
    for t in request.tensors:
        if t.dtype == DT.DT_FP4_E2M1 and args[t.param].storage.kind != TEMP:
            raise KernelTraceError(f"kernel '{request.kernel_name}': parameter '{t.param}': a DT_FP4_E2M1 parameter "
                                   f"is an input here (its values are unpacked on entry); write FP4 results into a "
                                   f"DT_FP4_E2M1X2 tensor (kernel at {where})")


def trace(prepared, request: SpecializationRequest) -> Kernel:
    b = Builder(request.kernel_name)
    dyn_vars = []
    named = {}
    params = {}
    args = {}       # what the kernel body receives: the parameter itself, or its unpacked values (DT_FP4_E2M1)
    scalar_vars = {}
    with activate(b):
        for t in sorted(request.tensors, key=lambda t: t.index):
            dims, cap = [], []
            for ax, d in enumerate(t.dims):
                if isinstance(d, DynDim):
                    if d.name is not None and d.name in named:
                        v = named[d.name]
                    else:
                        disp = d.name if d.name is not None else f"{t.param}.shape[{ax}]"
                        v = S.var(disp, f"p_{_cident(t.param)}_d{ax}")
                        dyn_vars.append((v, t.index, ax))
                        if d.name is not None:
                            named[d.name] = v
                    dims.append(v)
                    cap.append(None)
                else:
                    dims.append(int(d))
                    cap.append(int(d))
            packed = t.dtype == DT.DT_FP4_E2M1     # bytes of packed pairs: the kernel sees their values
            val = b.new_storage(PARAM, DT.DT_FP4_E2M1X2 if packed else t.dtype, tuple(dims), tuple(cap),
                                param_index=t.index, param_name=t.param)
            val.storage.cname = f"p_{_cident(t.param)}"
            params[t.param] = val
            args[t.param] = _unpacked_fp4(request.kernel_name, b, t, val) if packed else val
        for s in request.scalars:
            kind = S.FLOAT if s.dtype.is_float else (S.BOOL if s.dtype.name == "DT_BOOL" else S.INT)
            scalar_vars[s.param] = S.var(s.param, f"s_{_cident(s.param)}", kind)

        pos, kw = [], {}
        for p in request.params:
            if p.kind == TENSOR:
                val = args[p.name]
            elif p.kind == SCALAR:
                val = scalar_vars[p.name]
            elif p.kind == CONSTEXPR:
                val = request.constants[p.name]
            else:  # pragma: no cover
                raise KernelTraceError(f"kernel '{request.kernel_name}': unknown parameter kind {p.kind}")
            if p.keyword_only:
                kw[p.name] = val
            else:
                pos.append(val)
        result = prepared.call(tuple(pos), kw)
        # the kernel's own line, for errors found after its body ran (unrewritten kernels: REPL, exec)
        where = f"{getattr(prepared, 'filename', '?')}:{getattr(prepared, 'firstlineno', '?')}"
        if result is not None:
            raise KernelTraceError(f"kernel '{request.kernel_name}': a kernel returns nothing (got a "
                                   f"{type(result).__name__}); write results into output tensors with "
                                   f"out[:] = ..., out.move(...) or pypto.assemble(...) (kernel at {where})")
        _check_fp4_inputs(request, args, where)
        if b.left_early:
            raise KernelTraceError(f"kernel '{request.kernel_name}': `break` / `return` inside a pypto.loop body "
                                   f"is not supported (the loop at {b.left_early[0]} was left before its body "
                                   f"ended): the body is traced once into a kernel loop, so it cannot be left "
                                   f"early; use a kernel branch (`if pypto.cond(...)`) or a mask instead")
        if b.block is not b.body:
            raise KernelTraceError(f"kernel '{request.kernel_name}': a pypto.loop or kernel branch was left early "
                                   f"(break / return inside its body?); let the body run to its end and use a "
                                   f"mask or pypto.cond instead (kernel at {where})")
    return Kernel(name=request.kernel_name, tensors=list(request.tensors), scalars=list(request.scalars),
                  constants=dict(request.constants), params=params, scalar_vars=scalar_vars,
                  dyn_vars=dyn_vars, body=b.body, storages=b.storages, written=tuple(sorted(b.written)),
                  uses_threads=b.uses_threads, runtime_debug_mode=int(request.options.debug["runtime_debug_mode"]),
                  shmem=getattr(b, "shmem", None))


__all__ = ["trace"]
