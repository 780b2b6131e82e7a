"""Generated C++: blocking by set_vec_tile_shapes, determinism, static literals; kernel_rt.h conversions."""
import ctypes
import re

import numpy as np
import pytest
import torch

import pypto
from pypto.codegen import generate
from pypto.compiler import compile_source
from pypto.testing import simple_request
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import trace

F32 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)


def _source(fn, *args, fuse=True, **kw):
    params = build_params(fn.__name__, fn)
    req, _, _ = simple_request(fn.__name__, params, args, kw)
    return generate(trace(prepare(fn, fn.__name__), req), fuse=fuse)


def k_tiled(a: F32, out: F32, t0=8, t1=16):
    pypto.set_vec_tile_shapes(t0, t1)
    out[:] = pypto.exp(a) + 1.0
    out[:] = pypto.sum(a, 1, keepdim=True) + out


def test_vec_tile_shapes_block_the_loops():
    src = _source(k_tiled, torch.zeros(64, 100), torch.zeros(64, 100))
    assert "// fused: 6 statement(s)" in src and "r0" in src and "tt" in src   # one fused tile loop, 8 rows a tile
    assert re.search(r"const int64_t r0\d+ = tt\d+ \* 8;", src)
    src = _source(k_tiled, torch.zeros(64, 100), torch.zeros(64, 100), fuse=False)
    assert "+= 8)" in src and "+= 16)" in src                       # tile loops
    assert "pypto_rt::imin(b" in src                                 # inner loops bounded by the tile end
    untiled = _source(k_tiled, torch.zeros(64, 100), torch.zeros(64, 100), t0=64, t1=128, fuse=False)
    assert not re.search(r"\bb\d+ \+= (64|128)\)", untiled)       # tiles covering the dims: no blocking


def test_static_dims_are_literals_and_source_is_deterministic():
    a = torch.zeros(64, 100)
    s1 = _source(k_tiled, a, a)
    s2 = _source(k_tiled, a, a)
    assert s1 == s2
    assert "< 64" in s1 or "64)" in s1
    assert "tensors[0].shape" not in s1           # nothing read from the shape for static dims


def k_dyn(x: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
    out[:] = x * 2.0


def test_dynamic_dims_read_at_run_time():
    src = _source(k_dyn, torch.zeros(5, 8), torch.zeros(5, 8))
    assert "tensors[0].shape[0]" in src
    assert src == _source(k_dyn, torch.zeros(9, 8), torch.zeros(9, 8))    # one source for every size


def test_large_temporaries_go_to_the_heap():
    src = _source(k_tiled, torch.zeros(512, 512), torch.zeros(512, 512), fuse=False)
    assert "pypto_rt::Buffer" in src
    fused = _source(k_tiled, torch.zeros(512, 512), torch.zeros(512, 512))
    assert "pypto_rt::Buffer" not in fused and "alignas(64) float tb" in fused     # tile buffers only
    small = _source(k_tiled, torch.zeros(4, 4), torch.zeros(4, 4))
    assert "pypto_rt::Buffer" not in small and "alignas(64) float" in small


_CONV_SRC = r"""
#include <pypto/kernel_abi.h>
#include <pypto/kernel_rt.h>
extern "C" __attribute__((visibility("default"))) void to_f16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = pypto_rt::Cvt<pypto_rt::half>::from(in[i]).bits;
}
extern "C" __attribute__((visibility("default"))) void to_bf16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = pypto_rt::Cvt<pypto_rt::bf16>::from(in[i]).bits;
}
extern "C" __attribute__((visibility("default"))) void from_f16(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) { pypto_rt::half h; h.bits = in[i]; out[i] = float(h); }
}
extern "C" __attribute__((visibility("default"))) void from_bf16(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) { pypto_rt::bf16 h; h.bits = in[i]; out[i] = float(h); }
}
"""


@pytest.fixture(scope="module")
def conv_lib():
    lib_path, *_ = compile_source(_CONV_SRC, kernel_name="conversions")
    return ctypes.CDLL(lib_path)


def _call(fn, src: np.ndarray, out_dtype):
    out = np.zeros(src.shape, dtype=out_dtype)
    fn(ctypes.c_void_p(src.ctypes.data), ctypes.c_void_p(out.ctypes.data), ctypes.c_int64(src.size))
    return out


def test_half_and_bf16_to_float_all_bit_patterns(conv_lib):
    bits = np.arange(65536, dtype=np.uint16)
    for fn, tdt in ((conv_lib.from_f16, torch.float16), (conv_lib.from_bf16, torch.bfloat16)):
        got = _call(fn, bits, np.float32)
        ref = torch.from_numpy(bits.view(np.int16)).view(tdt).float().numpy()
        nan = np.isnan(ref)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.uint32), ref[~nan].view(np.uint32))


def test_float_to_half_and_bf16_round_to_nearest_even(conv_lib):
    rng = np.random.default_rng(0)
    patterns = [rng.integers(0, 2 ** 32, 400_000, dtype=np.uint64).astype(np.uint32)]
    # every float around the fp16 subnormal / normal / overflow boundaries and exact ties
    for center in (0x33000000, 0x33800000, 0x38800000, 0x387fc000, 0x477fe000, 0x477ff000, 0x3f801000,
                   0x3f802000, 0x3f808000, 0x00000000, 0x7f7fffff, 0x7f800000):
        patterns.append(np.arange(center - 3000, center + 3000, dtype=np.int64).clip(0, 2 ** 32 - 1).astype(np.uint32))
    u = np.concatenate(patterns)
    u = np.concatenate([u, u | np.uint32(0x80000000)])
    f = u.view(np.float32)
    for fn, tdt in ((conv_lib.to_f16, torch.float16), (conv_lib.to_bf16, torch.bfloat16)):
        got = _call(fn, f, np.uint16)
        ref = torch.from_numpy(f).to(tdt).view(torch.int16).numpy().view(np.uint16)
        nan = np.isnan(f)
        assert np.array_equal(got[~nan], ref[~nan])
        # NaN stays NaN
        exp_mask, man_mask = (0x7c00, 0x3ff) if tdt == torch.float16 else (0x7f80, 0x7f)
        assert np.all(((got[nan] & exp_mask) == exp_mask) & ((got[nan] & man_mask) != 0))
