"""Test helpers: one kernel computing many expressions (one output each), random data, tolerances.

Compiling a kernel costs ~1 s of g++, so the op grids batch every op of one (dtype, shape) case into one
kernel with up to MAX_OUT outputs instead of one kernel per op."""

import torch

import pypto

T = pypto.Tensor
MAX_OUT = 24

FLOATS = [torch.float32, torch.float16, torch.bfloat16]
ALL4 = FLOATS + [torch.int32]
# odd and tail shapes: a single element, sizes that are not multiples of 8/16/32/64, a 2-D and a 3-D case
SHAPES = [(1,), (7,), (33,), (130,), (3, 5), (2, 3, 7)]

# comparison tolerance per dtype for ops that are not exact (transcendentals, pow): a few units in the last
# place of the dtype (fp32 eps 1.2e-7, fp16 9.8e-4, bf16 7.8e-3)
TOL = {torch.float32: 4e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


def rand(shape, dtype, lo=-3.0, hi=3.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype == torch.uint8:
        lo = max(lo, 0.0)
    return torch.randint(int(lo) * 10, int(hi) * 10 + 1, shape, generator=g, dtype=dtype)


def multi_kernel(fns):
    """A kernel `k(a, b, c, o0, ..., o23)` writing fns[j](a, b, c) into o_j (Python loop: unrolled at trace
    time)."""
    assert len(fns) <= MAX_OUT

    @pypto.frontend.jit
    def k(a: T, b: T, c: T, o0: T, o1: T, o2: T, o3: T, o4: T, o5: T, o6: T, o7: T, o8: T, o9: T, o10: T,
          o11: T, o12: T, o13: T, o14: T, o15: T, o16: T, o17: T, o18: T, o19: T, o20: T, o21: T, o22: T,
          o23: T):
        outs = (o0, o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13, o14, o15, o16, o17, o18, o19, o20,
                o21, o22, o23)
        for f, o in zip(fns, outs):
            o[...] = f(a, b, c)

    return k


def run_multi(cases, a, b, c):
    """cases: list of (name, pypto_fn(a, b, c), torch_ref(a, b, c) -> tensor). Runs them in batches of
    MAX_OUT per kernel; returns [(name, got, want)]. Each output is allocated with the dtype and shape of
    the torch result, so a dtype-promotion difference fails the write with a clear error."""
    results = []
    for s in range(0, len(cases), MAX_OUT):
        chunk = cases[s:s + MAX_OUT]
        wants = [ref(a, b, c) for _, _, ref in chunk]
        outs = [torch.full(w.shape, 123, dtype=w.dtype) for w in wants]
        pad = [torch.zeros(1) for _ in range(MAX_OUT - len(chunk))]
        multi_kernel([f for _, f, _ in chunk])(a, b, c, *outs, *pad)
        results += [(name, o, w) for (name, _, _), o, w in zip(chunk, outs, wants)]
    return results


def check(results, exact=(), tol=None):
    """Every result equal to torch bit for bit, except names not in `exact` when tol is given (then within
    rtol = atol = tol[dtype])."""
    for name, got, want in results:
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        if tol is None or name in exact:
            assert torch.equal(got, want) or _nan_equal(got, want), (name, got, want)
        else:
            t = tol[want.dtype]
            torch.testing.assert_close(got.double(), want.double(), rtol=t, atol=t, equal_nan=True,
                                       msg=lambda m, n=name: f"{n}: {m}")


def _nan_equal(a, b):
    return a.is_floating_point() and torch.equal(torch.isnan(a), torch.isnan(b)) and \
        torch.equal(torch.nan_to_num(a, 0.0), torch.nan_to_num(b, 0.0))
