"""out[...] = tile whose valid_shape is smaller than the target writes only the valid region (reference view example)."""
import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

F32 = pypto.DT_FP32


@pypto.frontend.jit
def k_view_valid(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32), shape: list, offsets: list, valid_shape: list):
    pypto.set_vec_tile_shapes(*([8] * len(x.shape)))
    out[:] = pypto.view(x, shape, offsets, valid_shape=valid_shape)


@pypto.frontend.jit
def k_view_valid_expr(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    t = pypto.view(x, [4, 8], [1, 0], valid_shape=[3, 5])
    out[:] = pypto.exp(t) * 2.0 + 1.0


def _ref_write(out, src):
    want = out.clone()
    want[tuple(slice(0, d) for d in src.shape)] = src
    return want


def test_reference_example_writes_the_valid_rows_and_leaves_the_rest():
    x = torch.tensor([[1, 1, 2, 2, 3, 3, 4, 4], [1, 1, 2, 2, 3, 3, 4, 4], [1, 1, 2, 2, 5, 5, 6, 6],
                      [1, 1, 2, 2, 5, 5, 6, 6]], dtype=torch.float32)
    out = torch.zeros(4, 4)
    k_view_valid(x, out, [4, 4], [2, 4], [2, 4])
    torch.testing.assert_close(out, _ref_write(torch.zeros(4, 4), x[2:4, 4:8]), rtol=0, atol=0)


@pytest.mark.parametrize("offsets,valid", [([0, 3], [5, 2]), ([2, 1], [1, 7]), ([1, 0], [6, 8])])
def test_valid_region_on_both_dims_keeps_the_prefilled_rest(offsets, valid):
    x = torch.randn(7, 9)
    out = torch.full((6, 8), -3.0)
    k_view_valid(x, out, [6, 8], offsets, valid)
    src = x[offsets[0]:offsets[0] + valid[0], offsets[1]:offsets[1] + valid[1]]
    torch.testing.assert_close(out, _ref_write(torch.full((6, 8), -3.0), src), rtol=0, atol=0)


def test_an_expression_of_a_valid_tile_writes_its_valid_region():
    x = torch.randn(5, 8)
    out = torch.full((4, 8), 9.0)
    k_view_valid_expr(x, out)
    src = torch.exp(x[1:4, 0:5]) * 2.0 + 1.0
    torch.testing.assert_close(out, _ref_write(torch.full((4, 8), 9.0), src), rtol=1e-6, atol=1e-6)


def test_a_plain_smaller_slice_is_still_a_shape_mismatch_and_outputs_stay():
    @pypto.frontend.jit
    def short_write(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
        out[:] = x[0:2, :]                 # a [2, 4] slice is a whole [2, 4] tile, not a [4, 4] tile

    out = torch.full((4, 4), 5.0)
    with pytest.raises(KernelTraceError) as e:
        short_write(torch.ones(4, 4), out)
    msg = str(e.value)
    assert "short_write" in msg and "shape mismatch" in msg and "[2, 4]" in msg and "[4, 4]" in msg, msg
    torch.testing.assert_close(out, torch.full((4, 4), 5.0), rtol=0, atol=0)
