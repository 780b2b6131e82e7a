"""pypto.erfc (reference basic_ops example) against torch.erfc: dtypes, tails, specials, fusion, verify, errors."""
import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

T = pypto.Tensor


@pypto.frontend.jit
def k_erfc(x: T, out: T):
    out[:] = pypto.erfc(x)


@pypto.frontend.jit
def k_erfc_chain(x: T, out: T):
    out[:] = pypto.erfc(x * 0.5 + 1.0) * 2.0 - x     # fused: erfc inlined in one expression


def _x(dtype, n=257, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, generator=g, dtype=torch.float64) * 24.0 - 12.0).to(dtype)


def test_erfc_fp32_fp64_within_a_few_ulps_of_torch_including_the_tail():
    # erfc(x) falls to ~1e-38 near x = 9.2 and underflows past 10 in fp32; relative accuracy in the tail matters
    for dt, rtol in ((torch.float32, 4e-6), (torch.float64, 1e-12)):
        x = _x(dt)
        x[:6] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 26.0], dtype=dt)
        out = torch.full_like(x, 7.0)
        k_erfc(x, out)
        want = torch.erfc(x)
        torch.testing.assert_close(out, want, rtol=rtol, atol=0, equal_nan=True)
        assert out[2] == 0.0 and out[3] == 2.0 and torch.isnan(out[4]) and out[0] == 1.0


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_erfc_half_types_computed_in_fp32_and_rounded_once(dt):
    x = _x(dt, n=130, seed=1).reshape(2, 65)
    out = torch.zeros_like(x)
    k_erfc(x, out)
    # rounding the fp32 result once: equal to torch's fp32 erfc rounded to dt, up to a last-bit tie
    want = torch.erfc(x.float()).to(dt)
    torch.testing.assert_close(out, want, rtol=2e-3 if dt == torch.float16 else 1.6e-2, atol=0)
    torch.testing.assert_close(out, torch.erfc(x), rtol=2e-3 if dt == torch.float16 else 1.6e-2, atol=1e-7)


def test_erfc_of_integers_gives_fp32_like_torch():
    x = torch.arange(-4, 5, dtype=torch.int32).reshape(3, 3)
    out = torch.zeros(3, 3)
    k_erfc(x, out)
    want = torch.erfc(x)
    assert want.dtype == torch.float32
    torch.testing.assert_close(out, want, rtol=4e-6, atol=0)


def test_erfc_inside_a_fused_chain_and_under_verify():
    x = _x(torch.float32, n=96, seed=2).reshape(3, 32)
    out = torch.zeros_like(x)
    k_erfc_chain(x, out)
    torch.testing.assert_close(out, torch.erfc(x * 0.5 + 1.0) * 2.0 - x, rtol=4e-6, atol=4e-6)

    def body(x: T, out: T):
        out[:] = pypto.erfc(x) + pypto.exp(x * 0.1)

    k = pypto.frontend.jit(body, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [1e-5, 1e-5]})
    out = torch.zeros_like(x)
    k(x, out)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    torch.testing.assert_close(out, torch.erfc(x) + torch.exp(x * 0.1), rtol=1e-5, atol=1e-5)


def test_erfc_of_a_scalar_is_refused_naming_kernel_and_op_and_outputs_stay():
    @pypto.frontend.jit
    def erfc_scalar(x: T, out: T):
        out[:] = x + pypto.erfc(1.5)

    out = torch.full((4,), 3.0)
    with pytest.raises(KernelTraceError) as e:
        erfc_scalar(torch.ones(4), out)
    msg = str(e.value)
    assert "erfc_scalar" in msg and "erfc" in msg.replace("erfc_scalar", "") and "1.5" in msg, msg
    torch.testing.assert_close(out, torch.full((4,), 3.0), rtol=0, atol=0)
