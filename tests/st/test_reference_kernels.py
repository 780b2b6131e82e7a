"""The five reference kernels of the language brief, through the public API, against torch."""
import pytest
import torch

import pypto


@pypto.frontend.jit
def scaled_add(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               b: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), alpha=1.0, tile=32):
    pypto.set_vec_tile_shapes(tile, tile)
    out[:] = a * alpha + b


@pytest.mark.parametrize("shape", [(64, 64), (70, 45), (1, 3)])
@pytest.mark.parametrize("alpha,tile", [(1.0, 32), (0.37, 8), (-2.5, 64)])
def test_scaled_add(shape, alpha, tile):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    out = torch.zeros(shape)
    scaled_add(a, b, out, alpha=alpha, tile=tile)
    assert torch.equal(out, a * alpha + b)


@pypto.frontend.jit
def rows_exp(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
             out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 15) // 16):
        v = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[pypto.min(16, n - i * 16), 64])
        pypto.assemble(pypto.exp(v), [i * 16, 0], out)


def test_rows_exp_one_kernel_for_all_sizes():
    before = rows_exp.cache_info()["specializations"]
    for n in (16, 40, 1):
        x = torch.randn(n, 64)
        out = torch.full((n + 3, 64), -7.0)[:n].contiguous()
        rows_exp(x, out)
        torch.testing.assert_close(out, torch.exp(x), rtol=2e-6, atol=0)
    assert rows_exp.cache_info()["specializations"] - before == 1


def test_rows_exp_tail_never_touches_outside():
    # a 40-row tensor viewed as 16-row tiles: the tail tile has 8 valid rows; neighbours stay untouched
    big_x = torch.randn(48, 64)
    big_out = torch.full((48, 64), 123.0)
    x, out = big_x[:40], big_out[:40]
    rows_exp(x, out)
    torch.testing.assert_close(out, torch.exp(x), rtol=2e-6, atol=0)
    assert torch.all(big_out[40:] == 123.0)


@pypto.frontend.jit
def row_softmax(x: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP16),
                out: pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP16), rows=8):
    n = x.shape[0]
    for i in pypto.loop(0, (n + rows - 1) // rows):
        r0 = i * rows
        r1 = pypto.min(r0 + rows, n)
        t = pypto.cast(x[r0:r1, :], pypto.DT_FP32)
        m = pypto.amax(t, -1, keepdim=True)
        e = pypto.exp(t - m)
        s = pypto.sum(e, -1, keepdim=True)
        out[r0:r1, :] = pypto.cast(e / s, pypto.DT_FP16)


@pytest.mark.parametrize("n,d,rows", [(5, 33, 8), (8, 64, 8), (21, 17, 4), (1, 1, 8)])
def test_row_softmax(n, d, rows):
    x = (torch.randn(n, d) * 3).half()
    out = torch.zeros(n, d, dtype=torch.float16)
    row_softmax(x, out, rows=rows)
    ref = torch.softmax(x.float(), -1).half()
    torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)


@pypto.frontend.jit
def mm_bias(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16),
            b: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16),
            bias: pypto.Tensor([1, pypto.STATIC], pypto.DT_FP32),
            out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), transpose_b=False):
    out[:] = pypto.matmul(a, b, pypto.DT_FP32, b_trans=transpose_b) + bias


@pytest.mark.parametrize("m,k,n", [(37, 50, 29), (64, 128, 64), (1, 1, 1), (3, 300, 5)])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_mm_bias(m, k, n, transpose_b):
    a = torch.randn(m, k).bfloat16()
    b = torch.randn(k, n).bfloat16()
    bias = torch.randn(1, n)
    out = torch.zeros(m, n)
    mm_bias(a, b.t().contiguous() if transpose_b else b, bias, out, transpose_b=transpose_b)
    ref = a.double() @ b.double() + bias.double()
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)


def _mix(t, w):
    """A plain Python helper: inlined into the kernel."""
    return pypto.maximum(t * w, t + 1.0)


@pypto.frontend.jit
def flow_mix(x: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32),
             out: pypto.Tensor([pypto.DYNAMIC, 32], pypto.DT_FP32), steps=2):
    n = x.shape[0]
    for r in pypto.loop(n):
        row = x[r:r + 1, :]
        for s in range(steps):          # Python loop over a constant: unrolled at trace time
            row = _mix(row, 0.5 + s)
        out[r:r + 1, :] = row


@pytest.mark.parametrize("n,steps", [(1, 2), (13, 2), (7, 0), (5, 4)])
def test_flow_mix(n, steps):
    x = torch.randn(n, 32)
    out = torch.zeros(n, 32)
    flow_mix(x, out, steps=steps)
    ref = x
    for s in range(steps):
        ref = torch.maximum(ref * (0.5 + s), ref + 1.0)
    assert torch.equal(out, ref)
