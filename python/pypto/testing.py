"""Helpers for tests and debugging: build and run a kernel without the native core.

`DevKernel(fn)(*args)` prepares, builds and launches through ctypes; `simple_request` binds arguments and
describes the specialization with the frontend's own `vocab.params.describe` (static / DYNAMIC / named dims,
constants, runtime scalars; no guards). `DLPackOnly(t)` wraps a tensor so that only `__dlpack__` reaches it (the capsule
path). Not used by the product's call path.
"""
from __future__ import annotations

from .compiler.pipeline import build
from .frontend.rewrite import prepare
from .verify.launch import _data_ptr_shape, launch
from .vocab.annotations import DYNAMIC, STATIC, DynamicDim
from .vocab.dtypes import from_any
from .vocab.options import ResolvedOptions, validate_options
from .vocab.params import SCALAR, TENSOR, build_params, describe


def simple_request(kernel_name: str, params, args: tuple, kwargs: dict, options=None):
    """Bind call arguments to (SpecializationRequest, tensor list, scalar list) without the core (no guards).
    The request is described by the frontend's own `vocab.params.describe`; `options` is None, the option dicts
    `@jit` takes ({"debug_options": {...}, ...}) or a ResolvedOptions. The binder's checks are the core's: here only
    what the description itself needs (every parameter bound, annotated dtype, rank and fixed sizes) is checked."""
    bound = dict(zip((p.name for p in params), args))
    bound.update(kwargs)
    values, meta, tvals, svals = [], [], [], []
    for p in params:
        if p.name not in bound:
            if not p.has_default:
                raise TypeError(f"kernel '{kernel_name}': missing argument '{p.name}'")
            bound[p.name] = p.default
        v = bound[p.name]
        values.append(v)
        if p.kind == TENSOR:
            meta.append(_tensor_meta(kernel_name, p, v))
            tvals.append(v)
        elif p.kind == SCALAR:
            svals.append((v, p.annotation.dtype.is_float))
    if not isinstance(options, ResolvedOptions):
        options = validate_options(kernel_name, [p.name for p in params], scope=None, **(options or {}))
    return describe(kernel_name, list(params), tuple(values), tuple(meta), options), tvals, svals


def _tensor_meta(kernel_name: str, p, v) -> tuple:
    """(dtype code, shape) of tensor argument `v`, as the core reads them, after the annotation's checks."""
    ann = p.annotation
    _, shape = _data_ptr_shape(v)
    dt = from_any(v.dtype)
    if ann.dtype is not None and ann.dtype != dt:
        raise TypeError(f"kernel '{kernel_name}': parameter '{p.name}': expected {ann.dtype}, got {dt}")
    ann_dims = list(ann.shape) if ann.shape is not None else [STATIC] * len(shape)
    if ann.shape is not None and ann.ellipsis:
        ann_dims += [STATIC] * (len(shape) - len(ann_dims))
    if len(ann_dims) != len(shape):
        raise TypeError(f"kernel '{kernel_name}': parameter '{p.name}': expected rank {len(ann_dims)}, "
                        f"got shape {shape}")
    for ax, (d, s) in enumerate(zip(ann_dims, shape)):
        if d is not STATIC and d is not DYNAMIC and not isinstance(d, DynamicDim) and int(d) != s:
            raise TypeError(f"kernel '{kernel_name}': parameter '{p.name}': dim {ax} must be {d}, got {s}")
    return int(dt), tuple(int(s) for s in shape)


def build_source(fn, args: tuple, fuse: bool = True):
    """Trace `fn` for `args`, generate its C++ with the fusing generator (or, fuse=False, one loop nest per op)
    and compile it, through the pipeline's one `build`: (library path, C++ source). For tests comparing the two
    generators bit for bit."""
    name = fn.__name__
    req, _, _ = simple_request(name, build_params(name, fn), args, {})
    res = build(prepare(fn, name), req, fuse=fuse)
    return res.library, res.source


class DevKernel:
    """`DevKernel(fn)(*args)`: prepare + build + ctypes launch, for tests and debugging without the core."""

    def __init__(self, fn, num_threads: int = 1, options=None):
        self.fn = fn
        self.name = fn.__name__
        self.params = build_params(self.name, fn)
        self.prepared = prepare(fn, self.name)
        self.num_threads = num_threads
        self.options = options
        self.last = None

    def build(self, *args, **kwargs):
        req, tv, sv = simple_request(self.name, self.params, args, kwargs, self.options)
        self.last = build(self.prepared, req)
        return self.last, tv, sv

    def __call__(self, *args, **kwargs):
        res, tv, sv = self.build(*args, **kwargs)
        launch(res.library, tv, sv, self.num_threads)


class DLPackOnly:
    """Offers a tensor through `__dlpack__`/`__dlpack_device__` only (no buffer protocol, no DLPack C exchange API):
    what the tensor readers do with such producers (the capsule protocol, a Python call per argument)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.t.__dlpack__() if max_version is None else self.t.__dlpack__(max_version=max_version)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()
