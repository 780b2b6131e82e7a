"""`pypto.uniform` / `pypto.normal`: tensors of pseudo-random numbers, a pure function of (key, counter, element
index) — Philox4x32-10 (the reference's algorithm 1) as codegen/conv_random.py documents, so the same arguments
give the same bits whatever the thread count. Rules: docs/language.md."""
from __future__ import annotations

from ._helpers import DT, check_dtype, current

_FLOATS = (DT.DT_FP32, DT.DT_FP16, DT.DT_BF16)
_ALGS = (1, 3)          # 1 = Philox, 3 = auto_select (Philox)


def _ints(xs, n: int, op: str, what: str, lo: int, hi: int) -> list:
    b = current(op)
    if not isinstance(xs, (list, tuple)) or len(xs) != n or \
            any(isinstance(x, bool) or not isinstance(x, int) for x in xs):
        raise b.error(op, f"{what} must be a list of {n} static int(s), got {xs!r}")
    bad = [x for x in xs if not lo <= x <= hi]
    if bad:
        raise b.error(op, f"{what} entries must be in [{lo}, {hi}], got {list(xs)}")
    return list(xs)


def _random(dist: str, shape, key, counter, alg, dtype):
    op = dist
    b = current(op)
    if not isinstance(shape, (list, tuple)) or not 1 <= len(shape) <= 4 or \
            any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
        raise b.error(op, f"shape must be a list of 1 to 4 static positive ints, got {shape!r}")
    (seed,) = _ints(key, 1, op, "key", 0, 2 ** 64 - 1)
    ctr = _ints(counter, 2, op, "counter", 0, 2 ** 64 - 1)
    (a,) = _ints(alg, 1, op, "alg", -2 ** 63, 2 ** 63 - 1)
    if a not in _ALGS:
        raise b.error(op, f"alg must be [1] (Philox) or [3] (auto_select, Philox), got {list(alg)}")
    dt = check_dtype(dtype, op)
    if dt not in _FLOATS:
        raise b.error(op, f"dtype must be DT_FP32, DT_FP16 or DT_BF16, got {dt.name}")
    out = b.new_temp(dt, tuple(shape))
    # counter[0] is ignored, as in the reference (its Philox counter is [0, counter[1]])
    return b.op("random", out, [], dist=dist, seed=seed, counter=ctr[1])


def uniform(shape, key, counter, alg, dtype):
    """A tensor of `shape` (1-4 static dims) of `dtype` (FP32 / FP16 / BF16) uniform in [0, 1): k * 2^-b for a
    b-bit integer k from Philox4x32-10 (b = 24 / 11 / 8: every value is exact in the dtype and below 1).
    `key` = [seed], `counter` = [ignored, c], `alg` = [1] or [3]."""
    return _random("uniform", shape, key, counter, alg, dtype)


def normal(shape, key, counter, alg, dtype):
    """A tensor of `shape` (1-4 static dims) of `dtype` (FP32 / FP16 / BF16) drawn from N(0, 1): Box-Muller on two
    Philox4x32-10 words per element, computed in double and rounded to `dtype`. Arguments as `uniform`."""
    return _random("normal", shape, key, counter, alg, dtype)


__all__ = ["uniform", "normal"]
