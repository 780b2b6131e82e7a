"""Activations whose parameters need reshaping to broadcast (prelu's per-channel weight); the elementwise ones
without (relu, lrelu, sigmoid) live in elementwise.py."""
from __future__ import annotations

from ..ir.nodes import same_dim
from . import shape_ops
from ._helpers import DT, S, check_tensor, compute_dtype, current, elementwise, fmt_shape


def prelu(input, weight):
    """Parametric ReLU: x if x > 0 else weight[c] * x, `weight` a 1-D tensor of one value per channel (dim 1 of
    a 2-4-D input; length 1 for a 1-D input, or length 1 shared by every channel as torch.prelu allows). Same
    dtype as `input` required; float tensors only."""
    op = "prelu"
    b = current(op)
    x = check_tensor(input, op, "input")
    w = check_tensor(weight, op, "weight")
    if not x.dtype.is_float:
        raise b.error(op, f"input must be a float tensor (float16, bfloat16, float32, float64), got a "
                          f"{x.dtype.short} tensor")
    if w.dtype != x.dtype:
        raise b.error(op, f"weight must have the input's dtype {x.dtype.short}, got {w.dtype.short}")
    channels = x.shape[1] if len(x.shape) >= 2 else 1
    if len(w.shape) != 1 or not (same_dim(w.shape[0], 1) or same_dim(w.shape[0], channels)):
        raise b.error(op, f"weight must be 1-D of length 1 or {S.to_text(channels)} (dim 1 of input "
                          f"{fmt_shape(x.shape)}), got shape {fmt_shape(w.shape)}")
    if len(x.shape) > 2:
        w = shape_ops.reshape(w, [w.shape[0]] + [1] * (len(x.shape) - 2))
    ct = compute_dtype(x.dtype)
    return elementwise("prelu", [x, w], x.dtype, (ct, ct), op)


__all__ = ["prelu"]
