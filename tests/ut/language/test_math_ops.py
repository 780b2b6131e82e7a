"""The reference's elementwise math functions against torch (erfc, round(decimals=) and trunc included): dtypes,
integer promotion, specials, broadcasting, fused == unfused bit for bit, verify stages, and the errors for dtypes
and arguments they refuse.

Float results come from the C library (kernel_rt.h); torch uses its own vectorized implementations, so the two
agree to within a few units in the last place (ulp): at most 3 ulp for fp32/fp64 and 1 ulp for fp16/bf16 (the fp32
result rounded once), the bounds docs/language.md states. Everything exact (reciprocal, fmod, sign, the integer and
bool ops, lrelu/prelu) is compared bit for bit.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import pypto
from pypto.errors import KernelTraceError
from pypto.testing import build_source
from pypto.verify import launch

T = pypto.Tensor
HALF = (torch.float16, torch.bfloat16)
_BITS = {torch.float32: (torch.int32, 31), torch.float64: (torch.int64, 63), torch.float16: (torch.int16, 15),
         torch.bfloat16: (torch.int16, 15)}


def _ordered(t):
    """Float bits as integers that count ulps (-0.0 and +0.0 both 0)."""
    it, bits = _BITS[t.dtype]
    i = t.view(it).to(torch.int64)
    return torch.where(i < 0, -(i & ((1 << bits) - 1)), i)


def assert_ulps(out, want, ulps, x=None):
    assert out.dtype == want.dtype and out.shape == want.shape, (out.dtype, want.dtype, out.shape, want.shape)
    d = (_ordered(out) - _ordered(want)).abs()
    na, nb = torch.isnan(out), torch.isnan(want)
    d = torch.where(na & nb, 0, torch.where(na ^ nb, 1 << 62, d))
    worst = int(d.argmax())
    assert d.max() <= ulps, (f"{int(d.max())} ulp apart at {worst}: got {out.flatten()[worst].item()}, torch "
                             f"{want.flatten()[worst].item()}" + (f", x={x.flatten()[worst].item()}" if x is not None
                                                                  else ""))


def _unary_kernel(name):
    def body(x: T, out: T):
        out[:] = getattr(pypto, name)(x)

    body.__name__ = f"k_{name}"
    return pypto.frontend.jit(body)


def _binary_kernel(name):
    def body(a: T, b: T, out: T):
        out[:] = getattr(pypto, name)(a, b)

    body.__name__ = f"k_{name}"
    return pypto.frontend.jit(body)


_K = {}


def run_unary(name, x, out_dtype=None):
    k = _K.setdefault(("u", name), _unary_kernel(name))
    out = torch.full(x.shape, 7, dtype=out_dtype or x.dtype)
    k(x, out)
    return out


def run_binary(name, a, b, out_dtype, out_shape=None):
    k = _K.setdefault(("b", name), _binary_kernel(name))
    out = torch.full(out_shape or torch.broadcast_shapes(a.shape, b.shape), 7, dtype=out_dtype)
    k(a, b, out)
    return out


def _cbrt(x):
    """torch has no cbrt: numpy's (fp16/bf16 computed in float32 and rounded once, as every op here)."""
    wide = x.float() if x.dtype in HALF or not x.dtype.is_floating_point else x
    return torch.from_numpy(np.cbrt(wide.numpy())).to(x.dtype if x.dtype.is_floating_point else torch.float32)


# name -> (torch reference, input range, specials whose results torch defines)
FLOAT_UNARY = {
    "sin": (torch.sin, (-20, 20)), "cos": (torch.cos, (-20, 20)), "tan": (torch.tan, (-20, 20)),
    "asin": (torch.asin, (-1, 1)), "acos": (torch.acos, (-1, 1)), "atan": (torch.atan, (-50, 50)),
    "sinh": (torch.sinh, (-20, 20)), "cosh": (torch.cosh, (-20, 20)), "asinh": (torch.asinh, (-50, 50)),
    "acosh": (torch.acosh, (1, 50)), "atanh": (torch.atanh, (-1, 1)), "erf": (torch.erf, (-5, 5)),
    "exp2": (torch.exp2, (-130, 130)), "expm1": (torch.expm1, (-10, 10)), "log2": (torch.log2, (0, 100)),
    "log10": (torch.log10, (0, 100)), "log1p": (torch.log1p, (-1, 50)), "cbrt": (_cbrt, (-100, 100)),
    "reciprocal": (torch.reciprocal, (-10, 10)),
}
SPECIALS = [0.0, -0.0, 1.0, -1.0, float("inf"), -float("inf"), float("nan"), 1e-30, -1e-30, 3e4, -3e4, 0.5, 2.0]


def _inputs(name, dt, n=1500, seed=0):
    lo, hi = FLOAT_UNARY[name][1]
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo
    x = torch.cat([torch.tensor(SPECIALS, dtype=torch.float64), x]).to(dt)
    return x.reshape(-1, 59) if x.numel() % 59 == 0 else x


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary_fp32_fp64_within_3_ulp_of_torch_including_specials(name):
    ref = FLOAT_UNARY[name][0]
    for dt in (torch.float32, torch.float64):
        x = _inputs(name, dt)
        out = run_unary(name, x)
        want = ref(x)
        assert_ulps(out, want, 0 if name == "reciprocal" else 3, x)
        # specials exactly: inf / nan / signed zero as torch gives them
        s = slice(0, len(SPECIALS))
        o, w = out[:len(SPECIALS)], want[:len(SPECIALS)]
        assert torch.equal(torch.isnan(o), torch.isnan(w)) and torch.equal(torch.isinf(o), torch.isinf(w)), (o, w)
        fin = torch.isinf(w)
        assert torch.equal(o[fin], w[fin]), (name, o, w, s)


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("dt", HALF)
def test_float_unary_half_types_computed_in_fp32_and_rounded_once(name, dt):
    x = _inputs(name, dt, n=300, seed=1)
    out = run_unary(name, x)
    assert_ulps(out, FLOAT_UNARY[name][0](x.float()).to(dt), 1, x)    # torch's fp32 result rounded once
    # torch at dt itself: the same but where its reduced-precision path differs (bf16 erf flushes tiny x to 0)
    tol = {torch.float16: 1e-3, torch.bfloat16: 8e-3}[dt]
    torch.testing.assert_close(out, FLOAT_UNARY[name][0](x), rtol=tol, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", ["sin", "exp2", "log2", "atan", "reciprocal", "cbrt", "expm1"])
@pytest.mark.parametrize("idt", [torch.int32, torch.int8, torch.uint8, torch.int64, torch.bool])
def test_float_unary_of_integers_and_bool_gives_fp32_like_torch(name, idt):
    x = torch.arange(-6, 7).reshape(13, 1).to(idt)
    out = run_unary(name, x, torch.float32)
    want = FLOAT_UNARY[name][0](x)
    assert want.dtype == torch.float32
    assert_ulps(out, want, 3, x)


def test_large_arguments_of_sin_cos_tan_are_reduced_exactly():
    x = torch.tensor([1e4, -1e5, 1e6, 12345.678, 3.0e7, 1e10, 2.0 ** 60], dtype=torch.float32)
    for name in ("sin", "cos", "tan"):
        assert_ulps(run_unary(name, x), getattr(torch, name)(x), 2, x)


# ---- binaries ------------------------------------------------------------------------------------------------

def _rand(shape, dt, lo=-5.0, hi=5.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dt)


@pytest.mark.parametrize("name", ["atan2", "hypot"])
@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_atan2_hypot_broadcast_and_agree_with_torch(name, dt):
    a, b = _rand((5, 1, 7), dt, seed=1), _rand((3, 1), dt, seed=2)
    a[0, 0, :4] = torch.tensor([0.0, -0.0, float("inf"), float("nan")], dtype=dt)
    b[:2, 0] = torch.tensor([-0.0, float("inf")], dtype=dt)
    out = run_binary(name, a, b, dt)
    want = getattr(torch, name)(a, b)
    assert_ulps(out, want, 1 if dt in HALF else 3)


def test_atan2_quadrants_and_integer_operands():
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, 0.0, -0.0, 0.0, -0.0])
    x = torch.tensor([1.0, 1.0, -1.0, -1.0, -0.0, -0.0, 0.0, 0.0])
    assert_ulps(run_binary("atan2", y, x, torch.float32), torch.atan2(y, x), 0)
    yi, xi = torch.arange(-3, 3, dtype=torch.int32), torch.tensor([2], dtype=torch.int32)
    assert_ulps(run_binary("atan2", yi, xi, torch.float32), torch.atan2(yi, xi), 1)
    want = torch.hypot(yi.float(), xi.float())            # torch.hypot refuses integers; here they give FP32
    assert_ulps(run_binary("hypot", yi, xi, torch.float32), want, 1)


@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_fmod_is_exact_with_the_sign_of_the_dividend(dt):
    a, b = _rand((4, 9), dt, -20, 20, seed=3), _rand((9,), dt, -4, 4, seed=4)
    a[0, :3] = torch.tensor([-0.0, float("inf"), float("nan")], dtype=dt)
    b[3:5] = torch.tensor([0.0, float("inf")], dtype=dt)
    out = run_binary("fmod", a, b, dt)
    want = torch.fmod(a, b)
    assert_ulps(out, want, 0)
    assert torch.equal(torch.signbit(out[~torch.isnan(out)]), torch.signbit(want[~torch.isnan(want)]))


def test_fmod_integers_and_a_scalar_divisor():
    a = torch.arange(-9, 10, dtype=torch.int32).reshape(19, 1)
    b = torch.tensor([3, -4, 7, 1, -1], dtype=torch.int32)
    assert torch.equal(run_binary("fmod", a, b, torch.int32), torch.fmod(a, b))

    @pypto.frontend.jit
    def fmod_scalar(x: T, out: T):
        out[:] = pypto.fmod(x, 1.5) + x.fmod(-0.75, precision_type=pypto.PrecisionType.INTRINSIC)

    for dt in (torch.float32, torch.float16):
        x = _rand((6, 8), dt, -10, 10, seed=5)
        out = torch.zeros_like(x)
        fmod_scalar(x, out)
        assert torch.equal(out, torch.fmod(x, 1.5) + torch.fmod(x, -0.75))


def test_integer_fmod_by_zero_gives_zero_where_torch_raises():
    a = torch.tensor([5, -5, 7], dtype=torch.int64)
    b = torch.tensor([0, 0, 2], dtype=torch.int64)
    assert run_binary("fmod", a, b, torch.int64).tolist() == [0, 0, 1]


def test_floor_div_is_floor_divide():
    a, b = _rand((6, 5), torch.float32, seed=6), _rand((5,), torch.float32, seed=7)
    assert torch.equal(run_binary("floor_div", a, b, torch.float32), torch.floor_divide(a, b))
    ai = torch.arange(-12, 12, dtype=torch.int32).reshape(4, 6)
    bi = torch.tensor([5, -5, 3, -3, 7, 2], dtype=torch.int32)
    assert torch.equal(run_binary("floor_div", ai, bi, torch.int32), torch.floor_divide(ai, bi))


# ---- integer and bool ops ---------------------------------------------------------------------------------------

INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def _ints(shape, dt, seed):
    g = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dt)
    lo, hi = max(info.min, -2 ** 40), min(info.max, 2 ** 40)
    x = torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dt)
    return x


@pytest.mark.parametrize("dt", INTS)
def test_bitwise_and_or_xor_gcd_agree_with_torch_with_broadcasting(dt):
    a, b = _ints((6, 1, 8), dt, 1), _ints((3, 8), dt, 2)
    b[0, :3] = 0
    a[0, 0, :2] = 0
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "gcd"):
        out = run_binary(name, a, b, dt)
        assert torch.equal(out, getattr(torch, name)(a, b)), name


@pytest.mark.parametrize("dt", INTS)
def test_shifts_agree_with_torch_including_counts_past_the_width(dt):
    a = _ints((5, 1), dt, 3)
    a[0, 0] = torch.iinfo(dt).min
    a[1, 0] = torch.iinfo(dt).max
    counts = [0, 1, 3, 7, 8, 15, 16, 31, 32, 63]
    b = torch.tensor([c for c in counts if c <= torch.iinfo(dt).max], dtype=torch.int64).to(dt)
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        out = run_binary(name, a, b, dt)
        assert torch.equal(out, getattr(torch, name)(a, b)), (name, out, getattr(torch, name)(a, b))


def test_shift_negative_counts_and_int_operands():
    a = torch.tensor([-100, -1, 1, 100], dtype=torch.int32)
    b = torch.tensor([-1, -33, 40, 2], dtype=torch.int32)
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        assert torch.equal(run_binary(name, a, b, torch.int32), getattr(torch, name)(a, b)), name

    @pypto.frontend.jit
    def shifts_with_ints(x: T, out: T):
        out[:] = pypto.bitwise_left_shift(1, x) + pypto.bitwise_right_shift(x, 1) + pypto.gcd(x, 6)

    x = torch.arange(0, 12, dtype=torch.int32)
    out = torch.zeros_like(x)
    shifts_with_ints(x, out)
    assert torch.equal(out, torch.bitwise_left_shift(1, x) + torch.bitwise_right_shift(x, 1) + torch.gcd(
        x, torch.tensor(6, dtype=torch.int32)))


@pytest.mark.parametrize("dt", INTS + [torch.bool])
def test_bitwise_not(dt):
    x = _ints((4, 7), dt, 5) if dt != torch.bool else torch.rand(4, 7) > 0.5
    assert torch.equal(run_unary("bitwise_not", x), torch.bitwise_not(x))


def test_bitwise_ops_on_bool_and_mixed_bool_int():
    a, b = torch.rand(3, 8) > 0.5, torch.rand(8) > 0.3
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        assert torch.equal(run_binary(name, a, b, torch.bool), getattr(torch, name)(a, b)), name
    i = torch.arange(8, dtype=torch.int32)
    assert torch.equal(run_binary("bitwise_or", a, i, torch.int32), torch.bitwise_or(a, i))


def test_logical_and_mixed_dtypes_nan_is_true():
    a = torch.tensor([[0.0, 1.0, float("nan"), -0.0, 2.5]])
    b = torch.tensor([[3], [0]], dtype=torch.int32)
    out = run_binary("logical_and", a, b, torch.bool)
    assert torch.equal(out, torch.logical_and(a, b))
    m = torch.rand(2, 5) > 0.5
    assert torch.equal(run_binary("logical_and", m, a.to(torch.bfloat16), torch.bool), torch.logical_and(m, a))


# ---- sign, predicates ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                                torch.int32, torch.int64])
def test_sign_signbit_isnan_isfinite(dt):
    if dt.is_floating_point:
        x = torch.tensor(SPECIALS + [-2.5, 1e-3, -float("nan")], dtype=dt)
    else:
        x = torch.tensor([0, 1, -1, torch.iinfo(dt).min, torch.iinfo(dt).max, 5, -7], dtype=dt)
    x = x.reshape(1, -1).expand(2, -1).contiguous()
    s = run_unary("sign", x)
    assert torch.equal(_ordered(s) if dt.is_floating_point else s,
                       _ordered(torch.sign(x)) if dt.is_floating_point else torch.sign(x))
    for name in ("signbit", "isnan", "isfinite"):
        assert torch.equal(run_unary(name, x, torch.bool), getattr(torch, name)(x)), name


# ---- lrelu / prelu ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_lrelu_bit_for_bit_with_torch_leaky_relu(dt):
    @pypto.frontend.jit
    def lrelus(x: T, o1: T, o2: T):
        o1[:] = pypto.lrelu(x)
        o2[:] = x.lrelu(negative_slope=0.2)

    x = _rand((7, 33), dt, seed=8)
    x[0, :4] = torch.tensor([-0.0, float("nan"), -float("inf"), float("inf")], dtype=dt)
    o1, o2 = torch.zeros_like(x), torch.zeros_like(x)
    lrelus(x, o1, o2)
    assert_ulps(o1, F.leaky_relu(x), 0)
    assert_ulps(o2, F.leaky_relu(x, 0.2), 0)


@pytest.mark.parametrize("shape", [(9,), (4, 6), (2, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16])
def test_prelu_per_channel_weights_bit_for_bit_with_torch(shape, dt):
    x = _rand(shape, dt, seed=9)
    c = shape[1] if len(shape) >= 2 else 1
    w = _rand((c,), dt, -1, 1, seed=10)
    out = run_binary("prelu", x, w, dt, x.shape)
    assert_ulps(out, torch.prelu(x, w), 0)
    if len(shape) >= 2:                        # one weight shared by every channel, as torch.prelu allows
        w1 = torch.tensor([0.25], dtype=dt)
        assert_ulps(run_binary("prelu", x, w1, dt, x.shape), torch.prelu(x, w1), 0)


# ---- precision_type, fused vs unfused, verify ------------------------------------------------------------------

def test_precision_type_is_accepted_on_the_functions_that_document_it_and_changes_nothing():
    @pypto.frontend.jit
    def with_precision(x: T, out: T):
        hp, intr = pypto.PrecisionType.HIGH_PRECISION, pypto.PrecisionType.INTRINSIC
        out[:] = (pypto.log2(x, intr) + pypto.log10(x, precision_type=hp) + pypto.reciprocal(x, hp)
                  + pypto.exp(x, intr) + pypto.log(x, intr) + pypto.sqrt(x, hp) + pypto.rsqrt(x, intr)
                  + pypto.div(x, 3.0, hp) + pypto.remainder(x, 0.7, hp) + pypto.fmod(x, 0.3, intr))

    x = _rand((5, 8), torch.float32, 0.1, 4, seed=11)
    out = torch.zeros_like(x)
    with_precision(x, out)
    want = (torch.log2(x) + torch.log10(x) + torch.reciprocal(x) + torch.exp(x) + torch.log(x) + torch.sqrt(x)
            + torch.rsqrt(x) + x / 3.0 + torch.remainder(x, 0.7) + torch.fmod(x, 0.3))
    torch.testing.assert_close(out, want, rtol=2e-6, atol=2e-6)


def test_fused_and_unfused_builds_are_bit_identical_and_verify_passes():
    def chain(x: T, y: T, i: T, out: T, m: T, n: T):
        a = pypto.sin(x) * pypto.cos(y) + pypto.atan2(x, y) - pypto.hypot(x, y) * 0.5
        b = pypto.expm1(a * 0.1) + pypto.log1p(pypto.abs(x)) + pypto.cbrt(y) + pypto.erf(x) + pypto.exp2(y)
        c = pypto.asinh(b) + pypto.atan(x) + pypto.tanh(y) + pypto.sinh(x * 0.2) + pypto.cosh(y * 0.2)
        d = pypto.fmod(c, 0.75) + pypto.reciprocal(c + 10.0) + pypto.lrelu(c, 0.1) + pypto.sign(x)
        out[:] = d + pypto.log2(pypto.abs(c) + 1.0) + pypto.log10(pypto.abs(d) + 1.0)
        m[:] = pypto.logical_and(pypto.isfinite(d), pypto.signbit(x))
        n[:] = pypto.bitwise_xor(pypto.gcd(i, 12), pypto.bitwise_left_shift(i, 3)) + pypto.bitwise_not(i)

    x, y = _rand((37, 70), torch.float32, seed=12), _rand((37, 70), torch.float32, seed=13)
    i = torch.randint(-1000, 1000, (37, 70), dtype=torch.int32)
    outs = {}
    for fuse in (True, False):
        bufs = [torch.zeros(37, 70), torch.zeros(37, 70, dtype=torch.bool), torch.zeros(37, 70, dtype=torch.int32)]
        lib, src = build_source(chain, (x, y, i, *bufs), fuse)
        assert ("// fused:" in src) == fuse
        launch(lib, [x, y, i, *bufs], num_threads=2)
        outs[fuse] = bufs
    for f, u in zip(outs[True], outs[False]):
        assert torch.equal(f.view(torch.int8) if f.dtype == torch.bool else f.view(torch.int32),
                           u.view(torch.int8) if u.dtype == torch.bool else u.view(torch.int32))
    # the verify interpreter (torch) agrees with the compiled kernel
    k = pypto.frontend.jit(chain, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [1e-4, 1e-4]})
    bufs = [torch.zeros(37, 70), torch.zeros(37, 70, dtype=torch.bool), torch.zeros(37, 70, dtype=torch.int32)]
    k(x, y, i, *bufs)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    assert all(torch.equal(a, b) for a, b in zip(bufs, outs[True]))


# ---- errors: kernel, op, parameter, expected and got named; outputs untouched ----------------------------------

def _refused(kernel, args, out, *needles):
    before = out.clone()
    with pytest.raises(KernelTraceError) as e:
        kernel(*args)
    msg = str(e.value)
    for n in needles:
        assert n in msg, (n, msg)
    assert torch.equal(out, before)
    return msg


def test_bitwise_and_gcd_shift_of_floats_are_refused():
    for name, needles in (("bitwise_and", ("k_bitwise_and", "bitwise_and", "other", "float32", "int32")),
                          ("gcd", ("k_gcd", "gcd:", "other", "float32", "integer")),
                          ("bitwise_left_shift", ("k_bitwise_left_shift", "other", "float32"))):
        a, b = torch.arange(6, dtype=torch.int32), torch.ones(6)
        out = torch.full((6,), 3, dtype=torch.int32)
        k = _K.setdefault(("b", name), _binary_kernel(name))
        _refused(k, (a, b, out), out, *needles)
    x = torch.ones(4, dtype=torch.float16)
    out = torch.full((4,), 2.0, dtype=torch.float16)
    k = _K.setdefault(("u", "bitwise_not"), _unary_kernel("bitwise_not"))
    _refused(k, (x, out), out, "k_bitwise_not", "bitwise_not", "input", "float16")
    b = torch.ones(4, dtype=torch.bool)
    outb = torch.full((4,), 5, dtype=torch.int32)
    _refused(_K.setdefault(("b", "gcd"), _binary_kernel("gcd")), (b, torch.ones(4, dtype=torch.int32), outb), outb,
             "gcd", "input", "bool")


def test_lrelu_prelu_sign_argument_errors():
    @pypto.frontend.jit
    def bad_slope(x: T, out: T):
        out[:] = pypto.lrelu(x, -0.5)

    @pypto.frontend.jit
    def int_lrelu(x: T, out: T):
        out[:] = pypto.lrelu(x)

    @pypto.frontend.jit
    def bool_sign(x: T, out: T):
        out[:] = pypto.sign(x)

    x, out = torch.randn(3, 4), torch.full((3, 4), 9.0)
    _refused(bad_slope, (x, out), out, "bad_slope", "lrelu", "negative_slope", ">= 0", "-0.5")
    xi, outi = torch.ones(3, 4, dtype=torch.int32), torch.full((3, 4), 9, dtype=torch.int32)
    _refused(int_lrelu, (xi, outi), outi, "int_lrelu", "lrelu", "input", "float", "int32")
    xb = torch.ones(3, 4, dtype=torch.bool)
    _refused(bool_sign, (xb, outi), outi, "bool_sign", "sign", "bool")
    w = torch.ones(5)
    _refused(_K.setdefault(("b", "prelu"), _binary_kernel("prelu")), (x, w, out), out, "k_prelu", "prelu",
             "weight", "1 or 4", "[5]")
    w16 = torch.ones(4, dtype=torch.float16)
    _refused(_K["b", "prelu"], (x, w16, out), out, "prelu", "weight", "float32", "float16")


def test_math_of_a_python_number_and_bad_precision_type_are_refused():
    @pypto.frontend.jit
    def sin_number(x: T, out: T):
        out[:] = x + pypto.sin(0.5)

    @pypto.frontend.jit
    def bad_precision(x: T, out: T):
        out[:] = pypto.log2(x, precision_type="FASTEST")

    x, out = torch.ones(4), torch.full((4,), 3.0)
    _refused(sin_number, (x, out), out, "sin_number", "sin", "0.5")
    _refused(bad_precision, (x, out), out, "bad_precision", "log2", "precision_type", "FASTEST", "INTRINSIC")


# ---- erfc --------------------------------------------------------------------------------------------------------

@pypto.frontend.jit
def k_erfc(x: T, out: T):
    out[:] = pypto.erfc(x)


@pypto.frontend.jit
def k_erfc_chain(x: T, out: T):
    out[:] = pypto.erfc(x * 0.5 + 1.0) * 2.0 - x     # fused: erfc inlined in one expression


def _x(dtype, n=257, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, generator=g, dtype=torch.float64) * 24.0 - 12.0).to(dtype)


def test_erfc_fp32_fp64_within_a_few_ulps_of_torch_including_the_tail():
    # erfc(x) falls to ~1e-38 near x = 9.2 and underflows past 10 in fp32; relative accuracy in the tail matters
    for dt, rtol in ((torch.float32, 4e-6), (torch.float64, 1e-12)):
        x = _x(dt)
        x[:6] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 26.0], dtype=dt)
        out = torch.full_like(x, 7.0)
        k_erfc(x, out)
        want = torch.erfc(x)
        torch.testing.assert_close(out, want, rtol=rtol, atol=0, equal_nan=True)
        assert out[2] == 0.0 and out[3] == 2.0 and torch.isnan(out[4]) and out[0] == 1.0


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_erfc_half_types_computed_in_fp32_and_rounded_once(dt):
    x = _x(dt, n=130, seed=1).reshape(2, 65)
    out = torch.zeros_like(x)
    k_erfc(x, out)
    # rounding the fp32 result once: equal to torch's fp32 erfc rounded to dt, up to a last-bit tie
    want = torch.erfc(x.float()).to(dt)
    torch.testing.assert_close(out, want, rtol=2e-3 if dt == torch.float16 else 1.6e-2, atol=0)
    torch.testing.assert_close(out, torch.erfc(x), rtol=2e-3 if dt == torch.float16 else 1.6e-2, atol=1e-7)


def test_erfc_of_integers_gives_fp32_like_torch():
    x = torch.arange(-4, 5, dtype=torch.int32).reshape(3, 3)
    out = torch.zeros(3, 3)
    k_erfc(x, out)
    want = torch.erfc(x)
    assert want.dtype == torch.float32
    torch.testing.assert_close(out, want, rtol=4e-6, atol=0)


def test_erfc_inside_a_fused_chain_and_under_verify():
    x = _x(torch.float32, n=96, seed=2).reshape(3, 32)
    out = torch.zeros_like(x)
    k_erfc_chain(x, out)
    torch.testing.assert_close(out, torch.erfc(x * 0.5 + 1.0) * 2.0 - x, rtol=4e-6, atol=4e-6)

    def body(x: T, out: T):
        out[:] = pypto.erfc(x) + pypto.exp(x * 0.1)

    k = pypto.frontend.jit(body, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [1e-5, 1e-5]})
    out = torch.zeros_like(x)
    k(x, out)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    torch.testing.assert_close(out, torch.erfc(x) + torch.exp(x * 0.1), rtol=1e-5, atol=1e-5)


def test_erfc_of_a_scalar_is_refused_naming_kernel_and_op_and_outputs_stay():
    @pypto.frontend.jit
    def erfc_scalar(x: T, out: T):
        out[:] = x + pypto.erfc(1.5)

    out = torch.full((4,), 3.0)
    with pytest.raises(KernelTraceError) as e:
        erfc_scalar(torch.ones(4), out)
    msg = str(e.value)
    assert "erfc_scalar" in msg and "erfc" in msg.replace("erfc_scalar", "") and "1.5" in msg, msg
    torch.testing.assert_close(out, torch.full((4,), 3.0), rtol=0, atol=0)


# ---- round(decimals=), trunc -------------------------------------------------------------------------------------

F32 = pypto.DT_FP32


@pypto.frontend.jit
def k_round(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32), decimals: int):
    out[:] = pypto.round(a, decimals=decimals)


@pypto.frontend.jit
def k_round16(a: pypto.Tensor([], pypto.DT_FP16), out: pypto.Tensor([], pypto.DT_FP16), decimals: int):
    out[:] = pypto.round(a, decimals)


@pypto.frontend.jit
def k_trunc(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    out[:] = pypto.trunc(a)


@pypto.frontend.jit
def k_trunc_fused(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    out[:] = pypto.trunc(a * 3.0) + 1.0


@pypto.frontend.jit
def k_trunc_int(a: pypto.Tensor([], pypto.DT_INT32), out: pypto.Tensor([], pypto.DT_INT32)):
    out[:] = pypto.trunc(a)


def test_round_with_decimals_matches_torch_bit_for_bit():
    a = torch.randn(4, 16) * 100
    for d in (0, 1, 2, 3, -1, -2):
        out = torch.zeros_like(a)
        k_round(a, out, d)
        assert torch.equal(out, torch.round(a, decimals=d)), d


def test_round_fp16_with_decimals_matches_torch():
    a = (torch.randn(4, 16) * 10).half()
    for d in (1, -1):
        out = torch.zeros_like(a)
        k_round16(a, out, d)
        torch.testing.assert_close(out, torch.round(a, decimals=d), rtol=0, atol=0)


def test_round_decimals_must_be_a_static_int_and_outputs_stay():
    @pypto.frontend.jit
    def bad_round(a: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
        out[:] = pypto.round(a, decimals=1.5)

    out = torch.full((4,), 5.0)
    with pytest.raises(KernelTraceError) as e:
        bad_round(torch.ones(4), out)
    assert "bad_round" in str(e.value) and "decimals" in str(e.value) and "1.5" in str(e.value)
    torch.testing.assert_close(out, torch.full((4,), 5.0))


def test_trunc_matches_torch_for_floats_ints_and_inside_a_fused_chain():
    a = torch.randn(8, 8) * 10
    a[0, :4] = torch.tensor([float("inf"), -float("inf"), -0.5, 2.5])
    out = torch.zeros_like(a)
    k_trunc(a, out)
    assert torch.equal(out, torch.trunc(a))
    k_trunc_fused(a, out)
    assert torch.equal(out, torch.trunc(a * 3.0) + 1.0)
    ai = torch.randint(-50, 50, (3, 5), dtype=torch.int32)
    oi = torch.zeros_like(ai)
    k_trunc_int(ai, oi)
    assert torch.equal(oi, ai)
