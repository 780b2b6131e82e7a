"""A ctypes launcher for built kernels: load a .so and call pypto_entry with torch tensors / numpy arrays.

This is a debugging / testing path that needs no native core: the real call path (argument checks,
specialization table, hot-path launch) is the C++ core. `simple_request` binds arguments to a SpecRequest the
way the core does for the common cases (static / DYNAMIC / named dims, constants, runtime scalars).
"""
from __future__ import annotations

import ctypes

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
