"""`pypto.from_torch(tensor, name="", *, dynamic_axis=None, tensor_format=None, dtype=None)`.

Kernels here take torch tensors (and numpy arrays) directly, so the result is the torch tensor itself, after the
reference's checks: a torch.Tensor, contiguous, of a dtype the reference converts. Which dims are dynamic is
decided by the kernel's annotations (pypto.DYNAMIC), so `dynamic_axis` is validated (ints within the rank) and
otherwise has no effect; `tensor_format` must be a TileOpFormat (ND data is all the simulator has). `dtype`
reinterprets the data as another dtype, as the reference's tensor keeps the data pointer and takes the dtype given:
the result is `tensor.view(<that torch dtype>)`, same memory and shape, so the dtype must have the tensor's item
size (else a ValueError: the shape would change). A dtype torch lacks (DT_FP4_E2M1, DT_INT4, DT_HF8, ...) cannot
be a kernel argument yet (UnsupportedFeatureError).
"""
from __future__ import annotations

from ..errors import UnsupportedFeatureError
from ..vocab.annotations import TileOpFormat
from ..vocab.dtypes import DataType, from_torch as _dtype_of, to_torch as _torch_of

__all__ = ["from_torch"]


def from_torch(tensor, name: str = "", *, dynamic_axis=None, tensor_format=None, dtype=None):
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"pypto.from_torch: tensor must be a torch.Tensor, got {type(tensor).__name__}")
    if not isinstance(name, str):
        raise TypeError(f"pypto.from_torch: name must be a str, got {type(name).__name__}")
    if not tensor.is_contiguous():
        raise ValueError(f"pypto.from_torch: tensor must be contiguous (tensor.is_contiguous()), got strides "
                         f"{list(tensor.stride())} for shape {list(tensor.shape)}")
    try:
        own = _dtype_of(tensor.dtype)
    except Exception:
        raise TypeError(f"pypto.from_torch: unsupported dtype {tensor.dtype}") from None
    if dynamic_axis is not None:
        if not isinstance(dynamic_axis, (list, tuple)):
            raise TypeError(f"pypto.from_torch: dynamic_axis must be a list of ints, got {dynamic_axis!r}")
        for ax in dynamic_axis:
            if isinstance(ax, bool) or not isinstance(ax, int) or not -tensor.dim() <= ax < tensor.dim():
                raise ValueError(f"pypto.from_torch: dynamic_axis entries must be dims of a rank-{tensor.dim()} "
                                 f"tensor, got {ax!r}")
    if tensor_format is not None and not isinstance(tensor_format, TileOpFormat):
        raise TypeError(f"pypto.from_torch: tensor_format must be a pypto.TileOpFormat, got {tensor_format!r}")
    if dtype is not None:
        if not isinstance(dtype, DataType):
            raise TypeError(f"pypto.from_torch: dtype must be a pypto.DataType, got {dtype!r}")
        if dtype != own:
            return _reinterpret(tensor, dtype)
    return tensor


def _reinterpret(tensor, dtype: DataType):
    try:
        target = _torch_of(dtype)
    except Exception:
        target = None
    if target is None or not dtype.native:
        raise UnsupportedFeatureError(f"pypto.from_torch: dtype={dtype!r} for a {tensor.dtype} tensor: {dtype!r} "
                                      f"has no torch dtype and cannot be a kernel argument; it is not supported "
                                      f"yet")
    if target.itemsize != tensor.element_size():
        raise ValueError(f"pypto.from_torch: dtype={dtype!r} ({target.itemsize}-byte elements) cannot reinterpret "
                         f"a {tensor.dtype} tensor ({tensor.element_size()}-byte elements) of shape "
                         f"{list(tensor.shape)} without changing its shape; give a dtype of the same size")
    return tensor.view(target)
