"""Quantization ops against references written here: the FP4 E2M1 x2 casts (every byte, every rounding boundary,
saturation), quantize / dequantize, quant_mx (OCP and NV shared exponents, FP8 and FP4), scaled_mm (FP8 and FP4
operands with MX scales), pack / unpack, expand_exp_dif; error paths name the kernel, the op and what was
expected, and leave the outputs untouched."""
import enum
from fractions import Fraction

import pytest
import torch

import pypto
from callpath._util import assert_untouched, raises, snap

FP4 = pypto.DT_FP4_E2M1X2
WIDE = [(torch.float32, pypto.DT_FP32), (torch.float16, pypto.DT_FP16), (torch.bfloat16, pypto.DT_BF16)]
MAGS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]          # E2M1 magnitudes of codes 0..7 (OCP MX 1.0)


# ---- table-based FP4 E2M1 reference --------------------------------------------------------------------------
def fp4_value(code: int) -> float:
    v = MAGS[code & 7]
    return -v if code & 8 else v


def fp4_code(x: float) -> int:
    """Nearest E2M1 code by table search: ties to the even code (mantissa bit 0), |x| beyond 6 (inf too)
    saturates to 6, the sign bit is kept (-0.1 -> -0), NaN -> +6 (the reference's encoder)."""
    if x != x:
        return 7
    sign = 8 if torch.tensor(x).signbit().item() else 0
    a = abs(x)
    if a >= 6.0:
        return sign | 7
    dist = [abs(Fraction(a) - Fraction(m)) for m in MAGS]
    best = min(dist)
    codes = [c for c in range(8) if dist[c] == best]
    code = codes[0] if len(codes) == 1 else next(c for c in codes if c % 2 == 0)
    return sign | code


def fp4_decode(packed: torch.Tensor) -> torch.Tensor:
    """bytes [..., n] -> float32 [..., 2n], low nibble first."""
    b = packed.view(torch.uint8)
    table = torch.tensor([fp4_value(c) for c in range(16)])
    return torch.stack([table[(b & 15).long()], table[(b >> 4).long()]], -1).flatten(-2)


def fp4_encode(x: torch.Tensor) -> torch.Tensor:
    """float [..., 2n] -> uint8 bytes [..., n]."""
    codes = torch.tensor([fp4_code(v) for v in x.float().flatten().tolist()], dtype=torch.uint8).reshape(x.shape)
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def _cast_kernel(src, dst, tiles=(64,)):
    @pypto.frontend.jit
    def cast_k(a: pypto.Tensor([], src), out: pypto.Tensor([], dst)):
        pypto.set_vec_tile_shapes(*tiles)
        out[:] = pypto.cast(a, dst)
    return cast_k


def _fp4(shape) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)


# ---- FP4 casts -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("td,dt", WIDE)
def test_fp4_every_byte_unpacks_by_table(td, dt):
    a = torch.arange(256, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    out = torch.full((512,), 9.0, dtype=td)
    _cast_kernel(FP4, dt)(a, out)
    ref = torch.tensor([fp4_value(c) for b in range(256) for c in (b & 15, b >> 4)]).to(td)
    assert torch.equal(out.view(torch.int16 if td != torch.float32 else torch.int32),
                       ref.view(torch.int16 if td != torch.float32 else torch.int32))   # -0.0 included


def _fp4_probe() -> torch.Tensor:
    """Every representable value, the midpoints between neighbours (ties), points just beside them, values
    beyond the largest, inf, NaN, signed zeros, subnormals and random floats."""
    grid = sorted(set(MAGS))
    mids = [(x + y) / 2 for x, y in zip(grid, grid[1:])]
    near = [m * (1 + s * 2 ** -k) for m in mids for s in (-1, 1) for k in (4, 10, 20)]
    edges = [6.0, 6.5, 7.0, 7.99, 8.0, 1e30, float("inf"), float("nan"), 0.0, -0.0, 1e-40, 2.0 ** -126, 0.2499,
             0.2501, 5.0, 5.0001, 4.9999, 3.5, 2.5, 1.25, 1.75, 0.75]
    vals = grid + mids + near + edges
    g = torch.Generator().manual_seed(3)
    rnd = (torch.rand(400, generator=g) * 16 - 8).tolist()
    vals = vals + rnd
    return torch.tensor(vals + [-v for v in vals])


@pytest.mark.parametrize("td,dt", WIDE)
def test_fp4_pack_rounds_nearest_even_and_saturates(td, dt):
    x = _fp4_probe().to(td)                       # the reference reads the same (rounded) input values
    out = _fp4(len(x) // 2)
    _cast_kernel(dt, FP4)(x, out)
    ref = fp4_encode(x.float())
    bad = (out.view(torch.uint8) != ref).nonzero().flatten()
    assert len(bad) == 0, [(x[2 * i].item(), x[2 * i + 1].item(), hex(out.view(torch.uint8)[i].item()),
                            hex(ref[i].item())) for i in bad[:5]]


def test_fp4_every_byte_round_trips_through_fp32():
    @pypto.frontend.jit
    def trip(a: pypto.Tensor([16, 16], FP4), out: pypto.Tensor([16, 16], FP4), wide: pypto.Tensor([16, 32])):
        pypto.set_vec_tile_shapes(8, 16)
        w = pypto.cast(a, pypto.DT_FP32)
        wide[:] = w
        out[:] = pypto.cast(w, FP4)
    a = torch.arange(256, dtype=torch.uint8).reshape(16, 16).view(torch.float4_e2m1fn_x2)
    out, wide = _fp4((16, 16)), torch.zeros(16, 32)
    trip(a, out, wide)
    assert torch.equal(out.view(torch.uint8), a.view(torch.uint8))
    assert torch.equal(wide, fp4_decode(a))


def test_fp4_cast_of_a_strided_view_and_dynamic_shape():
    @pypto.frontend.jit
    def part(a: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_BF16), out: pypto.Tensor([pypto.DYNAMIC, 2], FP4)):
        pypto.set_vec_tile_shapes(4, 8)
        out[:] = pypto.cast(a[:, 2:6], FP4)
    g = torch.Generator().manual_seed(8)
    for rows in (3, 7):
        a = (torch.randn(rows, 8, generator=g) * 3).to(torch.bfloat16)
        out = _fp4((rows, 2))
        part(a, out)
        assert torch.equal(out.view(torch.uint8), fp4_encode(a[:, 2:6].float()))


# ---- quantize / dequantize -----------------------------------------------------------------------------------
def _quant_ref(x, s, zp, axis, lo, hi, td):
    s = s.unsqueeze(axis) if s.dim() < x.dim() else s
    y = x * s
    if zp is not None:
        y = y + (zp.unsqueeze(axis) if zp.dim() < x.dim() else zp)
    y = y.round().clamp(lo, hi)
    return torch.where(y.isnan(), torch.zeros_like(y), y).to(td)


@pytest.mark.parametrize("axis", [-1, -2, 1, 0])
@pytest.mark.parametrize("otype,td,lo,hi,use_zp", [(pypto.DT_INT8, torch.int8, -128, 127, False),
                                                 (pypto.DT_UINT8, torch.uint8, 0, 255, True),
                                                 (pypto.DT_INT8, torch.int8, -128, 127, True)])
def test_quantize_per_channel_rounds_half_even_and_saturates(axis, otype, td, lo, hi, use_zp):
    d = axis % 2
    sshape = [6] if d == 1 else [10]      # x is [6, 10]: axis 1 keeps rows, axis 0 keeps columns

    @pypto.frontend.jit
    def q(x: pypto.Tensor([6, 10]), s: pypto.Tensor(sshape), zp: pypto.Tensor(sshape),
          out: pypto.Tensor([6, 10], otype)):
        pypto.set_vec_tile_shapes(4, 8)
        out[:] = pypto.quantize(x, s, otype, axis, zp if use_zp else None)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 10, generator=g) * 40
    x[0, :6] = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, float("nan")])      # ties to even, NaN -> 0
    x[1, :4] = torch.tensor([1e9, -1e9, float("inf"), -float("inf")])       # saturation
    s = torch.rand(sshape, generator=g) + 0.5
    s[0] = 1.0
    zp = torch.round(torch.rand(sshape, generator=g) * 20) - 5
    zp[0] = 0.0
    out = torch.zeros(6, 10, dtype=td)
    q(x, s, zp, out)
    assert torch.equal(out, _quant_ref(x, s, zp if use_zp else None, d, lo, hi, td))


def test_quantize_documented_example_and_kept_dim_scale():
    @pypto.frontend.jit
    def q2(x: pypto.Tensor([3, 4]), s: pypto.Tensor([3, 1]), zp: pypto.Tensor([3]),
           y1: pypto.Tensor([3, 4], pypto.DT_INT8), y2: pypto.Tensor([3, 4], pypto.DT_UINT8)):
        pypto.set_vec_tile_shapes(4, 16)
        y1[:] = pypto.quantize(x, s, pypto.DT_INT8, -1, None)
        y2[:] = pypto.quantize(x, s, pypto.DT_UINT8, -1, zp)
    x = torch.tensor([[1.1, -2.2, 3.3, -4.4]] * 3)
    y1, y2 = torch.zeros(3, 4, dtype=torch.int8), torch.zeros(3, 4, dtype=torch.uint8)
    q2(x, torch.ones(3, 1), torch.full((3,), 5.0), y1, y2)
    assert y1.tolist() == [[1, -2, 3, -4]] * 3
    assert y2.tolist() == [[6, 3, 8, 1]] * 3          # round(x * 1 + 5)


@pytest.mark.parametrize("src,td", [(pypto.DT_INT8, torch.int8), (pypto.DT_INT16, torch.int16),
                                    (pypto.DT_UINT8, torch.uint8)])
@pytest.mark.parametrize("axis", [-1, -2])
def test_dequantize_per_channel(src, td, axis):
    d = axis % 3
    sshape = [2, 5, 7]
    del sshape[d]

    @pypto.frontend.jit
    def dq(x: pypto.Tensor([2, 5, 7], src), s: pypto.Tensor(sshape), zp: pypto.Tensor(sshape),
           y1: pypto.Tensor([2, 5, 7]), y2: pypto.Tensor([2, 5, 7])):
        pypto.set_vec_tile_shapes(2, 4, 8)
        y1[:] = pypto.dequantize(x, s, pypto.DT_FP32, axis)
        y2[:] = pypto.dequantize(x, s, pypto.DT_FP32, axis, zp)
    g = torch.Generator().manual_seed(4)
    lo = 0 if td == torch.uint8 else -120
    x = torch.randint(lo, 120, (2, 5, 7), generator=g).to(td)
    s = torch.rand(sshape, generator=g) / 7
    zp = torch.randn(sshape, generator=g) * 3
    y1, y2 = torch.zeros(2, 5, 7), torch.zeros(2, 5, 7)
    dq(x, s, zp, y1, y2)
    assert torch.equal(y1, x.float() * s.unsqueeze(d))
    assert torch.equal(y2, (x.float() + zp.unsqueeze(d)) * s.unsqueeze(d))


def test_quantize_dequantize_1d_round_trip():
    @pypto.frontend.jit
    def rt(x: pypto.Tensor([40]), s: pypto.Tensor([1]), inv: pypto.Tensor([1]), q: pypto.Tensor([40], pypto.DT_INT8),
           y: pypto.Tensor([40])):
        pypto.set_vec_tile_shapes(16)
        t = pypto.quantize(x, s, pypto.DT_INT8, -1)
        q[:] = t
        y[:] = pypto.dequantize(t, inv, pypto.DT_FP32, -1)
    x = torch.linspace(-3, 3, 40)
    q, y = torch.zeros(40, dtype=torch.int8), torch.zeros(40)
    rt(x, torch.tensor([127 / 3]), torch.tensor([3 / 127]), q, y)
    ref_q = (x * (127 / 3)).round().clamp(-128, 127).to(torch.int8)
    assert torch.equal(q, ref_q)
    assert torch.equal(y, ref_q.float() * torch.tensor(3 / 127))


# ---- quant_mx ----------------------------------------------------------------------------------------------------
def _mx_exponent(amax: float, nv: bool, emax: int, max_elem: float) -> int:
    if amax != amax:
        return 255
    if amax == float("inf"):
        return 254 if nv else 255 - emax
    if amax == 0:
        return 0
    a = Fraction(amax)
    if nv:
        if a <= Fraction(max_elem) / 2 ** 127:
            return 0
        k = -200
        while a > Fraction(max_elem) * Fraction(2) ** k:    # least k with amax <= max_elem * 2^k
            k += 1
        e = k + 127
    else:
        k = 0
        while Fraction(2) ** (k + 1) <= a:
            k += 1
        while Fraction(2) ** k > a:
            k -= 1                                          # k = floor(log2(amax))
        e = max(k, -127) + 127 - emax                        # a subnormal's exponent field is 0
    return min(max(e, 0), 254)


def _mx_reference(x: torch.Tensor, axis: int, fp4: bool, nv: bool):
    """(quantized bytes, scale bytes) of quant_mx, block by block along `axis`."""
    emax, max_elem = (2, 6.0) if fp4 else (8, 448.0)
    xf = x.float()
    if axis == -2:
        xf = xf.transpose(-1, -2)                           # blocks along the last dim now
    c = xf.shape[-1]
    g = (c + 63) // 64
    rows = xf.reshape(-1, c)
    scale = torch.zeros(rows.shape[0], 2 * g, dtype=torch.uint8)
    q = torch.zeros_like(rows)
    for r in range(rows.shape[0]):
        for blk in range((c + 31) // 32):
            vals = rows[r, 32 * blk: 32 * blk + 32]
            amax = float("nan") if vals.isnan().any() else vals.abs().max().item()
            e = _mx_exponent(amax, nv, emax, max_elem)
            scale[r, blk] = e
            recip = torch.tensor(float("nan") if e == 255 else 2.0 ** (127 - e), dtype=torch.float32)
            q[r, 32 * blk: 32 * blk + 32] = vals * recip
    q = q.reshape(xf.shape)
    scale = scale.reshape(*xf.shape[:-1], g, 2)
    if axis == -2:
        q = q.transpose(-1, -2)
        scale = scale.movedim(-3, -2)                       # [..., C, G, 2] -> [..., G, C, 2]
    if fp4:
        qb = fp4_encode(q)
    else:
        qb = torch.where(q.isnan(), torch.tensor(float("nan")), q.clamp(-448, 448)).to(torch.float8_e4m3fn)
        qb = torch.where(q.isnan(), torch.tensor(0x7f, dtype=torch.uint8), qb.view(torch.uint8))
    return qb, scale.contiguous()


def _mx_input(shape, td, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-6, 7, shape, generator=g).float())
    flat = x.view(-1)
    flat[:32] = 0.0                                          # an all-zero block
    special = {40: 1.75 * 2 ** 9,                            # OCP E4M3 clips this block's largest value
               70: 2 ** -130,                                # subnormal
               100: -6.0 * 2 ** 3}                           # exact NV boundary
    for i, v in special.items():
        if i < flat.numel():
            flat[i] = v
    return x.to(td)


@pytest.mark.parametrize("td,dt", WIDE)
@pytest.mark.parametrize("mode", ["ROUND_DOWN", "ROUND_UP"])
@pytest.mark.parametrize("qdt", [pypto.DT_FP8E4M3, FP4])
def test_quant_mx_last_axis(td, dt, mode, qdt):
    fp4 = qdt == FP4
    cols = 96                                                # 3 blocks: the 4th scale slot stays 0
    qcols = cols // 2 if fp4 else cols

    @pypto.frontend.jit
    def qmx(x: pypto.Tensor([4, cols], dt), q: pypto.Tensor([4, qcols], qdt),
            s: pypto.Tensor([4, 2, 2], pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(2, 64)
        qq, ss = pypto.quant_mx(x, qdt, getattr(pypto, mode), -1, True)
        q[:] = qq
        s[:] = ss
    x = _mx_input((4, cols), td, 5)
    if td == torch.float32:
        x[3, 64:96] = x[3, 64:96] * 1e30                     # large values
        x[2, 33] = float("inf")
        x[1, 65] = float("nan")
    q = torch.zeros(4, qcols, dtype=torch.uint8)
    s = torch.zeros(4, 2, 2, dtype=torch.uint8)
    qmx(x, q.view(pypto.vocab.dtypes.to_torch(qdt)), s.view(torch.float8_e8m0fnu))
    rq, rs = _mx_reference(x, -1, fp4, mode == "ROUND_UP")
    assert torch.equal(s, rs)
    bad = (q != rq).nonzero()
    assert len(bad) == 0, bad[:5].tolist()


@pytest.mark.parametrize("qdt", [pypto.DT_FP8E4M3, FP4])
@pytest.mark.parametrize("mode", ["ROUND_DOWN", "ROUND_UP"])
def test_quant_mx_second_last_axis(qdt, mode):
    fp4 = qdt == FP4

    @pypto.frontend.jit
    def qmx2(x: pypto.Tensor([2, 128, 6], pypto.DT_FP16), q: pypto.Tensor([2, 128, 3 if fp4 else 6], qdt),
             s: pypto.Tensor([2, 2, 6, 2], pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(1, 64, 8)
        qq, ss = pypto.quant_mx(x, qdt, getattr(pypto, mode), -2, False)
        q[:] = qq
        s[:] = ss
    x = _mx_input((2, 128, 6), torch.float16, 9)
    q = torch.zeros(2, 128, 3 if fp4 else 6, dtype=torch.uint8)
    s = torch.zeros(2, 2, 6, 2, dtype=torch.uint8)
    qmx2(x, q.view(pypto.vocab.dtypes.to_torch(qdt)), s.view(torch.float8_e8m0fnu))
    rq, rs = _mx_reference(x, -2, fp4, mode == "ROUND_UP")
    assert torch.equal(s, rs)
    assert torch.equal(q, rq)


def test_quant_mx_documented_shapes_and_default_arguments():
    @pypto.frontend.jit
    def qd(x: pypto.Tensor([8, 64]), q: pypto.Tensor([8, 64], pypto.DT_FP8E4M3),
           s: pypto.Tensor([8, 1, 2], pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(4, 64)
        qq, ss = pypto.quant_mx(x)
        assert list(qq.shape) == [8, 64] and qq.dtype == pypto.DT_FP8E4M3
        assert list(ss.shape) == [8, 1, 2] and ss.dtype == pypto.DT_FP8E8M0
        q[:] = qq
        s[:] = ss
    x = torch.linspace(-7.5, 7.5, 512).reshape(8, 64)
    q, s = torch.zeros(8, 64, dtype=torch.float8_e4m3fn), torch.zeros(8, 1, 2, dtype=torch.float8_e8m0fnu)
    qd(x, q, s)
    rq, rs = _mx_reference(x, -1, False, False)
    assert torch.equal(q.view(torch.uint8), rq) and torch.equal(s.view(torch.uint8), rs)
    # dequantized, every value is within the E4M3 rounding of its block
    deq = q.float() * s.float().reshape(8, 2).repeat_interleave(32, 1)
    torch.testing.assert_close(deq, x, rtol=2 ** -3, atol=0)


# ---- scaled_mm ------------------------------------------------------------------------------------------------
def _expand_scale(s: torch.Tensor, rows_first: bool, k: int) -> torch.Tensor:
    """scale bytes [R, G, 2] (rows_first) or [G, R, 2] -> float32 factors [R, K]."""
    f = s.view(torch.float8_e8m0fnu).float()
    if not rows_first:
        f = f.transpose(0, 1)
    return f.reshape(f.shape[0], -1).repeat_interleave(32, 1)[:, :k]


def _scaled_mm_ref(a, b, sa, sb, k, a_trans, b_trans, sa_trans, sb_trans, fp4):
    af = fp4_decode(a) if fp4 else a.float()
    bf = fp4_decode(b) if fp4 else b.float()
    af = af.T if a_trans else af
    bf = bf.T if b_trans else bf
    af = af * _expand_scale(sa, not sa_trans, k)
    bf = bf * _expand_scale(sb, sb_trans, k).T
    return (af.double() @ bf.double()).float()


def _small_fp8(shape, td, g):
    return torch.randint(-6, 7, shape, generator=g).float().to(td)


def _scales(shape, g):
    return torch.randint(125, 130, shape, generator=g, dtype=torch.uint8)     # 2^-2 .. 2^2


@pytest.mark.parametrize("ta,tb", [(torch.float8_e4m3fn, torch.float8_e4m3fn), (torch.float8_e5m2, torch.float8_e4m3fn),
                                   (torch.float8_e4m3fn, torch.float8_e5m2)])
@pytest.mark.parametrize("trans", [(False, False, False, False), (True, True, True, True), (False, True, True, False)])
@pytest.mark.parametrize("out_td,out_dt", [(torch.float32, pypto.DT_FP32), (torch.bfloat16, pypto.DT_BF16)])
def test_scaled_mm_fp8(ta, tb, trans, out_td, out_dt):
    at, bt, sat, sbt = trans
    m, k, n = 16, 96, 24
    g_ = (k + 63) // 64
    ashape, bshape = ([k, m] if at else [m, k]), ([n, k] if bt else [k, n])
    sashape, sbshape = ([g_, m, 2] if sat else [m, g_, 2]), ([n, g_, 2] if sbt else [g_, n, 2])
    da, db = pypto.vocab.dtypes.from_torch(ta), pypto.vocab.dtypes.from_torch(tb)

    @pypto.frontend.jit
    def smm(a: pypto.Tensor(ashape, da), b: pypto.Tensor(bshape, db), sa: pypto.Tensor(sashape, pypto.DT_FP8E8M0),
            sb: pypto.Tensor(sbshape, pypto.DT_FP8E8M0), out: pypto.Tensor([m, n], out_dt)):
        pypto.set_vec_tile_shapes(16, 32)
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
        out[:] = pypto.scaled_mm(a, b, out_dt, sa, sb, a_trans=at, b_trans=bt, scale_a_trans=sat,
                                 scale_b_trans=sbt)
    g = torch.Generator().manual_seed(12)
    a, b = _small_fp8(ashape, ta, g), _small_fp8(bshape, tb, g)
    sa, sb = _scales(sashape, g), _scales(sbshape, g)
    out = torch.zeros(m, n, dtype=out_td)
    smm(a, b, sa.view(torch.float8_e8m0fnu), sb.view(torch.float8_e8m0fnu), out)
    ref = _scaled_mm_ref(a, b, sa, sb, k, at, bt, sat, sbt, False)
    assert torch.equal(out, ref.to(out_td))                  # small integers times powers of two: exact sums


@pytest.mark.parametrize("at,bt", [(False, False), (True, True)])
def test_scaled_mm_fp4_with_bias_and_relu(at, bt):
    m, k, n = 8, 128, 16
    ashape, bshape = ([k, m // 2] if at else [m, k // 2]), ([n, k // 2] if bt else [k, n // 2])

    @pypto.frontend.jit
    def smm4(a: pypto.Tensor(ashape, FP4), b: pypto.Tensor(bshape, FP4), sa: pypto.Tensor([m, 2, 2], pypto.DT_FP8E8M0),
             sb: pypto.Tensor([2, n, 2], pypto.DT_FP8E8M0), bias: pypto.Tensor([1, n], pypto.DT_FP16),
             out: pypto.Tensor([m, n]), out_r: pypto.Tensor([m, n], pypto.DT_FP16)):
        pypto.set_vec_tile_shapes(8, 16)
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb, a_trans=at, b_trans=bt,
                                 extend_params={"bias_tensor": bias})
        out_r[:] = pypto.scaled_mm(a, b, pypto.DT_FP16, sa, sb, a_trans=at, b_trans=bt,
                                   extend_params={"relu_type": _Relu.RELU})
    g = torch.Generator().manual_seed(13)
    a = torch.randint(0, 256, ashape, generator=g, dtype=torch.uint8)
    b = torch.randint(0, 256, bshape, generator=g, dtype=torch.uint8)
    sa, sb = _scales([m, 2, 2], g), _scales([2, n, 2], g)
    bias = torch.randint(-8, 8, (1, n), generator=g).to(torch.float16)
    out, out_r = torch.zeros(m, n), torch.zeros(m, n, dtype=torch.float16)
    smm4(a.view(torch.float4_e2m1fn_x2), b.view(torch.float4_e2m1fn_x2), sa.view(torch.float8_e8m0fnu),
         sb.view(torch.float8_e8m0fnu), bias, out, out_r)
    ref = _scaled_mm_ref(a, b, sa, sb, k, at, bt, False, False, True)
    assert torch.equal(out, ref + bias.float())
    assert torch.equal(out_r, ref.relu().to(torch.float16))


class _Relu(enum.Enum):
    """A stand-in for the reference's ReLuType (scaled_mm reads relu_type by member name)."""
    NO_RELU = 0
    RELU = 1


def test_scaled_mm_k_not_a_multiple_of_64_uses_the_first_scales():
    m, k, n = 4, 80, 8

    @pypto.frontend.jit
    def smk(a: pypto.Tensor([m, k], pypto.DT_FP8E4M3), b: pypto.Tensor([k, n], pypto.DT_FP8E4M3),
            sa: pypto.Tensor([m, 2, 2], pypto.DT_FP8E8M0), sb: pypto.Tensor([2, n, 2], pypto.DT_FP8E8M0),
            out: pypto.Tensor([m, n])):
        pypto.set_cube_tile_shapes([32, 32], [32, 32], [32, 32])
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)
    g = torch.Generator().manual_seed(14)
    a, b = _small_fp8([m, k], torch.float8_e4m3fn, g), _small_fp8([k, n], torch.float8_e4m3fn, g)
    sa, sb = _scales([m, 2, 2], g), _scales([2, n, 2], g)
    sa[:, 1, 1] = 255                                        # the unused 4th block: a NaN scale must not leak
    sb[1, :, 1] = 255
    out = torch.zeros(m, n)
    smk(a, b, sa.view(torch.float8_e8m0fnu), sb.view(torch.float8_e8m0fnu), out)
    assert torch.equal(out, _scaled_mm_ref(a, b, sa, sb, k, False, False, False, False, False))
    assert not out.isnan().any()


# ---- pack / unpack / expand_exp_dif ----------------------------------------------------------------------------
@pytest.mark.parametrize("td,dt", [(torch.int32, pypto.DT_INT32), (torch.bfloat16, pypto.DT_BF16),
                                   (torch.int64, pypto.DT_INT64), (torch.uint16, pypto.DT_UINT16),
                                   (torch.float16, pypto.DT_FP16), (torch.int8, pypto.DT_INT8)])
def test_pack_and_unpack_round_trip_bytes(td, dt):
    size = torch.tensor([], dtype=td).element_size()

    @pypto.frontend.jit
    def pk(x: pypto.Tensor([3, 5], dt), y: pypto.Tensor([3 * 5 * size], pypto.DT_UINT8), back: pypto.Tensor([10], dt)):
        pypto.set_vec_tile_shapes(4, 8)
        p = pypto.pack(x)
        y[:] = p
        back[:] = pypto.unpack(pypto.pack(x[1:3, :]), dt)
    g = torch.Generator().manual_seed(21)
    x = torch.randint(-100, 100, (3, 5), generator=g).to(td)
    y, back = torch.zeros(15 * size, dtype=torch.uint8), torch.zeros(10, dtype=td)
    pk(x, y, back)
    assert torch.equal(y, x.contiguous().view(torch.uint8).flatten())
    assert torch.equal(back, x[1:3, :].flatten())


def test_pack_documented_example_and_unpack_of_a_view():
    @pypto.frontend.jit
    def pk2(x: pypto.Tensor([1, 2], pypto.DT_INT32), y: pypto.Tensor([8], pypto.DT_UINT8),
            z: pypto.Tensor([2], pypto.DT_INT16)):
        pypto.set_vec_tile_shapes(1, 2)
        y[:] = pypto.pack(x)
        z[:] = pypto.unpack(pypto.pack(x)[2:6], pypto.DT_INT16)
    x = torch.tensor([[0x03040506, 0x01050608]], dtype=torch.int32)
    y, z = torch.zeros(8, dtype=torch.uint8), torch.zeros(2, dtype=torch.int16)
    pk2(x, y, z)
    assert y.tolist() == [6, 5, 4, 3, 8, 6, 5, 1]
    assert z.tolist() == [0x0304, 0x0608]


@pytest.mark.parametrize("td,dt", WIDE)
def test_expand_exp_dif_broadcasts(td, dt):
    @pypto.frontend.jit
    def eed(x: pypto.Tensor([4, 6], dt), y: pypto.Tensor([4, 1], dt), z: pypto.Tensor([1, 1], dt),
            o1: pypto.Tensor([4, 6], dt), o2: pypto.Tensor([4, 6], dt)):
        pypto.set_vec_tile_shapes(4, 8)
        o1[:] = pypto.expand_exp_dif(x, y)
        o2[:] = pypto.expand_exp_dif(x, z)
    g = torch.Generator().manual_seed(30)
    x, y, z = (torch.randn(s, generator=g).to(td) for s in ((4, 6), (4, 1), (1, 1)))
    o1, o2 = torch.zeros(4, 6, dtype=td), torch.zeros(4, 6, dtype=td)
    eed(x, y, z, o1, o2)
    # exp is a libm call: within one float32 ulp of torch's before the one rounding to the dtype
    tol = dict(rtol=2e-7, atol=0) if td == torch.float32 else dict(rtol=0, atol=0)
    for o, other in ((o1, y), (o2, z)):
        ref = torch.exp(x.float() - other.float())
        if td == torch.float32:
            torch.testing.assert_close(o, ref, **tol)
        else:
            assert ((o.float() - ref).abs() <= ref.abs() * 2 ** -7).all()   # one rounding to the narrow dtype


def test_expand_exp_dif_documented_example():
    @pypto.frontend.jit
    def eex(x: pypto.Tensor([2, 3]), y: pypto.Tensor([2, 1]), o: pypto.Tensor([2, 3])):
        pypto.set_vec_tile_shapes(2, 4)
        o[:] = pypto.expand_exp_dif(x, y)
    o = torch.zeros(2, 3)
    eex(torch.tensor([[1.0, 2, 3], [4, 5, 6]]), torch.tensor([[1.0], [2]]), o)
    torch.testing.assert_close(o, torch.tensor([[1.0, 2.718282, 7.3890557], [7.3890557, 20.085537, 54.59815]]))


# ---- under verify: the interpreter has the same rules -------------------------------------------------------------
def test_quant_ops_under_verify_both_stages_ok():
    def body(x: pypto.Tensor([4, 64], pypto.DT_BF16), a: pypto.Tensor([4, 8], FP4), q: pypto.Tensor([4, 32], FP4),
             s: pypto.Tensor([4, 1, 2], pypto.DT_FP8E8M0), w: pypto.Tensor([4, 16]),
             p: pypto.Tensor([512], pypto.DT_UINT8),
             q8: pypto.Tensor([4, 64], pypto.DT_FP8E4M3), s8: pypto.Tensor([4, 1, 2], pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(4, 64)
        qq, ss = pypto.quant_mx(x, FP4, pypto.ROUND_UP)
        q[:] = qq
        s[:] = ss
        q8_, s8_ = pypto.quant_mx(x)
        q8[:] = q8_
        s8[:] = s8_
        w[:] = pypto.cast(a, pypto.DT_FP32)
        p[:] = pypto.pack(x)

    k = pypto.frontend.jit(body, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [0, 0]})
    g = torch.Generator().manual_seed(40)
    x = (torch.randn(4, 64, generator=g) * 5).to(torch.bfloat16)
    a = torch.randint(0, 256, (4, 8), generator=g, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    q, s, w, p = _fp4((4, 32)), torch.zeros(4, 1, 2, dtype=torch.float8_e8m0fnu), torch.zeros(4, 16), \
        torch.zeros(512, dtype=torch.uint8)
    q8, s8 = torch.zeros(4, 64, dtype=torch.float8_e4m3fn), torch.zeros(4, 1, 2, dtype=torch.float8_e8m0fnu)
    k(x, a, q, s, w, p, q8, s8)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    rq, rs = _mx_reference(x, -1, True, True)
    assert torch.equal(q.view(torch.uint8), rq) and torch.equal(s.view(torch.uint8), rs)
    rq, rs = _mx_reference(x, -1, False, False)
    assert torch.equal(q8.view(torch.uint8), rq) and torch.equal(s8.view(torch.uint8), rs)
    assert torch.equal(w, fp4_decode(a))
    assert torch.equal(p, x.view(torch.uint8).flatten())


# ---- errors: kernel, op, expected and got named; outputs untouched ----------------------------------------------
def _trace_error(kernel, args, outs, *parts, exc=pypto.KernelTraceError):
    before = snap(*outs)
    msg = raises(exc, lambda: kernel(*args), *parts)
    assert_untouched(before, *outs)
    return msg


def test_fp4_cast_errors():
    @pypto.frontend.jit
    def k_int(a: pypto.Tensor([4], FP4), out: pypto.Tensor([8], pypto.DT_INT32)):
        out[:] = pypto.cast(a, pypto.DT_INT32)
    out = torch.full((8,), 7, dtype=torch.int32)
    _trace_error(k_int, (_fp4(4), out), [out], "kernel 'k_int'", "cast", "float4_e2m1fn_x2", "int32",
                 "DT_FP32, DT_FP16, DT_BF16 only")

    @pypto.frontend.jit
    def k_odd(a: pypto.Tensor([2, 5]), out: pypto.Tensor([2, 3], FP4)):
        out[:] = pypto.cast(a, FP4)
    out4 = _fp4((2, 3))
    _trace_error(k_odd, (torch.ones(2, 5), out4), [out4], "kernel 'k_odd'", "cast", "odd last dim", "[2, 5]",
                 "must be even")

    @pypto.frontend.jit
    def k_dyn(a: pypto.Tensor([pypto.DYNAMIC]), out: pypto.Tensor([pypto.DYNAMIC], FP4)):
        pypto.set_vec_tile_shapes(16)
        out[:] = pypto.cast(a, FP4)
    out5 = torch.full((3,), 0x55, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    _trace_error(k_dyn, (torch.ones(5), out5), [out5], "kernel 'k_dyn'", "cast", "odd last dim", "must be even",
                 exc=pypto.KernelRuntimeError)


def test_quantize_errors():
    @pypto.frontend.jit
    def k_q(x: pypto.Tensor([3, 4], pypto.DT_FP16), s: pypto.Tensor([3]), out: pypto.Tensor([3, 4], pypto.DT_INT8)):
        out[:] = pypto.quantize(x, s, pypto.DT_INT8, -1)
    out = torch.full((3, 4), 5, dtype=torch.int8)
    _trace_error(k_q, (torch.ones(3, 4, dtype=torch.float16), torch.ones(3), out), [out], "kernel 'k_q'",
                 "quantize", "input must be DT_FP32", "float16")

    @pypto.frontend.jit
    def k_s(x: pypto.Tensor([3, 4]), s: pypto.Tensor([4]), out: pypto.Tensor([3, 4], pypto.DT_INT8)):
        out[:] = pypto.quantize(x, s, pypto.DT_INT8, -1)
    _trace_error(k_s, (torch.ones(3, 4), torch.ones(4), out), [out], "kernel 'k_s'", "quantize", "scale",
                 "[3]", "got [4]")

    @pypto.frontend.jit
    def k_o(x: pypto.Tensor([3, 4]), s: pypto.Tensor([3]), out: pypto.Tensor([3, 4], pypto.DT_INT16)):
        out[:] = pypto.quantize(x, s, pypto.DT_INT16, -1)
    out16 = torch.full((3, 4), 5, dtype=torch.int16)
    _trace_error(k_o, (torch.ones(3, 4), torch.ones(3), out16), [out16], "kernel 'k_o'", "quantize",
                 "otype must be DT_INT8 or DT_UINT8", "DT_INT16")

    @pypto.frontend.jit
    def k_ax(x: pypto.Tensor([2, 3, 4], pypto.DT_INT8), s: pypto.Tensor([3, 4]), out: pypto.Tensor([2, 3, 4])):
        out[:] = pypto.dequantize(x, s, pypto.DT_FP32, 0)
    outf = torch.full((2, 3, 4), 5.0)
    _trace_error(k_ax, (torch.ones(2, 3, 4, dtype=torch.int8), torch.ones(3, 4), outf), [outf], "kernel 'k_ax'",
                 "dequantize", "axis must be one of the last two dims", "got 0")


def test_quant_mx_errors():
    @pypto.frontend.jit
    def k_ax2(x: pypto.Tensor([96, 4]), q: pypto.Tensor([96, 4], pypto.DT_FP8E4M3)):
        qq, _ = pypto.quant_mx(x, pypto.DT_FP8E4M3, pypto.ROUND_DOWN, -2)
        q[:] = qq
    q = torch.zeros(96, 4, dtype=torch.float8_e4m3fn)
    _trace_error(k_ax2, (torch.ones(96, 4), q), [q], "kernel 'k_ax2'", "quant_mx", "multiple of 64", "[96, 4]")

    @pypto.frontend.jit
    def k_qd(x: pypto.Tensor([4, 64]), q: pypto.Tensor([4, 64], pypto.DT_FP8E5M2)):
        qq, _ = pypto.quant_mx(x, pypto.DT_FP8E5M2)
        q[:] = qq
    q5 = torch.zeros(4, 64, dtype=torch.float8_e5m2)
    _trace_error(k_qd, (torch.ones(4, 64), q5), [q5], "kernel 'k_qd'", "quant_mx",
                 "quant_dtype must be DT_FP8E4M3 or DT_FP4_E2M1X2", "DT_FP8E5M2")

    @pypto.frontend.jit
    def k_md(x: pypto.Tensor([4, 64]), q: pypto.Tensor([4, 64], pypto.DT_FP8E4M3)):
        qq, _ = pypto.quant_mx(x, pypto.DT_FP8E4M3, "floor")
        q[:] = qq
    q = torch.zeros(4, 64, dtype=torch.float8_e4m3fn)
    _trace_error(k_md, (torch.ones(4, 64), q), [q], "kernel 'k_md'", "quant_mx", "pypto.ROUND_DOWN", "'floor'")


def test_scaled_mm_errors_and_unsupported_modes():
    def make(out_dt, extend=None, a_dt=pypto.DT_FP8E4M3, rank3=False):
        ashape = [2, 16, 64] if rank3 else [16, 64]

        @pypto.frontend.jit
        def k_smm(a: pypto.Tensor(ashape, a_dt), b: pypto.Tensor([64, 16], pypto.DT_FP8E4M3),
                  sa: pypto.Tensor([16, 1, 2], pypto.DT_FP8E8M0), sb: pypto.Tensor([1, 16, 2], pypto.DT_FP8E8M0),
                  out: pypto.Tensor([16, 16])):
            out[:] = pypto.cast(pypto.scaled_mm(a, b, out_dt, sa, sb, extend_params=extend), pypto.DT_FP32)
        return k_smm

    def args(a_td=torch.float8_e4m3fn, rank3=False):
        a = torch.zeros([2, 16, 64] if rank3 else [16, 64], dtype=torch.uint8).view(a_td)
        return [a, torch.zeros(64, 16, dtype=torch.float8_e4m3fn), torch.zeros(16, 1, 2, dtype=torch.float8_e8m0fnu),
                torch.zeros(1, 16, 2, dtype=torch.float8_e8m0fnu), torch.full((16, 16), 3.0)]
    a = args()
    _trace_error(make(pypto.DT_INT8), a, [a[-1]], "kernel 'k_smm'", "scaled_mm", "DT_INT8 needs extend_params "
                 "'scale' or 'scale_tensor'")
    _trace_error(make(pypto.DT_FP32, {"scale_tensor": 7}), a, [a[-1]], "kernel 'k_smm'", "scaled_mm",
                 "'scale_tensor'", "must be a pypto tensor", "int 7")
    ai = args(a_td=torch.int8)
    _trace_error(make(pypto.DT_FP32, a_dt=pypto.DT_INT8), ai, [ai[-1]], "kernel 'k_smm'", "scaled_mm",
                 "DT_FP8E4M3 / DT_FP8E5M2", "int8")
    _trace_error(make(pypto.DT_FP32, {"bias": 1}), a, [a[-1]], "kernel 'k_smm'", "scaled_mm", "unknown key",
                 "'bias'")

    @pypto.frontend.jit
    def k_sh(a: pypto.Tensor([16, 64], pypto.DT_FP8E4M3), b: pypto.Tensor([64, 16], pypto.DT_FP8E4M3),
             sa: pypto.Tensor([16, 2, 2], pypto.DT_FP8E8M0), sb: pypto.Tensor([1, 16, 2], pypto.DT_FP8E8M0),
             out: pypto.Tensor([16, 16])):
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)
    a[2] = torch.zeros(16, 2, 2, dtype=torch.float8_e8m0fnu)
    _trace_error(k_sh, a, [a[-1]], "kernel 'k_sh'", "scaled_mm", "scale_a must have shape [16, 1, 2]",
                 "got [16, 2, 2]")


def test_pack_unpack_errors():
    @pypto.frontend.jit
    def k_pb(x: pypto.Tensor([4], pypto.DT_BOOL), y: pypto.Tensor([4], pypto.DT_UINT8)):
        y[:] = pypto.pack(x)
    y = torch.full((4,), 9, dtype=torch.uint8)
    _trace_error(k_pb, (torch.ones(4, dtype=torch.bool), y), [y], "kernel 'k_pb'", "pack", "input dtype must be",
                 "got bool")

    @pypto.frontend.jit
    def k_un(x: pypto.Tensor([6], pypto.DT_UINT8), y: pypto.Tensor([1], pypto.DT_INT32)):
        y[:] = pypto.unpack(x, pypto.DT_INT32)
    yi = torch.full((1,), 9, dtype=torch.int32)
    _trace_error(k_un, (torch.ones(6, dtype=torch.uint8), yi), [yi], "kernel 'k_un'", "unpack",
                 "6 bytes are not a multiple of 4")

    @pypto.frontend.jit
    def k_und(x: pypto.Tensor([pypto.DYNAMIC], pypto.DT_UINT8), y: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT16)):
        pypto.set_vec_tile_shapes(16)
        y[:] = pypto.unpack(x, pypto.DT_INT16)
    y16 = torch.full((2,), 9, dtype=torch.int16)
    _trace_error(k_und, (torch.ones(5, dtype=torch.uint8), y16), [y16], "kernel 'k_und'", "unpack",
                 "not a multiple of 2", exc=pypto.KernelRuntimeError)

    @pypto.frontend.jit
    def k_u2(x: pypto.Tensor([2, 4], pypto.DT_UINT8), y: pypto.Tensor([2], pypto.DT_INT32)):
        y[:] = pypto.unpack(x, pypto.DT_INT32)
    _trace_error(k_u2, (torch.ones(2, 4, dtype=torch.uint8), yi.new_zeros(2)), [], "kernel 'k_u2'", "unpack",
                 "1-D DT_UINT8", "[2, 4]")


def test_expand_exp_dif_errors():
    @pypto.frontend.jit
    def k_e(x: pypto.Tensor([4]), y: pypto.Tensor([4], pypto.DT_FP16), o: pypto.Tensor([4])):
        o[:] = pypto.expand_exp_dif(x, y)
    o = torch.full((4,), 2.0)
    _trace_error(k_e, (torch.ones(4), torch.ones(4, dtype=torch.float16), o), [o], "kernel 'k_e'",
                 "expand_exp_dif", "same dtype", "float32 and float16")


def test_scaled_mm_cube_tiles_align_to_the_one_byte_operands():
    @pypto.frontend.jit
    def k_al(a: pypto.Tensor([32, 64], pypto.DT_FP8E4M3), b: pypto.Tensor([64, 32], pypto.DT_FP8E4M3),
             sa: pypto.Tensor([32, 1, 2], pypto.DT_FP8E8M0), sb: pypto.Tensor([1, 32, 2], pypto.DT_FP8E8M0),
             out: pypto.Tensor([32, 32])):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)
    args = [torch.zeros(32, 64, dtype=torch.float8_e4m3fn), torch.zeros(64, 32, dtype=torch.float8_e4m3fn),
            torch.zeros(32, 1, 2, dtype=torch.float8_e8m0fnu), torch.zeros(1, 32, 2, dtype=torch.float8_e8m0fnu),
            torch.full((32, 32), 3.0)]
    _trace_error(k_al, args, [args[-1]], "kernel 'k_al'", "scaled_mm", "m tile 16 is not aligned",
                 "float8_e4m3fn", "multiple of 32")


def test_quant_ops_with_dynamic_rows_under_bounds_checks():
    """DYNAMIC dims size the scales and the packed results at run time; runtime_debug_mode=4 checks every access."""
    @pypto.frontend.jit(debug_options={"runtime_debug_mode": 4})
    def dyn(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP16), q: pypto.Tensor([pypto.DYNAMIC, 32], FP4),
            s: pypto.Tensor([pypto.DYNAMIC, 1, 2], pypto.DT_FP8E8M0), p: pypto.Tensor([pypto.DYNAMIC], pypto.DT_UINT8)):
        pypto.set_vec_tile_shapes(2, 64)
        qq, ss = pypto.quant_mx(x, FP4, pypto.ROUND_DOWN)
        q[:] = qq
        s[:] = ss
        p[:] = pypto.pack(x)
    for rows in (1, 5):
        x = _mx_input((rows, 64), torch.float16, rows)
        q, s, p = _fp4((rows, 32)), torch.zeros(rows, 1, 2, dtype=torch.float8_e8m0fnu), \
            torch.zeros(rows * 128, dtype=torch.uint8)
        dyn(x, q, s, p)
        rq, rs = _mx_reference(x, -1, True, False)
        assert torch.equal(q.view(torch.uint8), rq) and torch.equal(s.view(torch.uint8), rs)
        assert torch.equal(p, x.view(torch.uint8).flatten())


def test_quant_mx_second_last_axis_and_scaled_mm_dynamic_under_verify():
    def body(x: pypto.Tensor([128, 8]), q: pypto.Tensor([128, 8], pypto.DT_FP8E4M3),
             s: pypto.Tensor([2, 8, 2], pypto.DT_FP8E8M0), a: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP8E5M2),
             b: pypto.Tensor([64, pypto.DYNAMIC], pypto.DT_FP8E4M3),
             sa: pypto.Tensor([pypto.DYNAMIC, 1, 2], pypto.DT_FP8E8M0),
             sb: pypto.Tensor([1, pypto.DYNAMIC, 2], pypto.DT_FP8E8M0),
             out: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC])):
        pypto.set_vec_tile_shapes(64, 8)
        qq, ss = pypto.quant_mx(x, pypto.DT_FP8E4M3, pypto.ROUND_UP, 0)
        q[:] = qq
        s[:] = ss
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)

    k = pypto.frontend.jit(body, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [0, 0]})
    g = torch.Generator().manual_seed(41)
    x = torch.randn(128, 8, generator=g) * 100
    x[5, 3] = float("nan")
    q, s = torch.zeros(128, 8, dtype=torch.float8_e4m3fn), torch.zeros(2, 8, 2, dtype=torch.float8_e8m0fnu)
    m, n = 3, 5
    a, b = _small_fp8([m, 64], torch.float8_e5m2, g), _small_fp8([64, n], torch.float8_e4m3fn, g)
    sa, sb = _scales([m, 1, 2], g), _scales([1, n, 2], g)
    out = torch.zeros(m, n)
    k(x, q, s, a, b, sa.view(torch.float8_e8m0fnu), sb.view(torch.float8_e8m0fnu), out)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    rq, rs = _mx_reference(x, -2, False, True)
    assert torch.equal(q.view(torch.uint8), rq) and torch.equal(s.view(torch.uint8), rs)
    assert torch.equal(out, _scaled_mm_ref(a, b, sa, sb, 64, False, False, False, False, False))
