"""Kernels the torch-op tests register as ops, with their torch references."""
import torch

import pypto

N = pypto.frontend.dynamic("N")
D = 16


@pypto.frontend.jit
def gated(x: pypto.Tensor([N, D], pypto.DT_FP32), g: pypto.Tensor([N, D], pypto.DT_FP32),
          out: pypto.Tensor([N, D], pypto.DT_FP32)):
    out[:] = x * pypto.sigmoid(g)


@pypto.frontend.jit
def axpby(x: pypto.Tensor([pypto.STATIC, D], pypto.DT_FP32), y: pypto.Tensor([pypto.STATIC, D], pypto.DT_FP32),
          out: pypto.Tensor([pypto.STATIC, D], pypto.DT_FP32), s: pypto.Scalar[pypto.DT_FP32], beta: float = 1.0):
    out[:] = x * s + y * beta


@pypto.frontend.jit
def rows_scale(x: pypto.Tensor([pypto.DYNAMIC, D], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, D], pypto.DT_FP32),
               mode: str = "mul", *, shift: tuple = (0.0, 1.0), flip: bool = False, reps: int = 1):
    # `shift` arrives as a list through the op schema (float[]): the op hands it back as a tuple
    assert isinstance(shift, tuple)
    y = x * float(reps) if mode == "mul" else x + float(reps)
    out[:] = (y * -1.0 if flip else y) + shift[1]


def ref_rows_scale(x, mode="mul", shift=(0.0, 1.0), flip=False, reps=1):
    y = x * reps if mode == "mul" else x + reps
    return (-y if flip else y) + shift[1]


@pypto.frontend.jit
def sig(x: pypto.Tensor([N, D], pypto.DT_FP32), out: pypto.Tensor([N, D], pypto.DT_FP32)):
    out[:] = pypto.sigmoid(x)


@pypto.frontend.jit
def sig_backward(y: pypto.Tensor([N, D], pypto.DT_FP32), grad: pypto.Tensor([N, D], pypto.DT_FP32),
                 grad_x: pypto.Tensor([N, D], pypto.DT_FP32)):
    grad_x[:] = grad * (y - y * y)   # d sigmoid(x) / dx = y (1 - y)


@pypto.frontend.jit
def two_outputs(x: pypto.Tensor([N, D], pypto.DT_FP32), a: pypto.Tensor([N, D], pypto.DT_FP32),
                b: pypto.Tensor([N, D], pypto.DT_FP32), both: bool = False):
    # which tensors are written depends on a constant: the op must declare the union
    a[:] = x + 1.0
    if both:
        b[:] = x * 2.0


def rand(*shape, seed=0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
