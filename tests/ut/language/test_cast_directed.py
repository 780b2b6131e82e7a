"""Directed-rounding casts (`pypto.cast(mode=CAST_FLOOR / CEIL / TRUNC / ROUND / ODD)` of narrowing float -> float
and int -> float) and tf32 matmul inputs (`extend_params['trans_mode']`), against references written here from
the target format's table of values: FLOOR the largest value <= x, CEIL the smallest >= x, TRUNC the one of those
toward zero, ROUND the nearest with ties away from zero, ODD the exact value or else the neighbour with an odd last
bit. Inputs cover both signs, subnormals, exact ties, values past the target's largest finite and infinities."""
import numpy as np
import pytest
import torch

import pypto
from callpath._util import assert_untouched, raises, snap

M = pypto.CastMode
MODES = [M.CAST_FLOOR, M.CAST_CEIL, M.CAST_TRUNC, M.CAST_ROUND, M.CAST_ODD]
PT = {torch.float32: pypto.DT_FP32, torch.float16: pypto.DT_FP16, torch.bfloat16: pypto.DT_BF16,
      torch.float64: pypto.DT_FP64, torch.int32: pypto.DT_INT32, torch.int16: pypto.DT_INT16,
      torch.uint8: pypto.DT_UINT8}
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}


def _table(dst):
    """Every finite value of a 16-bit float type, ascending (fp32: computed with nextafter instead)."""
    v = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dst).double()
    return torch.unique(v[torch.isfinite(v)]).numpy()


def _neighbours(x: np.ndarray, dst):
    """(lo, hi): the largest target value <= x and the smallest >= x (+-inf past the finite range)."""
    if dst == torch.float32:
        f = x.astype(np.float32).astype(np.float64)        # nearest; then step to bracket x
        lo = np.where(f > x, np.nextafter(f.astype(np.float32), np.float32(-np.inf)).astype(np.float64), f)
        hi = np.where(f < x, np.nextafter(f.astype(np.float32), np.float32(np.inf)).astype(np.float64), f)
        return lo, hi
    t = _table(dst)
    i = np.searchsorted(t, x, side="right") - 1
    lo = np.where(i >= 0, t[np.clip(i, 0, len(t) - 1)], -np.inf)
    j = np.searchsorted(t, x, side="left")
    hi = np.where(j < len(t), t[np.clip(j, 0, len(t) - 1)], np.inf)
    return lo, hi


def _odd(v: np.ndarray, dst) -> np.ndarray:
    t = torch.from_numpy(v).to(dst)
    return (t.view(BITS[dst]).to(torch.int32) & 1).numpy() == 1


def reference(x: torch.Tensor, dst, mode) -> torch.Tensor:
    with np.errstate(all="ignore"):                          # inf inputs: inf - inf in unused branches
        return _reference(x, dst, mode)


def _reference(x: torch.Tensor, dst, mode) -> torch.Tensor:
    xd = x.double().numpy()
    lo, hi = _neighbours(xd, dst)
    big = float(torch.finfo(dst).max)
    lo = np.where(np.isinf(xd) & (xd > 0), np.inf, lo)      # +-inf map to themselves
    hi = np.where(np.isinf(xd) & (xd < 0), -np.inf, hi)
    if mode == M.CAST_FLOOR:
        r = lo
    elif mode == M.CAST_CEIL:
        r = hi
    elif mode == M.CAST_TRUNC:
        r = np.where(xd >= 0, lo, hi)
    elif mode == M.CAST_ROUND:
        dl, dh = xd - lo, hi - xd
        r = np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(xd >= 0, hi, lo)))
        ulp = big - float(np.nextafter(np.float32(big), 0)) if dst == torch.float32 else big - _table(dst)[-2]
        r = np.where(np.abs(xd) > big, np.where(np.abs(xd) >= big + ulp / 2, np.sign(xd) * np.inf,
                                                  np.sign(xd) * big), r)
    else:
        r = np.where(lo == hi, lo, np.where(_odd(np.where(np.isinf(lo), 0, lo), dst) & np.isfinite(lo), lo, hi))
    out = torch.from_numpy(r).to(dst)
    return torch.where(out == 0, torch.copysign(torch.zeros((), dtype=dst), x.double().to(dst)), out)  # zero: x's sign


def _inputs(src, dst, n=2048):
    g = torch.Generator().manual_seed(hash((str(src), str(dst))) % 1000)
    if not src.is_floating_point:
        info = torch.iinfo(src)
        x = torch.randint(info.min, info.max, (n,), generator=g, dtype=torch.int64)
        edges = torch.tensor([0, 1, -1, 2049, 2051, 16777217, 16777219, -16777219, 4099, 257, 255, 127, -129,
                              65519, 65520, 65536, info.max, info.min], dtype=torch.int64)
        return torch.cat([edges.clamp(info.min, info.max), x]).to(src)
    tiny = float(torch.finfo(dst).tiny)
    big = float(torch.finfo(dst).max)
    mag = torch.exp2(torch.empty(n, dtype=torch.float64).uniform_(np.log2(tiny) - 12, np.log2(big) + 1,
                                                                    generator=g))
    sign = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    grid = torch.arange(-40, 40, dtype=torch.float64)
    ties = (grid * 2 + 1) / 2 ** (11 if dst != torch.bfloat16 else 8) + 1.0  # midpoints near 1
    edges = torch.tensor([0.0, -0.0, tiny / 3, -tiny / 3, big, -big, big * 1.0004, big * 1.5, float("inf"),
                          -float("inf"), 1.0, -1.0], dtype=torch.float64)
    x = torch.cat([edges, ties, -ties, mag * sign]).to(src)
    return x[torch.isfinite(x) | torch.isinf(x.double())]


@pytest.mark.parametrize("src,dst", [
    (torch.float32, torch.float16), (torch.float32, torch.bfloat16), (torch.float64, torch.float32),
    (torch.float16, torch.bfloat16), (torch.int32, torch.float32), (torch.int32, torch.float16),
    (torch.int16, torch.bfloat16)])
def test_directed_rounding_casts_match_the_table(src, dst):
    x = _inputs(src, dst)
    modes = [m for m in MODES if m != M.CAST_ODD or (src, dst) == (torch.float32, torch.float16)]
    n, dt = x.numel(), PT[dst]

    @pypto.frontend.jit
    def k(x: pypto.Tensor([n], PT[src]), f: pypto.Tensor([n], dt), c: pypto.Tensor([n], dt),
          t: pypto.Tensor([n], dt), r: pypto.Tensor([n], dt), o: pypto.Tensor([n], dt)):
        pypto.set_vec_tile_shapes(512)
        for out, mode in zip((f, c, t, r, o), modes + [M.CAST_RINT] * (5 - len(modes))):
            out[:] = pypto.cast(x, dt, mode=mode)
    outs = [torch.zeros(n, dtype=dst) for _ in range(5)]
    k(x, *outs)
    for out, mode in zip(outs, modes):
        want = reference(x, dst, mode)
        bad = ~((out == want) | (torch.isnan(out) & torch.isnan(want)))
        assert not bad.any(), (f"{mode.name} {src} -> {dst}: x={x[bad][:4].tolist()} got {out[bad][:4].tolist()} "
                               f"want {want[bad][:4].tolist()}")
        same_sign = torch.signbit(out[out == 0]) == torch.signbit(want[out == 0])
        assert bool(same_sign.all()), f"{mode.name}: the sign of a zero differs"


def test_directed_cast_of_int64_is_refused_naming_mode_and_dtypes():
    @pypto.frontend.jit
    def k_i64(x: pypto.Tensor([4], pypto.DT_INT64), y: pypto.Tensor([4], pypto.DT_FP32)):
        y[:] = pypto.cast(x, pypto.DT_FP32, mode=M.CAST_FLOOR)
    y = torch.full((4,), 2.5)
    before = snap(y)
    raises(pypto.UnsupportedFeatureError, lambda: k_i64(torch.arange(4), y), "kernel 'k_i64'", "CAST_FLOOR",
           "int64 -> float32", "not supported yet")
    assert_untouched(before, y)


# ---- tf32 -----------------------------------------------------------------------------------------------------
def tf32_ref(x: torch.Tensor, mode) -> torch.Tensor:
    b = x.view(torch.int32).to(torch.int64)
    bias = (((b >> 13) & 1) + 0xFFF) if mode == pypto.TransMode.CAST_RINT else 0x1000
    r = (b + bias) & -0x2000
    keep = (b & 0x7F800000) == 0x7F800000
    return torch.where(keep, b, r).to(torch.int32).view(torch.float32)


@pytest.mark.parametrize("mode", [pypto.TransMode.CAST_RINT, pypto.TransMode.CAST_ROUND])
def test_matmul_tf32_trans_mode_rounds_the_inputs(mode):
    # a's entries are 1 + i * 2^-12 (i = 0..15, either sign): 3 bits past tf32's 10, ties among them (i = 2, 6, ..)
    i = torch.arange(64, dtype=torch.float32).reshape(8, 8) % 16
    a = (1.0 + i * 2.0 ** -12) * torch.where(torch.arange(64).reshape(8, 8) % 3 == 0, -1.0, 1.0)
    b = torch.eye(8) * 3.0 + torch.diag(torch.ones(7), 1)          # tf32-exact; exact sums of two terms
    out = torch.zeros(8, 8)

    @pypto.frontend.jit
    def k(a: pypto.Tensor([8, 8]), b: pypto.Tensor([8, 8]), out: pypto.Tensor([8, 8])):
        out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params={"trans_mode": mode})
    k(a, b, out)
    ra = tf32_ref(a, mode)
    assert torch.equal(out, (ra.double() @ b.double()).float())
    assert not torch.equal(ra, a)                                   # the rounding took place
    ties = (i % 4 == 2)                                             # exact midpoints between tf32 values
    if mode == pypto.TransMode.CAST_ROUND:                          # away from zero: magnitude rounds up
        assert bool((ra.abs()[ties] > a.abs()[ties]).all())


def test_tf32_keeps_specials_and_overflows_to_inf():
    x = torch.tensor([float("inf"), -float("inf"), float("nan"), torch.finfo(torch.float32).max, 1.0, -0.0,
                      1e-40, 3.0 + 2.0 ** -11])
    got = torch.zeros(8, 1)

    @pypto.frontend.jit
    def k(a: pypto.Tensor([8, 1]), b: pypto.Tensor([1, 1]), out: pypto.Tensor([8, 1])):
        out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params={"trans_mode": pypto.TransMode.CAST_RINT})
    k(x.reshape(8, 1), torch.ones(1, 1), got)
    want = tf32_ref(x, pypto.TransMode.CAST_RINT)
    assert torch.isinf(want[3]) and want[3] > 0                     # FP32 max rounds past tf32's largest
    got = got.flatten()
    assert torch.equal(got[[0, 1, 3]], want[[0, 1, 3]]) and bool(torch.isnan(got[2]))
    assert torch.equal(got[4:], want[4:]) and want[7] == 3.0        # a quarter ulp: rounded off


def test_tf32_needs_fp32_operands():
    @pypto.frontend.jit
    def k_tf(a: pypto.Tensor([8, 8], pypto.DT_FP16), b: pypto.Tensor([8, 8], pypto.DT_FP16),
             out: pypto.Tensor([8, 8])):
        out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params={"trans_mode": pypto.TransMode.CAST_ROUND})
    out = torch.full((8, 8), 4.0)
    before = snap(out)
    raises(pypto.KernelTraceError, lambda: k_tf(torch.ones(8, 8).half(), torch.ones(8, 8).half(), out),
           "kernel 'k_tf'", "trans_mode", "CAST_ROUND", "FP32 operands", "float16")
    assert_untouched(before, out)
