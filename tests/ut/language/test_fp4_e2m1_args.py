"""DT_FP4_E2M1 kernel arguments: uint8 tensors (or torch.float4_e2m1fn_x2) of packed pairs whose kernel shape
counts values (the last dim is twice the bytes, as the reference's kernels see them), read by cast, view,
matmul and scaled_mm; and matmul of the packed pair DT_FP4_E2M1X2. Expected values come from the OCP E2M1 value
list (below) and torch, never from the kernel runtime."""
import pytest
import torch

import pypto
from callpath._util import fails_untouched

# OCP MX E2M1 codes 0..15: sign bit 3, then magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
DYN, ST = pypto.DYNAMIC, pypto.STATIC


def _values(packed: torch.Tensor) -> torch.Tensor:
    """Element 2i of a row from the low nibble of byte i, 2i+1 from the high one."""
    p = packed.view(torch.uint8).long()
    out = torch.empty(p.shape[:-1] + (p.shape[-1] * 2,), dtype=torch.long)
    out[..., 0::2], out[..., 1::2] = p & 15, p >> 4
    return E2M1[out]


@pypto.frontend.jit
def fp4_window(x: pypto.Tensor([ST, ST], pypto.DT_FP4_E2M1), out: pypto.Tensor([ST, ST], pypto.DT_FP32)):
    assert x.dtype == pypto.DT_FP4_E2M1
    pypto.set_vec_tile_shapes(8, 64)
    rows, cols = out.shape
    out[:] = pypto.cast(pypto.view(x, [rows, cols], [1, 32]), pypto.DT_FP32)


def test_every_byte_unpacks_to_its_two_values():
    packed = torch.arange(256, dtype=torch.uint8).reshape(8, 32)     # every pair of codes once
    out = torch.zeros(7, 32)
    fp4_window(packed, out)
    assert torch.equal(out, _values(packed)[1:, 32:])
    assert torch.equal(out.signbit(), _values(packed)[1:, 32:].signbit())   # -0.0 stays negative


@pytest.mark.skipif(not hasattr(torch, "float4_e2m1fn_x2"), reason="this torch has no float4_e2m1fn_x2")
def test_torch_packed_pairs_are_read_the_same():
    packed = torch.randint(0, 256, (4, 40), dtype=torch.uint8)
    out = torch.zeros(3, 40)
    fp4_window(packed.view(torch.float4_e2m1fn_x2), out)
    assert torch.equal(out, _values(packed)[1:, 32:72])


def test_the_kernel_shape_counts_values():
    seen = []

    @pypto.frontend.jit
    def fp4_shape(x: pypto.Tensor([4, 16], pypto.DT_FP4_E2M1), out: pypto.Tensor([4, 16], pypto.DT_FP32)):
        seen.append(tuple(x.shape))
        pypto.set_vec_tile_shapes(4, 16)
        out[:] = pypto.cast(x, pypto.DT_FP32)

    packed = torch.randint(0, 256, (4, 8), dtype=torch.uint8)
    out = torch.zeros(4, 16)
    fp4_shape(packed, out)
    assert seen == [(4, 16)] and torch.equal(out, _values(packed))
    wrong = torch.zeros(4, 16, dtype=torch.uint8)                   # 32 values: not the annotated 16
    fails_untouched(ValueError, lambda: fp4_shape(wrong, out), out, "kernel 'fp4_shape'", "parameter 'x'",
                    "dimension 1 must be 16", "got 32", "in bytes, two values each")


def test_a_float_tensor_for_an_fp4_parameter_is_refused():
    out = torch.full((2, 32), 5.0)
    fails_untouched(TypeError, lambda: fp4_window(torch.zeros(3, 32), out), out, "kernel 'fp4_window'",
                    "parameter 'x'", "expected dtype fp4_e2m1 (stored as uint8)", "got float32")


def test_an_fp4_parameter_is_an_input():
    @pypto.frontend.jit
    def fp4_write(a: pypto.Tensor([4, 8], pypto.DT_FP4_E2M1), out: pypto.Tensor([4, 8], pypto.DT_FP4_E2M1)):
        pypto.set_vec_tile_shapes(4, 8)
        out.move(a)

    out = torch.full((4, 4), 7, dtype=torch.uint8)
    fails_untouched(pypto.KernelTraceError, lambda: fp4_write(torch.ones(4, 4, dtype=torch.uint8), out), out,
                    "kernel 'fp4_write'", "parameter 'out'", "DT_FP4_E2M1 parameter is an input",
                    "DT_FP4_E2M1X2")


def _mx_scales(g: torch.Generator, rows: int, k: int) -> torch.Tensor:
    """E8M0 scales [rows, ceil(k/64), 2] of 2^-3 .. 2^3."""
    e = torch.randint(124, 131, (rows, (k + 63) // 64, 2), generator=g, dtype=torch.uint8)
    return e.view(torch.float8_e8m0fnu)


def _per_k(scale: torch.Tensor, k: int) -> torch.Tensor:
    """[rows, G, 2] scales as [rows, k] factors (entry [r, g, h] scales k indices 64g+32h .. 64g+32h+31)."""
    return scale.float().reshape(scale.shape[0], -1).repeat_interleave(32, dim=1)[:, :k]


def test_scaled_mm_of_fp4_arguments():
    @pypto.frontend.jit
    def fp4_smm(a: pypto.Tensor([DYN, DYN], pypto.DT_FP4_E2M1), b: pypto.Tensor([DYN, DYN], pypto.DT_FP4_E2M1),
                out: pypto.Tensor([DYN, DYN], pypto.DT_FP32),
                sa: pypto.Tensor([pypto.STATIC] * 3, pypto.DT_FP8E8M0),
                sb: pypto.Tensor([pypto.STATIC] * 3, pypto.DT_FP8E8M0)):
        pypto.set_vec_tile_shapes(32, 32, 2)
        pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb, b_trans=True, scale_b_trans=True)

    m, k, n = 40, 128, 32
    g = torch.Generator().manual_seed(7)
    a = torch.randint(0, 256, (m, k // 2), generator=g, dtype=torch.uint8)
    b = torch.randint(0, 256, (n, k // 2), generator=g, dtype=torch.uint8)    # [N, K] (b_trans)
    sa, sb = _mx_scales(g, m, k), _mx_scales(g, n, k)                         # sb [N, G, 2] (scale_b_trans)
    out = torch.zeros(m, n)
    fp4_smm(a, b, out, sa, sb)
    ref = (_values(a) * _per_k(sa, k)).double() @ (_values(b) * _per_k(sb, k)).double().T
    torch.testing.assert_close(out, ref.float(), rtol=1e-6, atol=1e-5)


def test_matmul_of_packed_pairs_reads_their_values():
    @pypto.frontend.jit
    def fp4x2_mm(a: pypto.Tensor([16, 16], pypto.DT_FP4_E2M1X2), b: pypto.Tensor([24, 16], pypto.DT_FP4_E2M1X2),
                 out: pypto.Tensor([16, 24], pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32, b_trans=True)

    g = torch.Generator().manual_seed(9)
    a = torch.randint(0, 256, (16, 16), generator=g, dtype=torch.uint8)
    b = torch.randint(0, 256, (24, 16), generator=g, dtype=torch.uint8)
    out = torch.zeros(16, 24)
    fp4x2_mm(a, b, out)
    torch.testing.assert_close(out, (_values(a).double() @ _values(b).double().T).float(), rtol=0, atol=0)


def test_scaled_mm_refuses_fp4_values_with_packed_pairs():
    @pypto.frontend.jit
    def fp4_mix(a: pypto.Tensor([32, 64], pypto.DT_FP4_E2M1), b: pypto.Tensor([32, 32], pypto.DT_FP4_E2M1X2),
                out: pypto.Tensor([32, 32], pypto.DT_FP32), sa: pypto.Tensor([32, 1, 2], pypto.DT_FP8E8M0),
                sb: pypto.Tensor([32, 1, 2], pypto.DT_FP8E8M0)):
        pypto.set_cube_tile_shapes([32, 32], [64, 64], [32, 32])
        out[:] = pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb, b_trans=True, scale_b_trans=True)

    out = torch.full((32, 32), 3.0)
    scale = torch.full((32, 1, 2), 127, dtype=torch.uint8).view(torch.float8_e8m0fnu)
    fails_untouched(pypto.KernelTraceError,
                    lambda: fp4_mix(torch.zeros(32, 32, dtype=torch.uint8), torch.zeros(32, 32, dtype=torch.uint8),
                                    out, scale, scale),
                    out, "kernel 'fp4_mix'", "scaled_mm", "DT_FP4_E2M1X2 operands go together",
                    "mat_a fp4_e2m1, mat_b float4_e2m1fn_x2")


def test_a_named_last_dim_of_an_fp4_parameter_is_refused():
    n = pypto.frontend.dynamic("N")

    @pypto.frontend.jit
    def fp4_named(x: pypto.Tensor([4, n], pypto.DT_FP4_E2M1), out: pypto.Tensor([4, n], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 16)
        out[:] = pypto.cast(x, pypto.DT_FP32)

    out = torch.full((4, 16), 2.0)
    fails_untouched(pypto.KernelTraceError, lambda: fp4_named(torch.zeros(4, 8, dtype=torch.uint8), out), out,
                    "kernel 'fp4_named'", "parameter 'x'", "cannot be a named dim")


_HUGE_PACKED_CHILD = r"""
import ctypes, numpy as np, pypto
from callpath.test_errors import _DLDataType, _DLDevice, _DLManagedTensor, _capsule_new, _DLTENSOR_NAME

class HugeBytes:
    '''uint8 bytes whose DLPack shape claims 2^62 + 8 of them (a hostile producer; data is a real 16-byte buffer)'''
    def __init__(self):
        self.host = np.zeros(16, np.uint8)
        self.shape = (ctypes.c_int64 * 1)((1 << 62) + 8)
        self.keep = []
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        m = _DLManagedTensor()
        m.dl_tensor.data = self.host.ctypes.data
        m.dl_tensor.device = _DLDevice(1, 0)
        m.dl_tensor.ndim = 1
        m.dl_tensor.dtype = _DLDataType(1, 8, 1)
        m.dl_tensor.shape = self.shape
        m.dl_tensor.strides = None
        m.dl_tensor.byte_offset = 0
        m.deleter = None
        self.keep.append(m)
        return _capsule_new(ctypes.addressof(m), _DLTENSOR_NAME, None)
    def __dlpack_device__(self):
        return (1, 0)

@pypto.frontend.jit
def fp4_fixed(x: pypto.Tensor([32], pypto.DT_FP4_E2M1), out: pypto.Tensor([32], pypto.DT_FP32)):
    out[:] = pypto.cast(x, pypto.DT_FP32)

import torch
out = torch.full((32,), 7.0)
fp4_fixed(torch.zeros(16, dtype=torch.uint8), out)
out.fill_(7.0)
try:
    fp4_fixed(HugeBytes(), out)
except ValueError as e:
    assert "fp4_fixed" in str(e) and "parameter 'x'" in str(e) and "must be 32" in str(e), str(e)
    assert bool((out == 7.0).all())
    print("REFUSED")
"""


def test_a_packed_size_past_int64_is_refused_not_wrapped():
    """A DLPack producer claiming 2^62 + 8 bytes for a DT_FP4_E2M1 parameter: twice that overflows int64, so the
    binder treats the value count as matching no size (never a wrapped, negative or small one): the call is
    refused naming kernel, parameter and the expected size, the output untouched (in a child process, so a
    crash fails this test instead of the run)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    ut = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ut), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", _HUGE_PACKED_CHILD], capture_output=True, text=True, timeout=300,
                       env=env, cwd=str(ut))
    assert r.returncode == 0 and "REFUSED" in r.stdout, (r.returncode, r.stdout[-2000:], r.stderr[-3000:])
