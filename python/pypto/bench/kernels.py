"""The benchmark's kernels, one per scenario variant, written out so every variant is plain readable Python.

Every kernel does trivial work on 16-element fp32 tensors on purpose: host overhead dominates, which is what the
harness measures. A module (not closures) so that subprocesses (callgrind, breakdown, cold paths) import the same
kernels by name.
"""

import pypto

N_ELEMS = 16
MAIN_BODY = "out[:] = a + b + c"

T = pypto.Tensor([pypto.STATIC], pypto.DT_FP32)
TDYN = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)
TFIX = pypto.Tensor([N_ELEMS], pypto.DT_FP32)
TNAMED = pypto.Tensor([pypto.frontend.dynamic("N")], pypto.DT_FP32)
S = pypto.Scalar[pypto.DT_FP32]

# Module globals read by the 20-global kernel (each guarded by identity on every call). Their sum is 1.0.
G00 = 1.0
G01 = G02 = G03 = G04 = G05 = G06 = G07 = G08 = G09 = 0.0
G10 = G11 = G12 = G13 = G14 = G15 = G16 = G17 = G18 = G19 = 0.0


class Tag(int):
    """An int constant whose repr never changes: keys differ by value, generated source does not, so the disk
    cache serves every specialization after the first (fills a 10,000-entry table in seconds)."""

    def __repr__(self):
        return "Tag"


# ---- the main call: k(a, b, c, out, m=2, n=3) -----------------------------------------------------------------
@pypto.frontend.jit
def main_k(a: T, b: T, c: T, out: T, m=2, n=3):
    out[:] = a + b + c


def spec_kernel():
    """A fresh copy of the main kernel (own specialization table), for the table-size rows."""

    @pypto.frontend.jit
    def spec_k(a: T, b: T, c: T, out: T, m=2, n=3):
        out[:] = a + b + c

    return spec_k


# ---- tensor arguments: 1 / 4 / 8 / 16 (two constants each) ----------------------------------------------------
@pypto.frontend.jit
def tensors_1(out: T, m=2, n=3):
    out[:] = out


@pypto.frontend.jit
def tensors_4(x0: T, x1: T, x2: T, out: T, m=2, n=3):
    out[:] = x0


@pypto.frontend.jit
def tensors_8(x0: T, x1: T, x2: T, x3: T, x4: T, x5: T, x6: T, out: T, m=2, n=3):
    out[:] = x0


@pypto.frontend.jit
def tensors_16(x0: T, x1: T, x2: T, x3: T, x4: T, x5: T, x6: T, x7: T, x8: T, x9: T, x10: T, x11: T, x12: T,
               x13: T, x14: T, out: T, m=2, n=3):
    out[:] = x0


# ---- compile-time constants: 0 / 2 / 8 (passed by keyword) --------------------------------------------------
@pypto.frontend.jit
def consts_0(a: T, b: T, c: T, out: T):
    out[:] = a + b + c


@pypto.frontend.jit
def consts_2(a: T, b: T, c: T, out: T, k0=0, k1=1):
    out[:] = a + b + c


@pypto.frontend.jit
def consts_8(a: T, b: T, c: T, out: T, k0=0, k1=1, k2=2, k3=3, k4=4, k5=5, k6=6, k7=7):
    out[:] = a + b + c


# ---- runtime scalars (pypto.Scalar, passed by value, never keyed): 0 / 1 / 4 ------------------------------------
@pypto.frontend.jit
def scalars_0(a: T, out: T):
    out[:] = a * 1.0


@pypto.frontend.jit
def scalars_1(a: T, out: T, s0: S):
    out[:] = a * s0


@pypto.frontend.jit
def scalars_4(a: T, out: T, s0: S, s1: S, s2: S, s3: S):
    out[:] = a * s0 + s1 + s2 + s3


# ---- guarded globals: 0 / 20 ------------------------------------------------------------------------------------
@pypto.frontend.jit
def globals_0(a: T, b: T, c: T, out: T, m=2, n=3):
    out[:] = a * 1.0


@pypto.frontend.jit
def globals_20(a: T, b: T, c: T, out: T, m=2, n=3):
    out[:] = a * (G00 + G01 + G02 + G03 + G04 + G05 + G06 + G07 + G08 + G09
                  + G10 + G11 + G12 + G13 + G14 + G15 + G16 + G17 + G18 + G19)


# ---- dims: a fixed size, STATIC (keyed) and DYNAMIC (a runtime value, not keyed) ---------------------------
@pypto.frontend.jit
def dims_fixed(a: TFIX, b: TFIX, c: TFIX, out: TFIX, m=2, n=3):
    out[:] = a + b + c


@pypto.frontend.jit
def dims_dynamic(a: TDYN, b: TDYN, c: TDYN, out: TDYN, m=2, n=3):
    out[:] = a + b + c


@pypto.frontend.jit
def dims_named(a: TNAMED, b: TNAMED, c: TNAMED, out: TNAMED, m=2, n=3):
    out[:] = a + b + c


def make_tensors(n: int = 4, seed: int = 0):
    """n fp32[16] torch tensors; the last one is the output (zeros)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(N_ELEMS, generator=g) for _ in range(n - 1)) + (torch.zeros(N_ELEMS),)
