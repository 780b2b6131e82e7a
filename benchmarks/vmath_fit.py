"""Fits the polynomials of include/pypto/kernel_vmath.h: near-minimax (Lawson's iteratively reweighted least
squares) fits of each function's reduced form against mpmath at 40 digits, printed as C float hex literals.

    python benchmarks/vmath_fit.py            # all fits, ~1 min
    python benchmarks/vmath_fit.py tanh erf   # some

The header's coefficients are this script's output; benchmarks/vmath_ulp.cpp then measures the float code's
error against fp64 over every float of each function's useful range (the fit alone says nothing about the
rounding of the float evaluation)."""
from __future__ import annotations

import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def lawson(target, basis, weight, lo, hi, deg, n=1500, iters=300):
    """Coefficients c (len deg+1) minimising max |weight(x) * (sum c_k basis(x)^k - target(x))| on [lo, hi]."""
    k = np.arange(n)
    x = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)
    t = np.array([float(target(mp.mpf(float(v)))) for v in x])
    w = np.array([weight(v) for v in x])
    b = np.array([basis(v) for v in x])
    A = np.vander(b, deg + 1, increasing=True) * w[:, None]
    y = t * w
    lw = np.ones(n) / n
    c = None
    for _ in range(iters):
        s = np.sqrt(lw)
        c, *_ = np.linalg.lstsq(A * s[:, None], y * s, rcond=None)
        e = np.abs(A @ c - y)
        lw = lw * e
        lw /= lw.sum()
    err = np.abs(A @ c - y).max()
    return c, err


def hexf(v: float) -> str:
    f = float(np.float32(v))
    return f.hex().replace("0000000p", "p").replace("000000p", "p") + "f" if f else "0.0f"


def show(name, c, err):
    print(f"{name}: max weighted error {err:.3g}")
    print("  " + ", ".join(hexf(v) for v in c))


def fit_tanh():
    # tanh(x) = x + x^3 P(x^2) on |x| < 0.625; relative error of the result
    def g(x):
        return (mp.tanh(x) - x) / x ** 3
    c, e = lawson(g, lambda v: v * v, lambda v: v ** 3 / np.tanh(v), 1e-4, 0.625, 4)
    show("tanh P(x^2)", c, e)


def fit_log():
    # log(1+f) = f - f^2/2 + f^3 P(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]
    def g(f):
        return (mp.log1p(f) - f + f * f / 2) / f ** 3
    lo, hi = float(mp.sqrt(0.5) - 1), float(mp.sqrt(2) - 1)
    c, e = lawson(g, lambda v: v, lambda v: abs(v) ** 3 / abs(np.log1p(v)), lo, hi, 7)
    show("log P(f)", c, e)


def fit_exp2():
    # 2^r = 1 + r P(r), |r| <= 1/2
    def g(r):
        return (mp.power(2, r) - 1) / r
    c, e = lawson(g, lambda v: v, lambda v: abs(v) / 2.0 ** v, -0.5, 0.5, 5)
    show("exp2 P(r)", c, e)


def fit_expm1():
    # expm1(r) = r + r^2/2 + r^3 P(r), |r| <= ln2/2
    def g(r):
        return (mp.expm1(r) - r - r * r / 2) / r ** 3
    h = float(mp.log(2) / 2)
    c, e = lawson(g, lambda v: v, lambda v: abs(v) ** 3 / abs(np.expm1(v)), -h, h, 4)
    show("expm1 P(r)", c, e)


def fit_erf():
    # erf(x) = x (2/sqrt(pi) + x^2 P(x^2)) on |x| < 0.875 (2/sqrt(pi) split in two floats by the header: a
    # float-rounded leading coefficient alone costs up to half an ulp); erf(x) = 1 - exp(Q(x - 2.25)) on
    # [0.875, 3.92] (error relative to erf)
    c0 = 2 / mp.sqrt(mp.pi)
    c, e = lawson(lambda x: (mp.erf(x) / x - c0) / (x * x), lambda v: v * v,
                  lambda v: v * v * v / float(mp.erf(v)), 1e-3, 0.875, 4)
    show("erf small P(x^2)", c, e)
    print(f"  2/sqrt(pi) = {hexf(c0)} + {hexf(c0 - mp.mpf(float(np.float32(float(c0)))))}")
    c, e = lawson(lambda x: mp.log(mp.erfc(x)), lambda v: v - 2.25,
                  lambda v: float(mp.erfc(v)) / float(mp.erf(v)), 0.875, 3.92, 6)
    show("erf mid Q(x - 2.25)", c, e)


def fit_atan():
    # atan(t) = t + t^3 P(t^2) on |t| <= tan(pi/8) (the header reduces |x| > tan(3pi/8) by -1/x and the middle by
    # (x - 1)/(x + 1)); relative error of the result
    def g(t):
        return (mp.atan(t) - t) / t ** 3
    c, e = lawson(g, lambda v: v * v, lambda v: v ** 3 / np.arctan(v), 1e-4, float(mp.tan(mp.pi / 8)), 4)
    show("atan P(t^2)", c, e)
    for name, v in (("pi/2", mp.pi / 2), ("pi/4", mp.pi / 4)):
        hi = mp.mpf(float(np.float32(float(v))))
        print(f"  {name} = {hexf(v)} + {hexf(v - hi)}")


def fit_sincos():
    # sin(r) = r + r^3 P(r^2), cos(r) = 1 - r^2/2 + r^4 Q(r^2) on |r| <= pi/4 (+ a margin for the reduction's
    # rounding); relative error of the result
    h = float(mp.pi / 4) * 1.001
    c, e = lawson(lambda r: (mp.sin(r) - r) / r ** 3, lambda v: v * v, lambda v: v ** 3 / np.sin(v), 1e-4, h, 3)
    show("sin P(r^2)", c, e)
    c, e = lawson(lambda r: (mp.cos(r) - 1 + r * r / 2) / r ** 4, lambda v: v * v, lambda v: v ** 4 / np.cos(v),
                  1e-4, h, 3)
    show("cos Q(r^2)", c, e)


def fit_erfc():
    # erfc(x) = exp(-x^2) erfcx(x) for x >= 0, erfcx(x) = P(t) with t = 3 / (3 + x) on [0, 10.5] (erfc underflows
    # past it); evaluated in fp64, so the coefficients are fp64 literals; relative error of erfcx
    def erfcx(x):
        return mp.exp(x * x) * mp.erfc(x)
    c, e = lawson(erfcx, lambda v: 3 / (3 + v), lambda v: 1 / float(erfcx(mp.mpf(float(v)))), 0.0, 10.5, 10)
    print(f"erfcx P(t): max relative error {e:.3g}")
    print("  " + ", ".join(float(v).hex() for v in c))


def fit_exp2d():
    # vm_exp2d: 2^r on |r| <= 1/2 in fp64 (pow, erfc); relative error
    c, e = lawson(lambda r: mp.mpf(2) ** r, lambda v: v, lambda v: 1 / 2.0 ** v, -0.5, 0.5, 7)
    print(f"2^r: max relative error {e:.3g}")
    print("  " + ", ".join(float(v).hex() for v in c))


def table_2opi():
    # kernel_vmath.h's vm_2opi: for each float exponent E = -3 ... 104 (x = m 2^E, m a 24-bit integer), the 96
    # bits of 2/pi from bit E - 1 on (bit k weighs 2^-k; bits before the first are 0), as three 32-bit words
    mp.mp.dps = 80
    big = int(mp.floor(2 / mp.pi * mp.mpf(2) ** 240))  # bits 1 ... 240
    out = []
    for e in range(-3, 105):
        k0 = e - 1  # window bits k0 ... k0 + 95: (big >> (240 - (k0 + 95))) & (2^96 - 1)
        w = (big >> (240 - (k0 + 95))) & ((1 << 96) - 1) if k0 + 95 <= 240 else None
        out += [(w >> 64) & 0xffffffff, (w >> 32) & 0xffffffff, w & 0xffffffff]
    mp.mp.dps = 40
    for i in range(0, len(out), 9):
        print("    " + ", ".join(f"0x{v:08x}u" for v in out[i:i + 9]) + ",")


def fit_sin_hp():
    # bf16 sin/cos blocks: sin(r) = r + r^3 P(r^2) on |r| <= pi/2 (+ a margin); relative error of the result
    h = float(mp.pi / 2) * 1.001
    c, e = lawson(lambda r: (mp.sin(r) - r) / r ** 3, lambda v: v * v, lambda v: v ** 3 / np.sin(v), 1e-4, h, 3)
    show("sin_hp P(r^2)", c, e)


def fit_erf_bf16():
    # erf_bf16_: erf(x) = Q(x - 1.53125) on [0.875, 2.1875] (degree 9); relative error
    c, e = lawson(lambda x: mp.erf(x), lambda v: v - 1.53125, lambda v: 1 / float(mp.erf(v)), 0.875,
                  2.1875 * 1.0001, 9)
    show("erf_bf16 Q(t)", c, e)


FITS = {"atan": fit_atan, "tanh": fit_tanh, "log": fit_log, "exp2": fit_exp2, "expm1": fit_expm1, "erf": fit_erf, "sincos": fit_sincos, "erfc": fit_erfc, "exp2d": fit_exp2d,
        "sin_hp": fit_sin_hp, "erf_bf16": fit_erf_bf16, "2opi": table_2opi}

if __name__ == "__main__":
    for name in sys.argv[1:] or FITS:
        FITS[name]()
