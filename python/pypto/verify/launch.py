"""A ctypes launcher for built kernels: load a .so and call pypto_entry with torch tensors / numpy arrays.

Needs no native core: the verify stages run the compiled kernel on copies of the arguments through it. Libraries
are verified and loaded through compiler/cache.py, like the core's. The real call path (argument checks,
specialization table, hot-path launch) is the C++ core.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

from ..compiler import cache
from ..errors import KernelRuntimeError


class AbiTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.POINTER(ctypes.c_int64)), ("ndim", ctypes.c_int64)]


class AbiScalar(ctypes.Union):
    _fields_ = [("i", ctypes.c_int64), ("f", ctypes.c_double)]


class AbiLaunchContext(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("debug_mode", ctypes.c_int32), ("error", ctypes.c_void_p),
                ("error_capacity", ctypes.c_int64)]


_libs: dict = {}


def load(library: str):
    """The cache library `library`, loaded the way every library is: its bytes verified against its sidecar sha256
    (and the cache's ownership checks), and those same bytes loaded (compiler/cache.py). A library that is missing,
    replaced or corrupted is never loaded: KernelRuntimeError."""
    lib = _libs.get(library)
    if lib is None:
        loaded = cache.load_entry(Path(library), Path(library + ".sha256"))
        if loaded is None:
            raise KernelRuntimeError(f"kernel library '{library}' fails verification (missing, replaced or "
                                     f"corrupted since it was built, or not in a trusted cache); not loading it")
        lib = ctypes.CDLL(loaded)  # the name under which the verified bytes are already loaded
        lib.pypto_entry.restype = ctypes.c_int
        lib.pypto_entry.argtypes = [ctypes.POINTER(AbiTensor), ctypes.POINTER(AbiScalar),
                                    ctypes.POINTER(AbiLaunchContext)]
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
    lib = load(library)
    n = len(tensors)
    targs = (AbiTensor * max(n, 1))()
    keep = []
    for i, t in enumerate(tensors):
        ptr, shape = _data_ptr_shape(t)
        arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        keep.append(arr)
        targs[i].data = ptr
        targs[i].shape = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        targs[i].ndim = len(shape)
    sargs = (AbiScalar * max(len(scalars), 1))()
    for i, (value, is_float) in enumerate(scalars):
        if is_float:
            sargs[i].f = float(value)
        else:
            sargs[i].i = int(value)
    err = ctypes.create_string_buffer(1024)
    ctx = AbiLaunchContext(num_threads, debug_mode, ctypes.cast(err, ctypes.c_void_p), 1024)
    rc = lib.pypto_entry(targs, sargs, ctypes.byref(ctx))
    if rc != 0:
        raise KernelRuntimeError(err.value.decode(errors="replace") or f"kernel returned {rc}")


