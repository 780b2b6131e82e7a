"""Views, valid_shape, reshape (inplace=True, valid_shape=), expand_clone, unsqueeze/squeeze, clone, transpose,
permute, concat, local tensors (pypto.tensor / full / zeros), arange, one_hot — against torch for
fp32/fp16/bf16/int32 with DYNAMIC row counts 1, 7, 33, 130 (tail tiles), plus their errors."""
import pytest
import torch

import pypto
from pypto.errors import KernelRuntimeError, KernelTraceError

from _multi import ALL4, rand

D = pypto.DYNAMIC
ROWS = [1, 7, 33, 130]


def _kernel(pdt):
    def X(*dims):
        return pypto.Tensor(list(dims), pdt)

    @pypto.frontend.jit
    def k(x: X(D, 8), tiled: X(D, 8), flat: X(D), e: X(3, 8), u: X(D, 8), sq: X(D), t: X(8, D), p: X(4, D, 2),
          c: X(D, 11), loc: X(3, 8), cl: X(2, 8), aliased: X(D, 8), rowmax: X(D, 1)):
        n = x.shape[0]
        # tiles of 4 rows; the last one holds n % 4 valid rows: valid_shape on view and on reshape
        for i in pypto.loop(0, (n + 3) // 4):
            m = pypto.min(4, n - i * 4)
            v = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[m, 8])
            r = pypto.reshape(v, [4, 2, 4], valid_shape=[m, 2, 4])
            back = pypto.reshape(r * 2, [4, 8], valid_shape=[m, 8])
            pypto.assemble(back, [i * 4, 0], tiled)
            pypto.assemble(pypto.amax(v, 1, keepdim=True), [i * 4, 0], rowmax)   # reduces the valid rows only
        flat[:] = pypto.reshape(x, [-1], inplace=True) + 1
        e[:] = pypto.expand_clone(x[0:1, :], [3, 8])
        u[:] = pypto.unsqueeze(x[:, 0], 1) + pypto.unsqueeze(x[0, :], 0)
        sq[:] = pypto.squeeze(x[:, 2:3], 1)
        t[:] = pypto.transpose(x, 0, 1)
        p[:] = pypto.permute(pypto.reshape(x, [n, 2, 4]), [2, 0, 1])
        c[:] = pypto.concat([x, x[:, 0:3]], 1)
        acc = pypto.tensor([3, 8], pdt)                     # zero-initialised local tensor
        acc[0:1, :] = x[0:1, :]
        acc[2, :] = pypto.full([8], 3, pdt)
        loc[:] = acc
        ones = pypto.full([2, 8], 1, pdt)
        keep = pypto.clone(ones)
        ones[:] = pypto.zeros([2, 8], pdt)                 # clone is a copy: keep still holds ones
        cl[:] = keep + ones
        aliased[:] = x
        a = pypto.reshape(aliased, [n * 8], inplace=True)  # a view: writing it writes `aliased`
        a[0:3] = pypto.full([3], 5, pdt)

    return k


@pytest.mark.parametrize("dt", ALL4)
def test_shape_ops(dt):
    k = _kernel(pypto.vocab.dtypes.from_torch(dt))
    for n in ROWS:
        x = rand((n, 8), dt, seed=n)
        outs = dict(tiled=(n, 8), flat=(n * 8,), e=(3, 8), u=(n, 8), sq=(n,), t=(8, n), p=(4, n, 2), c=(n, 11),
                    loc=(3, 8), cl=(2, 8), aliased=(n, 8), rowmax=(n, 1))
        got = {name: torch.full(s, 99, dtype=dt) for name, s in outs.items()}
        k(x, *got.values())
        acc = torch.zeros(3, 8, dtype=dt)
        acc[0] = x[0]
        acc[2] = 3
        aliased = x.clone().reshape(-1)
        aliased[0:3] = 5
        want = dict(tiled=x * 2, flat=x.reshape(-1) + 1, e=x[0:1].expand(3, 8), u=x[:, 0:1] + x[0:1, :],
                    sq=x[:, 2], t=x.t(), p=x.reshape(n, 2, 4).permute(2, 0, 1), c=torch.cat([x, x[:, 0:3]], 1),
                    loc=acc, cl=torch.ones(2, 8, dtype=dt), aliased=aliased.reshape(n, 8),
                    rowmax=x.amax(1, keepdim=True))
        for name in outs:
            assert torch.equal(got[name], want[name]), (n, name, got[name], want[name])


def test_reshape_copies_strided_input_and_inplace_refuses():
    @pypto.frontend.jit
    def k(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = pypto.reshape(pypto.transpose(x, 0, 1), [15])

    x = rand((3, 5), torch.float32, seed=1)
    out = torch.zeros(15)
    k(x, out)
    assert torch.equal(out, x.t().reshape(15))

    @pypto.frontend.jit
    def k_inplace(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = pypto.reshape(pypto.transpose(x, 0, 1), [15], inplace=True)

    out = torch.full((15,), 4.0)
    with pytest.raises(KernelTraceError) as ei:
        k_inplace(x, out)
    msg = str(ei.value)
    assert "k_inplace" in msg and "reshape" in msg and "inplace=True needs a contiguous input" in msg
    assert torch.equal(out, torch.full((15,), 4.0))


def test_reshape_errors():
    @pypto.frontend.jit
    def k_count(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = pypto.reshape(x, [4, 4])

    x, out = torch.zeros(3, 5), torch.full((4, 4), 2.0)
    with pytest.raises(KernelTraceError, match=r"k_count': reshape: cannot reshape a tensor of shape \[3, 5\] "
                                               r"into \[4, 4\] \(element count differs\)"):
        k_count(x, out)
    assert torch.equal(out, torch.full((4, 4), 2.0))

    @pypto.frontend.jit
    def k_dyn(x: pypto.Tensor([D, 4], pypto.DT_FP32), out: pypto.Tensor([2, 6], pypto.DT_FP32)):
        out[:] = pypto.reshape(x, [2, 6], inplace=True)

    out = torch.full((2, 6), 2.0)
    k_dyn(torch.arange(12.0).reshape(3, 4), out)
    assert torch.equal(out, torch.arange(12.0).reshape(2, 6))
    out = torch.full((2, 6), 2.0)
    with pytest.raises(KernelRuntimeError, match=r"k_dyn': reshape: cannot reshape a tensor of shape \[.*, 4\] "
                                                 r"into \[2, 6\]"):
        k_dyn(torch.zeros(2, 4), out)
    assert torch.equal(out, torch.full((2, 6), 2.0))


def test_view_valid_shape_errors():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([D, 4], pypto.DT_FP32), out: pypto.Tensor([D, 4], pypto.DT_FP32)):
        n = x.shape[0]
        v = pypto.view(x, [2, 4], [0, 0], valid_shape=[n, 4])
        out[0:2, :] = v

    x, out = torch.zeros(3, 4), torch.full((3, 4), 1.0)
    with pytest.raises(KernelRuntimeError, match=r"kernel 'k': view: valid_shape .* of dim 0 exceeds the tile shape 2"):
        k(x, out)
    assert torch.equal(out, torch.full((3, 4), 1.0))

    @pypto.frontend.jit
    def k_rank(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = pypto.view(x, [2, 4], [0, 0], valid_shape=[2])

    with pytest.raises(KernelTraceError, match=r"k_rank': view: valid_shape must have 2 entries, got \[2\]"):
        k_rank(torch.zeros(3, 4), torch.zeros(2, 4))


@pytest.mark.parametrize("dt", [torch.int32, torch.int64, torch.float32])
def test_arange_one_hot(dt):
    pdt = pypto.vocab.dtypes.from_torch(dt)

    @pypto.frontend.jit
    def k(x: pypto.Tensor([D], pypto.DT_INT32), r: pypto.Tensor([D], pdt), oh: pypto.Tensor([D, 7], pypto.DT_INT64)):
        r[:] = pypto.arange(3, 3 + x.shape[0], dtype=pdt)
        oh[:] = pypto.one_hot(x, 7)

    for n in (1, 7, 33):
        x = torch.randint(0, 7, (n,), dtype=torch.int32)
        r, oh = torch.zeros(n, dtype=dt), torch.zeros(n, 7, dtype=torch.int64)
        k(x, r, oh)
        assert torch.equal(r, torch.arange(3, 3 + n, dtype=dt))
        assert torch.equal(oh, torch.nn.functional.one_hot(x.long(), 7))
