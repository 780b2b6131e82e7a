"""A user's file as a type checker sees it: the public API must type-check (run by test_types.py under mypy).

Kernel annotations are call expressions (`pypto.Tensor([8], pypto.DT_FP32)`), which no type checker accepts as
types: a kernel module turns that one error code off, as docs/language.md says; everything else is checked.
"""
# mypy: disable-error-code="valid-type"
from __future__ import annotations

import numpy as np

import pypto


@pypto.frontend.jit
def scale(x: pypto.Tensor([8], pypto.DT_FP32), out: pypto.Tensor([8], pypto.DT_FP32), alpha: float = 2.0):
    out[:] = pypto.exp(x) * alpha


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def copy(x: pypto.Tensor([8], pypto.DT_FP32), out: pypto.Tensor([8], pypto.DT_FP32)):
    out[:] = x


def run() -> float:
    x = np.ones(8, np.float32)
    y = np.zeros(8, np.float32)
    scale(x, y, alpha=3.0)
    copy(x, y)
    info = scale.cache_info()
    hits: int = info["hits"]
    seconds: float = info["compile_seconds"]
    why: str = scale.explain(x, y)
    abi: int = pypto._core.KERNEL_ABI_VERSION
    return hits + seconds + len(why) + abi
