"""Structural ops of the reference against torch: argmax / argmin / argsort, cumprod, tril / triu, var, ones /
zeros, pad, fillpad, gathermask, interleave / deinterleave, bytes_of (fp32, an int dtype, fp16/bf16 where
supported, DYNAMIC shapes), their trace-time errors (kernel, op, expected, got; outputs untouched) and the
verify interpreter's rules for the new IR ops. The in-place index ops are in test_indexing.py."""
import warnings

import pytest
import torch

import pypto
from pypto.errors import KernelRuntimeError, KernelTraceError

T = pypto.Tensor
F32, I32 = pypto.DT_FP32, pypto.DT_INT32
DYN = pypto.DYNAMIC


def _dt(td):
    return {torch.float32: pypto.DT_FP32, torch.float16: pypto.DT_FP16, torch.bfloat16: pypto.DT_BF16,
            torch.int32: pypto.DT_INT32, torch.int64: pypto.DT_INT64}[td]


def _data(shape, td, seed=0):
    g = torch.Generator().manual_seed(seed)
    if td.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(td)
    return torch.randint(-50, 50, shape, generator=g, dtype=td)


def _trace_error(kernel, args, *needles):
    """Calling `kernel` raises KernelTraceError whose message has every needle; the arguments are untouched."""
    before = [a.clone() for a in args]
    with pytest.raises(KernelTraceError) as ei:
        kernel(*args)
    msg = str(ei.value)
    for n in needles:
        assert n in msg, (n, msg)
    for a, b in zip(args, before):
        assert torch.equal(a, b)
    return msg


# ---- argmax / argmin ------------------------------------------------------------------------------------------
@pypto.frontend.jit
def k_arg(x: T([]), mx0: T([], I32), mx1k: T([], I32), mn0k: T([], I32), mn1: T([], I32)):
    mx0[:] = pypto.argmax(x, 0)
    mx1k[:] = pypto.argmax(x, -1, keepdim=True)
    mn0k[:] = pypto.argmin(x, dim=0, keepdim=True)
    mn1[:] = pypto.argmin(x, 1)


@pytest.mark.parametrize("td", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
def test_argmax_argmin_match_torch_with_ties_first(td):
    x = _data((7, 33), td, seed=1)
    if td.is_floating_point:
        x = (x * 4).round()          # many ties: torch returns the first index, so must we
    else:
        x = x % 5
    outs = [torch.full((33,), -1, dtype=torch.int32), torch.full((7, 1), -1, dtype=torch.int32),
            torch.full((1, 33), -1, dtype=torch.int32), torch.full((7,), -1, dtype=torch.int32)]
    k_arg(x, *outs)
    want = [torch.argmax(x, 0), torch.argmax(x, -1, keepdim=True), torch.argmin(x, 0, keepdim=True),
            torch.argmin(x, 1)]
    for got, w in zip(outs, want):
        assert torch.equal(got, w.to(torch.int32)), (got, w)


def test_argmax_argmin_nan_wins_like_torch():
    x = torch.tensor([[1.0, float("nan"), 3.0, float("nan")], [2.0, 0.5, -1.0, 7.0], [float("nan")] * 4])
    outs = [torch.zeros(4, dtype=torch.int32), torch.zeros(3, 1, dtype=torch.int32),
            torch.zeros(1, 4, dtype=torch.int32), torch.zeros(3, dtype=torch.int32)]
    k_arg(x, *outs)
    assert torch.equal(outs[1].flatten(), torch.argmax(x, 1).int())
    assert torch.equal(outs[3], torch.argmin(x, 1).int())
    assert torch.equal(outs[0], torch.argmax(x, 0).int()) and torch.equal(outs[2].flatten(), torch.argmin(x, 0).int())


def test_argmax_dynamic_shape_and_empty_dim_fails_at_run_time():
    @pypto.frontend.jit
    def k(x: T([DYN, DYN], F32), out: T([DYN], I32)):
        out[:] = pypto.argmax(x)

    for shape in ((3, 5), (9, 130)):
        x = _data(shape, torch.float32, seed=shape[1])
        out = torch.full((shape[0],), -1, dtype=torch.int32)
        k(x, out)
        assert torch.equal(out, torch.argmax(x, -1).int())
    out = torch.full((2,), 7, dtype=torch.int32)
    with pytest.raises(KernelRuntimeError, match=r"kernel 'k': argmax: cannot reduce over an empty dim 1"):
        k(torch.zeros(2, 0).as_strided((2, 0), (0, 1)), out)    # torch gives (2, 0) strides (1, 1)
    assert torch.equal(out, torch.full((2,), 7, dtype=torch.int32))


def test_argmax_errors_name_kernel_op_and_argument():
    @pypto.frontend.jit
    def k_multi(x: T([]), out: T([], I32)):
        out[:] = pypto.argmax(x, [0, 1])

    _trace_error(k_multi, [torch.zeros(2, 3), torch.zeros(3, dtype=torch.int32)], "k_multi", "argmax",
                 "dim must be a single static int", "[0, 1]")

    @pypto.frontend.jit
    def k_bool(x: T([], pypto.DT_BOOL), out: T([], I32)):
        out[:] = pypto.argmin(x, 0)

    _trace_error(k_bool, [torch.zeros(2, 3, dtype=torch.bool), torch.zeros(3, dtype=torch.int32)], "k_bool",
                 "argmin", "bool")


# ---- argsort ------------------------------------------------------------------------------------------------
@pypto.frontend.jit
def k_argsort(x: T([]), a1: T([], I32), d1: T([], I32), a0: T([], I32), dn: T([], I32)):
    a1[:] = pypto.argsort(x, 1)
    d1[:] = pypto.argsort(x, -1, True)
    a0[:] = pypto.argsort(x, dim=0, descending=False)
    dn[:] = pypto.argsort(x, descending=True)       # dim=None: the last dim


@pytest.mark.parametrize("td", [torch.float32, torch.float16, torch.int32])
def test_argsort_is_stable_and_matches_torch(td):
    x = _data((6, 70), td, seed=3)
    x = (x * 3).round() if td.is_floating_point else x % 7        # many equal values
    if td.is_floating_point:
        x[2, 5] = x[4, 9] = x[4, 60] = float("nan")
    outs = [torch.full(x.shape, -1, dtype=torch.int32) for _ in range(4)]
    k_argsort(x, *outs)
    want = [torch.sort(x, dim=1, stable=True)[1], torch.sort(x, dim=-1, descending=True, stable=True)[1],
            torch.sort(x, dim=0, stable=True)[1], torch.sort(x, dim=-1, descending=True, stable=True)[1]]
    for got, w in zip(outs, want):
        assert torch.equal(got, w.int())


def test_argsort_dynamic_rank3():
    @pypto.frontend.jit
    def k(x: T([2, DYN, DYN], F32), out: T([2, DYN, DYN], I32)):
        out[:] = pypto.argsort(x, 1, descending=True)

    for n, m in ((1, 3), (37, 5)):
        x = _data((2, n, m), torch.float32, seed=n)
        out = torch.zeros(2, n, m, dtype=torch.int32)
        k(x, out)
        assert torch.equal(out, torch.sort(x, dim=1, descending=True, stable=True)[1].int())


# ---- cumprod ------------------------------------------------------------------------------------------------
@pypto.frontend.jit
def k_cumprod(x: T([]), c0: T([]), c1: T([])):
    c0[:] = pypto.cumprod(x, 0)
    c1[:] = pypto.cumprod(x, -1)


@pytest.mark.parametrize("td,tol", [(torch.float32, 1e-6), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2),
                                    (torch.int32, 0)])
def test_cumprod_matches_torch(td, tol):
    g = torch.Generator().manual_seed(4)
    if td.is_floating_point:
        x = (torch.rand(5, 19, generator=g, dtype=torch.float64) * 0.6 + 0.7).to(td)
    else:
        x = torch.randint(-3, 4, (5, 19), generator=g, dtype=td)
    c0, c1 = torch.zeros_like(x), torch.zeros_like(x)
    k_cumprod(x, c0, c1)
    if td == torch.int32:        # torch widens to int64; ours keeps the dtype (wrapping), values fit here
        assert torch.equal(c0, torch.cumprod(x, 0).to(td)) and torch.equal(c1, torch.cumprod(x, 1).to(td))
    else:                        # float32 accumulation, rounded once per element (torch: the same for fp16/bf16)
        ref = x.double()
        torch.testing.assert_close(c0, torch.cumprod(ref, 0).to(td), rtol=tol, atol=0)
        torch.testing.assert_close(c1, torch.cumprod(ref, 1).to(td), rtol=tol, atol=0)


def test_cumprod_dynamic():
    @pypto.frontend.jit
    def k(x: T([DYN, 4], F32), out: T([DYN, 4], F32)):
        out[:] = pypto.cumprod(x, 0)

    for n in (1, 11):
        x = torch.rand(n, 4) + 0.5
        out = torch.zeros(n, 4)
        k(x, out)
        torch.testing.assert_close(out, torch.cumprod(x, 0), rtol=1e-6, atol=0)


# ---- tril / triu --------------------------------------------------------------------------------------------
@pypto.frontend.jit
def k_tri(x: T([]), lo: T([]), up: T([]), lo_m1: T([]), up_2: T([]), d: int):
    lo[:] = pypto.tril(x)
    up[:] = pypto.triu(x)
    lo_m1[:] = pypto.tril(x, -1)
    up_2[:] = pypto.triu(x, d)          # a symbolic diagonal


@pytest.mark.parametrize("td", [torch.float32, torch.int32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(5, 5), (3, 7), (2, 6, 4)])
def test_tril_triu_match_torch(td, shape):
    x = _data(shape, td, seed=5)
    outs = [torch.full(shape, 9, dtype=td) for _ in range(4)]
    for d in (2, -3):
        k_tri(x, *outs, d)
        want = [torch.tril(x), torch.triu(x), torch.tril(x, -1), torch.triu(x, d)]
        for got, w in zip(outs, want):
            assert torch.equal(got, w)


def test_tril_dynamic_and_rank1_error():
    @pypto.frontend.jit
    def k(x: T([DYN, DYN], F32), out: T([DYN, DYN], F32)):
        out[:] = pypto.tril(x, 1)

    for shape in ((4, 9), (10, 3)):
        x = _data(shape, torch.float32)
        out = torch.zeros(shape)
        k(x, out)
        assert torch.equal(out, torch.tril(x, 1))

    @pypto.frontend.jit
    def k1(x: T([]), out: T([])):
        out[:] = pypto.triu(x)

    _trace_error(k1, [torch.zeros(4), torch.zeros(4)], "k1", "triu", "rank >= 2", "[4]")


# ---- var ------------------------------------------------------------------------------------------------------
@pypto.frontend.jit
def k_var(x: T([]), v_all: T([]), v1: T([]), v01k: T([]), v_c0: T([]), v_c25: T([])):
    v_all[...] = pypto.var(x)
    v1[:] = pypto.var(x, 1)
    v01k[:] = pypto.var(x, [0, -1], keepdim=True)
    v_c0[:] = pypto.var(x, 0, correction=0)
    v_c25[:] = pypto.var(x, (1,), 2.5, True)


@pytest.mark.parametrize("td,tol", [(torch.float32, 2e-6), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
def test_var_matches_torch(td, tol):
    x = (_data((6, 17), torch.float32, seed=6) * 3 + 1).to(td)
    outs = [torch.zeros((), dtype=td), torch.zeros(6, dtype=td), torch.zeros(1, 1, dtype=td),
            torch.zeros(17, dtype=td), torch.zeros(6, 1, dtype=td)]
    k_var(x, *outs)
    r = x.double()
    want = [torch.var(r), torch.var(r, 1), torch.var(r, [0, 1], keepdim=True), torch.var(r, 0, correction=0),
            torch.var(r, 1, correction=2.5, keepdim=True)]
    for got, w in zip(outs, want):
        torch.testing.assert_close(got, w.to(td), rtol=tol, atol=tol)


def test_var_dynamic_and_too_few_elements_like_torch():
    @pypto.frontend.jit
    def k(x: T([DYN, 8], F32), out: T([8], F32)):
        out[:] = pypto.var(x, 0)

    for n in (1, 2, 40):      # n = 1: N - correction = 0 -> inf / nan as torch
        x = _data((n, 8), torch.float32, seed=n)
        out = torch.zeros(8)
        k(x, out)
        with warnings.catch_warnings():        # torch warns for n = 1 (degrees of freedom <= 0)
            warnings.simplefilter("ignore", UserWarning)
            want = torch.var(x, 0)
        torch.testing.assert_close(out, want, rtol=2e-6, atol=2e-6, equal_nan=True)


def test_var_errors():
    @pypto.frontend.jit
    def k_int(x: T([], I32), out: T([])):
        out[:] = pypto.cast(pypto.var(x, 0), F32)

    _trace_error(k_int, [torch.zeros(3, 2, dtype=torch.int32), torch.zeros(2)], "k_int", "var",
                 "needs a float tensor", "int32")

    @pypto.frontend.jit
    def k_rep(x: T([]), out: T([])):
        out[:] = pypto.var(x, [1, -1])

    _trace_error(k_rep, [torch.zeros(3, 2), torch.zeros(3)], "k_rep", "var", "repeated", "[1, -1]")


# ---- ones / zeros ---------------------------------------------------------------------------------------------
def test_ones_and_zeros_reference_signatures():
    @pypto.frontend.jit
    def k(x: T([DYN, 3], F32), o1: T([2, 3], F32), o2: T([2, 3], I32), z1: T([2, 3], F32), z2: T([4], I32),
          od: T([DYN, 3], pypto.DT_FP16)):
        o1[:] = pypto.ones(2, 3)
        o2[:] = pypto.ones([2, 3], dtype=I32)
        z1[:] = pypto.zeros((2, 3)) + 0.5
        z2[:] = pypto.zeros([4], I32) + 2            # this package's earlier zeros(shape, dtype)
        od[:] = pypto.ones(x.shape[0], 3, dtype=pypto.DT_FP16)

    n = 5
    outs = [torch.full((2, 3), 7.0), torch.full((2, 3), 7, dtype=torch.int32), torch.full((2, 3), 7.0),
            torch.full((4,), 7, dtype=torch.int32), torch.full((n, 3), 7.0, dtype=torch.float16)]
    k(torch.zeros(n, 3), *outs)
    assert torch.equal(outs[0], torch.ones(2, 3)) and torch.equal(outs[1], torch.ones(2, 3, dtype=torch.int32))
    assert torch.equal(outs[2], torch.full((2, 3), 0.5)) and torch.equal(outs[3], torch.full((4,), 2, dtype=torch.int32))
    assert torch.equal(outs[4], torch.ones(n, 3, dtype=torch.float16))


# ---- pad / fillpad -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("td", [torch.float32, torch.int32, torch.float16])
def test_pad_right_bottom_and_left_top_match_torch(td):
    @pypto.frontend.jit
    def k(x: T([]), a: T([]), b: T([]), c: T([])):
        a[:] = pypto.pad(x, (0, 1, 0, 1))
        b[:] = pypto.pad(x, [0, 3], "constant", -7)
        c[:] = pypto.pad(x, (2, 0, 1, 2), value=5)   # left/top too (the reference allows only right/bottom)

    x = _data((1, 2, 3, 4), td, seed=7)
    want = [torch.nn.functional.pad(x, (0, 1, 0, 1)), torch.nn.functional.pad(x, (0, 3), value=-7),
            torch.nn.functional.pad(x, (2, 0, 1, 2), value=5)]
    outs = [torch.full(w.shape, 99, dtype=td) for w in want]
    k(x, *outs)
    for got, w in zip(outs, want):
        assert torch.equal(got, w)


def test_pad_dynamic_and_float_inf():
    @pypto.frontend.jit
    def k(x: T([DYN, DYN], F32), out: T([DYN, DYN], F32)):
        out[:] = pypto.pad(x, (0, 2, 0, 1), value=float("-inf"))

    for shape in ((2, 3), (5, 1)):
        x = _data(shape, torch.float32)
        out = torch.zeros(shape[0] + 1, shape[1] + 2)
        k(x, out)
        assert torch.equal(out, torch.nn.functional.pad(x, (0, 2, 0, 1), value=float("-inf")))


@pytest.mark.parametrize("bad,needle", [((0, -1), "negative padding"), ((0, 1, 2), "even length"),
                                        ((0, 1, 0, 1, 0, 1), "even length"), ((0, 1.5), "static ints")])
def test_pad_bad_amounts(bad, needle):
    @pypto.frontend.jit
    def k_pad(x: T([]), out: T([])):
        out[:] = pypto.pad(x, bad)

    msg = _trace_error(k_pad, [torch.zeros(2, 2), torch.full((2, 2), 3.0)], "k_pad", "pad:", needle)
    assert str(list(bad)) in msg


def test_pad_value_and_mode_errors():
    @pypto.frontend.jit
    def k_fv(x: T([], I32), out: T([], I32)):
        out[:] = pypto.pad(x, (0, 1), value=float("-inf"))

    _trace_error(k_fv, [torch.zeros(2, dtype=torch.int32), torch.zeros(3, dtype=torch.int32)], "k_fv", "pad",
                 "value must be an int for an integer tensor", "int32", "-inf")

    @pypto.frontend.jit
    def k_mode(x: T([]), out: T([])):
        out[:] = pypto.fillpad(x, "reflect")

    _trace_error(k_mode, [torch.zeros(2), torch.zeros(2)], "k_mode", "fillpad", "'reflect'", "only 'constant'")


def test_fillpad_fills_past_the_valid_shape():
    @pypto.frontend.jit
    def k(x: T([4, 4], F32), out: T([4, 4], F32), xi: T([3, 8], I32), oi: T([3, 8], I32), r: int, c: int):
        tile = pypto.view(x, [4, 4], [0, 0], valid_shape=[r, c])
        out[:] = pypto.fillpad(tile, "constant", "-inf")
        ti = pypto.view(xi, [3, 8], [0, 0], valid_shape=[3, c])
        oi[:] = pypto.fillpad(ti, value=-5)

    x = _data((4, 4), torch.float32)
    xi = _data((3, 8), torch.int32)
    for r, c in ((2, 2), (4, 3), (1, 4)):
        out, oi = torch.zeros(4, 4), torch.zeros(3, 8, dtype=torch.int32)
        k(x, out, xi, oi, r, c)
        want = torch.full((4, 4), float("-inf"))
        want[:r, :c] = x[:r, :c]
        wi = torch.full((3, 8), -5, dtype=torch.int32)
        wi[:, :c] = xi[:, :c]
        assert torch.equal(out, want) and torch.equal(oi, wi)


# ---- gathermask -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("td", [torch.float32, torch.int32, torch.bfloat16])
def test_gathermask_patterns(td):
    @pypto.frontend.jit
    def k(x: T([]), o1: T([]), o2: T([]), o3: T([]), o4: T([]), o5: T([]), o6: T([]), o7: T([])):
        for m, o in enumerate((o1, o2, o3, o4, o5, o6, o7), 1):
            o[:] = pypto.gathermask(x, m)

    x = _data((3, 16), td, seed=8)
    want = [x[:, 0::2], x[:, 1::2], x[:, 0::4], x[:, 1::4], x[:, 2::4], x[:, 3::4], x]
    outs = [torch.zeros(w.shape, dtype=td) for w in want]
    k(x, *outs)
    for got, w in zip(outs, want):
        assert torch.equal(got, w)


def test_gathermask_errors_and_dynamic_check():
    @pypto.frontend.jit
    def k_odd(x: T([]), out: T([])):
        out[:] = pypto.gathermask(x, 3)

    _trace_error(k_odd, [torch.zeros(2, 6), torch.zeros(2, 1)], "k_odd", "gathermask", "multiple of 4", "6")

    @pypto.frontend.jit
    def k_mode(x: T([]), out: T([])):
        out[:] = pypto.gathermask(x, 8)

    _trace_error(k_mode, [torch.zeros(2, 8), torch.zeros(2, 1)], "k_mode", "gathermask", "1..7", "8")

    @pypto.frontend.jit
    def k_dyn(x: T([2, DYN], F32), out: T([2, DYN], F32)):
        out[:] = pypto.gathermask(x, 2)

    x = _data((2, 10), torch.float32)
    out = torch.zeros(2, 5)
    k_dyn(x, out)
    assert torch.equal(out, x[:, 1::2])
    out = torch.full((2, 4), 1.0)
    with pytest.raises(KernelRuntimeError, match=r"kernel 'k_dyn': gathermask: the last dim \(.*\) must be a multiple of 2"):
        k_dyn(torch.zeros(2, 9), out)
    assert torch.equal(out, torch.full((2, 4), 1.0))


# ---- interleave / deinterleave ---------------------------------------------------------------------------------
def _interleave_ref(a, b):
    s = torch.stack([a, b], -1).flatten(-2)
    n = a.shape[-1]
    return s[..., :n], s[..., n:]


@pytest.mark.parametrize("td", [torch.float32, torch.int32, torch.float16])
def test_interleave_deinterleave_round_trip(td):
    @pypto.frontend.jit
    def k(a: T([]), b: T([]), i0: T([]), i1: T([]), d0: T([]), d1: T([]), s0: T([]), s1: T([])):
        x0, x1 = pypto.interleave(a, b)
        i0[:] = x0
        i1[:] = x1
        y0, y1 = pypto.deinterleave(x0, x1)
        d0[:] = y0
        d1[:] = y1
        z0, z1 = pypto.deinterleave(a)
        s0[:] = z0
        s1[:] = z1

    a, b = _data((3, 8), td, seed=9), _data((3, 8), td, seed=10)
    outs = [torch.zeros(3, 8, dtype=td) for _ in range(4)] + [torch.zeros(3, 4, dtype=td) for _ in range(2)]
    k(a, b, *outs)
    w0, w1 = _interleave_ref(a, b)
    assert torch.equal(outs[0], w0) and torch.equal(outs[1], w1)
    assert torch.equal(outs[2], a) and torch.equal(outs[3], b)
    assert torch.equal(outs[4], a[..., 0::2]) and torch.equal(outs[5], a[..., 1::2])


def test_interleave_dynamic_and_errors():
    @pypto.frontend.jit
    def k(a: T([DYN, DYN], F32), b: T([DYN, DYN], F32), o0: T([DYN, DYN], F32), o1: T([DYN, DYN], F32)):
        x0, x1 = pypto.interleave(a, b)
        o0[:] = x0
        o1[:] = x1

    for shape in ((1, 2), (4, 6)):
        a, b = _data(shape, torch.float32, 1), _data(shape, torch.float32, 2)
        o0, o1 = torch.zeros(shape), torch.zeros(shape)
        k(a, b, o0, o1)
        w0, w1 = _interleave_ref(a, b)
        assert torch.equal(o0, w0) and torch.equal(o1, w1)
    o0, o1 = torch.full((2, 2), 4.0), torch.full((2, 2), 4.0)
    with pytest.raises(KernelRuntimeError, match="kernel 'k': interleave: input dim 1"):
        k(torch.zeros(2, 2), torch.zeros(2, 3), o0, o1)
    assert torch.equal(o0, torch.full((2, 2), 4.0)) and torch.equal(o1, torch.full((2, 2), 4.0))

    @pypto.frontend.jit
    def k_dt(a: T([]), b: T([], I32), o: T([])):
        o[:] = pypto.interleave(a, b)[0]

    _trace_error(k_dt, [torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.int32), torch.zeros(2, 2)], "k_dt",
                 "interleave", "same dtype", "float32", "int32")

    @pypto.frontend.jit
    def k_odd(a: T([]), o: T([])):
        o[:] = pypto.deinterleave(a)[0]

    _trace_error(k_odd, [torch.zeros(2, 5), torch.zeros(2, 2)], "k_odd", "deinterleave", "multiple of 2", "5")


# ---- bytes_of -------------------------------------------------------------------------------------------------
def test_bytes_of_matches_torch_itemsize():
    for dt, td in ((pypto.DT_FP32, torch.float32), (pypto.DT_FP16, torch.float16), (pypto.DT_BF16, torch.bfloat16),
                   (pypto.DT_INT8, torch.int8), (pypto.DT_INT64, torch.int64), (pypto.DT_BOOL, torch.bool),
                   (pypto.DT_UINT16, torch.uint16), (pypto.DT_FP8E4M3, torch.float8_e4m3fn),
                   (pypto.DT_FP4_E2M1X2, torch.float4_e2m1fn_x2)):
        assert pypto.bytes_of(dt) == td.itemsize, dt
    with pytest.raises(TypeError, match="bytes_of: expected a pypto DataType.*'fp32'"):
        pypto.bytes_of("fp32")


# ---- the verify interpreter knows the new IR ops ------------------------------------------------------------
def test_new_ops_under_verify_both_stages_ok():
    def body(x: T([]), idx: T([], pypto.DT_INT64), a: T([], I32), s: T([], I32), c: T([]), sc: T([]), ip: T([]),
             ia: T([])):
        a[:] = pypto.argmin(x, 1, keepdim=True)
        s[:] = pypto.argsort(x, 0, descending=True)
        c[:] = pypto.cumprod(x, 1)
        sc[:] = pypto.scatter(x, 1, idx, 2.0, reduce="multiply")
        ip[:] = x
        pypto.index_put_(ip, (idx[0, :], idx[1, :]), x[0, :], accumulate=True)
        ia[:] = pypto.index_add(pypto.index_select(x, 1, idx[1, :]), 0, idx[0, 0:2], x[0:2, :], alpha=-1.5)

    k = pypto.frontend.jit(body, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [1e-5, 1e-5]})
    x = torch.rand(4, 6) + 0.5
    idx = torch.tensor([[0, 1, 1, 3, 3, 2], [5, 5, 0, 1, 2, 5], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
    outs = [torch.zeros(4, 1, dtype=torch.int32), torch.zeros(4, 6, dtype=torch.int32), torch.zeros(4, 6),
            torch.zeros(4, 6), torch.zeros(4, 6), torch.zeros(4, 6)]
    k(x, idx, *outs)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    assert torch.equal(outs[0], torch.argmin(x, 1, keepdim=True).int())
    assert torch.equal(outs[1], torch.sort(x, dim=0, descending=True, stable=True)[1].int())
    torch.testing.assert_close(outs[2], torch.cumprod(x, 1), rtol=1e-6, atol=0)
    assert torch.equal(outs[3], x.clone().scatter_(1, idx, 2.0, reduce="multiply"))
    want = x.clone().index_put_((idx[0], idx[1]), x[0], accumulate=True)
    torch.testing.assert_close(outs[4], want, rtol=1e-6, atol=1e-6)
    want = x[:, idx[1]].index_add(0, idx[0, 0:2], x[0:2, :], alpha=-1.5)
    torch.testing.assert_close(outs[5], want, rtol=1e-6, atol=1e-6)
