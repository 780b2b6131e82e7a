"""Indexing and index-driven update ops against torch: index_select, index_add / index_add_ (and the _ub
aliases), index_put_, scatter_, scatter(reduce=) and out-of-place scatter, scatter_update, gather, topk,
atomic_add, axpy_ (fp32/fp16/bf16/int32, odd shapes, every dim). In-place ops must write exactly the indexed
places (the rest keeps its values); an index out of range fails the kernel at run time naming the kernel and
the op, with every output untouched; trace-time errors name the kernel, the op, expected and got."""
import pytest
import torch

import pypto
from pypto.errors import KernelRuntimeError, KernelTraceError

from _multi import ALL4, check, rand, run_multi

T = pypto.Tensor
F32, I32, I64 = pypto.DT_FP32, pypto.DT_INT32, pypto.DT_INT64
DYN = pypto.DYNAMIC


def _data(shape, td, seed=0):
    g = torch.Generator().manual_seed(seed)
    if td.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(td)
    return torch.randint(-50, 50, shape, generator=g, dtype=td)


def _fails(exc, kernel, args, *needles):
    """kernel(*args) raises exc naming every needle; every argument is untouched."""
    before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    with pytest.raises(exc) as ei:
        kernel(*args)
    for n in needles:
        assert n in str(ei.value), (n, str(ei.value))
    for a, b in zip(args, before):
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


def _run_fails(kernel, args, *needles):
    _fails(KernelRuntimeError, kernel, args, *needles)


def _trace_fails(kernel, args, *needles):
    _fails(KernelTraceError, kernel, args, *needles)


# ---- index_select ---------------------------------------------------------------------------------------------
@pypto.frontend.jit
def k_isel(x: T([]), i1: T([]), i2: T([]), o0: T([]), o1: T([]), o2: T([])):
    o0[:] = pypto.index_select(x, 0, i1)
    o1[:] = pypto.index_select(x, -1, i1)
    o2[:] = pypto.index_select(x, 1, i2)          # a 2-D index (the reference's extension)


@pytest.mark.parametrize("td", [torch.float32, torch.int32, torch.float16])
@pytest.mark.parametrize("itd", [torch.int32, torch.int64])
def test_index_select_matches_torch(td, itd):
    x = _data((5, 6, 6), td, seed=1)
    i1 = torch.tensor([4, 0, 4, 2], dtype=itd)
    i2 = torch.tensor([[1, 5, 5], [0, 2, 3]], dtype=itd)
    want = [torch.index_select(x, 0, i1), torch.index_select(x, -1, i1),
            torch.index_select(x, 1, i2.flatten()).reshape(5, 2, 3, 6)]
    outs = [torch.full(w.shape, 9, dtype=td) for w in want]
    k_isel(x, i1, i2, *outs)
    for got, w in zip(outs, want):
        assert torch.equal(got, w)


def test_index_select_dynamic_and_out_of_range():
    @pypto.frontend.jit
    def k(x: T([DYN, 4], F32), idx: T([DYN], I64), out: T([DYN, 4], F32)):
        out[:] = pypto.index_select(x, 0, idx)

    for n, m in ((3, 7), (10, 1)):
        x = _data((n, 4), torch.float32, seed=n)
        idx = torch.randint(0, n, (m,))
        out = torch.zeros(m, 4)
        k(x, idx, out)
        assert torch.equal(out, x[idx])
    for bad in (3, -1):
        _run_fails(k, [torch.ones(3, 4), torch.tensor([0, bad]), torch.full((2, 4), 5.0)], "kernel 'k'",
                   "index_select", "out of range for dim 0", "0 <= index < x.shape[0]")


def test_index_select_trace_errors():
    @pypto.frontend.jit
    def k_fidx(x: T([]), idx: T([]), out: T([])):
        out[:] = pypto.index_select(x, 0, idx)

    _trace_fails(k_fidx, [torch.ones(3, 2), torch.zeros(2), torch.zeros(2, 2)], "k_fidx", "index_select",
                 "integer tensor", "float32")

    @pypto.frontend.jit
    def k_r3(x: T([]), idx: T([], I64), out: T([])):
        out[:] = pypto.index_select(x, 0, idx)

    _trace_fails(k_r3, [torch.ones(3, 2), torch.zeros(1, 1, 2, dtype=torch.int64), torch.zeros(2, 2)], "k_r3",
                 "index_select", "rank 1 or 2", "[1, 1, 2]")


# ---- index_add / index_add_ / _ub ---------------------------------------------------------------------------
@pypto.frontend.jit
def k_iadd(x: T([]), idx: T([]), src0: T([]), src1: T([]), a0: T([]), a1: T([]), u0: T([]), inp: T([]),
           inp_ub: T([])):
    a0[:] = pypto.index_add(x, 0, idx, src0)
    a1[:] = pypto.index_add(x, 1, idx, src1, alpha=3)
    u0[:] = pypto.index_add_ub(x, 0, idx, src0, alpha=-2)
    pypto.index_add_(inp, 0, idx, src0)
    r = pypto.index_add__ub(inp_ub, -1, idx, src1, alpha=2)
    r[0:1, 0:1] = r[0:1, 0:1]                      # returns the updated input itself


@pytest.mark.parametrize("td", [torch.float32, torch.int32, torch.float16, torch.bfloat16])
def test_index_add_family_matches_torch_with_duplicates(td):
    x = _data((6, 6), td, seed=2)
    idx = torch.tensor([5, 0, 5, 5, 2], dtype=torch.int32)     # duplicates accumulate
    src0, src1 = _data((5, 6), td, seed=3), _data((6, 5), td, seed=4)
    outs = [torch.zeros(6, 6, dtype=td) for _ in range(3)]
    inp, inp_ub = x.clone(), x.clone()
    k_iadd(x, idx, src0, src1, *outs, inp, inp_ub)
    i = idx.long()
    want = [x.index_add(0, i, src0), x.index_add(1, i, src1, alpha=3), x.index_add(0, i, src0, alpha=-2),
            x.index_add(0, i, src0), x.index_add(1, i, src1, alpha=2)]
    got = outs + [inp, inp_ub]
    tol = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.int32: 0}[td]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=tol, atol=tol)
    # rows never named by idx are exactly the input
    for g in (outs[0], outs[2], inp):
        assert torch.equal(g[[1, 3, 4]], x[[1, 3, 4]])


def test_index_add_in_place_on_a_view_touches_only_that_view():
    @pypto.frontend.jit
    def k(buf: T([8, 4], F32), idx: T([2], I64), src: T([2, 4], F32)):
        pypto.index_add_(buf[2:6, :], 0, idx, src, alpha=0.5)

    buf = _data((8, 4), torch.float32)
    idx, src = torch.tensor([3, 0]), _data((2, 4), torch.float32, 1)
    want = buf.clone()
    want[2:6].index_add_(0, idx, src, alpha=0.5)
    k(buf, idx, src)
    assert torch.equal(buf, want)


def test_index_add_out_of_range_and_dynamic():
    @pypto.frontend.jit
    def k(x: T([DYN, 3], F32), idx: T([DYN], I64), src: T([DYN, 3], F32)):
        pypto.index_add_(x, 0, idx, src)

    x, idx, src = _data((4, 3), torch.float32), torch.tensor([1, 1, 3]), _data((3, 3), torch.float32, 1)
    want = x.index_add(0, idx, src)
    k(x, idx, src)
    torch.testing.assert_close(x, want, rtol=1e-6, atol=1e-6)
    _run_fails(k, [torch.ones(4, 3), torch.tensor([0, 4, 1]), torch.ones(3, 3)], "kernel 'k'", "index_add_",
               "out of range for dim 0", "0 <= index < x.shape[0]")
    _run_fails(k, [torch.ones(4, 3), torch.tensor([0, 1]), torch.ones(3, 3)], "kernel 'k'", "index_add_",
               "differs from the length of index")


def test_index_add_trace_errors():
    @pypto.frontend.jit
    def k_alpha(x: T([], I32), idx: T([], I64), src: T([], I32)):
        pypto.index_add_(x, 0, idx, src, alpha=1.5)

    args = [torch.zeros(3, 2, dtype=torch.int32), torch.tensor([0]), torch.zeros(1, 2, dtype=torch.int32)]
    _trace_fails(k_alpha, args, "k_alpha", "index_add_", "alpha must be an int for an integer input", "1.5")

    @pypto.frontend.jit
    def k_shape(x: T([]), idx: T([], I64), src: T([])):
        pypto.index_add_(x, 0, idx, src)

    _trace_fails(k_shape, [torch.zeros(3, 2), torch.tensor([0]), torch.zeros(1, 3)], "k_shape", "index_add_",
                 "source shape [1, 3] and input shape [3, 2] differ in dim 1")
    _trace_fails(k_shape, [torch.zeros(3, 2), torch.tensor([0, 1]), torch.zeros(1, 2)], "k_shape", "index_add_",
                 "source has 1 slices along dim 0 but index has 2 entries")


# ---- index_put_ ---------------------------------------------------------------------------------------------
@pypto.frontend.jit
def k_iput(x1: T([]), x2: T([]), x3: T([]), i0: T([]), i1: T([]), v1: T([]), v2: T([])):
    pypto.index_put_(x1, (i0,), v1)
    pypto.index_put_(x2, (i0, i1), v2, True)
    pypto.index_put_(x3, [i0, i1], v2, accumulate=False)


@pytest.mark.parametrize("td", [torch.float32, torch.int32, torch.float16])
def test_index_put_matches_torch(td):
    x = _data((5, 4, 3), td, seed=5)
    i0 = torch.tensor([4, 1, 0], dtype=torch.int32)
    i1 = torch.tensor([3, 0, 2], dtype=torch.int64)
    v1, v2 = _data((3, 4, 3), td, seed=6), _data((3, 3), td, seed=7)
    x1, x2, x3 = x.clone(), x.clone(), x.clone()
    k_iput(x1, x2, x3, i0, i1, v1, v2)
    assert torch.equal(x1, x.clone().index_put_((i0.long(),), v1))
    torch.testing.assert_close(x2, x.clone().index_put_((i0.long(), i1), v2, accumulate=True), rtol=2e-3, atol=2e-3)
    assert torch.equal(x3, x.clone().index_put_((i0.long(), i1), v2))
    untouched = torch.ones(5, dtype=torch.bool)
    untouched[[4, 1, 0]] = False
    assert torch.equal(x1[untouched], x[untouched])


def test_index_put_duplicates_accumulate_and_last_wins():
    @pypto.frontend.jit
    def k(x: T([DYN], F32), y: T([DYN], F32), i: T([DYN], I64), v: T([DYN], F32)):
        pypto.index_put_(x, (i,), v, accumulate=True)
        pypto.index_put_(y, (i,), v)

    x, y = torch.zeros(4), torch.zeros(4)
    i, v = torch.tensor([2, 2, 0, 2]), torch.tensor([1.0, 2.0, 3.0, 4.0])
    k(x, y, i, v)
    assert torch.equal(x, torch.tensor([3.0, 0.0, 7.0, 0.0]))
    assert torch.equal(y, torch.tensor([3.0, 0.0, 4.0, 0.0]))     # the last one in index order wins
    _run_fails(k, [torch.zeros(4), torch.zeros(4), torch.tensor([0, 9, 1, 1]), torch.ones(4)], "kernel 'k'",
               "index_put_", "indices[0]", "out of range for dim 0", "0 <= index < x.shape[0]")
    _run_fails(k, [torch.zeros(4), torch.zeros(4), torch.tensor([0, 1]), torch.ones(3)], "kernel 'k'",
               "index_put_", "indices[0] length")


def test_index_put_trace_errors():
    @pypto.frontend.jit
    def k_shape(x: T([]), i: T([], I64), v: T([])):
        pypto.index_put_(x, (i,), v)

    _trace_fails(k_shape, [torch.zeros(3, 2), torch.tensor([0]), torch.zeros(1, 3)], "k_shape", "index_put_",
                 "values shape [1, 3] does not match input shape [3, 2]")
    _trace_fails(k_shape, [torch.zeros(3, 2), torch.tensor([0]), torch.zeros(2)], "k_shape", "index_put_",
                 "values must have shape [T] + input.shape[1:]")

    @pypto.frontend.jit
    def k_notuple(x: T([]), i: T([], I64), v: T([])):
        pypto.index_put_(x, i, v)

    _trace_fails(k_notuple, [torch.zeros(3), torch.tensor([0]), torch.zeros(1)], "k_notuple", "index_put_",
                 "indices must be a non-empty tuple of 1-D index tensors")


# ---- scatter_ / scatter(reduce=) ---------------------------------------------------------------------------
@pypto.frontend.jit
def k_scat(x: T([]), idx: T([], I64), src: T([]), s_: T([]), s_val: T([]), add: T([]), mul: T([]),
           add_val: T([])):
    pypto.scatter_(s_, 1, idx, src)
    r = pypto.scatter_(s_val, 1, idx, 2.0)
    r[0:1, 0:1] = r[0:1, 0:1]
    add[:] = pypto.scatter(x, 1, idx, src, reduce="add")
    mul[:] = pypto.scatter(x, 1, idx, src, reduce="multiply")
    pypto.scatter_(add_val, 1, idx, 3, reduce="add")


@pytest.mark.parametrize("td", [torch.float32, torch.int32])
def test_scatter_in_place_and_reduce_match_torch(td):
    x = _data((3, 5), td, seed=8)
    idx = torch.tensor([[1, 1, 4], [0, 2, 0], [2, 2, 2]])        # duplicates
    src = _data((3, 4), td, seed=9)
    s_, s_val, add_val = x.clone(), x.clone(), x.clone()
    add, mul = torch.zeros(3, 5, dtype=td), torch.zeros(3, 5, dtype=td)
    k_scat(x, idx, src, s_, s_val, add, mul, add_val)
    want = x.clone()                 # duplicates: the last one in row-major order of idx wins (torch: undefined)
    for r in range(3):
        for c in range(3):
            want[r, idx[r, c]] = src[r, c]
    assert torch.equal(s_, want)     # and every element idx never names is the input's
    assert torch.equal(s_val, x.clone().scatter_(1, idx, 2.0 if td.is_floating_point else 2))
    tol = 1e-6 if td.is_floating_point else 0
    torch.testing.assert_close(add, x.scatter_reduce(1, idx, src[:, :3], "sum"), rtol=tol, atol=tol)
    torch.testing.assert_close(mul, x.scatter_reduce(1, idx, src[:, :3], "prod"), rtol=tol, atol=tol)
    assert torch.equal(add_val, x.scatter_reduce(1, idx, torch.full((3, 3), 3, dtype=td), "sum"))


def test_scatter_in_place_out_of_range_and_bad_reduce():
    @pypto.frontend.jit
    def k(x: T([]), idx: T([], I64)):
        pypto.scatter_(x, 0, idx, 1.0)

    _run_fails(k, [torch.zeros(3, 2), torch.tensor([[0, 3]])], "kernel 'k'", "scatter_", "out of range for dim 0",
               "0 <= index < 3")

    @pypto.frontend.jit
    def k_red(x: T([]), idx: T([], I64)):
        pypto.scatter_(x, 0, idx, 1.0, reduce="max")

    _trace_fails(k_red, [torch.zeros(3, 2), torch.tensor([[0, 1]])], "k_red", "scatter_",
                 "reduce must be None, 'add', 'multiply' or a pypto.ScatterMode", "'max'")


# ---- atomic_add ------------------------------------------------------------------------------------------------
def test_atomic_add_region_static_and_symbolic_offsets():
    @pypto.frontend.jit
    def k(src: T([2, 2], F32), dst: T([4, 4], F32), i: int):
        pypto.atomic_add(src, [0, 0], dst)
        pypto.atomic_add(src, [i, i + 1], dst)

    src, dst = torch.ones(2, 2), _data((4, 4), torch.float32)
    want = dst.clone()
    want[0:2, 0:2] += src
    want[1:3, 2:4] += src
    k(src, dst, 1)
    assert torch.equal(dst, want)
    _trace_fails(k, [src, torch.zeros(4, 4), 3], "kernel 'k'", "atomic_add",
                 "dim 0: offset 3 + size 2 exceeds the tensor's size 4")

    @pypto.frontend.jit
    def k_dyn(src: T([2, 2], F32), dst: T([DYN, 4], F32)):
        pypto.atomic_add(src, [2, 1], dst)

    dst = torch.zeros(4, 4)
    k_dyn(src, dst)
    want = torch.zeros(4, 4)
    want[2:4, 1:3] = 1.0
    assert torch.equal(dst, want)
    _run_fails(k_dyn, [src, torch.zeros(3, 4)], "kernel 'k_dyn'", "atomic_add", "exceeds the tensor's size")


def _source(fn, *args):
    from pypto.codegen import generate
    from pypto.frontend.rewrite import prepare
    from pypto.ir import trace
    from pypto.testing import simple_request
    from pypto.vocab.params import build_params

    req, _, _ = simple_request(fn.__name__, build_params(fn.__name__, fn), args, {})
    return generate(trace(prepare(fn, fn.__name__), req))


def test_atomic_add_makes_its_enclosing_parallel_loops_serial():
    def k_atomic(src: T([16, 8], F32), dst: T([4, 8], F32)):
        for j in pypto.loop(2, parallel=True):
            for i in pypto.loop(8, parallel=True):
                pypto.atomic_add(src[j * 8 + i:j * 8 + i + 1, :], [i % 4, 0], dst)

    def k_plain(src: T([16, 8], F32), dst: T([4, 8], F32)):
        for j in pypto.loop(2, parallel=True):
            for i in pypto.loop(8, parallel=True):
                dst[i % 4:i % 4 + 1, :] = src[j * 8 + i:j * 8 + i + 1, :]

    args = (torch.zeros(16, 8), torch.zeros(4, 8))
    assert "parallel_for" in _source(k_plain, *args)
    assert "parallel_for" not in _source(k_atomic, *args)


@pytest.mark.parametrize("td", [torch.float32, torch.float16, torch.int32])
def test_atomic_add_overlapping_in_a_parallel_loop_is_deterministic(td):
    @pypto.frontend.jit(runtime_options={"sim_threads": 4})
    def k(src: T([DYN, 8]), dst: T([4, 8])):
        n = src.shape[0]
        for i in pypto.loop(n, parallel=True):
            pypto.atomic_add(src[i:i + 1, :], [i % 4, 0], dst)      # rows overlap: i, i + 4, ... hit one row

    src = _data((37, 8), td, seed=10)
    if td.is_floating_point:
        src = src * 100            # order-sensitive roundings: the order must be the serial one
    want = torch.zeros(4, 8, dtype=td)
    for i in range(37):            # program order, one rounding per update (float32 math, as ours)
        want[i % 4] = (want[i % 4].float() + src[i].float()).to(td)
    for _ in range(3):
        dst = torch.zeros(4, 8, dtype=td)
        k(src, dst)
        assert torch.equal(dst, want)


def test_atomic_add_trace_errors():
    @pypto.frontend.jit
    def k_dt(src: T([], I32), dst: T([])):
        pypto.atomic_add(src, [0], dst)

    _trace_fails(k_dt, [torch.zeros(2, dtype=torch.int32), torch.zeros(4)], "k_dt", "atomic_add",
                 "src dtype int32 differs from dst dtype float32")

    @pypto.frontend.jit
    def k_len(src: T([]), dst: T([])):
        pypto.atomic_add(src, [0], dst)

    _trace_fails(k_len, [torch.zeros(2, 2), torch.zeros(4, 4)], "k_len", "atomic_add", "offsets [0]",
                 "src shape [2, 2]", "same length")


# ---- axpy_ ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ytd,xtd", [(torch.float32, torch.float32), (torch.float16, torch.float16),
                                     (torch.bfloat16, torch.bfloat16), (torch.float32, torch.float16)])
def test_axpy_matches_torch(ytd, xtd):
    @pypto.frontend.jit
    def k(y: T([]), x: T([]), xb: T([]), y2: T([])):
        r = pypto.axpy_(y, x, alpha=2.0)
        r[0:1, 0:1] = r[0:1, 0:1]
        pypto.axpy_(y2, xb, 1.5)            # x broadcast along the columns

    y, x, xb = _data((4, 33), ytd, 1), _data((4, 33), xtd, 2), _data((4, 1), xtd, 3)
    y0 = y.clone()
    y2 = y.clone()
    k(y, x, xb, y2)
    want = (y0.float() + 2.0 * x.float()).to(ytd)        # float32 math, rounded once
    want2 = (y0.float() + 1.5 * xb.float()).to(ytd)
    tol = 1e-6 if ytd == torch.float32 else 0
    torch.testing.assert_close(y, want, rtol=tol, atol=tol)
    torch.testing.assert_close(y2, want2, rtol=tol, atol=tol)


def test_axpy_errors():
    @pypto.frontend.jit
    def k_dt(y: T([], pypto.DT_FP16), x: T([])):
        pypto.axpy_(y, x)

    _trace_fails(k_dt, [torch.zeros(2, dtype=torch.float16), torch.zeros(2)], "k_dt", "axpy_",
                 "unsupported dtypes y=float16, x=float32")

    @pypto.frontend.jit
    def k_bc(y: T([]), x: T([])):
        pypto.axpy_(y, x)

    _trace_fails(k_bc, [torch.zeros(2, 1), torch.zeros(2, 3)], "k_bc", "axpy_", "shape mismatch")


# ---- gather, scatter_update, topk --------------------------------------------------------------------------------

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


# ---- scatter (out of place) --------------------------------------------------------------------------------------


@pypto.frontend.jit
def k_scatter(x: pypto.Tensor([], F32), idx: pypto.Tensor([], pypto.DT_INT64), out: pypto.Tensor([], F32), dim: int,
              src: float):
    out[:] = pypto.scatter(x, dim, idx, src)


@pypto.frontend.jit
def k_scatter_t(x: pypto.Tensor([], F32), idx: pypto.Tensor([], pypto.DT_INT64), src: pypto.Tensor([], F32),
                out: pypto.Tensor([], F32)):
    out[:] = pypto.scatter(x, 1, idx, src)


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
