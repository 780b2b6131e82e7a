"""Reference idioms inside a kernel body that its MoE dispatch kernel uses: `pypto.Tensor(shape, dtype)` makes a
local, zero-initialised tensor (`info = pypto.Tensor([1, 4], pypto.DT_INT32); info[0, 0] = rank`; outside a trace,
and with shape markers, it stays the parameter annotation), and a scalar read inside one branch of a symbolic `if`."""
from __future__ import annotations

import torch

import pypto


@pypto.frontend.jit
def local_ctor_kernel(x: pypto.Tensor([2, 4], pypto.DT_INT32), out: pypto.Tensor([2, 4], pypto.DT_INT32)):
    pypto.set_vec_tile_shapes(2, 4)
    t = pypto.Tensor([2, 4], pypto.DT_INT32)
    t[0, 1] = x.shape[0] + 3          # a symbolic scalar into one element
    t[1, 2] = 5
    out[:] = x + t


def test_tensor_ctor_in_kernel_is_a_zeroed_local_tensor():
    x = torch.arange(8, dtype=torch.int32).reshape(2, 4)
    out = torch.full_like(x, -1)
    local_ctor_kernel(x, out)
    gold = x.clone()
    gold[0, 1] += 5
    gold[1, 2] += 5
    assert torch.equal(out, gold)


def test_tensor_ctor_outside_a_kernel_is_the_annotation():
    a = pypto.Tensor([2, 4], pypto.DT_INT32)
    assert type(a) is pypto.Tensor and a.shape == (2, 4) and a.dtype == pypto.DT_INT32
    d = pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32)
    assert type(d) is pypto.Tensor and d.shape[1] == 4


@pypto.frontend.jit
def branch_scalar_kernel(x: pypto.Tensor([4, 8], pypto.DT_INT32), idx: pypto.Tensor([4], pypto.DT_INT32),
                         out: pypto.Tensor([4, 8], pypto.DT_INT32)):
    """The reference MoE dispatch's idiom: a scalar that one branch of an `if` on a symbolic value reads from a
    tensor (`off = table[i - 1]`) and the other sets to a constant, used after the `if`."""
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(4):
        if i == 0:
            off = 0
        else:
            off = idx[i - 1]
        out[i:i + 1, :] = x[i:i + 1, :]
        out[i, off] = 100 + off


def test_scalar_read_in_one_branch_survives_the_if():
    x = torch.arange(32, dtype=torch.int32).reshape(4, 8)
    idx = torch.tensor([3, 5, 7, 1], dtype=torch.int32)
    out = torch.full_like(x, -1)
    branch_scalar_kernel(x, idx, out)
    gold = x.clone()
    for i, off in enumerate([0, 3, 5, 7]):
        gold[i, off] = 100 + off
    assert torch.equal(out, gold)
