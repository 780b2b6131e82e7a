"""Method forms of the structural / index ops (`x.argmax()`, `x.tril_()`, `x.index_add_(...)`) — rows of the
method table that resolve by name to the functions in struct_ops.py / indexing.py — against torch."""
import torch

import pypto

T = pypto.Tensor
I32 = pypto.Tensor([pypto.STATIC], pypto.DT_INT32)


def _rand(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def test_reduction_and_triangle_methods():
    @pypto.frontend.jit
    def m(x: T, amax_: T, amin_: T, v: T, cp: T, lo: T, hi: T):
        amax_[:] = x.argmax(-1)
        amin_[:] = x.argmin(0, keepdim=True)
        v[:] = x.var(-1)
        cp[:] = x.cumprod(1)
        lo[:] = x.tril(1)
        hi[:] = x.triu(-1)

    x = _rand((4, 6), 1)
    outs = [torch.zeros(4, dtype=torch.int32), torch.zeros(1, 6, dtype=torch.int32), torch.zeros(4),
            torch.zeros(4, 6), torch.zeros(4, 6), torch.zeros(4, 6)]
    m(x, *outs)
    assert torch.equal(outs[0], x.argmax(-1).int())
    assert torch.equal(outs[1], x.argmin(0, keepdim=True).int())
    torch.testing.assert_close(outs[2], x.var(-1))
    torch.testing.assert_close(outs[3], x.cumprod(1))
    assert torch.equal(outs[4], x.tril(1)) and torch.equal(outs[5], x.triu(-1))


def test_in_place_triangle_methods_write_the_tensor_they_are_called_on():
    @pypto.frontend.jit
    def m(x: T, out: T):
        t = pypto.tensor([5, 5], pypto.DT_FP32)
        t[:] = x
        t.tril_()
        u = pypto.tensor([5, 5], pypto.DT_FP32)
        u[:] = x * 2.0
        u.triu_(1)
        out[:] = t + u

    x, out = _rand((5, 5), 2), torch.zeros(5, 5)
    m(x, out)
    assert torch.equal(out, torch.tril(x) + torch.triu(x * 2.0, 1))


def test_index_methods_equal_torch():
    @pypto.frontend.jit
    def m(x: T, idx: I32, src: T, a: T, b: T, c: T):
        a[:] = x.index_add(0, idx, src, alpha=2)
        t = pypto.tensor([3, 4], pypto.DT_FP32)
        t[:] = x
        t.index_add_(0, idx, src)
        b[:] = t
        u = pypto.tensor([3, 4], pypto.DT_FP32)
        u[:] = x
        u.axpy_(src[0:3, :], 0.5)
        c[:] = u

    x, src = _rand((3, 4), 3), _rand((3, 4), 4)
    idx = torch.tensor([2, 0, 2], dtype=torch.int32)
    a, b, c = torch.zeros(3, 4), torch.zeros(3, 4), torch.zeros(3, 4)
    m(x, idx, src, a, b, c)
    torch.testing.assert_close(a, x.index_add(0, idx.long(), src, alpha=2))
    torch.testing.assert_close(b, x.index_add(0, idx.long(), src))
    torch.testing.assert_close(c, x + 0.5 * src)
