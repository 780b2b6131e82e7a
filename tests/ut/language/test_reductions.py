"""Reductions (sum, amax, amin, prod, mean), softmax, rms_norm, cumsum and matmul / `@` (transposes, batches,
cube tiles, bias, rank 4) against torch for fp32/fp16/bf16/int32 on odd and tail shapes, every dim, keepdim on
and off.

amax/amin are exact. Sums accumulate in float32 (float64 for fp64, int64 for integers) and round once, so
fp16/bf16 results are within an ulp of the correctly rounded sum (the reference is the float64 sum rounded to
the dtype). Integer sums keep the input dtype (torch.sum widens to int64: the reference is cast back).
"""
import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

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


# ---- reductions on fixed shapes ----------------------------------------------------------------------------------

T = pypto.Tensor


def _rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-50, 51, shape, generator=g, dtype=dtype)


def _reduce_kernel(opname, dim, keepdim):
    @pypto.frontend.jit
    def k(x: T, out: T):
        out[:] = getattr(pypto, opname)(x, dim, keepdim=keepdim)
    return k


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin_exact(dtype, dim, keepdim):
    x = _rand((5, 7, 9), dtype, seed=1)
    for name, ref in (("amax", torch.amax), ("amin", torch.amin)):
        r = ref(x, dim, keepdim=keepdim)
        out = torch.zeros(r.shape, dtype=dtype)
        _reduce_kernel(name, dim, keepdim)(x, out)
        assert torch.equal(out, r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("dim", [0, -1, 1])
def test_sum(dtype, dim):
    x = _rand((6, 33, 5), dtype, seed=2)
    r = torch.sum(x.double(), dim, keepdim=True)
    out = torch.zeros(r.shape, dtype=dtype)
    _reduce_kernel("sum", dim, True)(x, out)
    if dtype == torch.int32:
        assert torch.equal(out, r.to(torch.int32))
    else:
        tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
        torch.testing.assert_close(out.double(), r.to(dtype).double(), rtol=tol, atol=tol)


def test_sum_all_and_mean_prod():
    x = _rand((4, 6), torch.float32, seed=3)

    @pypto.frontend.jit
    def k(x: T, s: T, m: T, p: T):
        s[:] = pypto.sum(x, [0, 1], keepdim=True)
        m[:] = pypto.mean(x, 1)
        p[:] = pypto.prod(x, 0)

    s, m, p = torch.zeros(1, 1), torch.zeros(4), torch.zeros(6)
    k(x, s, m, p)
    torch.testing.assert_close(s, x.sum().reshape(1, 1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m, x.mean(1), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(p, x.prod(0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_softmax_rms_norm_cumsum(dtype):
    x = _rand((5, 19), dtype, seed=4)
    w = _rand((19,), dtype, seed=5)

    @pypto.frontend.jit
    def k(x: T, w: T, sm: T, rn: T, cs: T):
        sm[:] = pypto.softmax(x, -1)
        rn[:] = pypto.rms_norm(x, w, eps=1e-5)
        cs[:] = pypto.cumsum(x, 1)

    sm, rn, cs = (torch.zeros(5, 19, dtype=dtype) for _ in range(3))
    k(x, w, sm, rn, cs)
    tol = 1e-5 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(sm.float(), torch.softmax(x.float(), -1), rtol=tol, atol=tol)
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()).to(dtype)
    torch.testing.assert_close(rn.float(), ref.float(), rtol=tol * 4, atol=tol * 4)
    torch.testing.assert_close(cs.float(), torch.cumsum(x.float(), 1).to(dtype).float(), rtol=tol * 4, atol=tol * 4)


# ---- matmul ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
def test_matmul_operator_and_transposes(dtype):
    a, b = _rand((9, 13), dtype, seed=9), _rand((13, 7), dtype, seed=10)
    out_dt = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    @pypto.frontend.jit
    def k(a: T, b: T, o1: T, o2: T):
        o1[:] = a @ b
        o2[:] = pypto.matmul(b, a, out_dtype=o2.dtype, a_trans=True, b_trans=True)

    o1, o2 = torch.zeros(9, 7, dtype=out_dt), torch.zeros(7, 9, dtype=out_dt)
    k(a, b, o1, o2)
    ref = a.double() @ b.double()
    if dtype == torch.int32:
        assert torch.equal(o1, ref.to(torch.int32))
        assert torch.equal(o2, ref.to(torch.int32).t())
    else:
        torch.testing.assert_close(o1.double(), ref, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(o2.double(), ref.t(), rtol=1e-5, atol=1e-4)


def test_batched_matmul_and_cube_tiles():
    a, b = _rand((3, 20, 33), torch.float32, seed=11), _rand((33, 17), torch.float32, seed=12)

    @pypto.frontend.jit
    def k(a: T, b: T, o: T):
        pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])  # fp32: 16-element aligned (reference rule)
        o[:] = pypto.matmul(a, b, pypto.DT_FP32)

    o = torch.zeros(3, 20, 17)
    k(a, b, o)
    torch.testing.assert_close(o, a @ b, rtol=1e-5, atol=1e-5)


# ---- matmul bias and rank 4 --------------------------------------------------------------------------------------

F32 = pypto.DT_FP32


@pypto.frontend.jit
def k_bias(a: pypto.Tensor([], F32), b: pypto.Tensor([], F32), bias: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params={"bias_tensor": bias})


@pypto.frontend.jit
def k_mm4(a: pypto.Tensor([], F32), b: pypto.Tensor([], F32), out: pypto.Tensor([], F32), bt: bool):
    out[:] = pypto.matmul(a, b, pypto.DT_FP32, b_trans=bt)


def test_matmul_bias_broadcasts_like_torch():
    a, b = torch.randn(6, 8), torch.randn(8, 5)
    for bias in (torch.randn(1, 5), torch.randn(6, 5)):
        out = torch.zeros(6, 5)
        k_bias(a, b, bias, out)
        torch.testing.assert_close(out, a @ b + bias)


def test_matmul_extend_params_unknown_key_is_refused():
    @pypto.frontend.jit
    def bad_ext(a: pypto.Tensor([], F32), b: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
        out[:] = pypto.matmul(a, b, extend_params={"scales": 2.0})

    out = torch.full((2, 2), 3.0)
    with pytest.raises(KernelTraceError) as e:
        bad_ext(torch.ones(2, 2), torch.ones(2, 2), out)
    assert "bad_ext" in str(e.value) and "'scales'" in str(e.value) and "bias_tensor" in str(e.value)
    torch.testing.assert_close(out, torch.full((2, 2), 3.0))


def test_matmul_rank4_matches_torch():
    a = torch.randn(2, 3, 4, 8)
    b = torch.randn(2, 3, 8, 5)
    out = torch.zeros(2, 3, 4, 5)
    k_mm4(a, b, out, False)
    torch.testing.assert_close(out, a @ b)
    bt = torch.randn(2, 3, 5, 8)
    k_mm4(a, bt, out, True)  # attention's q @ k^T: a strided view folded through a copy
    torch.testing.assert_close(out, a @ bt.transpose(-1, -2))
    w = torch.randn(8, 5)
    k_mm4(a, w, out, False)
    torch.testing.assert_close(out, a @ w)


def test_matmul_rank4_batch_mismatch_is_refused_with_shapes():
    out = torch.full((2, 3, 4, 5), 1.0)
    with pytest.raises(KernelTraceError) as e:
        k_mm4(torch.randn(2, 3, 4, 8), torch.randn(2, 4, 8, 5), out, False)
    msg = str(e.value)
    assert "k_mm4" in msg and "batch dim 1" in msg and "[2, 3, 4, 8]" in msg and "[2, 4, 8, 5]" in msg
    torch.testing.assert_close(out, torch.full((2, 3, 4, 5), 1.0))
