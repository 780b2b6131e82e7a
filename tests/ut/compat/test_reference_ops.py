"""Reference ops added for its examples: trunc, round(decimals=), scatter, matmul bias and rank 4 — against torch."""
import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

F32 = pypto.DT_FP32


@pypto.frontend.jit
def k_round(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32), decimals: int):
    out[:] = pypto.round(a, decimals=decimals)


@pypto.frontend.jit
def k_round16(a: pypto.Tensor([], pypto.DT_FP16), out: pypto.Tensor([], pypto.DT_FP16), decimals: int):
    out[:] = pypto.round(a, decimals)


@pypto.frontend.jit
def k_trunc(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    out[:] = pypto.trunc(a)


@pypto.frontend.jit
def k_trunc_fused(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    out[:] = pypto.trunc(a * 3.0) + 1.0


@pypto.frontend.jit
def k_trunc_int(a: pypto.Tensor([], pypto.DT_INT32), out: pypto.Tensor([], pypto.DT_INT32)):
    out[:] = pypto.trunc(a)


@pypto.frontend.jit
def k_scatter(x: pypto.Tensor([], F32), idx: pypto.Tensor([], pypto.DT_INT64), out: pypto.Tensor([], F32), dim: int,
              src: float):
    out[:] = pypto.scatter(x, dim, idx, src)


@pypto.frontend.jit
def k_scatter_t(x: pypto.Tensor([], F32), idx: pypto.Tensor([], pypto.DT_INT64), src: pypto.Tensor([], F32),
                out: pypto.Tensor([], F32)):
    out[:] = pypto.scatter(x, 1, idx, src)


@pypto.frontend.jit
def k_bias(a: pypto.Tensor([], F32), b: pypto.Tensor([], F32), bias: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params={"bias_tensor": bias})


@pypto.frontend.jit
def k_mm4(a: pypto.Tensor([], F32), b: pypto.Tensor([], F32), out: pypto.Tensor([], F32), bt: bool):
    out[:] = pypto.matmul(a, b, pypto.DT_FP32, b_trans=bt)


def test_round_with_decimals_matches_torch_bit_for_bit():
    a = torch.randn(4, 16) * 100
    for d in (0, 1, 2, 3, -1, -2):
        out = torch.zeros_like(a)
        k_round(a, out, d)
        assert torch.equal(out, torch.round(a, decimals=d)), d


def test_round_fp16_with_decimals_matches_torch():
    a = (torch.randn(4, 16) * 10).half()
    for d in (1, -1):
        out = torch.zeros_like(a)
        k_round16(a, out, d)
        torch.testing.assert_close(out, torch.round(a, decimals=d), rtol=0, atol=0)


def test_round_decimals_must_be_a_static_int_and_outputs_stay():
    @pypto.frontend.jit
    def bad_round(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
        out[:] = pypto.round(a, decimals=1.5)

    out = torch.full((4,), 5.0)
    with pytest.raises(KernelTraceError) as e:
        bad_round(torch.ones(4), out)
    assert "bad_round" in str(e.value) and "decimals" in str(e.value) and "1.5" in str(e.value)
    torch.testing.assert_close(out, torch.full((4,), 5.0))


def test_trunc_matches_torch_for_floats_ints_and_inside_a_fused_chain():
    a = torch.randn(8, 8) * 10
    a[0, :4] = torch.tensor([float("inf"), -float("inf"), -0.5, 2.5])
    out = torch.zeros_like(a)
    k_trunc(a, out)
    assert torch.equal(out, torch.trunc(a))
    k_trunc_fused(a, out)
    assert torch.equal(out, torch.trunc(a * 3.0) + 1.0)
    ai = torch.randint(-50, 50, (3, 5), dtype=torch.int32)
    oi = torch.zeros_like(ai)
    k_trunc_int(ai, oi)
    assert torch.equal(oi, ai)


def test_scatter_is_out_of_place_torch_scatter():
    x = torch.rand(3, 5)
    idx = torch.randint(0, 3, (3, 5))
    out = torch.empty_like(x)
    x0 = x.clone()
    k_scatter(x, idx, out, 0, 0.5)
    assert torch.equal(out, torch.scatter(x0, 0, idx, 0.5))
    assert torch.equal(x, x0)
    # one index per row along dim 1 (distinct positions: torch leaves duplicates undefined)
    idx1 = torch.stack([torch.randperm(5)[:2] for _ in range(3)])
    src = torch.randn(3, 2)
    k_scatter_t(x, idx1, src, out)
    assert torch.equal(out, torch.scatter(x0, 1, idx1, src))


def test_scatter_errors_name_the_op_and_keep_outputs():
    x = torch.rand(3, 5)
    out = torch.full((3, 5), 4.0)
    with pytest.raises(KernelTraceError) as e:
        k_scatter(x, torch.zeros(3, dtype=torch.int64), out, 0, 0.5)
    msg = str(e.value)
    assert "k_scatter" in msg and "scatter:" in msg and "rank" in msg
    torch.testing.assert_close(out, torch.full((3, 5), 4.0))


def test_matmul_bias_broadcasts_like_torch():
    a, b = torch.randn(6, 8), torch.randn(8, 5)
    for bias in (torch.randn(1, 5), torch.randn(6, 5)):
        out = torch.zeros(6, 5)
        k_bias(a, b, bias, out)
        torch.testing.assert_close(out, a @ b + bias)


def test_matmul_extend_params_unknown_key_is_refused():
    @pypto.frontend.jit
    def bad_ext(a: pypto.Tensor([], F32), b: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
        out[:] = pypto.matmul(a, b, extend_params={"scale": 2.0})

    out = torch.full((2, 2), 3.0)
    with pytest.raises(KernelTraceError) as e:
        bad_ext(torch.ones(2, 2), torch.ones(2, 2), out)
    assert "bad_ext" in str(e.value) and "'scale'" in str(e.value) and "bias_tensor" in str(e.value)
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


@pypto.frontend.jit
def k_methods(a: pypto.Tensor([], F32), idx: pypto.Tensor([], pypto.DT_INT64), out: pypto.Tensor([], F32)):
    out[:] = a.round(decimals=1) + a.trunc() + a.scatter(0, idx, 2.0)


def test_tensor_methods_round_trunc_scatter():
    a = torch.randn(3, 4) * 10
    idx = torch.randint(0, 3, (3, 4))
    out = torch.zeros(3, 4)
    k_methods(a, idx, out)
    torch.testing.assert_close(out, a.round(decimals=1) + a.trunc() + a.scatter(0, idx, 2.0), rtol=0, atol=0)
