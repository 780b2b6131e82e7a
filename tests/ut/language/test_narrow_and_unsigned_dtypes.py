"""uint16/32/64, FP8 (e4m3fn, e5m2, e8m0fnu) and the packed FP4 pair (float4_e2m1fn_x2) in kernels.

uint16/32/64 are full integer types (C unsigned arithmetic, wraparound): checked against numpy, since torch
implements few ops on them. FP8 and FP4 are storage types: passed in and out, copied, viewed, assembled, cast
exactly as torch's .to() does (every FP8 byte value, and float32 values around every rounding boundary), read
as float by matmul; any other arithmetic on them is a trace error naming the op and the dtype.
"""
import numpy as np
import pytest
import torch

import pypto
from callpath._util import assert_untouched, raises, snap

FP8 = [("float8_e4m3fn", pypto.DT_FP8E4M3), ("float8_e5m2", pypto.DT_FP8E5M2),
       ("float8_e8m0fnu", pypto.DT_FP8E8M0)]
UINTS = [(np.uint16, pypto.DT_UINT16), (np.uint32, pypto.DT_UINT32), (np.uint64, pypto.DT_UINT64)]


def _cast_kernel(src, dst):
    @pypto.frontend.jit
    def cast_k(a: pypto.Tensor([], src), out: pypto.Tensor([], dst)):
        pypto.set_vec_tile_shapes(64)
        out[:] = pypto.cast(a, dst)
    return cast_k


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


# ---- FP8 conversions, bit for bit against torch ---------------------------------------------------------------

@pytest.mark.parametrize("tname,dt", FP8)
@pytest.mark.parametrize("wide", [torch.float32, torch.float16, torch.bfloat16])
def test_fp8_every_byte_value_widens_as_torch(tname, dt, wide):
    a = torch.arange(256, dtype=torch.uint8).view(getattr(torch, tname))
    out = torch.zeros(256, dtype=wide)
    _cast_kernel(dt, pypto.vocab.dtypes.from_torch(wide))(a, out)
    ref = a.to(wide)
    if wide == torch.bfloat16:
        # torch's own NaN payloads in bf16 differ by path (fp8 -> bf16 gives 0x7fc0, float32 -> bf16 0xffff): NaN
        # is compared as NaN, every other value bit for bit
        assert torch.equal(out.isnan(), ref.isnan())
        out, ref = out[~ref.isnan()], ref[~ref.isnan()]
    assert torch.equal(_bits(out), _bits(ref))       # float32 / float16: NaN bit patterns included


def _float_probe():
    """Random float32 bit patterns (every class: NaN, inf, subnormal) and values at, just inside and just outside
    every rounding boundary of the FP8 formats: each representable value times (1 +- 2^-k)."""
    g = torch.Generator().manual_seed(11)
    rnd = torch.randint(-2 ** 31, 2 ** 31 - 1, (100000,), generator=g, dtype=torch.int64).to(torch.int32)
    vals = torch.cat([torch.arange(256, dtype=torch.uint8).view(getattr(torch, n)).float() for n, _ in FP8])
    vals = vals[torch.isfinite(vals)]
    mids = torch.cat([vals * f for f in (1.0625, 1.125, 1.25, 1.5, 0.96875, 0.9375, 0.75, 1 + 2 ** -20,
                                         1 - 2 ** -20)])
    edges = torch.tensor([464.0, 465.0, 479.99, 480.0, 1e30, 57344.0, 61439.0, 61440.0, 65536.0, float("inf"),
                          -float("inf"), float("nan"), -float("nan"), 0.0, -0.0, 1e-40, 2.0 ** -10, 1.5 * 2 ** -10,
                          1.5 * 2 ** -17, 2.0 ** -127, 3.0 * 2 ** -128, 1.5 * 2 ** 127])
    return torch.cat([rnd.view(torch.float32), vals, -vals, mids, -mids, edges])


@pytest.mark.parametrize("tname,dt", FP8)
def test_fp32_to_fp8_rounds_and_saturates_as_torch(tname, dt):
    x = _float_probe()
    out = torch.zeros(len(x), dtype=getattr(torch, tname))
    _cast_kernel(pypto.DT_FP32, dt)(x, out)
    ref = x.to(getattr(torch, tname))
    bad = (_bits(out) != _bits(ref)).nonzero().flatten()
    assert len(bad) == 0, [(x[i].item(), hex(_bits(out)[i].item()), hex(_bits(ref)[i].item())) for i in bad[:5]]


@pytest.mark.parametrize("tname,dt", FP8)
@pytest.mark.parametrize("src", [torch.float16, torch.bfloat16, torch.float64, torch.int32])
def test_other_dtypes_to_fp8_as_torch(tname, dt, src):
    x = _float_probe()
    x = x[torch.isfinite(x)] if src == torch.int32 else x
    x = (x.clamp(-1e9, 1e9) if src == torch.int32 else x).to(src)
    out = torch.zeros(len(x), dtype=getattr(torch, tname))
    _cast_kernel(pypto.vocab.dtypes.from_torch(src), dt)(x, out)
    ref = x.to(getattr(torch, tname))
    assert torch.equal(_bits(out), _bits(ref))


# ---- FP8 / FP4 as storage: in, out, copies, views, assemble ---------------------------------------------------

@pytest.mark.parametrize("tname,dt", FP8 + [("float4_e2m1fn_x2", pypto.DT_FP4_E2M1X2)])
def test_storage_types_copy_view_and_assemble(tname, dt):
    @pypto.frontend.jit
    def move(a: pypto.Tensor([6, 8], dt), out: pypto.Tensor([6, 8], dt), part: pypto.Tensor([2, 4], dt)):
        pypto.set_vec_tile_shapes(8, 8)
        t = pypto.view(a, [2, 4], [3, 2])
        part[:] = t
        out[:] = pypto.clone(a)
        pypto.assemble(t, [0, 4], out)
    g = torch.Generator().manual_seed(5)
    a = torch.randint(0, 256, (6, 8), generator=g, dtype=torch.uint8).view(getattr(torch, tname))
    out = torch.zeros(6, 8, dtype=torch.uint8).view(a.dtype)
    part = torch.zeros(2, 4, dtype=torch.uint8).view(a.dtype)
    move(a, out, part)
    ab = a.view(torch.uint8)
    ref = ab.clone()
    ref[0:2, 4:8] = ab[3:5, 2:6]
    assert torch.equal(out.view(torch.uint8), ref)
    assert torch.equal(part.view(torch.uint8), ab[3:5, 2:6])


def test_fp4_x2_shape_counts_bytes_as_torch():
    @pypto.frontend.jit
    def rows(a: pypto.Tensor([], pypto.DT_FP4_E2M1X2), out: pypto.Tensor([], pypto.DT_FP4_E2M1X2)):
        pypto.set_vec_tile_shapes(4, 4)
        out[:] = a
    # 4 x 3 bytes = 4 x 6 FP4 values, as torch.float4_e2m1fn_x2 counts them
    a = torch.arange(12, dtype=torch.uint8).reshape(4, 3).view(torch.float4_e2m1fn_x2)
    out = torch.zeros(4, 3, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    rows(a, out)
    assert list(out.shape) == [4, 3] and torch.equal(out.view(torch.uint8), a.view(torch.uint8))


def test_fp8_roundtrip_through_fp32_compute():
    """The supported way to compute: cast to float, compute, cast back (each step as torch)."""
    @pypto.frontend.jit
    def scale(a: pypto.Tensor([], pypto.DT_FP8E4M3), out: pypto.Tensor([], pypto.DT_FP8E4M3)):
        pypto.set_vec_tile_shapes(32)
        out[:] = pypto.cast(pypto.cast(a, pypto.DT_FP32) * 1.5 + 0.25, pypto.DT_FP8E4M3)
    a = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn)
    out = torch.zeros(256, dtype=torch.float8_e4m3fn)
    scale(a, out)
    assert torch.equal(out.view(torch.uint8), (a.float() * 1.5 + 0.25).to(torch.float8_e4m3fn).view(torch.uint8))


@pytest.mark.parametrize("tname,dt", FP8[:2])
def test_fp8_matmul_reads_as_float(tname, dt):
    @pypto.frontend.jit
    def mm(a: pypto.Tensor([32, 64], dt), b: pypto.Tensor([64, 32], dt), out: pypto.Tensor([32, 32], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])   # fp8: 32-element alignment, as the reference
        out[:] = pypto.matmul(a, b)
    g = torch.Generator().manual_seed(2)
    # small integers: every product and sum is exact in float32, so the order of accumulation does not matter
    a = torch.randint(-4, 5, (32, 64), generator=g).float().to(getattr(torch, tname))
    b = torch.randint(-4, 5, (64, 32), generator=g).float().to(getattr(torch, tname))
    out = torch.zeros(32, 32)
    mm(a, b, out)
    assert torch.equal(out, a.float() @ b.float())


# ---- clear errors where an op does not support the dtype --------------------------------------------------------

@pytest.mark.parametrize("opname", ["add", "exp", "sum", "maximum"])
def test_fp8_arithmetic_is_a_trace_error_naming_op_and_dtype(opname):
    fn = getattr(pypto, opname)

    @pypto.frontend.jit
    def k_arith(a: pypto.Tensor([8], pypto.DT_FP8E5M2), out: pypto.Tensor([8], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8)
        r = fn(a) if opname in ("exp", "sum") else fn(a, a)
        out[:] = pypto.cast(r, pypto.DT_FP32)
    a = torch.ones(8).to(torch.float8_e5m2)
    out = torch.full((8,), 3.0)
    before = snap(out)
    raises(pypto.KernelTraceError, lambda: k_arith(a, out), "kernel 'k_arith'", opname, "float8_e5m2",
           "not supported", "pypto.cast")
    assert_untouched(before, out)


def test_fp4_x2_cast_to_an_integer_is_a_clear_trace_error():
    @pypto.frontend.jit
    def k_fp4(a: pypto.Tensor([4], pypto.DT_FP4_E2M1X2), out: pypto.Tensor([8], pypto.DT_INT16)):
        out[:] = pypto.cast(a, pypto.DT_INT16)
    a = torch.zeros(4, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    out = torch.full((8,), 2, dtype=torch.int16)
    before = snap(out)
    raises(pypto.KernelTraceError, lambda: k_fp4(a, out), "kernel 'k_fp4'", "cast", "float4_e2m1fn_x2",
           "int16", "not supported", "DT_FP32, DT_FP16, DT_BF16 only")
    assert_untouched(before, out)


def test_uint_mixed_with_signed_is_refused_as_in_torch():
    @pypto.frontend.jit
    def k_mix(a: pypto.Tensor([4], pypto.DT_UINT32), b: pypto.Tensor([4], pypto.DT_INT32),
              out: pypto.Tensor([4], pypto.DT_INT64)):
        out[:] = pypto.cast(a + b, pypto.DT_INT64)
    out = torch.full((4,), 9, dtype=torch.int64)
    before = snap(out)
    raises(pypto.KernelTraceError, lambda: k_mix(torch.ones(4, dtype=torch.uint32), torch.ones(4, dtype=torch.int32),
                                                 out), "kernel 'k_mix'", "uint32", "int32", "cannot be combined")
    assert_untouched(before, out)
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported"):
        torch.promote_types(torch.uint32, torch.int32)


def test_storage_scalar_parameter_is_a_definition_error():
    with pytest.raises(pypto.KernelDefinitionError,
                       match=r"kernel 'k_s': parameter 's': scalar dtype pypto.DT_FP8E4M3 is not supported"):
        @pypto.frontend.jit
        def k_s(a: pypto.Tensor([4], pypto.DT_FP32), s: pypto.Scalar[pypto.DT_FP8E4M3]):
            pass


# ---- uint16/32/64: full integer types, against numpy ------------------------------------------------------------

def _uint_data(np_dt, n=64, seed=0):
    rng = np.random.default_rng(seed)
    hi = np.iinfo(np_dt).max
    edge = np.array([0, 1, 2, 3, hi, hi - 1, hi // 2, hi // 2 + 1], dtype=np_dt)
    return np.concatenate([edge, rng.integers(0, hi, n - len(edge), dtype=np_dt, endpoint=True)])


@pytest.mark.parametrize("np_dt,dt", UINTS)
def test_uint_arithmetic_wraps_as_numpy(np_dt, dt):
    @pypto.frontend.jit
    def arith(a: pypto.Tensor([], dt), b: pypto.Tensor([], dt), s: pypto.Tensor([], dt), d: pypto.Tensor([], dt),
              p: pypto.Tensor([], dt), q: pypto.Tensor([], dt), r: pypto.Tensor([], dt), mx: pypto.Tensor([], dt),
              mn: pypto.Tensor([], dt), ng: pypto.Tensor([], dt)):
        pypto.set_vec_tile_shapes(16)
        s[:] = a + b
        d[:] = a - b
        p[:] = a * b + 7
        q[:] = a // b
        r[:] = a % b
        mx[:] = pypto.maximum(a, b)
        mn[:] = pypto.minimum(a, b)
        ng[:] = -a
    a, b = _uint_data(np_dt, seed=1), _uint_data(np_dt, seed=2)[::-1].copy()
    outs = [np.zeros_like(a) for _ in range(8)]
    arith(a, b, *outs)
    with np.errstate(all="ignore"):
        safe = np.where(b == 0, 1, b)
        refs = [a + b, a - b, a * b + np_dt(7), np.where(b == 0, 0, a // safe), np.where(b == 0, 0, a % safe),
                np.maximum(a, b), np.minimum(a, b), (np_dt(0) - a)]
    for i, (o, ref) in enumerate(zip(outs, refs)):
        assert o.dtype == np_dt and np.array_equal(o, ref.astype(np_dt)), i


@pytest.mark.parametrize("np_dt,dt", UINTS)
def test_uint_compare_and_where(np_dt, dt):
    @pypto.frontend.jit
    def cmp(a: pypto.Tensor([], dt), b: pypto.Tensor([], dt), lt: pypto.Tensor([], pypto.DT_BOOL),
            ge: pypto.Tensor([], pypto.DT_BOOL), eq: pypto.Tensor([], pypto.DT_BOOL), w: pypto.Tensor([], dt)):
        pypto.set_vec_tile_shapes(16)
        lt[:] = a < b
        ge[:] = a >= b
        eq[:] = a == b
        w[:] = pypto.where(a > b, a, b)
    a, b = _uint_data(np_dt, seed=3), _uint_data(np_dt, seed=4)
    b[:8] = a[:8]
    lt, ge, eq = (np.zeros(len(a), bool) for _ in range(3))
    w = np.zeros_like(a)
    cmp(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(lt), torch.from_numpy(ge), torch.from_numpy(eq),
        torch.from_numpy(w))   # torch tensors in, compared with numpy
    assert np.array_equal(lt, a < b) and np.array_equal(ge, a >= b) and np.array_equal(eq, a == b)
    assert np.array_equal(w, np.where(a > b, a, b))


@pytest.mark.parametrize("np_dt,dt", UINTS)
def test_uint_reductions_as_numpy(np_dt, dt):
    @pypto.frontend.jit
    def red(a: pypto.Tensor([], dt), s: pypto.Tensor([], dt), mx: pypto.Tensor([], dt), mn: pypto.Tensor([], dt)):
        pypto.set_vec_tile_shapes(4, 16)
        s[:] = pypto.sum(a, 1)
        mx[:] = pypto.amax(a, 1)
        mn[:] = pypto.amin(a, 1)
    a = _uint_data(np_dt, n=4 * 40, seed=5).reshape(4, 40)
    s, mx, mn = (np.zeros(4, np_dt) for _ in range(3))
    red(a, s, mx, mn)
    # pypto's integer sums keep the input dtype (wrapping; docs/language.md), numpy's sum(dtype=...) likewise
    assert np.array_equal(s, a.sum(axis=1, dtype=np_dt))
    assert np.array_equal(mx, a.max(axis=1)) and np.array_equal(mn, a.min(axis=1))


@pytest.mark.parametrize("np_dt,dt", UINTS)
def test_uint_casts_as_torch(np_dt, dt):
    @pypto.frontend.jit
    def casts(a: pypto.Tensor([], dt), f: pypto.Tensor([], pypto.DT_FP32), d: pypto.Tensor([], pypto.DT_FP64),
              i: pypto.Tensor([], pypto.DT_INT64), u8: pypto.Tensor([], pypto.DT_UINT8),
              back: pypto.Tensor([], dt)):
        pypto.set_vec_tile_shapes(16)
        f[:] = pypto.cast(a, pypto.DT_FP32)
        d[:] = pypto.cast(a, pypto.DT_FP64)
        i[:] = pypto.cast(a, pypto.DT_INT64)
        u8[:] = pypto.cast(a, pypto.DT_UINT8)
        back[:] = pypto.cast(pypto.cast(a, pypto.DT_FP64), dt)
    a = _uint_data(np_dt, seed=6)
    a[a > np.iinfo(np_dt).max // 2] //= 2      # float -> uint64 beyond 2^63 differs between libraries; keep below
    ta = torch.from_numpy(a)
    f, d, i = torch.zeros(len(a)), torch.zeros(len(a), dtype=torch.float64), torch.zeros(len(a), dtype=torch.int64)
    u8, back = torch.zeros(len(a), dtype=torch.uint8), torch.zeros_like(ta)
    casts(ta, f, d, i, u8, back)
    assert torch.equal(f, ta.to(torch.float32)) and torch.equal(d, ta.to(torch.float64))
    assert torch.equal(i, ta.to(torch.int64)) and torch.equal(u8, ta.to(torch.uint8))
    assert torch.equal(back, ta.to(torch.float64).to(ta.dtype))


def test_uint_plus_scalar_and_float_promotion():
    @pypto.frontend.jit
    def sc(a: pypto.Tensor([], pypto.DT_UINT16), b: pypto.Tensor([], pypto.DT_FP32),
           o: pypto.Tensor([], pypto.DT_UINT16), f: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16)
        o[:] = a * 3 + 65535
        f[:] = a + b            # uint16 (+) float32 -> float32, as torch.promote_types
    a = _uint_data(np.uint16, seed=7)
    b = np.linspace(-3, 3, len(a), dtype=np.float32)
    o, f = np.zeros_like(a), np.zeros(len(a), np.float32)
    sc(a, b, o, f)
    with np.errstate(all="ignore"):
        assert np.array_equal(o, a * np.uint16(3) + np.uint16(65535))
    assert torch.promote_types(torch.uint16, torch.float32) == torch.float32
    assert np.array_equal(f, (torch.from_numpy(a) + torch.from_numpy(b)).numpy())


# ---- call path: the readers and their messages --------------------------------------------------------------------

def _copy_kernel(dt):
    @pypto.frontend.jit
    def k_copy(a: pypto.Tensor([4], dt), out: pypto.Tensor([4], dt)):
        out[:] = a
    return k_copy


@pytest.mark.parametrize("tname,dt", [("uint16", pypto.DT_UINT16), ("uint32", pypto.DT_UINT32),
                                      ("uint64", pypto.DT_UINT64)] + FP8 + [("float4_e2m1fn_x2",
                                                                           pypto.DT_FP4_E2M1X2)])
def test_torch_tensors_of_every_new_dtype_pass_through(tname, dt):
    tdt = getattr(torch, tname)
    raw = torch.tensor([1, 2, 200, 255], dtype=torch.uint8)
    a = raw.to(tdt) if tname.startswith("uint") else raw.view(tdt)
    out = torch.zeros(4, dtype=torch.uint8).to(tdt) if tname.startswith("uint") else torch.zeros(4, dtype=torch.uint8).view(tdt)
    _copy_kernel(dt)(a, out)
    assert torch.equal(_bits(out), _bits(a))


@pytest.mark.parametrize("np_dt,dt", UINTS)
def test_numpy_uint_arrays_pass_through(np_dt, dt):
    a = np.array([1, 2, np.iinfo(np_dt).max, 0], dtype=np_dt)
    out = np.zeros(4, np_dt)
    _copy_kernel(dt)(a, out)
    assert np.array_equal(out, a)


@pytest.mark.parametrize("dt,arg,got", [
    (pypto.DT_UINT32, lambda: torch.zeros(4, dtype=torch.uint16), "uint16"),
    (pypto.DT_UINT64, lambda: np.zeros(4, np.int64), "int64"),
    (pypto.DT_INT64, lambda: np.zeros(4, np.uint64), "uint64"),
    (pypto.DT_FP8E4M3, lambda: torch.zeros(4, dtype=torch.float8_e5m2), "float8_e5m2"),
    (pypto.DT_FP8E8M0, lambda: torch.zeros(4, dtype=torch.uint8), "uint8"),
    (pypto.DT_UINT8, lambda: torch.zeros(4, dtype=torch.float4_e2m1fn_x2), "float4_e2m1fn_x2"),
])
def test_wrong_new_dtype_names_kernel_parameter_expected_got(dt, arg, got):
    k = _copy_kernel(dt)
    a = arg()
    tdt = pypto.vocab.dtypes.to_torch(dt)
    out = torch.full((4,), 5, dtype=torch.uint8)
    out = out.view(tdt) if dt.storage_only else out.to(tdt)
    before = snap(out)
    raises(TypeError, lambda: k(a, out), "kernel 'k_copy'", "parameter 'a'", f"expected dtype {dt.short}",
           f"got {got}")
    assert_untouched(before, out)


# ---- verify_options: the IR interpreter knows the new dtypes -----------------------------------------------------

def test_verify_interprets_uint_and_fp8_kernels():
    def body(a: pypto.Tensor([], pypto.DT_UINT64), b: pypto.Tensor([], pypto.DT_UINT64),
             x: pypto.Tensor([], pypto.DT_FP32), m: pypto.Tensor([], pypto.DT_UINT64),
             lt: pypto.Tensor([], pypto.DT_BOOL), s: pypto.Tensor([], pypto.DT_UINT64),
             q: pypto.Tensor([], pypto.DT_FP8E4M3), y: pypto.Tensor([], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16)
        m[:] = pypto.maximum(a, b) * 3 - b
        lt[:] = a < b
        s[:] = pypto.amax(a, 0, keepdim=True) + pypto.amin(b, 0, keepdim=True)
        q[:] = pypto.cast(x, pypto.DT_FP8E4M3)
        y[:] = pypto.cast(q, pypto.DT_FP32) * 2.0
    k = pypto.frontend.jit(body, verify_options={"enable_pass_verify": True})
    a, b = _uint_data(np.uint64, 32, seed=8), _uint_data(np.uint64, 32, seed=9)
    x = np.linspace(-600, 600, 32, dtype=np.float32)
    m, s = np.zeros_like(a), np.zeros(1, np.uint64)
    lt = np.zeros(32, bool)
    q, y = torch.zeros(32, dtype=torch.float8_e4m3fn), np.zeros(32, np.float32)
    k(a, b, x, m, lt, s, q, y)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    with np.errstate(all="ignore"):
        assert np.array_equal(m, np.maximum(a, b) * np.uint64(3) - b)
        assert np.array_equal(s, np.array([a.max() + b.min()], np.uint64))
    assert np.array_equal(lt, a < b)
    tq = torch.from_numpy(x).to(torch.float8_e4m3fn)
    assert torch.equal(q.view(torch.uint8), tq.view(torch.uint8))
    assert np.array_equal(y, (tq.float() * 2.0).numpy())


def test_export_manifest_names_the_new_dtypes(tmp_path):
    import json

    @pypto.frontend.jit
    def k_exp(a: pypto.Tensor([4], pypto.DT_UINT32), q: pypto.Tensor([4], pypto.DT_FP8E5M2),
              p: pypto.Tensor([4], pypto.DT_FP4_E2M1X2), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = pypto.cast(a, pypto.DT_FP32) + pypto.cast(q, pypto.DT_FP32)
    # example specs materialize as zero tensors of the torch dtype
    pypto.export([k_exp], tmp_path, examples={"k_exp": [tuple(pypto.Tensor([4], d) for d in (
        pypto.DT_UINT32, pypto.DT_FP8E5M2, pypto.DT_FP4_E2M1X2, pypto.DT_FP32))]})
    m = json.loads((tmp_path / "manifest.json").read_text())
    kern = m["kernels"][0]
    assert [p["dtype"] for p in kern["params"]] == ["uint32", "float8_e5m2", "float4_e2m1fn_x2", "float32"]
    assert [t["dtype"] for t in kern["specializations"][0]["tensors"]] == [
        "uint32", "float8_e5m2", "float4_e2m1fn_x2", "float32"]
    # and the kernel computes as torch does
    a = torch.tensor([1, 2, 3, 4], dtype=torch.uint32)
    q = torch.tensor([0.5, 1.5, -2.0, 3.0]).to(torch.float8_e5m2)
    out = torch.zeros(4)
    k_exp(a, q, torch.zeros(4, dtype=torch.uint8).view(torch.float4_e2m1fn_x2), out)
    assert torch.equal(out, a.to(torch.float32) + q.float())
