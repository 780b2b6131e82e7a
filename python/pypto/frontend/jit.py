"""`pypto.frontend.jit`: decorate once, then every call goes straight to the native core.

Reading top-down: the decorator validates options, reads the signature into the parameter table, prepares the body
(AST, once), finds the globals to guard, and creates a `pypto._core.JitFunction` — the object the user calls.
A cache-hit call runs no Python at all. On a miss the core calls `JITKernel._on_miss`, which describes the
specialization (`SpecializationRequest`) and hands it to `compiler.pipeline.miss` (trace → IR → C++ → verified shared
library, disk-cached); the `MissResult` goes back to the core.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import json
import os
import sys
import threading
import weakref
from typing import Any, Callable, Optional, overload

from ..native import core as _core
from ..codegen.names import check_text
from ..compiler import pipeline, toolchain
from ..errors import CompileError, KernelDefinitionError, KernelSignatureError, ParserError
from ..vocab import options as _options
from ..vocab.annotations import DYNAMIC, STATIC, DynamicDim
from .explain import explain as explain_call, miss_reason, tensor_shapes
from .guards import collect_guards, function_ast, seen_values
from .rewrite import prepare
from .verified import VerifiedKernel
from ..vocab.params import (CONSTEXPR, SCALAR, TENSOR, SpecializationRequest, build_params, describe,
                           packing_refusal)

# the parameter table's encoding names are the core's (core/param_table_json.h)
_PARAM_KIND = {TENSOR: _core.PARAM_TENSOR, CONSTEXPR: _core.PARAM_CONSTANT, SCALAR: _core.PARAM_SCALAR}


class _InFlight:
    """One build in progress; identical concurrent misses wait on it instead of building again."""

    def __init__(self):
        self.done = threading.Event()
        self.result = None
        self.error: BaseException | None = None


_KERNELS: "weakref.WeakSet[JITKernel]" = weakref.WeakSet()


def _reset_after_fork():
    for k in list(_KERNELS):
        k._reset_inflight()


os.register_at_fork(after_in_child=_reset_after_fork)


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
        self._reset_inflight()
        _KERNELS.add(self)
        self._native_ref = None
        self.last_stage = None    # StageResult of the last build stopped by host_options.compile_stage
        self.last_verify = None   # StageReports of the last verify_options check
        self.verify_fixed = resolved.verify  # the verify options fixed at decoration (_make: only the decorator's
        #                                    and scope's, vocab/options.py verify_fixed)

    def _reset_inflight(self):
        """No build in progress. Also run in a forked child: the threads that were building in the parent do not
        exist there, so waiting on their events (or on a lock one of them held) would hang forever."""
        self._lock = threading.Lock()
        self._inflight: dict[bytes, _InFlight] = {}

    # -- the parameter table, in its one encoding ----------------------------------------------------------
    def param_table(self) -> dict:
        """The parameter table as a bundle manifest records it ({"name", "dim_names", "params"}, docs/embedding.md):
        pypto._core.JitFunction decodes it, and the export writes it (adding the defaults)."""
        params = []
        for p in self.params:
            d: dict[str, Any] = {"name": p.name, "kind": _PARAM_KIND[p.kind], "keyword_only": bool(p.keyword_only)}
            if p.kind == TENSOR:
                ann = p.annotation
                d.update(dtype=None if ann.dtype is None else _core.DTYPE_NAMES[int(ann.dtype)],
                         any_shape=ann.shape is None, ellipsis=bool(ann.ellipsis), format=int(ann.format),
                         dims=[self._encode_dim(x) for x in ann.shape or ()])
            elif p.kind == SCALAR:
                d["dtype"] = _core.DTYPE_NAMES[int(p.annotation.dtype)]
            params.append(d)
        return {"name": self.name, "dim_names": list(self.dim_names), "params": params}

    def _encode_dim(self, d) -> dict:
        if d is STATIC:
            return {"kind": _core.DIM_STATIC}
        if d is DYNAMIC:
            return {"kind": _core.DIM_DYNAMIC}
        if isinstance(d, DynamicDim):
            if d.name not in self.dim_names:
                self.dim_names.append(d.name)
            return {"kind": _core.DIM_NAMED, "name": d.name}
        return {"kind": _core.DIM_FIXED, "value": int(d)}

    # -- the miss ------------------------------------------------------------------------------------------
    def specialization_request(self, args: tuple, meta: tuple) -> SpecializationRequest:
        """Describe the specialization selected by the bound arguments `args` (one per parameter); `meta` holds
        (dtype code, shape) per tensor argument, as the native core read them. Constants are checked first."""
        for p, a in zip(self.params, args):
            if p.kind == CONSTEXPR:
                _check_constant(self.name, p.name, a)
        return describe(self.name, self.params, args, meta, self.options)

    def _on_miss(self, args: tuple, key: bytes, meta: tuple) -> pipeline.MissResult | None:
        """The core's miss: one build per key (identical concurrent misses wait for it), by `pipeline.miss`."""
        with self._lock:
            job = self._inflight.get(key)
            owner = job is None
            if owner:
                job = self._inflight[key] = _InFlight()
        if not owner:
            limit = 2.0 * toolchain.compile_timeout(self.options)
            if not job.done.wait(limit):
                raise CompileError(
                    f"{self.name}: waited {limit:g} s for another thread's build of the same specialization (twice "
                    f"host_options compile_timeout); it has not finished, so this call gives up (nothing was run)")
            if job.error is not None:
                raise job.error
            # the owner accounted for the build time
            return None if job.result is None else dataclasses.replace(job.result, compile_seconds=0.0)
        try:
            request = self.specialization_request(args, meta)
            native = self._native_ref and self._native_ref()
            job.result = pipeline.miss(self.prepared, request,
                                       guards=seen_values(self.guards),  # never keeps a value alive the core let go
                                       reason=lambda: miss_reason(self, native, args),
                                       shapes=lambda: tensor_shapes(self, meta))
            if job.result.stage is not None:  # stopped at host_options.compile_stage: nothing to load
                self.last_stage, job.result = job.result.stage, None
            return job.result
        except BaseException as e:
            job.error = e
            raise
        finally:
            job.done.set()
            with self._lock:
                self._inflight.pop(key, None)

    # -- introspection (reached through the native object's attribute fallback) ----------------------------
    def explain(self, *args, **kwargs) -> str:
        """Would this call hit? For a miss: which key component differs from the nearest specialization."""
        return explain_call(self, self._native_ref(), args, kwargs)

    def __repr__(self) -> str:
        return f"<pypto kernel frontend '{self.name}'>"


_MAX_CONSTANT_BITS = 4096   # far beyond the kernel's 64-bit ints; below Python's 4300-digit limit on int -> str


def _check_constant(kernel: str, param: str, value, where: str = "") -> None:
    """Constants keep their value: a mutable array changed in place after specialization would leave a stale
    specialization (the core keys it once), so it is refused on the miss, before anything is built or launched.
    (An int outside the kernel's 64-bit integers may be used at trace time; only if it reaches generated code is it
    an error: see compiler/pipeline.py `_out_of_range`.)"""
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _check_constant(kernel, param, v, f"{where}[{i}]")
        return
    if isinstance(value, int) and value.bit_length() > _MAX_CONSTANT_BITS:
        limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
        raise ValueError(f"kernel '{kernel}': parameter '{param}'{where}: an int constant of {value.bit_length()} "
                         f"bits is too large to key and record (Python converts at most {limit} digits to text); "
                         f"the kernel's integers are 64-bit: pass a smaller value")
    if getattr(value, "ndim", None) == 0 and hasattr(value, "__array_interface__") and \
            getattr(getattr(value, "flags", None), "writeable", False):
        raise TypeError(f"kernel '{kernel}': parameter '{param}'{where}: a writable 0-d array constant "
                        f"({type(value).__name__}) could be changed in place after the kernel was specialized for "
                        f"it; pass its value (.item()) or a numpy scalar instead")


def _check_names(fn, names: list) -> None:
    """Every name that reaches the core or generated code must be text that can be encoded (codegen/names.py)."""
    check_text("kernel name", fn.__name__)
    check_text(f"kernel {ascii(fn.__name__)}: qualified name", getattr(fn, "__qualname__", fn.__name__))
    for n in names:
        check_text(f"kernel '{fn.__name__}': parameter name", n)
    for n in getattr(fn, "__annotations__", {}) or {}:
        check_text(f"kernel '{fn.__name__}': annotated name", n)


def _old_parser_refusal(fn) -> Callable[[], Exception] | None:
    """Why the reference's PTO parser (`new_ir=False`) refuses `fn`, or None: it has no `break` / `continue` (its
    newer IR, the default, has them, as this package does: a Python loop runs them at trace time). The error is
    the one that parser raises at the call, a ParserError naming the statement and pointing at its line."""
    tree = function_ast(fn)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Break, ast.Continue)):
            what = type(node).__name__
            line = fn.__code__.co_firstlineno + node.lineno - tree.lineno
            return lambda: ParserError(node, f"kernel '{fn.__name__}': {what} is not supported by the PTO parser "
                                     f"(new_ir=False) yet: line {line} of {fn.__code__.co_filename}; drop "
                                     f"new_ir=False (the default IR runs {what.lower()}) or restructure the loop")
    return None


def _make(fn, groups: dict[str, Any], new_ir: Any = None):
    if not callable(fn) or not hasattr(fn, "__code__"):
        raise KernelDefinitionError(f"pypto.frontend.jit expects a Python function, got {fn!r}")
    if fn.__code__.co_flags & 0x20:  # CO_GENERATOR
        raise KernelDefinitionError(f"kernel '{fn.__name__}': a kernel may not be a generator")
    # parameter names first, so that ready_on_host_tensors can be checked
    names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount])
    _check_names(fn, names)
    resolved = _options.validate_options(fn.__name__, names, **groups)
    refusal = packing_refusal(fn.__name__, fn)
    if refusal is not None:
        return RefusedKernel(fn, lambda: KernelSignatureError(refusal))
    if new_ir is False:
        old = _old_parser_refusal(fn)
        if old is not None:
            return RefusedKernel(fn, old)
    front = JITKernel(fn, resolved)
    front.verify_fixed = _options.verify_fixed(fn.__name__, groups.get("verify_options"))
    native = _core.JitFunction(front, fn, json.dumps(front.param_table()), [g.native() for g in front.guards],
                               front._on_miss,
                               int(resolved.runtime["run_mode"]),
                               int(resolved.runtime["sim_threads"]),
                               int(resolved.debug["runtime_debug_mode"]))
    front._native_ref = weakref.ref(native)
    if any(isinstance(g, dict) for g in groups.values()):
        native._watch_options(_OptionWatch(front, names, groups, resolved))
    functools.update_wrapper(native, fn, updated=())
    if resolved.verify["enable_pass_verify"]:
        return VerifiedKernel(front, native)  # every call verifies each stage before launching
    return native


class RefusedKernel:
    """What `@jit` returns for a kernel the reference's parser refuses when it reads it at the call: a signature
    that packs arguments (`*args`, `**kwargs`: KernelSignatureError), or `break` / `continue` under `new_ir=False`
    (ParserError). As in the reference, decorating succeeds (its options are still checked) and every call raises
    the error, before anything is traced, built or run (the arguments are not read)."""

    def __init__(self, fn, error: Callable[[], Exception]):
        self._error = error
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        raise self._error()

    compile = explain = export = __call__

    def __repr__(self):
        return f"<pypto kernel '{self.__name__}' (refused at every call: {self._error()})>"


class _OptionWatch:
    """The option dicts given to @jit are kept by reference and read again on every miss, as the reference reads them
    when it compiles: a program may set `runtime_options["run_mode"]` after decorating. A change re-validates all
    groups and takes effect from that compile on (a hit keeps running what was compiled; `enable_pass_verify` is fixed
    at decoration, since it decides the object `@jit` returned)."""

    def __init__(self, front: JITKernel, names: list, groups: dict, resolved):
        self.front, self.names, self.groups = front, names, groups
        self.seen = self._snapshot()

    def _snapshot(self) -> dict:
        return {k: dict(v) for k, v in self.groups.items() if isinstance(v, dict)}

    def __call__(self) -> None:
        now = self._snapshot()
        if now == self.seen:
            return
        resolved = _options.validate_options(self.front.name, self.names, **self.groups)
        native = self.front._native_ref()
        if native is not None:
            native._set_runtime(int(resolved.runtime["run_mode"]), int(resolved.runtime["sim_threads"]),
                                int(resolved.debug["runtime_debug_mode"]))
        self.front.options = resolved
        self.front.verify_fixed = _options.verify_fixed(self.front.name, self.groups.get("verify_options"))
        self.seen = now


_Options = Optional[dict[str, Any]]  # one option group (host_options, runtime_options, ...)


@overload
def jit(fn: Callable[..., Any], *, host_options: _Options = None, runtime_options: _Options = None,
        codegen_options: _Options = None, pass_options: _Options = None, verify_options: _Options = None,
        debug_options: _Options = None, new_ir: Any = None,
        create_new_logical_tensor: Any = None) -> _core.JitFunction: ...
@overload
def jit(fn: None = None, *, host_options: _Options = None, runtime_options: _Options = None,
        codegen_options: _Options = None, pass_options: _Options = None, verify_options: _Options = None,
        debug_options: _Options = None, new_ir: Any = None,
        create_new_logical_tensor: Any = None) -> Callable[[Callable[..., Any]], _core.JitFunction]: ...


def jit(fn=None, *, host_options=None, runtime_options=None, codegen_options=None, pass_options=None,
        verify_options=None, debug_options=None, new_ir=None, create_new_logical_tensor=None):
    """Compile `fn` into a pypto kernel. Use bare (`@jit`) or with keyword option dicts (`@jit(runtime_options=...)`).
    The result is typed as the native kernel (`pypto._core.JitFunction`); with verify_options on it is a
    VerifiedKernel, which forwards the same methods. `new_ir` and `create_new_logical_tensor` (reference switches of
    its graph builder) are accepted: this package has one IR, and every op result is a fresh tensor; `new_ir=False`
    (the reference's older PTO parser) refuses only what that parser refuses and ours runs, `break` / `continue`
    (at every call, as the reference does)."""
    groups = dict(host_options=host_options, runtime_options=runtime_options, codegen_options=codegen_options,
                  pass_options=pass_options, verify_options=verify_options, debug_options=debug_options)
    if fn is None:
        return lambda f: _make(f, groups, new_ir)
    if not callable(fn):
        raise KernelDefinitionError("pypto.frontend.jit: options must be passed by keyword, e.g. "
                                    "@pypto.frontend.jit(runtime_options={...})")
    return _make(fn, groups, new_ir)
