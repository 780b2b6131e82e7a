"""gather, scatter_update and topk against torch (fp32/fp16/bf16/int32, odd shapes, every dim), their trace-time
errors and their run-time index checks (KernelRuntimeError, outputs untouched)."""
import pytest
import torch

import pypto
from pypto.errors import KernelRuntimeError, KernelTraceError

from _multi import ALL4, check, rand, run_multi

T = pypto.Tensor
SHAPES = [(1,), (7,), (130,), (3, 5), (33, 2), (2, 3, 17)]


def _unique_index(x_shape, i_shape, dim, seed):
    """int64 index of i_shape whose values along `dim` are distinct (in [0, x_shape[dim]))."""
    g = torch.Generator().manual_seed(seed)
    full = i_shape[:dim] + (x_shape[dim],) + i_shape[dim + 1:]
    return torch.rand(full, generator=g).argsort(dim).narrow(dim, 0, i_shape[dim])


def _stable_topk(x, k, dim, largest):
    """Reference with the documented tie rule (lower index first); NaN is the largest value."""
    v, i = torch.sort(x, dim=dim, descending=largest, stable=True)
    return v.narrow(dim, 0, k), i.narrow(dim, 0, k)


@pytest.mark.parametrize("dt", ALL4)
@pytest.mark.parametrize("xs", SHAPES)
def test_gather_scatter_topk(dt, xs):
    rank = len(xs)
    x = rand(xs, dt, seed=1)
    ishape = tuple(max(1, n - 1) for n in xs)                 # shorter than x in every dim (allowed)
    g = torch.Generator().manual_seed(2)
    b = torch.randint(0, 1000, ishape, generator=g, dtype=torch.int32)
    c = _unique_index(xs, ishape, 0, seed=3)                    # distinct targets along dim 0
    cases = []
    for d in range(rank):
        n = xs[d]
        cases += [
            (f"gather{d}", lambda a, b, c, d=d, n=n: pypto.gather(a, d, b % n),
             lambda a, b, c, d=d, n=n: torch.gather(a, d, (b % n).long())),
            (f"scatter_scalar{d}", lambda a, b, c, d=d, n=n: pypto.scatter_update(a, d, b % n, 7),
             lambda a, b, c, d=d, n=n: a.scatter(d, (b % n).long(), 7)),
        ]
        for k in sorted({min(3, n), n}):
            for largest in (True, False):
                cases += [
                    (f"topk_v{d}_{k}_{largest}", lambda a, b, c, d=d, k=k, lg=largest: pypto.topk(a, k, d, lg)[0],
                     lambda a, b, c, d=d, k=k, lg=largest: _stable_topk(a, k, d, lg)[0]),
                    (f"topk_i{d}_{k}_{largest}", lambda a, b, c, d=d, k=k, lg=largest: pypto.topk(a, k, d, lg)[1],
                     lambda a, b, c, d=d, k=k, lg=largest: _stable_topk(a, k, d, lg)[1]),
                ]
    pdt = pypto.vocab.dtypes.from_torch(dt)
    cases.append(("scatter_src", lambda a, b, c: pypto.scatter_update(a, 0, c, pypto.cast(c, pdt) * 2 + 1),
                  lambda a, b, c: a.scatter(0, c, (c.to(dt) * 2 + 1))))
    check(run_multi(cases, x, b, c))


def test_topk_matches_torch_topk_and_nan():
    x = torch.randn(4, 50)                       # no ties: torch.topk itself is the reference
    x[1, 7] = float("nan")
    x[2, 3] = float("nan")
    x[2, 9] = float("nan")

    @pypto.frontend.jit
    def k(x: T, v: T, i: T, vs: T, is_: T):
        v[:], i[:] = pypto.topk(x, 5)
        vv, ii = pypto.topk(x, 4, dim=1, largest=False, sorted=False)
        vs[:] = vv
        is_[:] = ii

    v, i = torch.zeros(4, 5), torch.zeros(4, 5, dtype=torch.int64)
    vs, is_ = torch.zeros(4, 4), torch.zeros(4, 4, dtype=torch.int64)
    k(x, v, i, vs, is_)
    rv, ri = torch.topk(x, 5)
    assert torch.equal(v.nan_to_num(99.0), rv.nan_to_num(99.0))
    rows = [0, 1, 3]                # row 2 holds two NaNs: a tie, whose order torch.topk leaves unspecified
    assert torch.equal(i[rows], ri[rows])
    assert torch.equal(i, _stable_topk(x, 5, 1, True)[1])   # the documented rule: lower index first
    rv, ri = torch.topk(x, 4, largest=False)
    assert torch.equal(vs, rv) and torch.equal(is_, ri)


def test_topk_dynamic_dim_and_k_zero():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 6], pypto.DT_FP32), v: pypto.Tensor([2, 6], pypto.DT_FP32),
          i: pypto.Tensor([2, 6], pypto.DT_INT64)):
        vv, ii = pypto.topk(x, 2, dim=0)
        v[:] = vv
        i[:] = ii
        z, _ = pypto.topk(x, 0, dim=0)
        i[0:0, :] = pypto.cast(z, pypto.DT_INT64)

    for n in (2, 9):
        x = torch.randn(n, 6)
        v, i = torch.zeros(2, 6), torch.zeros(2, 6, dtype=torch.int64)
        k(x, v, i)
        rv, ri = torch.topk(x, 2, dim=0)
        assert torch.equal(v, rv) and torch.equal(i, ri)
    x, v, i = torch.randn(1, 6), torch.full((2, 6), 5.0), torch.zeros(2, 6, dtype=torch.int64)
    with pytest.raises(KernelRuntimeError, match=r"kernel 'k': topk: k \(2\) exceeds the size of dim 0"):
        k(x, v, i)
    assert torch.equal(v, torch.full((2, 6), 5.0))


def test_scatter_duplicates_last_wins_and_dynamic():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32), idx: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_INT64),
          src: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32)):
        out[:] = pypto.scatter_update(x, 0, idx, src)

    for n, m in ((3, 5), (6, 2)):
        x, src = torch.randn(n, 4), torch.randn(m, 4)
        idx = torch.randint(0, n, (m, 4))
        out = torch.zeros(n, 4)
        k(x, idx, src, out)
        ref = x.clone()
        for r in range(m):               # row-major order of the index: the last write wins
            for col in range(4):
                ref[idx[r, col], col] = src[r, col]
        assert torch.equal(out, ref)


def test_gather_index_longer_along_dim():
    x = torch.randn(3, 4)
    idx = torch.randint(0, 4, (2, 9))

    @pypto.frontend.jit
    def k(x: T, idx: T, out: T):
        out[:] = pypto.gather(x, 1, idx)

    out = torch.zeros(2, 9)
    k(x, idx, out)
    assert torch.equal(out, torch.gather(x, 1, idx))


@pytest.mark.parametrize("bad", [-1, 4])
def test_index_out_of_range_is_a_runtime_error(bad):
    @pypto.frontend.jit
    def k(x: T, idx: T, g: T, s: T):
        g[:] = pypto.gather(x, 1, idx)
        s[:] = pypto.scatter_update(x, 1, idx, 0.0)

    x = torch.randn(2, 4)
    idx = torch.tensor([[0, 1], [2, bad]])
    g, s = torch.full((2, 2), 3.0), torch.full((2, 4), 3.0)
    with pytest.raises(KernelRuntimeError) as ei:
        k(x, idx, g, s)
    msg = str(ei.value)
    assert "kernel 'k'" in msg and "gather" in msg and "index" in msg and "0 <= index < 4" in msg
    assert torch.equal(g, torch.full((2, 2), 3.0)) and torch.equal(s, torch.full((2, 4), 3.0))


def _trace_err(body, *args):
    k = pypto.frontend.jit(body)
    outs = [a.clone() for a in args]
    with pytest.raises(KernelTraceError) as ei:
        k(*outs)
    for a, o in zip(args, outs):
        assert torch.equal(a, o)              # nothing written
    return str(ei.value)


def test_trace_errors():
    def k_float_index(x: T, i: T, o: T):
        o[:] = pypto.gather(x, 0, i)

    msg = _trace_err(k_float_index, torch.randn(3, 4), torch.zeros(3, 4), torch.zeros(3, 4))
    assert "k_float_index" in msg and "gather" in msg and "index must be an integer tensor" in msg and "got float32" in msg

    def k_rank(x: T, i: T, o: T):
        o[:] = pypto.gather(x, 0, i)

    msg = _trace_err(k_rank, torch.randn(3, 4), torch.zeros(3, dtype=torch.int64), torch.zeros(3, 4))
    assert "k_rank" in msg and "rank of the input (2)" in msg and "[3]" in msg

    def k_big(x: T, i: T, o: T):
        o[:] = pypto.gather(x, 0, i)

    msg = _trace_err(k_big, torch.randn(3, 4), torch.zeros(2, 5, dtype=torch.int64), torch.zeros(2, 5))
    assert "k_big" in msg and "index shape [2, 5] exceeds input shape [3, 4] in dim 1 (5 > 4)" in msg

    def k_src_dtype(x: T, i: T, o: T):
        o[:] = pypto.scatter_update(x, 0, i, pypto.cast(x, pypto.DT_FP16))

    msg = _trace_err(k_src_dtype, torch.randn(3, 4), torch.zeros(3, 4, dtype=torch.int64), torch.zeros(3, 4))
    assert "k_src_dtype" in msg and "scatter_update" in msg and "src dtype must equal the input dtype float32, got float16" in msg

    def k_topk_k(x: T, o: T):
        o[:] = pypto.topk(x, 5, dim=0)[0]

    msg = _trace_err(k_topk_k, torch.randn(3, 4), torch.zeros(5, 4))
    assert "k_topk_k" in msg and "topk" in msg and "k (5) exceeds the size of dim 0 (3)" in msg

    def k_topk_dim(x: T, o: T):
        o[:] = pypto.topk(x, 1, dim=2)[0]

    msg = _trace_err(k_topk_dim, torch.randn(3, 4), torch.zeros(3, 1))
    assert "k_topk_dim" in msg and "dim 2 is out of range for a tensor of rank 2" in msg
