"""set_vec_tile_shapes / set_cube_tile_shapes: validated as in the reference (count, > 0, rank at use, L0/L1
relation, 32-byte alignment of cube tiles) and used by the generated C++ — results checked against torch."""
import re

import pytest
import torch

import pypto
from pypto.codegen import generate
from pypto.testing import simple_request
from pypto.errors import KernelTraceError
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import trace

S2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
S2H = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16)
S2I8 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_INT8)
S2I32 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_INT32)


def _source(fn, *args, fuse=True, **kw):
    params = build_params(fn.__name__, fn)
    req, _, _ = simple_request(fn.__name__, params, args, kw)
    return generate(trace(prepare(fn, fn.__name__), req), fuse=fuse)


def _rand(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


# ---------------------------------------------------------------------------------------------------------------
# vector tiles
# ---------------------------------------------------------------------------------------------------------------

def k_vec(a: S2, out: S2, tile=(8, 16)):
    pypto.set_vec_tile_shapes(*tile)
    out[:] = pypto.exp(a) * 2.0 + pypto.amax(a, 1, keepdim=True)


@pytest.mark.parametrize("tile", [(8, 16), (3, 5), (1, 1, 8, 32)])
def test_vec_tiles_block_the_generated_loops(tile):
    a = _rand(37, 50)
    t0, t1 = tile[-2], tile[-1]
    # fused: the whole statement chain runs tile by tile, t0 rows at a time (rows of the tile, whole lines)
    src = _source(k_vec, a, torch.zeros(37, 50), tile=tile)
    assert re.search(rf"const int64_t r0\d+ = tt\d+ \* {t0};", src)
    assert re.search(rf"const int64_t nr\d+ = pypto_rt::imin\(\(int64_t\){t0}, 37 - r0\d+\);", src)
    # unfused: one blocking loop per tiled dim stepping by the tile size, inner loops bounded by it
    src = _source(k_vec, a, torch.zeros(37, 50), tile=tile, fuse=False)
    assert re.search(rf"for \(int64_t b\d+ = 0; b\d+ < 37; b\d+ \+= {t0}\)", src)
    assert re.search(rf"for \(int64_t b\d+ = 0; b\d+ < 50; b\d+ \+= {t1}\)", src)
    assert re.search(rf"const int64_t e\d+ = pypto_rt::imin\(b\d+ \+ {t1}, \(int64_t\)50\);", src)
    kj = pypto.frontend.jit(k_vec)
    out = torch.zeros(37, 50)
    kj(a, out, tile=tile)
    torch.testing.assert_close(out, torch.exp(a) * 2.0 + a.amax(1, keepdim=True), rtol=1e-6, atol=1e-6)


def test_vec_tiles_apply_to_the_ops_that_follow_in_the_scope():
    def k(a: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
        out[:] = a + 1.0                              # untiled
        for i in pypto.loop(out.shape[0]):            # (i + 1 <= out.shape[0]: the row slices stay static)
            pypto.set_vec_tile_shapes(1, 16)          # only inside this loop body
            out[i:i + 1, :] = out[i:i + 1, :] * 3.0
        out[:] = out - 2.0                            # untiled again

    src = _source(k, torch.zeros(3, 64), torch.zeros(3, 64))
    assert src.count("+= 16)") == 1
    kj = pypto.frontend.jit(k)
    a = _rand(3, 64)
    out = torch.zeros(3, 64)
    kj(a, out)
    torch.testing.assert_close(out, (a + 1.0) * 3.0 - 2.0, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("tile,msg", [
    ((), "expects 1 to 4 tile sizes, got 0"),
    ((1, 2, 3, 4, 5), "expects 1 to 4 tile sizes, got 5"),
    ((8, 0), "tile sizes must be > 0, got 0"),
    ((8, -4), "tile sizes must be > 0, got -4"),
    ((8, 2.5), r"tile sizes must be ints \(static or symbolic\), got 2.5"),
    ((True, 8), r"tile sizes must be ints \(static or symbolic\), got True"),
])
def test_vec_tile_validation(tile, msg):
    a = torch.zeros(4, 8)
    with pytest.raises(KernelTraceError, match=r"kernel 'k_vec': .*" + msg):
        _source(k_vec, a, a, tile=tile)


def test_fewer_vec_tile_sizes_than_the_rank_tile_the_trailing_dims():
    """The reference's rule: set_vec_tile_shapes(16, 32) on a rank-4 op tiles its last two dims (no error)."""
    def k4(a: pypto.Tensor([2, 3, 40, 96], pypto.DT_FP32), out: pypto.Tensor([2, 3, 40, 96], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(16, 32)
        out[:] = pypto.exp(a) * 2.0

    a = _rand(2, 3, 40, 96)
    out = torch.zeros(2, 3, 40, 96)
    pypto.frontend.jit(k4)(a, out)
    torch.testing.assert_close(out, torch.exp(a) * 2.0, rtol=1e-6, atol=1e-6)


def test_vec_tile_errors_through_the_public_api_leave_outputs_untouched():
    kj = pypto.frontend.jit(k_vec)
    out = torch.full((4, 8), 5.0)
    with pytest.raises(KernelTraceError) as ei:
        kj(torch.zeros(4, 8), out, tile=(4, 0))
    assert "kernel 'k_vec': set_vec_tile_shapes: tile sizes must be > 0, got 0 (at " in str(ei.value)
    assert "test_tiling.py:" in str(ei.value)
    assert bool((out == 5.0).all())


def k_sym_tile(a: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
               out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(a.shape[0], 8)          # no static bound: the default tile
    out[:] = pypto.exp(a) + 1.0


def k_sym_bounded_tile(a: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
                       out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32)):
    n = a.shape[0]
    for i in pypto.loop(0, (n + 5) // 6, 1):
        rows = (n - i * 6).min(6)                     # symbolic, static upper bound 6 (the reference's idiom)
        v = pypto.view(a, [6, 8], [i * 6, 0], valid_shape=[rows, 8])
        pypto.set_vec_tile_shapes(*v.shape[:2])
        pypto.assemble(pypto.exp(v) * 2.0, [i * 6, 0], out)


def test_symbolic_tile_size_uses_the_default_tile_when_unbounded():
    from pypto.language.control import DEFAULT_SYMBOLIC_TILE
    src = _source(k_sym_tile, torch.zeros(4, 8), torch.zeros(4, 8))
    assert re.search(rf"\* {DEFAULT_SYMBOLIC_TILE};", src)
    kj = pypto.frontend.jit(k_sym_tile)
    for n in (3, 200):
        a, out = _rand(n, 8, seed=n), torch.zeros(n, 8)
        kj(a, out)
        torch.testing.assert_close(out, torch.exp(a) + 1.0, rtol=1e-6, atol=1e-6)
    assert pypto.get_vec_tile_shapes() == [DEFAULT_SYMBOLIC_TILE, 8]


def test_symbolic_tile_size_uses_its_static_upper_bound():
    src = _source(k_sym_bounded_tile, torch.zeros(4, 8), torch.zeros(4, 8))
    assert re.search(r"\* 6;", src)
    kj = pypto.frontend.jit(k_sym_bounded_tile)
    for n in (4, 6, 17):
        a, out = _rand(n, 8, seed=n), torch.zeros(n, 8)
        kj(a, out)
        torch.testing.assert_close(out, torch.exp(a) * 2.0, rtol=1e-6, atol=1e-6)
    assert pypto.get_vec_tile_shapes() == [6, 8]


# ---------------------------------------------------------------------------------------------------------------
# cube tiles
# ---------------------------------------------------------------------------------------------------------------

def k_mm(a: S2, b: S2, out: S2, m=(16, 32), k=(32, 64), n=(16, 16)):
    pypto.set_cube_tile_shapes(list(m), list(k), list(n))
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)


def test_cube_tiles_block_the_matmul():
    a, b = _rand(40, 70, seed=1), _rand(70, 33, seed=2)
    # the packed kernel (kernel_gemm.h) takes (m0, k0, n0) as its cache blocks
    src = _source(k_mm, a, b, torch.zeros(40, 33))
    assert re.search(r"pypto_rt::gemm_f32\(\(int64_t\)\(40\), \(int64_t\)\(33\), \(int64_t\)\(70\), .*, 16, 32, 16, "
                     r"ctx->num_threads\);", src)
    other = _source(k_mm, a, b, torch.zeros(40, 33), m=(32, 32), k=(16, 16), n=(32, 64))
    assert re.search(r"gemm_f32\(.*, 32, 16, 32, ctx->num_threads\);", other)
    kj = pypto.frontend.jit(k_mm)
    out = torch.zeros(40, 33)
    kj(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-5, atol=1e-4)


def test_default_cube_tiles_without_the_call():
    def k(a: S2, b: S2, out: S2):
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)

    src = _source(k, torch.zeros(8, 8), torch.zeros(8, 8), torch.zeros(8, 8))
    assert re.search(r"gemm_f32\(.*, 64, 256, 256, ctx->num_threads\);", src)


@pytest.mark.parametrize("m,k,n,msg", [
    ([16], [16, 16], [16, 16], r"m must be a list of 2 ints, got \[16\]"),
    ([16, 16], [16, 16, 16, 16], [16, 16], r"k must be a list of 2 or 3 ints"),
    ([16, 16], [16, 16], [0, 16], r"n tile sizes must be positive static ints, got \[0, 16\]"),
    ([32, 16], [16, 16], [16, 16], r"m: the L1 tile m\[1\]=16 must be a multiple of the L0 tile m\[0\]=32"),
    ([16, 48], [32, 40], [16, 16], r"k: the L1 tile k\[1\]=40 must be a multiple of the L0 tile k\[0\]=32"),
])
def test_cube_tile_validation(m, k, n, msg):
    z = torch.zeros(16, 16)
    with pytest.raises(KernelTraceError, match=r"kernel 'k_mm': set_cube_tile_shapes: " + msg):
        _source(k_mm, z, z, z, m=m, k=k, n=n)


@pytest.mark.parametrize("sig,dtype,m,k,n,bad,a_trans", [
    ("f32", torch.float32, (8, 8), (8, 8), (16, 16), "k tile 8", False),      # fp32: 16 elements (reference rule;
                                                                              # m is checked only with a_trans)
    ("f16", torch.float16, (16, 16), (24, 48), (16, 16), "k tile 24", False),  # fp16: 16 elements = 32 bytes
    ("i8", torch.int8, (32, 32), (32, 32), (16, 32), "n tile 16", False),     # int8: 32 elements = 32 bytes
    ("i8", torch.int8, (8, 32), (32, 32), (32, 32), "m tile 8", True),        # m (a_trans): 16 elements, any dtype
])
def test_cube_tile_alignment_is_checked_at_the_matmul(sig, dtype, m, k, n, bad, a_trans):
    ann = {"f32": S2, "f16": S2H, "i8": S2I8}[sig]
    out_ann = S2I32 if sig == "i8" else S2
    out_dt = pypto.DT_INT32 if sig == "i8" else pypto.DT_FP32

    def k_al(a: ann, b: ann, out: out_ann):
        pypto.set_cube_tile_shapes(list(m), list(k), list(n))
        out[:] = pypto.matmul(a, b, out_dt, a_trans=a_trans)

    z = torch.zeros(8, 8, dtype=dtype)
    zo = torch.zeros(8, 8, dtype=torch.int32 if sig == "i8" else torch.float32)
    with pytest.raises(KernelTraceError) as ei:
        _source(k_al, z, z, zo)
    msg = str(ei.value)
    assert "kernel 'k_al': matmul: set_cube_tile_shapes: " + bad + " is not aligned" in msg
    assert "32-byte alignment" in msg and "test_tiling.py:" in msg


def test_int8_matmul_m_tiles_need_16_elements_only():
    """The reference runs int8 matmuls with m = 176 (11 x 16): m is the fractal rows, not a 32-byte inner dim."""
    def k176(a: pypto.Tensor([200, 64], pypto.DT_INT8), b: pypto.Tensor([64, 96], pypto.DT_INT8),
             out: pypto.Tensor([200, 96], pypto.DT_INT32)):
        pypto.set_cube_tile_shapes([176, 176], [64, 64], [32, 32])
        out[:] = pypto.matmul(a, b, pypto.DT_INT32)

    g = torch.Generator().manual_seed(5)
    a = torch.randint(-128, 128, (200, 64), dtype=torch.int8, generator=g)
    b = torch.randint(-128, 128, (64, 96), dtype=torch.int8, generator=g)
    out = torch.zeros(200, 96, dtype=torch.int32)
    pypto.frontend.jit(k176)(a, b, out)
    assert torch.equal(out, a.to(torch.int32) @ b.to(torch.int32))


def test_aligned_cube_tiles_for_fp16_and_int8_compute_exactly():
    def k16(a: S2H, b: S2H, out: S2):
        pypto.set_cube_tile_shapes([16, 32], [16, 16], [16, 16])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)

    def k8(a: S2I8, b: S2I8, out: S2I32):
        pypto.set_cube_tile_shapes([32, 32], [32, 64], [32, 32])
        out[:] = pypto.matmul(a, b, pypto.DT_INT32)

    a, b = _rand(20, 40, seed=3, dtype=torch.float16), _rand(40, 24, seed=4, dtype=torch.float16)
    out = torch.zeros(20, 24)
    pypto.frontend.jit(k16)(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-5, atol=1e-4)
    g = torch.Generator().manual_seed(5)
    ai = torch.randint(-100, 100, (33, 70), generator=g, dtype=torch.int8)
    bi = torch.randint(-100, 100, (70, 9), generator=g, dtype=torch.int8)
    oi = torch.zeros(33, 9, dtype=torch.int32)
    pypto.frontend.jit(k8)(ai, bi, oi)
    assert torch.equal(oi, (ai.long() @ bi.long()).int())


def test_cube_m_tile_is_checked_only_when_a_is_transposed():
    """As the reference: k and n tiles are always 32-byte aligned, the m tile only for a transposed A (the
    reference's multi-rank kernels use m tiles of 8 with bf16)."""
    def k_m8(a: S2, b: S2, out: S2):
        pypto.set_cube_tile_shapes([8, 8], [16, 16], [16, 16])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)

    def k_m8t(a: S2, b: S2, out: S2):
        pypto.set_cube_tile_shapes([8, 8], [16, 16], [16, 16])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32, a_trans=True)

    a, b = torch.randn(8, 8), torch.randn(8, 8)
    out = torch.zeros(8, 8)
    pypto.frontend.jit(k_m8)(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(KernelTraceError) as ei:
        _source(k_m8t, a, b, out)
    assert "kernel 'k_m8t': matmul: set_cube_tile_shapes: m tile 8 is not aligned" in str(ei.value)
