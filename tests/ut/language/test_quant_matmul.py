"""matmul / scaled_mm output quantization (extend_params `scale` per tensor, `scale_tensor` per channel; the
reference's fixpipe) and batched scaled_mm, against torch references written here: accumulate (INT32 for int8
operands, else FP32), add the bias in that type, relu, multiply in FP32 by the scale as the hardware reads it
(float32 bits & 0xFFFFE000), convert once (INT8: nearest even, saturated). Error paths name the kernel, the op, what
was expected and what was got, and leave the outputs untouched."""
import struct

import pytest
import torch

import pypto
from callpath._util import assert_untouched, raises, snap

D = pypto.DYNAMIC


def masked(x: float) -> float:
    bits = struct.unpack("<I", struct.pack("<f", x))[0] & 0xFFFFE000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def masked_t(t: torch.Tensor) -> torch.Tensor:
    return (t.float().view(torch.int32) & -8192).view(torch.float32)


def to_int8(x: torch.Tensor) -> torch.Tensor:
    return torch.round(x).clamp(-128, 127).to(torch.int8)     # torch.round: half to even


def _quant_kernel(out_dt, relu, per_channel, bias=True, tiles=None):
    relu_t = pypto.ReLuType.RELU if relu else pypto.ReLuType.NO_RELU

    @pypto.frontend.jit
    def k(a: pypto.Tensor([D, D]), b: pypto.Tensor([D, D]), bias_t: pypto.Tensor([1, D]),
          sc: pypto.Tensor([1, D]), out: pypto.Tensor([D, D]), scale):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        ext = {"relu_type": relu_t}
        if bias:
            ext["bias_tensor"] = bias_t
        if per_channel:
            ext["scale_tensor"] = sc
        else:
            ext["scale"] = scale
        out[:] = pypto.matmul(a, b, out_dt, extend_params=ext)
    return k


@pytest.mark.parametrize("in_td,bias_td,out_td,out_dt,relu", [
    (torch.int8, torch.int32, torch.float16, pypto.DT_FP16, True),     # dequantization (the reference's table 4)
    (torch.int8, torch.int32, torch.bfloat16, pypto.DT_BF16, False),
    (torch.float16, torch.float16, torch.int8, pypto.DT_INT8, True),   # quantization (table 5)
    (torch.int8, torch.int32, torch.int8, pypto.DT_INT8, False),
    (torch.float32, torch.float32, torch.float32, pypto.DT_FP32, False),
])
@pytest.mark.parametrize("per_channel", [False, True])
def test_matmul_scale_matches_torch(in_td, bias_td, out_td, out_dt, relu, per_channel):
    m, kk, n = 24, 40, 48
    g = torch.Generator().manual_seed(7)
    if in_td == torch.int8:
        a = torch.randint(-5, 6, (m, kk), generator=g, dtype=torch.int8)
        b = torch.randint(-5, 6, (kk, n), generator=g, dtype=torch.int8)
        bias = torch.randint(-20, 21, (1, n), generator=g, dtype=torch.int32)
        acc = torch.matmul(a.int(), b.int()) + bias
    else:   # quarter-step values: the FP32 sums are exact whatever their order
        a = (torch.randint(-8, 9, (m, kk), generator=g) / 4).to(in_td)
        b = (torch.randint(-8, 9, (kk, n), generator=g) / 4).to(in_td)
        bias = (torch.randint(-8, 9, (1, n), generator=g) / 4).to(bias_td)
        acc = torch.matmul(a.float(), b.float()) + bias.float()
    acc = torch.relu(acc) if relu else acc
    scale = 0.4127 if out_dt != pypto.DT_INT8 else 1.8373          # low mantissa bits set: the mask matters
    scales = torch.linspace(0.3, 1.9, n).reshape(1, n)
    if per_channel:
        st = masked_t(scales).view(torch.int32).to(torch.int64) & 0xFFFFFFFF   # low 32 bits: the float32 bits
        st = (st | (5 << 37)).view(torch.uint64) if out_dt != pypto.DT_FP32 else scales  # upper bits not read
        y = acc.float() * masked_t(scales)
    else:
        st = torch.zeros(1, n)
        y = acc.float() * masked(scale)
    want = to_int8(y) if out_td == torch.int8 else y.to(out_td)
    out = torch.full((m, n), 3, dtype=out_td)
    _quant_kernel(out_dt, relu, per_channel)(a, b, bias, st, out, scale)
    assert torch.equal(out, want)


def test_matmul_scale_rounds_half_to_even_and_saturates_to_int8():
    # a = 1 x 1, b = 1 x n: each output is b[j] * 0.5 exactly; ties go to even, beyond +-127 saturate
    vals = torch.tensor([[1.0, 3.0, 5.0, -1.0, -3.0, 300.0, -300.0, 254.0]], dtype=torch.float16)
    a = torch.ones(1, 1, dtype=torch.float16)
    out = torch.zeros(1, 8, dtype=torch.int8)

    @pypto.frontend.jit
    def k(a: pypto.Tensor([1, 1], pypto.DT_FP16), b: pypto.Tensor([1, 8], pypto.DT_FP16),
          out: pypto.Tensor([1, 8], pypto.DT_INT8)):
        out[:] = pypto.matmul(a, b, pypto.DT_INT8, extend_params={"scale": 0.5})
    k(a, vals, out)
    assert out.tolist() == [[0, 2, 2, 0, -2, 127, -128, 127]]


@pytest.mark.parametrize("rank", [3, 4])
def test_batched_matmul_scale_tensor(rank):
    lead = (2,) if rank == 3 else (2, 3)
    g = torch.Generator().manual_seed(rank)
    a = torch.randint(-4, 5, lead + (16, 32), generator=g, dtype=torch.int8)
    b = torch.randint(-4, 5, lead + (32, 32), generator=g, dtype=torch.int8)
    scales = torch.linspace(0.05, 0.6, 32).reshape(1, 32)
    out = torch.zeros(lead + (16, 32), dtype=torch.float16)

    @pypto.frontend.jit
    def k(a: pypto.Tensor(), b: pypto.Tensor(), sc: pypto.Tensor([1, 32]), out: pypto.Tensor()):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        out[:] = pypto.matmul(a, b, pypto.DT_FP16, extend_params={"scale_tensor": sc})
    k(a, b, scales, out)
    want = (torch.matmul(a.int(), b.int()).float() * masked_t(scales)).half()
    assert torch.equal(out, want)


# ---- batched scaled_mm and its quantized output -------------------------------------------------------------
def _mx_inputs(g, lead_a, lead_b, m, kk, n):
    a = (torch.randint(-6, 7, lead_a + (m, kk), generator=g) / 2).to(torch.float8_e4m3fn)
    b = (torch.randint(-6, 7, lead_b + (kk, n), generator=g) / 2).to(torch.float8_e4m3fn)
    sa = (2.0 ** torch.randint(-2, 3, (m, kk // 64, 2), generator=g)).to(torch.float8_e8m0fnu)
    sb = (2.0 ** torch.randint(-2, 3, (kk // 64, n, 2), generator=g)).to(torch.float8_e8m0fnu)
    return a, b, sa, sb


def _mx_golden(a, b, sa, sb):
    fa = sa.float().reshape(sa.shape[0], -1).repeat_interleave(32, dim=1)            # [m, k]
    fb = sb.float().permute(1, 0, 2).reshape(sb.shape[1], -1).repeat_interleave(32, dim=1).T   # [k, n]
    return torch.matmul(a.float() * fa, fb * b.float())


@pytest.mark.parametrize("lead_a,lead_b", [((3,), (3,)), ((3,), (1,)), ((2, 3), (1, 3)), ((2, 1), (2, 2))])
def test_batched_scaled_mm_matches_torch(lead_a, lead_b):
    g = torch.Generator().manual_seed(len(lead_a) * 10 + lead_b[-1])
    a, b, sa, sb = _mx_inputs(g, lead_a, lead_b, 16, 64, 32)
    lead = tuple(max(x, y) for x, y in zip(lead_a, lead_b))
    bias = (torch.randint(-4, 5, (1, 32), generator=g) / 4).float()
    out = torch.zeros(lead + (16, 32))

    @pypto.frontend.jit
    def k(a: pypto.Tensor(), b: pypto.Tensor(), sa: pypto.Tensor(), sb: pypto.Tensor(), bias: pypto.Tensor(),
          out: pypto.Tensor()):
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb, extend_params={
            "bias_tensor": bias, "relu_type": pypto.ReLuType.RELU})
    k(a, b, sa, sb, bias, out)
    assert torch.equal(out, torch.relu(_mx_golden(a, b, sa, sb) + bias))


@pytest.mark.parametrize("per_channel", [False, True])
def test_scaled_mm_quantized_int8_output(per_channel):
    g = torch.Generator().manual_seed(11)
    a, b, sa, sb = _mx_inputs(g, (), (), 16, 64, 32)
    scales = torch.linspace(0.01, 0.15, 32).reshape(1, 32)
    st = (masked_t(scales).view(torch.int32).to(torch.int64) & 0xFFFFFFFF)
    out = torch.zeros(16, 32, dtype=torch.int8)

    @pypto.frontend.jit
    def k(a: pypto.Tensor(), b: pypto.Tensor(), sa: pypto.Tensor(), sb: pypto.Tensor(), st: pypto.Tensor(),
          out: pypto.Tensor()):
        ext = {"scale_tensor": st} if per_channel else {"scale": 0.0731}
        out[:] = pypto.scaled_mm(a, b, pypto.DT_INT8, sa, sb, extend_params=ext)
    k(a, b, sa, sb, st, out)
    factor = masked_t(scales) if per_channel else masked(0.0731)
    assert torch.equal(out, to_int8(_mx_golden(a, b, sa, sb) * factor))


# ---- errors ---------------------------------------------------------------------------------------------------
def _err(kernel, args, outs, *parts, exc=pypto.KernelTraceError):
    before = snap(*outs)
    raises(exc, lambda: kernel(*args), *parts)
    assert_untouched(before, *outs)


def test_quant_matmul_errors_name_what_was_expected():
    def make(ext, out_dt=pypto.DT_FP16):
        @pypto.frontend.jit
        def k_q(a: pypto.Tensor([16, 32], pypto.DT_INT8), b: pypto.Tensor([32, 32], pypto.DT_INT8),
                sc: pypto.Tensor(), out: pypto.Tensor([16, 32])):
            e = {key: (sc if v == "sc" else v) for key, v in ext.items()}
            out[:] = pypto.cast(pypto.matmul(a, b, out_dt, extend_params=e), pypto.DT_FP32)
        return k_q

    a, b = torch.ones(16, 32, dtype=torch.int8), torch.ones(32, 32, dtype=torch.int8)
    out = torch.full((16, 32), 5.0)
    u64 = torch.zeros(1, 32, dtype=torch.uint64)
    _err(make({"scale": 0.5, "scale_tensor": "sc"}), [a, b, u64, out], [out], "kernel 'k_q'", "matmul",
         "'scale' (per tensor) or 'scale_tensor' (per channel), not both")
    _err(make({"scale_tensor": "sc"}), [a, b, torch.zeros(1, 32, dtype=torch.int32), out], [out], "kernel 'k_q'",
         "scale_tensor", "DT_UINT64 / DT_INT64", "got int32")
    _err(make({"scale_tensor": "sc"}), [a, b, torch.zeros(2, 32, dtype=torch.uint64), out], [out],
         "kernel 'k_q'", "scale_tensor", "shape [1, N]", "got [2, 32]")
    _err(make({"scale_tensor": "sc"}), [a, b, torch.zeros(1, 16, dtype=torch.uint64), out], [out],
         "kernel 'k_q'", "scale_tensor", "16 channels", "32")
    _err(make({"scale": "x"}), [a, b, u64, out], [out], "kernel 'k_q'", "extend_params['scale'] must be a float",
         "str")
    _err(make({"scale": 0.5}, pypto.DT_INT32), [a, b, u64, out], [out], "kernel 'k_q'", "out_dtype must be one of",
         "got int32")


def test_scaled_mm_int8_without_a_scale_is_an_error():
    g = torch.Generator().manual_seed(3)
    a, b, sa, sb = _mx_inputs(g, (), (), 16, 64, 32)
    out = torch.full((16, 32), 9, dtype=torch.int8)

    @pypto.frontend.jit
    def k_s8(a: pypto.Tensor(), b: pypto.Tensor(), sa: pypto.Tensor(), sb: pypto.Tensor(), out: pypto.Tensor()):
        out[:] = pypto.scaled_mm(a, b, pypto.DT_INT8, sa, sb)
    _err(k_s8, [a, b, sa, sb, out], [out], "kernel 'k_s8'", "scaled_mm", "DT_INT8 needs extend_params 'scale'")
