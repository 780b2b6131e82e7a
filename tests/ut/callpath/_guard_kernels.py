"""Kernels that read module globals, for test_guards.py. The tests load a FRESH copy of this module per test
(importlib, unique name), so rebinding a global here never leaks into another test."""
import pypto

SCALE = 2.0
UNRELATED = 1
SHADOW = 7.0
HELPER_FACTOR = 3.0
OFFSET = 0.5


def helper_scale(x):
    return x * HELPER_FACTOR


def helper_offset(x):
    return x + OFFSET


@pypto.frontend.jit
def scale_kernel(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
    out[:] = a * SCALE


@pypto.frontend.jit
def shadow_kernel(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
    SHADOW = 5.0  # noqa: N806  a local that shadows the module global: not a read of the global
    out[:] = a * SHADOW


@pypto.frontend.jit
def helper_kernel(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
    out[:] = helper_scale(a)


@pypto.frontend.jit
def two_globals_kernel(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                       out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
    out[:] = helper_offset(a * SCALE)
