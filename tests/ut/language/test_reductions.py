"""Reductions (sum, amax, amin, prod, mean), softmax, rms_norm, cumsum and matmul / `@` against torch for
fp32/fp16/bf16/int32 on odd and tail shapes, every dim, keepdim on and off.

amax/amin are exact. Sums accumulate in float32 (float64 for fp64, int64 for integers) and round once, so
fp16/bf16 results are within an ulp of the correctly rounded sum (the reference is the float64 sum rounded to
the dtype). Integer sums keep the input dtype (torch.sum widens to int64: the reference is cast back).
"""
import pytest
import torch

import pypto

from _multi import ALL4, FLOATS, SHAPES, TOL, check, rand, run_multi


def _sum_ref(x, d, keep, dt):
    return x.double().sum(d, keepdim=keep).to(dt)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", ALL4)
def test_reductions(dt, shape):
    x = rand(shape, dt, seed=1)
    small = rand(shape, dt, 0.5, 1.5, seed=2) if dt.is_floating_point else rand(shape, dt, -1, 1, seed=2)
    exact, approx = [], []
    dims = list(range(len(shape))) + [-1, None]
    for d in dims:
        for keep in (False, True):
            if d is None and keep:
                continue
            tag = f"{d}_{keep}"
            rd = d if d is not None else list(range(len(shape)))
            exact += [
                (f"amax{tag}", lambda a, b, c, d=d, k=keep: pypto.amax(a, d, keepdim=k),
                 lambda a, b, c, rd=rd, k=keep: torch.amax(a, rd, keepdim=k)),
                (f"amin{tag}", lambda a, b, c, d=d, k=keep: a.amin(d, keepdim=k),
                 lambda a, b, c, rd=rd, k=keep: torch.amin(a, rd, keepdim=k)),
            ]
            (exact if dt == torch.int32 else approx).append(
                (f"sum{tag}", lambda a, b, c, d=d, k=keep: pypto.sum(a, d, keepdim=k),
                 lambda a, b, c, rd=rd, k=keep: _sum_ref(a, rd, k, dt)))
        if d is not None and shape[d] <= 7:
            (exact if dt == torch.int32 else approx).append(
                (f"prod{d}", lambda a, b, c, d=d: pypto.prod(b, d),
                 lambda a, b, c, d=d: b.double().prod(d).to(dt)))
        if d is not None:
            (exact if dt == torch.int32 else approx).append(
                (f"cumsum{d}", lambda a, b, c, d=d: pypto.cumsum(a, d),
                 lambda a, b, c, d=d: a.double().cumsum(d).to(dt)))
    if dt.is_floating_point:
        approx += [
            ("mean", lambda a, b, c: pypto.mean(a, -1, keepdim=True), lambda a, b, c: a.mean(-1, keepdim=True)),
            ("mean_all", lambda a, b, c: pypto.mean(a), lambda a, b, c: a.mean()),
        ]
    tol = {k: v * 4 for k, v in TOL.items()}
    check(run_multi(exact + approx, x, small, x), exact=[n for n, _, _ in exact], tol=tol)


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (3, 5), (4, 33), (2, 130)])
@pytest.mark.parametrize("dt", FLOATS)
def test_softmax_rms_norm(dt, shape):
    x = rand(shape, dt, seed=3)
    w = rand(shape[-1:], dt, seed=4)

    def rms_ref(a, w, eps):
        af = a.float()
        return (af * torch.rsqrt(af.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(dt)

    cases = [
        ("softmax", lambda a, b, c: pypto.softmax(a, -1), lambda a, b, c: torch.softmax(a.float(), -1).to(dt)),
        ("softmax0", lambda a, b, c: pypto.softmax(a, 0), lambda a, b, c: torch.softmax(a.float(), 0).to(dt)),
        ("rms_norm", lambda a, b, c: pypto.rms_norm(a, b, eps=1e-5), lambda a, b, c: rms_ref(a, b, 1e-5)),
        ("rms_norm_nw", lambda a, b, c: pypto.rms_norm(a), lambda a, b, c: rms_ref(a, torch.ones_like(b), 1e-6)),
    ]
    # softmax in fp16/bf16 rounds after every step (exp, sum, div) while torch rounds once: a few ulps
    tol = {k: v * 4 for k, v in TOL.items()}
    check(run_multi(cases, x, w, x), tol=tol)


MM_SHAPES = [((1, 1), (1, 1)), ((7, 33), (33, 5)), ((3, 5), (5, 130)), ((2, 7, 9), (9, 3)), ((1, 4, 6), (3, 6, 2))]


@pytest.mark.parametrize("sa,sb", MM_SHAPES)
@pytest.mark.parametrize("dt", ALL4)
def test_matmul(dt, sa, sb):
    a, b = rand(sa, dt, seed=5), rand(sb, dt, seed=6)
    out_dt = torch.float32 if dt in (torch.float16, torch.bfloat16) else dt
    pout = pypto.vocab.dtypes.from_torch(dt)
    cases = [("at", lambda a, b, c: a @ b, lambda a, b, c: (a.double() @ b.double()).to(out_dt)),
             ("mm_out", lambda a, b, c: pypto.matmul(a, b, pout), lambda a, b, c: (a.double() @ b.double()).to(dt)),
             ("mm_tt", lambda a, b, c: pypto.matmul(b, a, out_dtype=pout, a_trans=True, b_trans=True),
              lambda a, b, c: (a.double() @ b.double()).transpose(-1, -2).to(dt))]
    res = run_multi(cases, a, b, a)
    if dt == torch.int32:
        check(res)
    else:
        k = sa[-1]
        check(res, tol={torch.float32: 1e-5 * k, torch.float16: 2e-3, torch.bfloat16: 1.6e-2})
