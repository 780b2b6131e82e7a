"""DT_HF8 (HiFloat8) kernel arguments: uint8 tensors holding the encoded bytes, cast to and from fp32 / fp16 / bf16,
read as float by matmul, moved by view / assemble.

The expected values come from `_hf8_table`, built here from the format's field layout (a sign bit, a prefix "dot"
code that says how many exponent bits follow, a sign-magnitude exponent with an implicit leading 1, the
mantissa) by concatenating bit strings and evaluating them with exact fractions: an encoder written a different way
from the kernel runtime's bit arithmetic (include/pypto/kernel_hifloat8.h), and rounding checked by a brute-force
nearest search over that table.
"""
from fractions import Fraction

import pytest
import torch

import pypto
from callpath._util import fails_untouched

NAN_CODE, INF_CODE = 0x80, 0x6F
# (dot prefix, exponent bits, mantissa bits); the exponent bits are a sign then |E| - 2^(bits-1)
_CLASSES = [("0001", 0, 3), ("001", 1, 3), ("01", 2, 3), ("10", 3, 2), ("11", 4, 1)]


def _hf8_table() -> dict[int, Fraction | str]:
    """code -> exact value ('nan', '+inf', '-inf' for the specials) for all 256 codes."""
    table: dict[int, Fraction | str] = {}
    for sign in (0, 1):
        s = -1 if sign else 1
        for m in range(1, 8):                                  # denormals: 0000.mmm, 2^(m - 23)
            table[int(f"{sign}0000{m:03b}", 2)] = s * Fraction(2) ** (m - 23)
        for dot, eb, mb in _CLASSES:
            exps = [0] if eb == 0 else [e for e in range(-(2 ** eb - 1), 2 ** eb) if abs(e) >= 2 ** (eb - 1)]
            for e in exps:
                ebits = ""
                if eb:
                    ebits = ("1" if e < 0 else "0") + (format(abs(e) - 2 ** (eb - 1), f"0{eb - 1}b") if eb > 1 else "")
                for m in range(2 ** mb):
                    code = int(f"{sign}{dot}{ebits}{m:0{mb}b}", 2)
                    table[code] = s * (1 + Fraction(m, 2 ** mb)) * Fraction(2) ** e
    table[0x00] = Fraction(0)
    table[NAN_CODE] = "nan"
    table[INF_CODE], table[INF_CODE | 0x80] = "+inf", "-inf"
    assert sorted(table) == list(range(256))
    return table


TABLE = _hf8_table()
FINITE = sorted((v, c) for c, v in TABLE.items() if isinstance(v, Fraction) and (c & 0x80) == 0)  # >= 0


def _as_float(v) -> float:
    return {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf")}.get(v, v) if isinstance(v, str) \
        else float(v)


def _encode(x: float) -> int:
    """The code of x: nearest table value, ties away from zero; past 32768 by more than half the would-be next
    step (1.5 * 2^15, the inf pattern) -> inf."""
    if x != x:
        return NAN_CODE
    sign = 0x80 if x < 0 else 0
    a = abs(x)
    if a == float("inf") or a >= 40960:
        return sign | INF_CODE
    a = Fraction(a)
    best_v, best_c = FINITE[0]
    for v, c in FINITE:
        if abs(a - v) < abs(a - best_v) or (abs(a - v) == abs(a - best_v) and v > best_v):
            best_v, best_c = v, c
    return 0 if best_c == 0 else sign | best_c


def _kernel(src, dst):
    @pypto.frontend.jit
    def hf8_cast(a: pypto.Tensor([], src), out: pypto.Tensor([], dst)):
        pypto.set_vec_tile_shapes(64)
        out[:] = pypto.cast(a, dst)
    return hf8_cast


def test_table_spot_values():
    # values the format's description fixes: 1.0, the largest finite 2^15, the smallest 2^-22, a few of each class
    assert TABLE[0x08] == 1 and TABLE[0x6E] == 2 ** 15 and TABLE[0x01] == Fraction(1, 2 ** 22)
    assert TABLE[0x10] == 2 and TABLE[0x18] == Fraction(1, 2) and TABLE[0x0C] == Fraction(3, 2)
    assert TABLE[0x20] == 4 and TABLE[0x40] == 16 and TABLE[0x60] == 256 and TABLE[0x7E] == Fraction(1, 2 ** 15)
    assert TABLE[0x88] == -1 and len({v for v in TABLE.values() if isinstance(v, Fraction)}) == 253


@pytest.mark.parametrize("wide", [torch.float32, torch.float16, torch.bfloat16])
def test_every_code_widens_to_its_table_value(wide):
    a = torch.arange(256, dtype=torch.uint8)
    out = torch.zeros(256, dtype=wide)
    _kernel(pypto.DT_HF8, pypto.vocab.dtypes.from_torch(wide))(a, out)
    ref = torch.tensor([_as_float(TABLE[c]) for c in range(256)], dtype=torch.float64).to(wide)
    assert torch.equal(out.isnan(), ref.isnan())
    assert torch.equal(out[~ref.isnan()], ref[~ref.isnan()])


def _probe() -> torch.Tensor:
    """Every finite table value, the midpoints between neighbours and values just either side of them, the
    overflow edge, specials, and random float32 values over the whole range."""
    vals = [float(v) for v, _ in FINITE]
    mids = [(float(a) + float(b)) / 2 for (a, _), (b, _) in zip(FINITE, FINITE[1:])]
    near = [m * f for m in mids for f in (1 - 2 ** -20, 1 + 2 ** -20)]
    edges = [32768.0, 40959.99, 40960.0, 49152.0, 1e30, float("inf"), float("nan"), 0.0, -0.0, 2.0 ** -23,
             2.0 ** -23 * (1 - 2 ** -20), 2.0 ** -24, 1e-40, 1.5 * 2 ** -16, 1.25 * 2 ** -15]
    g = torch.Generator().manual_seed(5)
    mag = (torch.rand(4000, generator=g, dtype=torch.float64) * 60 - 30).exp2()
    rnd = mag * (torch.rand(4000, generator=g, dtype=torch.float64) - .5).sign()
    x = torch.tensor(vals + mids + near + edges, dtype=torch.float64)
    return torch.cat([x, -x, rnd]).to(torch.float32)


def test_fp32_rounds_to_nearest_ties_away():
    x = _probe()
    out = torch.full(x.shape, 0xAA, dtype=torch.uint8)
    _kernel(pypto.DT_FP32, pypto.DT_HF8)(x, out)
    ref = torch.tensor([_encode(float(v)) for v in x.tolist()], dtype=torch.uint8)
    bad = (out != ref).nonzero().flatten()[:5].tolist()
    assert not bad, [(x[i].item(), hex(out[i].item()), hex(ref[i].item())) for i in bad]


def test_every_code_round_trips():
    codes = torch.tensor([c for c in range(256) if c != NAN_CODE], dtype=torch.uint8)
    wide = torch.zeros(codes.shape, dtype=torch.float32)
    back = torch.zeros(codes.shape, dtype=torch.uint8)
    _kernel(pypto.DT_HF8, pypto.DT_FP32)(codes, wide)
    _kernel(pypto.DT_FP32, pypto.DT_HF8)(wide, back)
    assert torch.equal(back, codes)


def _decode(t: torch.Tensor) -> torch.Tensor:
    lut = torch.tensor([_as_float(TABLE[c]) for c in range(256)], dtype=torch.float32)
    return lut[t.long()]


def test_matmul_reads_hf8_as_float():
    @pypto.frontend.jit
    def hf8_mm(a: pypto.Tensor([16, 32], pypto.DT_HF8), b: pypto.Tensor([32, 24], pypto.DT_HF8),
               out: pypto.Tensor([16, 24], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)

    g = torch.Generator().manual_seed(3)
    codes = torch.tensor([c for c in range(256) if (c & 0x7F) not in (0, INF_CODE) and 0x20 <= (c & 0x7F) < 0x48])
    a = codes[torch.randint(0, len(codes), (16, 32), generator=g)].to(torch.uint8)
    b = codes[torch.randint(0, len(codes), (32, 24), generator=g)].to(torch.uint8)
    out = torch.zeros(16, 24)
    hf8_mm(a, b, out)
    torch.testing.assert_close(out, _decode(a).double().matmul(_decode(b).double()).float(), rtol=1e-6, atol=1e-6)


def test_view_and_assemble_move_bytes():
    @pypto.frontend.jit
    def hf8_move(a: pypto.Tensor([8, 64], pypto.DT_HF8), out: pypto.Tensor([8, 64], pypto.DT_HF8)):
        pypto.set_vec_tile_shapes(8, 32)
        pypto.assemble(pypto.view(a, [8, 32], [0, 32]), [0, 0], out)
        pypto.assemble(pypto.view(a, [8, 32], [0, 0]), [0, 32], out)

    a = torch.randint(0, 256, (8, 64), dtype=torch.uint8)
    out = torch.zeros(8, 64, dtype=torch.uint8)
    hf8_move(a, out)
    assert torch.equal(out, torch.cat([a[:, 32:], a[:, :32]], 1))


def test_a_float_tensor_for_an_hf8_parameter_is_refused():
    k = _kernel(pypto.DT_HF8, pypto.DT_FP32)
    a, out = torch.zeros(8), torch.full((8,), 7.0)
    fails_untouched(TypeError, lambda: k(a, out), out, "kernel 'hf8_cast'", "parameter 'a'",
                    "expected dtype hifloat8 (stored as uint8)", "got float32")


def test_arithmetic_on_hf8_is_a_trace_error():
    @pypto.frontend.jit
    def hf8_add(a: pypto.Tensor([8], pypto.DT_HF8), out: pypto.Tensor([8], pypto.DT_HF8)):
        pypto.set_vec_tile_shapes(8)
        out[:] = a + a

    out = torch.full((8,), 9, dtype=torch.uint8)
    fails_untouched(pypto.KernelTraceError, lambda: hf8_add(torch.ones(8, dtype=torch.uint8), out), out,
                    "kernel 'hf8_add'", "add", "hifloat8")
