"""The bf16 matmul's bits (kernel_gemm.h). With AVX512-BF16 (PYPTO_KERNEL_ISA=native on such a CPU) bf16 x bf16
runs on vdpbf16ps behind an exponent guard; everywhere it must give exactly the bits of the fp32 path
(docs/language.md, set_cube_tile_shapes: per kL0 block a fresh fp32 sum of fused multiply-adds in k order). The
reference is the same kernel on float32 copies of the operands (bf16 -> fp32 is exact, and the fp32 path sums in
that order), compared bit for bit, NaN payloads included; a float64 product checks the reference itself."""
import pytest
import torch

import pypto

T = pypto.Tensor
KL0 = (16, 32, 64, 256)


def _kernel(kl0, a_trans, b_trans):
    @pypto.frontend.jit
    def k(a: T, b: T, o: T):
        pypto.set_cube_tile_shapes([16, 16], [kl0, kl0], [16, 16])
        o[:] = pypto.matmul(a, b, pypto.DT_FP32, a_trans=a_trans, b_trans=b_trans)
    return k


_KERNELS = {}


def _mm(a, b, kl0=256, a_trans=False, b_trans=False):
    key = (kl0, a_trans, b_trans)
    if key not in _KERNELS:
        _KERNELS[key] = _kernel(*key)
    m = a.shape[1] if a_trans else a.shape[0]
    n = b.shape[0] if b_trans else b.shape[1]
    o = torch.full((m, n), 7.0)
    _KERNELS[key](a, b, o)
    return o


def _check(a, b, kl0=256, a_trans=False, b_trans=False, approx=True):
    """a, b bf16 (stored as the kernel reads them): the bf16 kernel == the fp32 kernel on a.float(), b.float()"""
    got = _mm(a, b, kl0, a_trans, b_trans)
    ref = _mm(a.float(), b.float(), kl0, a_trans, b_trans)
    assert torch.equal(got.view(torch.int32), ref.view(torch.int32)), (
        f"{(got.view(torch.int32) != ref.view(torch.int32)).sum().item()} elements differ")
    if approx:
        am = a.double().t() if a_trans else a.double()
        bm = b.double().t() if b_trans else b.double()
        torch.testing.assert_close(ref.double(), am @ bm, rtol=1e-4, atol=1e-4 * am.shape[1] ** 0.5)
    return got


def _rand(*shape, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).bfloat16()


@pytest.mark.parametrize("kl0", KL0)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 7, 3), (9, 33, 31), (37, 129, 45), (64, 256, 96),
                                   (70, 301, 130)])
def test_bf16_matmul_bits_random(m, k, n, kl0):
    _check(_rand(m, k, seed=1), _rand(k, n, seed=2), kl0)


@pytest.mark.parametrize("a_trans,b_trans", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("kl0", (16, 64))
def test_bf16_matmul_bits_transposed(a_trans, b_trans, kl0):
    m, k, n = 21, 77, 40
    a = _rand(k, m, seed=3) if a_trans else _rand(m, k, seed=3)
    b = _rand(n, k, seed=4) if b_trans else _rand(k, n, seed=4)
    _check(a, b, kl0, a_trans, b_trans)


def test_bf16_matmul_bits_strided_views():
    a, b = _rand(40, 90, seed=5), _rand(90, 70, seed=6)

    @pypto.frontend.jit
    def k(a: T, b: T, o: T):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [16, 16])
        o[:] = pypto.matmul(a[3:30, 1:66], b[1:66, 5:44], pypto.DT_FP32)

    got, ref = torch.zeros(27, 39), torch.zeros(27, 39)
    k(a, b, got)
    k(a.float(), b.float(), ref)
    assert torch.equal(got.view(torch.int32), ref.view(torch.int32))
    torch.testing.assert_close(ref, a[3:30, 1:66].float() @ b[1:66, 5:44].float(), rtol=1e-4, atol=1e-3)


def _exp_scaled(shape, seed, e):
    """bf16 values 1..2 times 2^e (e an int tensor broadcast to shape), random signs"""
    g = torch.Generator().manual_seed(seed)
    m = 1.0 + torch.rand(*shape, generator=g)
    s = torch.where(torch.rand(*shape, generator=g) < 0.5, -1.0, 1.0)
    return (s * m).double().mul(torch.pow(2.0, e.double())).bfloat16()


@pytest.mark.parametrize("ea,eb", [(-60, -60), (-57, -56), (-56, -56), (-100, 0), (-120, -10), (63, 63), (63, 64),
                                   (125, 2)])
def test_bf16_matmul_bits_near_the_guard(ea, eb):
    """operands of magnitudes 2^ea.. and 2^eb..: the guard needs the smallest biased exponents to sum to >= 142
    (ea + eb >= -112 here) and the largest to <= 380 (ea + eb <= 126); both sides of each bound"""
    m, k, n = 19, 70, 37
    a = _exp_scaled((m, k), 7, torch.full((m, k), ea))
    b = _exp_scaled((k, n), 8, torch.full((k, n), eb))
    got = _check(a, b, 32, approx=False)
    if ea + eb <= -130:
        assert (got != 0).any() and (got.abs() < 2.0 ** -126).any()  # subnormal results that a flush would lose


@pytest.mark.parametrize("shift", [0, 1])
def test_bf16_matmul_bits_at_the_guard(shift):
    """129 * 129 - 130 * 128 = 1: a(0) b(0) + a(1) b(1) = 2^(q) for products that are multiples of 2^q,
    q = Ea + Eb - 268 = -127 (shift 0: the exponents sum to 141, the guard refuses, the result is the
    subnormal 2^-127 that vdpbf16ps would flush to 0) or -126 (shift 1: 142, the smallest normal, exact)"""
    a = torch.zeros(3, 4, dtype=torch.float64)
    b = torch.zeros(4, 2, dtype=torch.float64)
    a[0, :2] = torch.tensor([129.0, -130.0]) * 2.0 ** -63    # biased exponent 71
    a[1, 1:3] = torch.tensor([129.0, -130.0]) * 2.0 ** -63   # the pair split across two dwords
    b[:, 0] = torch.tensor([129.0, 128.0, 128.0, 1.0]) * 2.0 ** (-64 + shift)   # 70 (+ shift)
    b[1, 1] = 129.0 * 2.0 ** (-64 + shift)
    b[2, 1] = 128.0 * 2.0 ** (-64 + shift)
    got = _check(a.bfloat16(), b.bfloat16(), 16, approx=False)
    assert got[0, 0].item() == 2.0 ** (-127 + shift)
    assert got[1, 1].item() == 2.0 ** (-127 + shift)


def test_bf16_matmul_bits_mixed_blocks():
    """some row blocks of tiny values (guard fails), the rest ordinary; tiny columns in B too"""
    m, k, n = 50, 96, 70
    ea = torch.zeros(m, k, dtype=torch.int64)
    ea[8:16] = -70
    ea[40:, 50:] = -75
    eb = torch.zeros(k, n, dtype=torch.int64)
    eb[:, 64:] = -60
    _check(_exp_scaled((m, k), 9, ea), _exp_scaled((k, n), 10, eb), 32, approx=False)


def test_bf16_matmul_bits_zeros_and_subnormals():
    m, k, n = 24, 45, 40
    a, b = _rand(m, k, seed=11), _rand(k, n, seed=12)
    a[::3] = 0.0
    a[1, ::2] = -0.0
    b[:, 5] = -0.0
    _check(a, b, 16)
    _check(torch.zeros(m, k, dtype=torch.bfloat16), b, 16)
    _check(-torch.zeros(m, k, dtype=torch.bfloat16), -b, 16)
    sub = a.clone()
    sub[4, 7] = torch.tensor(2.0 ** -130).bfloat16()   # a bf16 subnormal operand
    _check(sub, b, 16, approx=False)


def test_bf16_matmul_bits_inf_nan():
    m, k, n = 17, 40, 33
    a, b = _rand(m, k, seed=13), _rand(k, n, seed=14)
    a[2, 3] = float("inf")
    a[5, 9] = float("-inf")
    a[7, 1] = float("nan")
    b[4, 6] = float("nan")
    b[20, :] = float("inf")
    b[3, 2] = 0.0
    got = _check(a, b, 16, approx=False)
    assert torch.isnan(got).any() and torch.isinf(got).any()
    big = _rand(m, k, seed=15, scale=2.0 ** 120)
    _check(big, _rand(k, n, seed=16, scale=2.0 ** 120), 16, approx=False)   # sums that overflow to inf


def test_fp16_matmul_bits():
    g = torch.Generator().manual_seed(17)
    a, b = torch.randn(33, 70, generator=g).half(), torch.randn(70, 41, generator=g).half()
    a[3, 4] = 2.0 ** -20      # an fp16 subnormal
    got, ref = _mm(a, b, 32), _mm(a.float(), b.float(), 32)
    assert torch.equal(got.view(torch.int32), ref.view(torch.int32))
    torch.testing.assert_close(ref.double(), a.double() @ b.double(), rtol=1e-4, atol=1e-3)
