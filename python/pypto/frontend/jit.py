"""`pypto.frontend.jit`: decorate once, then every call goes straight to the native core.

Reading top-down: the decorator validates options, reads the signature into the parameter table, prepares the body
(AST, once), finds the globals to guard, and creates a `pypto._core.JitFunction` — the object the user calls.
A cache-hit call runs no Python at all. On a miss the core calls `JITKernel._on_miss`, which describes the
specialization (`SpecializationRequest`), builds it (trace → IR → C++ → shared library, disk-cached) and hands the library
back to the core.
"""
from __future__ import annotations

import functools
import os
import threading
import time
import weakref
from typing import Any, Callable, Optional, overload

from .. import _core
from ..compiler import pipeline
from ..compiler.torch_reader import ensure_installed
from .. import logger as _log
from ..errors import KernelDefinitionError
from ..vocab import options as _options
from ..vocab.annotations import DYNAMIC, STATIC, DynamicDim
from ..vocab.dtypes import DataType
from .buildlog import log_build
from .explain import explain as explain_call
from .guards import collect_guards, function_ast
from .rewrite import prepare
from .verified import VerifiedKernel
from ..vocab.params import (CONSTEXPR, SCALAR, TENSOR, DynDim, ScalarArg, SpecializationRequest, TensorArg,
                        build_params)

_KIND_CODE = {TENSOR: 0, CONSTEXPR: 1, SCALAR: 2}
_DIM_FIXED, _DIM_STATIC, _DIM_DYNAMIC, _DIM_NAMED = 0, 1, 2, 3


class _InFlight:
    """One build in progress; identical concurrent misses wait on it instead of building again."""

    def __init__(self):
        self.done = threading.Event()
        self.result = None
        self.error: BaseException | None = None


class JITKernel:
    """The Python side of a kernel: what the native JitFunction needs on a miss, and introspection."""

    def __init__(self, fn, resolved: _options.ResolvedOptions):
        self.fn = fn
        self.name = fn.__name__
        self.options = resolved
        self.params = build_params(self.name, fn)
        self.dim_names: list[str] = []
        self.tree = function_ast(fn)
        self.guards = collect_guards(fn, self.tree)
        self.prepared = prepare(fn, self.name)  # the kernel body, parsed and rewritten once
        self._lock = threading.Lock()
        self._inflight: dict[bytes, _InFlight] = {}
        self._native_ref = None
        self.last_stage = None    # StageResult of the last build stopped by host_options.compile_stage
        self.last_verify = None   # StageReports of the last verify_options check

    # -- the native parameter table ------------------------------------------------------------------------
    def native_params(self) -> list[tuple]:
        rows = []
        for p in self.params:
            dtype, any_shape, ellipsis, fmt, dims, sdtype = -1, False, False, 0, [], int(DataType.DT_FP32)
            if p.kind == TENSOR:
                ann = p.annotation
                dtype = -1 if ann.dtype is None else int(ann.dtype)
                any_shape = ann.shape is None
                ellipsis = ann.ellipsis
                fmt = int(ann.format)
                for d in ann.shape or ():
                    dims.append(self._native_dim(d))
            elif p.kind == SCALAR:
                sdtype = int(p.annotation.dtype)
            rows.append((p.name, _KIND_CODE[p.kind], p.keyword_only, dtype, any_shape, ellipsis, fmt, dims, sdtype))
        return rows

    def _native_dim(self, d) -> tuple[int, int]:
        if d is STATIC:
            return (_DIM_STATIC, 0)
        if d is DYNAMIC:
            return (_DIM_DYNAMIC, 0)
        if isinstance(d, DynamicDim):
            if d.name not in self.dim_names:
                self.dim_names.append(d.name)
            return (_DIM_NAMED, self.dim_names.index(d.name))
        return (_DIM_FIXED, int(d))

    # -- the miss ------------------------------------------------------------------------------------------
    def specialization_request(self, args: tuple, meta: tuple) -> SpecializationRequest:
        """Describe the specialization selected by the bound arguments `args` (one per parameter); `meta` holds
        (dtype code, shape) per tensor argument, as the native core read them."""
        tensors, scalars, constants = [], [], {}
        for p, a in zip(self.params, args):
            if p.kind == TENSOR:
                ann = p.annotation
                dtype_code, shape = meta[p.kind_index]
                dims = []
                for axis, size in enumerate(shape):
                    d = ann.shape[axis] if ann.shape is not None and axis < len(ann.shape) else STATIC
                    if d is DYNAMIC:
                        dims.append(DynDim(p.name, axis, None))
                    elif isinstance(d, DynamicDim):
                        dims.append(DynDim(p.name, axis, d.name))
                    else:
                        dims.append(size)
                tensors.append(TensorArg(p.name, p.kind_index, DataType(dtype_code), tuple(dims), ann.format))
            elif p.kind == SCALAR:
                scalars.append(ScalarArg(p.name, p.kind_index, p.annotation.dtype))
            else:
                constants[p.name] = a
        return SpecializationRequest(self.name, self.params, tensors, scalars, constants, self.options.as_dict())

    def _on_miss(self, args: tuple, key: bytes, meta: tuple):
        with self._lock:
            job = self._inflight.get(key)
            owner = job is None
            if owner:
                job = self._inflight[key] = _InFlight()
        if not owner:
            job.done.wait()
            if job.error is not None:
                raise job.error
            if job.result is None:
                return None
            library, written, _seconds, info = job.result
            return (library, written, 0.0, info)  # the owner accounted for the build time
        try:
            job.result = self._build(args, meta)
            return job.result
        except BaseException as e:
            job.error = e
            raise
        finally:
            job.done.set()
            with self._lock:
                self._inflight.pop(key, None)

    def _build(self, args: tuple, meta: tuple):
        t_reader = time.perf_counter()
        ensure_installed()  # once per process: the fast torch.Tensor reader for the calls that follow
        t_reader = time.perf_counter() - t_reader

        request = self.specialization_request(args, meta)
        stage = self.options.host["compile_stage"]
        if stage != _options.CompileStage.ALL_COMPLETE:
            self.last_stage = pipeline.build_until(self.prepared, request, stage)  # trace / C++ / .so, as asked
            self._dump(self.last_stage)
            return None  # stop after the requested stage: nothing is launched
        t0 = time.perf_counter()
        result = pipeline.build(self.prepared, request)
        seconds = result.compile_seconds if result.compile_seconds else time.perf_counter() - t0
        self._dump(result)
        if _log.enabled():  # PYPTO_LOG=info|debug: why this compiled, the time split, the disk cache
            log_build(self, self._native_ref and self._native_ref(), args, meta, result, t_reader)
        written = 0
        for i in result.written:
            written |= 1 << i
        info = {"request": request, "result": result,
                "guards": {(g.owner, g.name): g.current() for g in self.guards}}
        return (result.library, written, float(seconds), info)

    def _dump(self, result) -> None:
        dbg = self.options.debug
        if not dbg.get("compile_debug_mode"):
            return
        ddir = dbg.get("dump_dir") or os.path.join(os.getcwd(), "pypto_dump")
        os.makedirs(ddir, exist_ok=True)
        lib = getattr(result, "library", None)
        tag = os.path.basename(lib).split('.')[0] if lib else getattr(result, "stage", "partial")
        stem = os.path.join(ddir, f"{self.name}_{tag}")
        with open(stem + ".ir.txt", "w") as f:
            f.write(result.ir_text)
        if getattr(result, "source", None):
            with open(stem + ".cpp", "w") as f:
                f.write(result.source)

    # -- introspection (reached through the native object's attribute fallback) ----------------------------
    def explain(self, *args, **kwargs) -> str:
        """Would this call hit? For a miss: which key component differs from the nearest specialization."""
        return explain_call(self, self._native_ref(), args, kwargs)

    def __repr__(self) -> str:
        return f"<pypto kernel frontend '{self.name}'>"


def _make(fn, groups: dict[str, Any]):
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise KernelDefinitionError(f"pypto.frontend.jit expects a Python function, got {fn!r}")
    if fn.__code__.co_flags & 0x20:  # CO_GENERATOR
        raise KernelDefinitionError(f"kernel '{fn.__name__}': a kernel may not be a generator")
    # parameter names first, so that ready_on_host_tensors can be checked
    names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount])
    resolved = _options.validate_options(fn.__name__, names, **groups)
    front = JITKernel(fn, resolved)
    native = _core.JitFunction(front, fn, front.native_params(), front.dim_names,
                               [g.native() for g in front.guards], front._on_miss,
                               int(resolved.runtime["run_mode"]),
                               int(resolved.runtime["device_sched_parallelism"]),
                               int(resolved.debug["runtime_debug_mode"]))
    front._native_ref = weakref.ref(native)
    functools.update_wrapper(native, fn, updated=())
    if resolved.verify["enable_pass_verify"]:
        return VerifiedKernel(front, native)  # every call verifies each stage before launching
    return native


_Options = Optional[dict[str, Any]]  # one option group (host_options, runtime_options, ...)


@overload
def jit(fn: Callable[..., Any], *, host_options: _Options = None, runtime_options: _Options = None,
        codegen_options: _Options = None, pass_options: _Options = None, verify_options: _Options = None,
        debug_options: _Options = None) -> _core.JitFunction: ...
@overload
def jit(fn: None = None, *, host_options: _Options = None, runtime_options: _Options = None,
        codegen_options: _Options = None, pass_options: _Options = None, verify_options: _Options = None,
        debug_options: _Options = None) -> Callable[[Callable[..., Any]], _core.JitFunction]: ...


def jit(fn=None, *, host_options=None, runtime_options=None, codegen_options=None, pass_options=None,
        verify_options=None, debug_options=None):
    """Compile `fn` into a pypto kernel. Use bare (`@jit`) or with keyword option dicts (`@jit(runtime_options=...)`).
    The result is typed as the native kernel (`pypto._core.JitFunction`); with verify_options on it is a
    VerifiedKernel, which forwards the same methods."""
    groups = dict(host_options=host_options, runtime_options=runtime_options, codegen_options=codegen_options,
                  pass_options=pass_options, verify_options=verify_options, debug_options=debug_options)
    if fn is None:
        return lambda f: _make(f, groups)
    if not callable(fn):
        raise KernelDefinitionError("pypto.frontend.jit: options must be passed by keyword, e.g. "
                                    "@pypto.frontend.jit(runtime_options={...})")
    return _make(fn, groups)
