"""`pypto.full(..., valid_shape=)` and the reference's scalar methods `sym.min(x)` / `sym.max(x)` (ffn_module.py)."""
import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

F32 = pypto.DT_FP32


@pypto.frontend.jit
def relu_tiles(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), out: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
    n = x.shape[0]
    for i in pypto.loop(0, pypto.ceildiv(n, 4), 1):
        rows = (n - i * 4).min(4)  # the reference's spelling of pypto.min(n - i * 4, 4)
        tile = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[rows, 8])
        zero = pypto.full([4, 8], 0.0, F32, valid_shape=[rows, 8])
        out[i * 4:i * 4 + rows, :] = pypto.maximum(tile, zero)


@pypto.frontend.jit
def whole(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), out: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
    ones = pypto.full(x.shape, 1.0, F32, valid_shape=x.shape)  # a symbolic shape: the valid region is the tensor
    out[:] = x + ones * (x.shape[0].max(3))


def test_full_with_valid_shape_and_sym_min_match_torch():
    for n in (8, 10, 3):
        x = torch.randn(n, 8)
        out = torch.zeros(n, 8)
        relu_tiles(x, out)
        torch.testing.assert_close(out, torch.relu(x))


def test_full_with_a_symbolic_shape_and_sym_max():
    for n in (2, 5):
        x = torch.randn(n, 8)
        out = torch.zeros(n, 8)
        whole(x, out)
        torch.testing.assert_close(out, x + max(n, 3))


def test_full_valid_shape_rank_mismatch_is_refused():
    @pypto.frontend.jit
    def bad_full(x: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 8], F32)):
        out[:] = x + pypto.full([4, 8], 1.0, F32, valid_shape=[4])

    out = torch.full((4, 8), 2.0)
    with pytest.raises(KernelTraceError) as e:
        bad_full(torch.ones(4, 8), out)
    assert "bad_full" in str(e.value) and "valid_shape" in str(e.value) and "[4]" in str(e.value)
    torch.testing.assert_close(out, torch.full((4, 8), 2.0))
