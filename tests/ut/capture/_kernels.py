"""Kernels the capture tests record: tiny elementwise steps with torch references, and one that reads a global."""
import pypto

N = 16
T = pypto.Tensor([N], pypto.DT_FP32)
D = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)
SCALE = 2.0


@pypto.frontend.jit
def add(x: T, y: T, out: T):
    out[:] = x + y


@pypto.frontend.jit
def mul(x: T, y: T, out: T):
    out[:] = x * y


@pypto.frontend.jit
def axpy(x: T, y: T, out: T, alpha: pypto.Scalar[pypto.DT_FP32]):
    out[:] = x * alpha + y


@pypto.frontend.jit
def shift(x: T, out: T, k: pypto.Scalar[pypto.DT_INT32]):
    out[:] = x + k


@pypto.frontend.jit
def scaled(x: D, out: D):
    out[:] = x * SCALE


def torch_ref(name, args, scalar=None):
    """The torch result of one launch (its output tensor's new value)."""
    if name == "add":
        return args[0] + args[1]
    if name == "mul":
        return args[0] * args[1]
    if name == "axpy":
        return args[0] * scalar + args[1]
    if name == "scaled":
        return args[0] * SCALE
    raise KeyError(name)
