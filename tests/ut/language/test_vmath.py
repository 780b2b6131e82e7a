"""The float functions of include/pypto/kernel_vmath.h (log log2 log10 log1p exp2 expm1 tanh erf erfc sinh cosh asinh
acosh atanh atan asin acos cbrt sin cos tan) through real
kernels: within their documented error bound of the fp64 result on a dense sample of each range (every float:
benchmarks/vmath_ulp.cpp, docs/language.md), exact on the specials (signed zeros, infinities, NaNs, domain edges),
the same bits in a vector lane and in a loop's scalar tail, fp16/bf16 within one ulp of torch (that their loops
vectorize: tests/ut/codegen/test_vector_loops.py)."""
import numpy as np
import pytest
import torch

import pypto

F1 = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)
F2 = pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32)

# name -> (range measured, bound in ulp: docs/language.md's maximum (every 17th float) over the FMA and the no-FMA
# builds, rounded up to 0.05)
FUNCS = {
    "log": ((2.0 ** -149, 3.4e38), 0.9),
    "log2": ((2.0 ** -149, 3.4e38), 1.95),
    "log10": ((2.0 ** -149, 3.4e38), 2),
    "log1p": ((-0.99999994, 3.4e38), 0.95),
    "exp2": ((-151.0, 127.99), 1.25),
    "expm1": ((-30.0, 88.72), 1.45),
    "tanh": ((-10.0, 10.0), 1.4),
    "erf": ((-4.5, 4.5), 2.8),
    "erfc": ((-4.5, 10.1), 0.55),
    "sinh": ((-89.4, 89.4), 2.9),
    "cosh": ((-89.4, 89.4), 2.9),
    "asinh": ((-3.4e38, 3.4e38), 1.75),
    "acosh": ((1.0, 3.4e38), 2.05),
    "atanh": ((-0.99999994, 0.99999994), 2.05),
    "atan": ((-3.4e38, 3.4e38), 1.9),
    "asin": ((-1.0, 1.0), 2.95),
    "acos": ((-1.0, 1.0), 2.65),
    "cbrt": ((-3.4e38, 3.4e38), 0.75),
    "sin": ((-3.4e38, 3.4e38), 1.6),
    "cos": ((-3.4e38, 3.4e38), 1.6),
    "tan": ((-3.4e38, 3.4e38), 3.2),
}


@pypto.frontend.jit
def unary(x: F1, out: F1, fn="tanh"):
    out[:] = getattr(pypto, fn)(x)


@pypto.frontend.jit
def unary_rows(x: F2, out: F2, fn="tanh"):
    out[:] = getattr(pypto, fn)(x)


def _f32(bits):
    return torch.from_numpy(np.asarray(bits, dtype=np.uint32).view(np.float32).copy())


def _bits_of(v: float) -> int:
    return int(np.float32(v).view(np.uint32))


def _sample(lo: float, hi: float, step: int) -> torch.Tensor:
    """every step-th float of [lo, hi] (the negative part walks the bits from -0 up to bits(lo))"""
    parts = []
    if lo < 0:
        parts.append(np.arange(0x80000000, _bits_of(lo) + 1, step, dtype=np.uint64))
    if hi >= 0:
        parts.append(np.arange(_bits_of(lo) if lo > 0 else 0, _bits_of(hi) + 1, step, dtype=np.uint64))
    return _f32(np.concatenate(parts).astype(np.uint32))


def _ulp_error(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    ulp = torch.tensor(np.spacing(exact.float().abs().numpy().astype(np.float32)), dtype=torch.float64)
    ulp = torch.clamp(ulp, min=2.0 ** -149)
    return (got.double() - exact).abs() / ulp


def _ref(fn, x):
    if fn == "cbrt":            # torch has no cbrt: the fp64 real cube root
        xd = x.double()
        return torch.copysign(xd.abs().pow(1.0 / 3.0), xd)
    return getattr(torch, fn)(x.double())


def _torch(fn, x):
    """torch's fp32 result (cbrt: the fp64 reference rounded to fp32)"""
    return _ref(fn, x).float() if fn == "cbrt" else getattr(torch, fn)(x)


@pytest.mark.parametrize("fn", list(FUNCS))
def test_dense_sample_within_the_documented_bound(fn):
    (lo, hi), bound = FUNCS[fn]
    x = _sample(lo, hi, 4099)
    out = torch.full_like(x, 7.0)
    unary(x, out, fn=fn)
    exact = _ref(fn, x)
    fin = exact.float().isfinite() & (exact.float() != 0)
    err = _ulp_error(out[fin], exact[fin])
    assert err.max().item() <= bound, (fn, err.max().item(), x[fin][err.argmax()].item())
    # where the float result is +-inf ours is the same; where it is 0, ours is 0 or the subnormal next to it
    ef = exact.float()
    assert torch.equal(out[ef.isinf()], ef[ef.isinf()])
    assert (out[ef == 0].abs() <= 2.0 ** -149).all()


SPECIAL_BITS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001, 0x80000001, 0x00800000, 0x80800000,
                0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0xBF800001, 0x7FC00000, 0xFFC00000, 0x7FA5A5A5]


@pytest.mark.parametrize("fn", list(FUNCS))
def test_specials_match_torch(fn):
    """Signed zeros, infinities, subnormals, +-1 and just below -1 (log1p's domain edge), the largest floats and
    NaNs: NaN where torch gives NaN, zeros and infinities of the fp64 result exactly (sign included), finite
    values within the bound. (torch's log1p flushes a subnormal x to 0; log1p(x) = x is the correctly rounded
    result, which is ours.)"""
    x = _f32(SPECIAL_BITS)
    out = torch.full_like(x, 7.0)
    unary(x, out, fn=fn)
    want = _torch(fn, x)
    exact = _ref(fn, x)
    assert torch.equal(torch.isnan(out), torch.isnan(want)), (fn, out, want)
    ef = exact.float()
    exact_vals = torch.isinf(ef) | (ef == 0)
    assert torch.equal(out[exact_vals].view(torch.int32), ef[exact_vals].view(torch.int32)), (fn, out, ef)
    fin = torch.isfinite(ef) & (ef != 0)
    assert _ulp_error(out[fin], exact[fin]).max().item() <= FUNCS[fn][1]


def _assert_rows_agree(out: torch.Tensor, num: torch.Tensor, fn: str):
    """Rows of 67 copies of one argument: the vector lanes and the scalar remainder give the same bits (numeric
    rows, `num`), and the NaN rows are NaN in every column."""
    bits = out.view(torch.int32)
    assert torch.equal(bits[num], bits[num, :1].expand(-1, bits.shape[1])), fn
    assert torch.isnan(out[~num]).all(), fn


def _assert_half_within_one_ulp(out: torch.Tensor, want: torch.Tensor, dt: torch.dtype, fn: str):
    """fp16/bf16 results: the same NaN and inf positions as torch's, finite ones within one ulp of the dtype
    (relative 2^-7 / 2^-10, at least one ulp of the smallest normal)."""
    assert torch.equal(torch.isnan(out), torch.isnan(want)) and torch.equal(torch.isinf(out), torch.isinf(want)), fn
    fin = want.isfinite()
    ulp = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10}[dt]
    tol = torch.clamp(want[fin].double().abs() * ulp, min=torch.finfo(dt).smallest_normal * ulp)
    assert ((out[fin].double() - want[fin].double()).abs() <= tol * 1.0001).all(), fn


@pytest.mark.parametrize("fn", list(FUNCS))
def test_vector_lanes_and_the_scalar_tail_agree_bit_for_bit(fn):
    """A row of 67 copies of one value: g++ computes the first 64 in vector lanes and the last 3 in the loop's
    scalar remainder (and the fused code in other splits still): every copy has the same bits."""
    (lo, hi), _ = FUNCS[fn]
    v = torch.cat([_sample(lo, hi, 1 << 22), _f32(SPECIAL_BITS)])
    x = v[:, None].expand(-1, 67).contiguous()
    out = torch.full_like(x, 7.0)
    unary_rows(x, out, fn=fn)
    _assert_rows_agree(out, ~torch.isnan(v), fn)


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fn", list(FUNCS))
def test_half_types_within_one_ulp_of_torch(fn, dt):
    """fp16/bf16 are computed in float and rounded once: within one ulp of the dtype of torch's result."""
    pdt = pypto.DT_BF16 if dt == torch.bfloat16 else pypto.DT_FP16
    H1 = pypto.Tensor([pypto.DYNAMIC], pdt)

    @pypto.frontend.jit
    def half_unary(x: H1, out: H1, fn="tanh"):
        out[:] = getattr(pypto, fn)(x)

    (lo, hi), _ = FUNCS[fn]
    finfo = torch.finfo(dt)
    xs = torch.linspace(max(lo, -60.0), min(hi, 60.0), 4001).to(dt)
    if fn.startswith("log") and fn != "log1p":
        xs = torch.cat([xs.abs() + finfo.tiny, torch.logspace(-6, 4, 500).to(dt)])
    out = torch.zeros_like(xs)
    half_unary(xs, out, fn=fn)
    want = _torch(fn, xs.float()).to(dt)
    _assert_half_within_one_ulp(out, want, dt, fn)


@pytest.mark.parametrize("fn", ["sin", "cos", "tan"])
def test_trig_near_multiples_of_half_pi_and_at_huge_arguments(fn):
    """The floats nearest k pi/2 (k < 2^17: the Cody-Waite reduction; from 2^20: the Payne-Hanek one, where the
    result is most sensitive to the reduction's precision) and the floats around the powers of two up to 2^127:
    within the bound of the fp64 result."""
    k = np.arange(1, 1 << 17, dtype=np.float64)
    near = np.float32(k * (np.pi / 2))
    near = np.concatenate([near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(0))])
    big = np.float32(2.0) ** np.arange(-10, 128, dtype=np.float32)
    big = np.concatenate([big, np.nextafter(big, np.float32(0)), -big * np.float32(0.75)])
    x = torch.from_numpy(np.concatenate([near, big]).astype(np.float32))
    out = torch.full_like(x, 7.0)
    unary(x, out, fn=fn)
    exact = _ref(fn, x)
    fin = exact.float().isfinite() & (exact.float() != 0)
    assert bool(fin.all())
    err = _ulp_error(out, exact)
    assert err.max().item() <= FUNCS[fn][1], (fn, err.max().item(), x[err.argmax()].item())


@pytest.mark.parametrize("fn", ["sin", "cos", "tan"])
def test_trig_blocks_with_a_huge_lane_give_the_scalar_bits(fn):
    """fp32 sin/cos/tan run in blocks of 64 (pypto_rt::sin_block & co.), with only the fast reduction where every
    |x| of a block is below 2^20. Blocks with one huge, infinite or NaN lane among small ones, blocks of lanes at
    the 2^20 edge, and all-small blocks: every element has the bits it gets alone (a run shorter than a block
    takes the plain per-element loop), whichever reduction its block used."""
    g = torch.Generator().manual_seed(5)
    x = (torch.rand(64 * 12 + 5, generator=g, dtype=torch.float64) * 200 - 100).float()
    edge = _f32(np.array([_bits_of(2.0 ** 20) + d for d in range(-3, 4)], dtype=np.int64))
    x[70] = 3.0e30                      # block 1: one huge lane
    x[130], x[200] = float("inf"), float("nan")         # blocks 2 and 3
    x[256:263] = edge                   # block 4: the threshold and its neighbours
    x[320:327] = -edge
    x[400] = 2.0 ** 20 - 64             # block 6: the largest small lane class, alone
    out = torch.full_like(x, 7.0)
    unary(x, out, fn=fn)
    alone = torch.full_like(x, 7.0)
    for i in range(0, x.numel(), 63):
        piece = x[i:i + 63].clone()
        got = torch.full_like(piece, 7.0)
        unary(piece, got, fn=fn)
        alone[i:i + 63] = got
    assert torch.equal(out.view(torch.int32), alone.view(torch.int32)), fn
    exact = _ref(fn, x)
    fin = exact.float().isfinite() & (exact.float() != 0)
    assert _ulp_error(out[fin], exact[fin]).max().item() <= FUNCS[fn][1], fn
    assert torch.isnan(out[~torch.isfinite(x)]).all(), fn


@pytest.mark.parametrize("fn", ["sin", "cos", "erf"])
def test_bf16_functions_give_the_fp32_functions_bf16_on_every_input(fn):
    """bf16 sin/cos of a bf16 value run in blocks (pypto_rt::sin_bf16_block & co.) that reduce in float where every
    |x| of a block is below 512, bf16 erf runs pypto_rt::erf_bf16_ (one polynomial in place of erf_'s exp): on
    every one of the 65536 bf16 values, at two alignments (so each value falls once in a block, once elsewhere in
    a block or in the scalar tail), the result is the fp32 function's, rounded to bf16."""
    H1 = pypto.Tensor([pypto.DYNAMIC], pypto.DT_BF16)

    @pypto.frontend.jit
    def bf16_unary(x: H1, out: H1, fn="sin"):
        out[:] = getattr(pypto, fn)(x)

    xs = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    ref32 = torch.full(xs.shape, 7.0)
    unary(xs.float(), ref32, fn=fn)
    want = ref32.to(torch.bfloat16)
    nan = torch.isnan(want)
    assert bool((torch.isnan(xs) | torch.isinf(xs))[nan].all())
    assert int((xs.float().abs() < 512).sum()) > 30000           # most inputs take the float reduction
    for start in (0, 13):
        x = xs[start:].contiguous()
        out = torch.zeros_like(x)
        bf16_unary(x, out, fn=fn)
        assert torch.isnan(out[nan[start:]]).all(), fn
        assert torch.equal(out[~nan[start:]].view(torch.int16), want[start:][~nan[start:]].view(torch.int16)), fn


# two-argument functions: bound in ulp of the fp64 result (benchmarks/vmath_ulp.cpp's pairs, docs/language.md)
FUNCS2 = {"pow": 0.55, "atan2": 2.1, "hypot": 0.55}


@pypto.frontend.jit
def binary(a: F1, b: F1, out: F1, fn="pow"):
    out[:] = getattr(pypto, fn)(a, b)


def _second_args():
    base = [0.5, 1.5, 2.5, 1.0 / 3, 0.1, 7.25, 10.0, 20.5, 33.0, 100.0, 1e-3, 1e4, 1e20, 1e-20]
    v = np.array(list(range(-8, 9)) + base + [-b for b in base], dtype=np.float32)
    nz = v[v != 0]
    return np.concatenate([v, np.nextafter(nz, np.float32(0)), np.nextafter(nz, np.float32(np.inf))])


def _pairs(fn):
    a = _sample(-3.4e38, 3.4e38, 1 << 19).numpy()
    b = _second_args()
    x, y = np.repeat(a, len(b)), np.tile(b, len(a))
    if fn != "pow":
        x, y = np.concatenate([x, y]), np.concatenate([y, x])
    return torch.from_numpy(x.copy()), torch.from_numpy(y.copy())


@pytest.mark.parametrize("fn", list(FUNCS2))
def test_two_argument_functions_within_their_bound(fn):
    x, y = _pairs(fn)
    out = torch.full_like(x, 7.0)
    binary(x, y, out, fn=fn)
    exact = getattr(torch, fn)(x.double(), y.double())
    ef = exact.float()
    assert torch.equal(torch.isnan(out), torch.isnan(ef)), fn
    exact_vals = torch.isinf(ef) | (ef == 0)
    assert torch.equal(out[exact_vals].view(torch.int32), ef[exact_vals].view(torch.int32)), fn
    fin = torch.isfinite(ef) & (ef != 0)
    err = _ulp_error(out[fin], exact[fin])
    assert err.max().item() <= FUNCS2[fn], (fn, err.max().item(), x[fin][err.argmax()].item(),
                                            y[fin][err.argmax()].item())


SPECIAL2 = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, 2.5,
            -2.5, 1e-45, -1e-45, 3.4e38, -3.4e38, 16777217.0]


@pytest.mark.parametrize("fn", list(FUNCS2))
def test_two_argument_specials_are_torchs(fn):
    """Every pair of the special values (signed zeros, infinities, NaN, +-1, odd and even integers, halves,
    subnormals, the largest floats): torch's fp32 result exactly where it is NaN, a zero or an infinity (the IEEE
    rules: pow(x, 0) = 1, pow(1, y) = 1, pow(-1, inf) = 1, negative x with an odd integer y, atan2's quadrants,
    hypot(inf, nan) = inf), within the bound elsewhere."""
    v = torch.tensor(SPECIAL2, dtype=torch.float32)
    x, y = v.repeat_interleave(len(v)), v.repeat(len(v))
    out = torch.full_like(x, 7.0)
    binary(x, y, out, fn=fn)
    want = getattr(torch, fn)(x, y)
    exact = getattr(torch, fn)(x.double(), y.double())
    assert torch.equal(torch.isnan(out), torch.isnan(want)), (fn, x[torch.isnan(out) != torch.isnan(want)])
    ev = torch.isinf(want) | (want == 0)
    assert torch.equal(out[ev].view(torch.int32), want[ev].view(torch.int32)), fn
    fin = torch.isfinite(exact.float()) & (exact.float() != 0)
    assert _ulp_error(out[fin], exact[fin]).max().item() <= FUNCS2[fn]


@pytest.mark.parametrize("fn", list(FUNCS2))
def test_two_argument_lanes_and_tail_agree(fn):
    a = torch.cat([_sample(-3.4e38, 3.4e38, 1 << 24), torch.tensor(SPECIAL2)])
    b = torch.from_numpy(_second_args())[: len(a)]
    b = b.repeat(len(a) // len(b) + 1)[: len(a)]
    x, y = a[:, None].expand(-1, 67).contiguous(), b[:, None].expand(-1, 67).contiguous()
    B2 = F2

    @pypto.frontend.jit
    def binary_rows(p: B2, q: B2, out: B2, fn="pow"):
        out[:] = getattr(pypto, fn)(p, q)

    out = torch.full_like(x, 7.0)
    binary_rows(x, y, out, fn=fn)
    _assert_rows_agree(out, ~torch.isnan(out[:, 0]), fn)


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fn", list(FUNCS2))
def test_two_argument_half_types_within_one_ulp_of_torch(fn, dt):
    pdt = pypto.DT_BF16 if dt == torch.bfloat16 else pypto.DT_FP16
    H1 = pypto.Tensor([pypto.DYNAMIC], pdt)

    @pypto.frontend.jit
    def half_binary(a: H1, b: H1, out: H1, fn="pow"):
        out[:] = getattr(pypto, fn)(a, b)

    a = torch.linspace(-8.0, 8.0, 161)
    b = torch.tensor([-3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0])
    x, y = a.repeat_interleave(len(b)).to(dt), b.repeat(len(a)).to(dt)
    out = torch.zeros_like(x)
    half_binary(x, y, out, fn=fn)
    want = getattr(torch, fn)(x.float(), y.float()).to(dt)
    _assert_half_within_one_ulp(out, want, dt, fn)
