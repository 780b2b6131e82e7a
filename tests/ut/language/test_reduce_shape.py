"""Reductions, views/slices/writes, shape ops, local tensors, matmul, loops — against torch."""
import pytest
import torch

import pypto

T = pypto.Tensor


def _rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-50, 51, shape, generator=g, dtype=dtype)


def _reduce_kernel(opname, dim, keepdim):
    @pypto.frontend.jit
    def k(x: T, out: T):
        out[:] = getattr(pypto, opname)(x, dim, keepdim=keepdim)
    return k


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin_exact(dtype, dim, keepdim):
    x = _rand((5, 7, 9), dtype, seed=1)
    for name, ref in (("amax", torch.amax), ("amin", torch.amin)):
        r = ref(x, dim, keepdim=keepdim)
        out = torch.zeros(r.shape, dtype=dtype)
        _reduce_kernel(name, dim, keepdim)(x, out)
        assert torch.equal(out, r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("dim", [0, -1, 1])
def test_sum(dtype, dim):
    x = _rand((6, 33, 5), dtype, seed=2)
    r = torch.sum(x.double(), dim, keepdim=True)
    out = torch.zeros(r.shape, dtype=dtype)
    _reduce_kernel("sum", dim, True)(x, out)
    if dtype == torch.int32:
        assert torch.equal(out, r.to(torch.int32))
    else:
        tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}[dtype]
        torch.testing.assert_close(out.double(), r.to(dtype).double(), rtol=tol, atol=tol)


def test_sum_all_and_mean_prod():
    x = _rand((4, 6), torch.float32, seed=3)

    @pypto.frontend.jit
    def k(x: T, s: T, m: T, p: T):
        s[:] = pypto.sum(x, [0, 1], keepdim=True)
        m[:] = pypto.mean(x, 1)
        p[:] = pypto.prod(x, 0)

    s, m, p = torch.zeros(1, 1), torch.zeros(4), torch.zeros(6)
    k(x, s, m, p)
    torch.testing.assert_close(s, x.sum().reshape(1, 1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m, x.mean(1), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(p, x.prod(0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_softmax_rms_norm_cumsum(dtype):
    x = _rand((5, 19), dtype, seed=4)
    w = _rand((19,), dtype, seed=5)

    @pypto.frontend.jit
    def k(x: T, w: T, sm: T, rn: T, cs: T):
        sm[:] = pypto.softmax(x, -1)
        rn[:] = pypto.rms_norm(x, w, eps=1e-5)
        cs[:] = pypto.cumsum(x, 1)

    sm, rn, cs = (torch.zeros(5, 19, dtype=dtype) for _ in range(3))
    k(x, w, sm, rn, cs)
    tol = 1e-5 if dtype == torch.float32 else 2e-3
    torch.testing.assert_close(sm.float(), torch.softmax(x.float(), -1), rtol=tol, atol=tol)
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()).to(dtype)
    torch.testing.assert_close(rn.float(), ref.float(), rtol=tol * 4, atol=tol * 4)
    torch.testing.assert_close(cs.float(), torch.cumsum(x.float(), 1).to(dtype).float(), rtol=tol * 4, atol=tol * 4)


def test_slices_views_and_writes():
    x = _rand((10, 12), torch.float32, seed=6)

    @pypto.frontend.jit
    def k(x: T, out: T):
        out[:] = 0.0
        out[0:3, :] = x[7:10, :]                 # slice read + slice write
        out[3, 2:5] = x[0, 0:3] * 2.0            # int index drops a dim
        out[4:6, -2:] = x[..., -2:][0:2, :].transpose(0, 1)[0:2, 0:2]  # negative bounds, ellipsis
        t = pypto.view(x, [2, 4], [5, 6])
        pypto.assemble(t + 1.0, [6, 0], out)
        out[8:10, 0:12:3] = x[0:2, 1::3]         # steps
        out[9, :] += 100.0                       # in-place update through a view

    out = torch.zeros(10, 12)
    k(x, out)
    ref = torch.zeros(10, 12)
    ref[0:3, :] = x[7:10, :]
    ref[3, 2:5] = x[0, 0:3] * 2.0
    ref[4:6, -2:] = x[..., -2:][0:2, :].transpose(0, 1)[0:2, 0:2]
    ref[6:8, 0:4] = x[5:7, 6:10] + 1.0
    ref[8:10, 0:12:3] = x[0:2, 1::3]
    ref[9, :] += 100.0
    assert torch.equal(out, ref)


def test_reshape_transpose_unsqueeze_expand_concat_clone():
    x = _rand((4, 6), torch.float32, seed=7)
    y = _rand((4, 2), torch.float32, seed=8)

    @pypto.frontend.jit
    def k(x: T, y: T, r: T, t: T, u: T, e: T, c: T, cl: T):
        r[:] = pypto.reshape(x, [3, -1])
        t[:] = pypto.transpose(x, 0, 1)
        u[:] = pypto.unsqueeze(x[:, 0], 1) + pypto.unsqueeze(x[0, :], 0)
        e[:] = pypto.expand_clone(x[0:1, :], [3, 6])
        c[:] = pypto.concat([x, y, x[:, 0:1]], 1)
        cl[:] = pypto.reshape(pypto.transpose(x, 0, 1), [4, 6]).clone()

    outs = [torch.zeros(s) for s in ((3, 8), (6, 4), (4, 6), (3, 6), (4, 9), (4, 6))]
    k(x, y, *outs)
    refs = [x.reshape(3, -1), x.t(), x[:, 0:1] + x[0:1, :], x[0:1].expand(3, 6),
            torch.cat([x, y, x[:, 0:1]], 1), x.t().reshape(4, 6)]
    for o, r in zip(outs, refs):
        assert torch.equal(o, r)


def test_full_and_local_tensor():
    @pypto.frontend.jit
    def k(out: T, acc_out: T):
        out[:] = pypto.full([3, 5], 2.5, pypto.DT_FP32) * 2
        acc = pypto.tensor([2, 5], pypto.DT_FP32)
        for i in pypto.loop(3):
            acc[:] = acc + out[i:i + 1, :] * (i + 1)
        acc_out[:] = acc

    out, acc = torch.zeros(3, 5), torch.zeros(2, 5)
    k(out, acc)
    assert torch.equal(out, torch.full((3, 5), 5.0))
    assert torch.equal(acc, torch.full((2, 5), 30.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
def test_matmul_operator_and_transposes(dtype):
    a, b = _rand((9, 13), dtype, seed=9), _rand((13, 7), dtype, seed=10)
    out_dt = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    @pypto.frontend.jit
    def k(a: T, b: T, o1: T, o2: T):
        o1[:] = a @ b
        o2[:] = pypto.matmul(b, a, out_dtype=o2.dtype, a_trans=True, b_trans=True)

    o1, o2 = torch.zeros(9, 7, dtype=out_dt), torch.zeros(7, 9, dtype=out_dt)
    k(a, b, o1, o2)
    ref = a.double() @ b.double()
    if dtype == torch.int32:
        assert torch.equal(o1, ref.to(torch.int32))
        assert torch.equal(o2, ref.to(torch.int32).t())
    else:
        torch.testing.assert_close(o1.double(), ref, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(o2.double(), ref.t(), rtol=1e-5, atol=1e-4)


def test_batched_matmul_and_cube_tiles():
    a, b = _rand((3, 20, 33), torch.float32, seed=11), _rand((33, 17), torch.float32, seed=12)

    @pypto.frontend.jit
    def k(a: T, b: T, o: T):
        pypto.set_cube_tile_shapes([16, 16], [16, 16], [16, 16])  # fp32: 16-element aligned (reference rule)
        o[:] = pypto.matmul(a, b, pypto.DT_FP32)

    o = torch.zeros(3, 20, 17)
    k(a, b, o)
    torch.testing.assert_close(o, a @ b, rtol=1e-5, atol=1e-5)


def test_loop_forms_and_symbolic_scalars():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32)):
        n = x.shape[0]
        for i in pypto.loop(n - 1, -1, -1, name="rev"):
            out[n - 1 - i, :] = x[i, :] + i
        for i in pypto.loop(0, n, 2, parallel=True):
            out[i, :] = out[i, :] * 2.0 + pypto.max(i, 1)

    for n in (1, 6, 7):
        x = torch.randn(n, 4)
        out = torch.zeros(n, 4)
        k(x, out)
        ref = torch.flip(x + torch.arange(n).reshape(n, 1), [0])
        for i in range(0, n, 2):
            ref[i] = ref[i] * 2.0 + max(i, 1)
        assert torch.equal(out, ref)


def test_parallel_loop_threads():
    @pypto.frontend.jit(runtime_options={"device_sched_parallelism": 4})
    def k(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
        n = x.shape[0]
        for i in pypto.loop(0, (n + 7) // 8, parallel=True):
            v = pypto.view(x, [8, 64], [i * 8, 0], valid_shape=[pypto.min(8, n - i * 8), 64])
            pypto.assemble(pypto.sqrt(pypto.abs(v)) * 3.0, [i * 8, 0], out)

    x = torch.randn(101, 64)
    out = torch.zeros(101, 64)
    k(x, out)
    torch.testing.assert_close(out, x.abs().sqrt() * 3.0, rtol=1e-6, atol=0)


def test_arange_and_one_hot():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32), r1: T, r2: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT64),
          oh: pypto.Tensor([pypto.DYNAMIC, 5], pypto.DT_INT64)):
        r1[:] = pypto.arange(0.5, 3.0, 0.25)
        r2[:] = pypto.arange(x.shape[0] - 1, -1, -1)
        oh[:] = pypto.one_hot(x, 5)

    x = torch.tensor([0, 4, 2, 2, 1, 3, 0], dtype=torch.int32)
    r1, r2, oh = torch.zeros(10), torch.zeros(7, dtype=torch.int64), torch.zeros(7, 5, dtype=torch.int64)
    k(x, r1, r2, oh)
    assert torch.equal(r1, torch.arange(0.5, 3.0, 0.25))
    assert torch.equal(r2, torch.arange(6, -1, -1))
    assert torch.equal(oh, torch.nn.functional.one_hot(x.long(), 5))
