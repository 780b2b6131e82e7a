"""pypto.exp on fp32 over its whole range: the clamp on the float's bits (kernel_rt.h exp_) sends every input below
-104 to +0 and above 89 to +inf (infinities included), returns NaN for every NaN (either sign, any payload), and stays
within 1.2 ulp of the correctly rounded result in between, subnormal results included."""
import numpy as np
import torch

import pypto

F1 = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)


@pypto.frontend.jit
def exp_kernel(x: F1, out: F1):
    out[:] = pypto.exp(x)


def _f32(bits):
    return torch.from_numpy(np.asarray(bits, dtype=np.uint32).view(np.float32).copy())


def _ulp_error(got: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    exact = torch.exp(x.double())
    ulp = torch.tensor(np.spacing(exact.float().abs().numpy().astype(np.float32)), dtype=torch.float64)
    ulp = torch.clamp(ulp, min=2.0 ** -149)                    # subnormal results: the subnormal spacing
    return (got.double() - exact).abs() / ulp


def test_exp_every_kth_float_of_the_finite_range_within_1_2_ulp():
    lo = np.float32(-104.0).view(np.uint32)            # negative floats: larger bits, larger magnitude
    hi = np.float32(89.0).view(np.uint32)
    neg = np.arange(0x80000000, lo + 1, 97, dtype=np.uint64)
    pos = np.arange(0, hi + 1, 97, dtype=np.uint64)
    x = _f32(np.concatenate([neg, pos, [lo, hi]]).astype(np.uint32))
    out = torch.full_like(x, 7.0)
    exp_kernel(x, out)
    finite = torch.exp(x.double()) <= float(torch.finfo(torch.float32).max)
    err = _ulp_error(out[finite], x[finite])
    assert err.max().item() <= 1.2, (err.max().item(), x[finite][err.argmax()].item())
    assert torch.isinf(out[~finite]).all() and (out[~finite] > 0).all()


def test_exp_clamp_boundaries_infinities_and_nans():
    m104, p89 = np.float32(-104.0).view(np.uint32), np.float32(89.0).view(np.uint32)
    bits = [m104 - 1, m104, m104 + 1,           # just above -104, -104, just below
            p89 - 1, p89, p89 + 1,
            0xFF800000, 0x7F800000,             # -inf, +inf
            0xFF7FFFFF, 0x7F7FFFFF,             # -max, +max
            0x80000001, 0x00000001, 0x80000000, 0x00000000]   # subnormal inputs, -0, +0
    nans = [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FA5A5A5]
    x = _f32(bits + nans)
    out = torch.full_like(x, 7.0)
    exp_kernel(x, out)
    n = len(bits)
    want = torch.exp(x[:n].double()).float()
    assert torch.equal(out[:n] == 0, want == 0) and torch.equal(torch.isinf(out[:n]), torch.isinf(want))
    fin = torch.isfinite(want) & (want != 0)
    assert _ulp_error(out[:n][fin], x[:n][fin]).max().item() <= 1.2
    assert out[2].item() == 0.0 and out[6].item() == 0.0 and out[7].item() == float("inf")   # below -104, -inf, +inf
    assert out[5].item() == float("inf") and out[8].item() == 0.0 and out[9].item() == float("inf")
    assert torch.isnan(out[n:]).all()


F2 = pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32)


@pypto.frontend.jit
def exp_rows(x: F2, out: F2, sig: F2):
    out[:] = pypto.exp(x)
    sig[:] = pypto.sigmoid(x)


def test_exp_blocks_and_the_scalar_tail_agree_bit_for_bit():
    """Generated elementwise loops compute fp32 exp 64 elements at a time (pypto_rt::exp16, vscalefps on AVX-512)
    and the last < 64 elements of a row with the scalar exp_: a row of 65 copies of one value puts it in both.
    Every 49999th float, the clamp boundaries, infinities and NaN payloads; exp and sigmoid (exp inside)."""
    step = np.arange(0, 1 << 32, 49999, dtype=np.uint64).astype(np.uint32)
    m104, p89 = np.float32(-104.0).view(np.uint32), np.float32(89.0).view(np.uint32)
    special = np.array([m104 - 1, m104, m104 + 1, p89 - 1, p89, p89 + 1, 0xFF800000, 0x7F800000, 0x80000000, 0,
                        0x00000001, 0x80000001, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FA5A5A5],
                       dtype=np.uint32)
    v = _f32(np.concatenate([step, special]))
    x = v[:, None].expand(-1, 65).contiguous()
    out, sig = torch.full_like(x, 7.0), torch.full_like(x, 7.0)
    exp_rows(x, out, sig)
    num = ~torch.isnan(v)
    for got in (out, sig):
        bits = got.view(torch.int32)
        assert torch.equal(bits[num, :64], bits[num, 64:].expand(-1, 64)), "block and tail differ"
    # exp keeps a NaN's bits either way; sigmoid's NaN rows are compared as NaN only: g++ does not keep a NaN's
    # sign through 1 / (1 + exp_(-x)) (sigmoid of 0x7FA5A5A5: 0x7FE5A5A5 in its scalar code, 0xFFE5A5A5 in its
    # own vectorized loop, with or without exp16)
    eb = out.view(torch.int32)
    assert torch.equal(eb[~num, :64], eb[~num, 64:].expand(-1, 64))
    fin = torch.isfinite(v) & (v.abs() < 80)
    assert _ulp_error(out[fin, 0], v[fin]).max().item() <= 1.2
    torch.testing.assert_close(sig[~torch.isnan(v), 3], torch.sigmoid(v[~torch.isnan(v)]), rtol=2e-7, atol=0)
    assert torch.isnan(out[torch.isnan(v)]).all() and torch.isnan(sig[torch.isnan(v)]).all()
