"""A ctypes launcher for built kernels: load a .so and call pypto_entry with torch tensors / numpy arrays.

This is a debugging / testing path that needs no native core: the real call path (argument checks,
specialization table, hot-path launch) is the C++ core. `simple_request` binds arguments to a SpecRequest the
way the core does for the common cases (static / DYNAMIC / named dims, constants, runtime scalars).
"""
from __future__ import annotations

import ctypes
import math
import threading
from dataclasses import dataclass, field

from ..frontend.annotations import DYNAMIC, STATIC, DynamicDim
from ..frontend.dtypes import from_any
from ..frontend.signature import (CONSTEXPR, SCALAR, TENSOR, DynDim, ScalarArgSpec, SpecRequest, TensorArgSpec)


class TensorArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.POINTER(ctypes.c_int64)), ("ndim", ctypes.c_int64)]


class ScalarArg(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double)]


class LaunchContext(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("debug_mode", ctypes.c_int32), ("error", ctypes.c_void_p),
                ("error_capacity", ctypes.c_int64)]


_libs: dict = {}


def load(library: str):
    lib = _libs.get(library)
    if lib is None:
        lib = ctypes.CDLL(library)
        lib.pypto_entry.restype = ctypes.c_int
        lib.pypto_entry.argtypes = [ctypes.POINTER(TensorArg), ctypes.POINTER(ScalarArg),
                                    ctypes.POINTER(LaunchContext)]
        lib.pypto_abi_version.restype = ctypes.c_uint32
        _libs[library] = lib
    return lib


def _data_ptr_shape(t):
    if hasattr(t, "data_ptr"):          # torch
        if not t.is_contiguous():
            raise ValueError("tensor arguments must be contiguous")
        return t.data_ptr(), tuple(t.shape)
    import numpy as np

    a = t
    if not isinstance(a, np.ndarray) or not a.flags["C_CONTIGUOUS"]:
        raise ValueError("arguments must be contiguous torch tensors or numpy arrays")
    return a.ctypes.data, tuple(a.shape)


def launch(library: str, tensors, scalars=(), num_threads: int = 1, debug_mode: int = 0):
    """Call the kernel; raise RuntimeError with the kernel's message when it returns non-zero."""
    from ..errors import KernelRuntimeError

    lib = load(library)
    n = len(tensors)
    targs = (TensorArg * max(n, 1))()
    keep = []
    for i, t in enumerate(tensors):
        ptr, shape = _data_ptr_shape(t)
        arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        keep.append(arr)
        targs[i].data = ptr
        targs[i].shape = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        targs[i].ndim = len(shape)
    sargs = (ScalarArg * max(len(scalars), 1))()
    for i, (value, is_float) in enumerate(scalars):
        if is_float:
            sargs[i].f = float(value)
        else:
            sargs[i].i = int(value)
    err = ctypes.create_string_buffer(1024)
    ctx = LaunchContext(num_threads, debug_mode, ctypes.cast(err, ctypes.c_void_p), 1024)
    rc = lib.pypto_entry(targs, sargs, ctypes.byref(ctx))
    if rc != 0:
        raise KernelRuntimeError(err.value.decode(errors="replace") or f"kernel returned {rc}")


def _dtype_of(t):
    return from_any(t.dtype)


def simple_request(kernel_name: str, params, args: tuple, kwargs: dict, options=None):
    """Bind call arguments to (SpecRequest, tensor list, scalar list) like the core does (no guards)."""
    bound = {}
    for p, a in zip(params, args):
        bound[p.name] = a
    bound.update(kwargs)
    tensors, scalars, constants = [], [], {}
    tvals, svals = [], []
    for p in params:
        if p.name not in bound:
            if not p.has_default:
                raise TypeError(f"kernel '{kernel_name}': missing argument '{p.name}'")
            bound[p.name] = p.default
        v = bound[p.name]
        if p.kind == TENSOR:
            ann = p.annotation
            _, shape = _data_ptr_shape(v)
            dt = _dtype_of(v)
            if ann.dtype is not None and ann.dtype != dt:
                raise TypeError(f"kernel '{kernel_name}': parameter '{p.name}': expected {ann.dtype}, got {dt}")
            dims = []
            ann_dims = list(ann.shape) if ann.shape is not None else [STATIC] * len(shape)
            if ann.shape is not None and ann.ellipsis:
                ann_dims += [STATIC] * (len(shape) - len(ann_dims))
            if len(ann_dims) != len(shape):
                raise TypeError(f"kernel '{kernel_name}': parameter '{p.name}': expected rank {len(ann_dims)}, "
                                f"got shape {shape}")
            for ax, (d, s) in enumerate(zip(ann_dims, shape)):
                if d is DYNAMIC:
                    dims.append(DynDim(p.name, ax, None))
                elif isinstance(d, DynamicDim):
                    dims.append(DynDim(p.name, ax, d.name))
                elif d is STATIC:
                    dims.append(int(s))
                else:
                    if int(d) != s:
                        raise TypeError(f"kernel '{kernel_name}': parameter '{p.name}': dim {ax} must be {d}, "
                                        f"got {s}")
                    dims.append(int(s))
            tensors.append(TensorArgSpec(p.name, p.kind_index, dt, tuple(dims), ann.format))
            tvals.append(v)
        elif p.kind == SCALAR:
            scalars.append(ScalarArgSpec(p.name, p.kind_index, p.annotation.dtype))
            svals.append((v, p.annotation.dtype.is_float))
        elif p.kind == CONSTEXPR:
            constants[p.name] = v
    req = SpecRequest(kernel_name, list(params), tensors, scalars, constants, options or {})
    return req, tvals, svals


class DevKernel:
    """`DevKernel(fn)(*args)`: prepare + build + ctypes launch, for tests and debugging without the core."""

    def __init__(self, fn, num_threads: int = 1, options=None):
        from ..frontend.rewrite import prepare
        from ..frontend.signature import build_params

        self.fn = fn
        self.name = fn.__name__
        self.params = build_params(self.name, fn)
        self.prepared = prepare(fn, self.name)
        self.num_threads = num_threads
        self.options = options
        self.last = None

    def build(self, *args, **kwargs):
        from .toolchain import build

        req, tv, sv = simple_request(self.name, self.params, args, kwargs, self.options)
        self.last = build(self.prepared, req)
        return self.last, tv, sv

    def __call__(self, *args, **kwargs):
        res, tv, sv = self.build(*args, **kwargs)
        launch(res.library, tv, sv, self.num_threads)


# ---- host_options.compile_stage: stop after a stage ------------------------------------------------------------

@dataclass
class StageResult:
    """What a build stopped at `host_options.compile_stage` produced (nothing is launched)."""
    stage: str
    ir_text: str
    source: str | None = None        # CODEGEN_INSTRUCTION and later
    library: str | None = None       # CODEGEN_BINARY
    written: tuple = ()


def build_until(prepared, request, stage) -> StageResult:
    """Trace (TENSOR_GRAPH / TILE_GRAPH / EXECUTE_GRAPH: the traced, tiled IR), then generate C++
    (CODEGEN_INSTRUCTION), then compile it (CODEGEN_BINARY) — stopping after `stage`."""
    from ..codegen import generate
    from ..frontend.option_schema import CompileStage
    from ..ir import trace
    from .toolchain import compile_source

    stage = CompileStage(stage)
    kernel_ir = trace(prepared, request)
    res = StageResult(stage.name, str(kernel_ir), written=tuple(kernel_ir.written))
    if stage >= CompileStage.CODEGEN_INSTRUCTION:
        res.source = generate(kernel_ir)
    if stage >= CompileStage.CODEGEN_BINARY:
        res.library = compile_source(res.source, request.options, request.kernel_name)[0]
    return res


# ---- verify_options: compare every stage with golden data --------------------------------------------------------

_golden = threading.local()


def set_verify_golden_data(in_out_tensors=None, goldens=None):
    """`pypto.set_verify_golden_data(in_out_tensors=None, goldens=None)`: data for kernels compiled with
    verify_options={"enable_pass_verify": True}. `goldens`: one entry per tensor parameter (in order), the
    expected content of that tensor after the kernel ran, or None to skip it. `in_out_tensors`: the tensor
    arguments to run the verification on (default: the call's own arguments). Kept (per thread) until replaced;
    call with no arguments to clear."""
    def check(lst, what):
        if lst is None:
            return None
        if not isinstance(lst, (list, tuple)):
            raise TypeError(f"set_verify_golden_data: {what} must be a list of tensors (None entries allowed), "
                            f"got {type(lst).__name__}")
        out = []
        for i, t in enumerate(lst):
            if t is None:
                out.append(None)
                continue
            if hasattr(t, "device") and getattr(t.device, "type", "cpu") != "cpu":
                raise ValueError(f"set_verify_golden_data: {what}[{i}] must be on the CPU, got device {t.device}")
            try:
                import torch

                out.append(t if isinstance(t, torch.Tensor) else torch.as_tensor(t))
            except Exception:
                raise TypeError(f"set_verify_golden_data: {what}[{i}] is not a tensor: {type(t).__name__}") \
                    from None
        return out

    _golden.goldens = check(goldens, "goldens")
    _golden.in_out = check(in_out_tensors, "in_out_tensors")


@dataclass
class StageReport:
    stage: str
    status: str                     # "ok", "mismatch", "error" (the stage failed), "skipped"
    detail: str = ""
    worst: dict = field(default_factory=dict)   # tensor name -> {"index", "got", "golden", "abs_diff"}


def _compare(got, golden, rtol, atol):
    """(number of elements outside tolerance, worst element dict or None)."""
    import torch

    g = golden.to(torch.float64) if golden.dtype != torch.bool else golden.to(torch.float64)
    a = got.to(torch.float64)
    if tuple(a.shape) != tuple(g.shape):
        return -1, {"got_shape": tuple(a.shape), "golden_shape": tuple(g.shape)}
    diff = (a - g).abs()
    both_nan = torch.isnan(a) & torch.isnan(g)
    same_inf = torch.isinf(a) & torch.isinf(g) & (a == g)
    excess = diff - (atol + rtol * g.abs())
    excess = torch.where(both_nan | same_inf, torch.full_like(excess, -1.0), excess)
    excess = torch.where(torch.isnan(excess), torch.full_like(excess, math.inf), excess)
    bad = excess > 0
    nbad = int(bad.sum())
    if nbad == 0:
        return 0, None
    flat = int(torch.argmax(excess.reshape(-1)))
    idx = []
    rem = flat
    for s in reversed(a.shape):
        idx.append(rem % s)
        rem //= s
    idx = list(reversed(idx))
    return nbad, {"index": idx, "got": float(a.reshape(-1)[flat]), "golden": float(g.reshape(-1)[flat]),
                  "abs_diff": float(diff.reshape(-1)[flat])}


def verify(prepared, request, library: str, args_by_name: dict, options, num_threads: int = 1,
           debug_mode: int = 0) -> list:
    """Run every stage on copies of the arguments and compare with the golden data (verify_options).

    Stages: TENSOR_GRAPH = the traced IR run by the reference interpreter (codegen/interp.py);
    CODEGEN_BINARY = the compiled kernel. Golden for a tensor: the entry of set_verify_golden_data(goldens=...)
    when given, else (for CODEGEN_BINARY) the TENSOR_GRAPH result. Only tensors the kernel writes are compared.
    Returns the StageReports; raises KernelRuntimeError naming the stage, the tensor and the worst element when
    a stage is outside `pass_verify_error_tol` or fails."""
    import torch

    from ..codegen.interp import UnsupportedOp, interpret
    from ..errors import KernelRuntimeError
    from ..ir import trace

    vo = options.verify if hasattr(options, "verify") else options.get("verify_options", {})
    rtol, atol = (float(x) for x in vo.get("pass_verify_error_tol", (1e-3, 1e-3)))
    filt = {str(x).upper() for x in (vo.get("pass_verify_pass_filter") or ())}
    want = (lambda s: not filt or "ALL" in filt or s in filt)
    kernel_ir = trace(prepared, request)
    name = request.kernel_name
    tspecs = sorted(request.tensors, key=lambda t: t.index)
    inputs = getattr(_golden, "in_out", None)
    if inputs is not None and len(inputs) != len(tspecs):
        raise KernelRuntimeError(f"kernel '{name}': pass verify: set_verify_golden_data got {len(inputs)} "
                                 f"in_out_tensors, the kernel has {len(tspecs)} tensor parameters")
    if inputs is None:
        inputs = [args_by_name[t.param] for t in tspecs]
    inputs = [t if isinstance(t, torch.Tensor) else torch.as_tensor(t) for t in inputs]
    goldens = getattr(_golden, "goldens", None)
    if goldens is not None and len(goldens) != len(tspecs):
        raise KernelRuntimeError(f"kernel '{name}': pass verify: set_verify_golden_data got {len(goldens)} "
                                 f"goldens, the kernel has {len(tspecs)} tensor parameters")
    svals = [args_by_name[s.param] for s in sorted(request.scalars, key=lambda s: s.index)]
    written = set(kernel_ir.written)
    reports, results = [], {}

    def run_stage(stage):
        if stage == "TENSOR_GRAPH":
            return interpret(kernel_ir, inputs, svals)
        copies = [t.detach().clone().contiguous() for t in inputs]
        sc = [(v, s.dtype.is_float) for v, s in zip(svals, sorted(request.scalars, key=lambda s: s.index))]
        launch(library, copies, sc, num_threads, debug_mode)
        return copies

    failures = []
    for stage in ("TENSOR_GRAPH", "CODEGEN_BINARY"):
        if not want(stage):
            reports.append(StageReport(stage, "skipped", "not in pass_verify_pass_filter"))
            continue
        try:
            outs = run_stage(stage)
        except UnsupportedOp as e:
            reports.append(StageReport(stage, "skipped", f"the reference interpreter does not support {e}"))
            continue
        except KernelRuntimeError as e:
            reports.append(StageReport(stage, "error", str(e)))
            failures.append(f"stage {stage} failed: {e}")
            continue
        results[stage] = outs
        _save(vo, name, stage, tspecs, outs)
        rep = StageReport(stage, "ok")
        msgs = []
        for i, t in enumerate(tspecs):
            if t.index not in written:
                continue
            gold = goldens[i] if goldens is not None else None
            src = "golden data"
            if gold is None and goldens is None and stage != "TENSOR_GRAPH" and "TENSOR_GRAPH" in results:
                gold, src = results["TENSOR_GRAPH"][i], "the TENSOR_GRAPH stage (IR interpreter)"
            if gold is None:
                continue
            nbad, worst = _compare(outs[i], gold, rtol, atol)
            if nbad == 0:
                continue
            rep.status = "mismatch"
            rep.worst[t.param] = worst
            if nbad < 0:
                msgs.append(f"tensor '{t.param}': shape {list(worst['got_shape'])} differs from the golden's "
                            f"{list(worst['golden_shape'])}")
            else:
                msgs.append(f"tensor '{t.param}': {nbad} of {outs[i].numel()} elements differ from {src} beyond "
                            f"rtol={rtol:g}, atol={atol:g}; worst at index {worst['index']}: got {worst['got']!r}, "
                            f"golden {worst['golden']!r} (|diff| {worst['abs_diff']:.6g})")
        rep.detail = "; ".join(msgs)
        reports.append(rep)
        if msgs:
            failures.append(f"stage {stage}: " + "; ".join(msgs))
    if failures:
        raise KernelRuntimeError(f"kernel '{name}': pass verify failed: " + " | ".join(failures))
    return reports


def _save(vo, name, stage, tspecs, outs):
    if not vo.get("pass_verify_save_tensor"):
        return
    import os

    import torch

    d = os.path.join(vo.get("pass_verify_save_tensor_dir") or os.path.join(os.getcwd(), "pypto_verify"), name)
    os.makedirs(d, exist_ok=True)
    for t, o in zip(tspecs, outs):
        torch.save(o, os.path.join(d, f"{stage}_{t.param}.pt"))


class VerifiedKernel:
    """What `@pypto.frontend.jit(verify_options={"enable_pass_verify": True})` returns: every call first builds
    the specialization without launching, runs `verify` on copies of the arguments (raising on a mismatch,
    with the outputs untouched), then launches the kernel. Everything else (cache_info, explain, compile, ...)
    is the native kernel's."""

    def __init__(self, front, native):
        self._front = front
        self._native = native
        import functools

        functools.update_wrapper(self, front.fn, updated=())

    def __call__(self, *args, **kwargs):
        from ..frontend.explain import _bind

        native, front = self._native, self._front
        native.compile(*args, **kwargs)
        hit, key, _meta = native._probe(*args, **kwargs)
        if hit:
            info = next((i for k, i, _l, _s in native._specializations() if (k or b"") == (key or b"")), None)
            if info is not None:
                front.last_verify = None
                front.last_verify = verify(front.prepared, info["request"], info["result"].library,
                                           _bind(front, args, kwargs), front.options,
                                           int(front.options.runtime["device_sched_parallelism"]),
                                           int(front.options.debug["runtime_debug_mode"]))
        return native(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._native, name)

    def __repr__(self):
        return f"<pypto verified kernel '{self._front.name}'>"
