"""Fused code vs the unfused generator, bit for bit, on random kernels; any thread count gives the same bits."""
import os
import random

import pytest
import torch

import pypto
from pypto.codegen import generate
from pypto.compiler import compile_source
from pypto.testing import build_source, simple_request
from pypto.verify import launch
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import trace

S2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
D2 = pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32)
S1 = pypto.Tensor([pypto.STATIC], pypto.DT_FP32)
D1 = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)


class _P:
    """The ops a random program uses, for pypto (inside a kernel) and for torch (the reference)."""

    def __init__(self, lib):
        self.t = lib == "torch"

    def un(self, fn, x):
        if fn == "relu":
            return torch.relu(x) if self.t else pypto.relu(x)
        return getattr(torch if self.t else pypto, fn)(x)

    def maximum(self, a, b):
        return (torch if self.t else pypto).maximum(a, b)

    def red(self, fn, x, keepdim):
        if self.t:
            return getattr(torch, fn)(x, -1, keepdim=keepdim)
        return getattr(pypto, fn)(x, -1, keepdim=keepdim)

    def roundtrip(self, x, half):
        if self.t:
            return x.to(torch.float16 if half else torch.bfloat16).float()
        dt = pypto.DT_FP16 if half else pypto.DT_BF16
        return pypto.cast(pypto.cast(x, dt), pypto.DT_FP32)


def random_program(seed: int) -> list:
    rng = random.Random(seed)
    prog, n2 = [], 2                      # env starts as [x, y] ([R, C]); v ([C]) is separate
    for _ in range(rng.randint(3, 9)):
        i, j = rng.randrange(n2), rng.randrange(n2)
        kind = rng.choice(["bin", "bin", "un", "scal", "red", "red_flat", "bcast", "cast"])
        if kind == "bin":
            prog.append(("bin", rng.choice("+-*/m"), i, j))
        elif kind == "un":
            prog.append(("un", rng.choice(["exp", "neg", "abs", "relu", "tanh"]), i))
        elif kind == "scal":
            prog.append(("scal", rng.choice("+*"), i, rng.choice([0.5, -1.25, 3.0])))
        elif kind == "red":
            prog.append(("red", rng.choice(["sum", "amax", "amin", "mean"]), i))
        elif kind == "red_flat":
            prog.append(("red_flat", rng.choice(["sum", "amax", "mean"]), i))
        elif kind == "bcast":
            prog.append(("bcast", rng.choice("+*"), i))
        else:
            prog.append(("cast", rng.choice([True, False]), i))
        n2 += 1
    return prog


def run_program(P, prog, x, y, v):
    env = [x, y]
    for st in prog:
        k, a = st[0], env[st[2]] if st[0] != "un" and st[0] != "cast" else None
        if k == "bin":
            b = env[st[3]]
            env.append({"+": a + b, "-": a - b, "*": a * b, "/": a / b}[st[1]] if st[1] != "m" else P.maximum(a, b))
        elif k == "un":
            env.append(P.un(st[1], env[st[2]] * 0.25))
        elif k == "scal":
            env.append(a + st[3] if st[1] == "+" else a * st[3])
        elif k == "red":
            env.append(P.red(st[1], a, True) + a)          # [R, 1] broadcast back over the row
        elif k == "red_flat":
            env.append(a - P.red(st[1], a, False)[:, None])  # no keepdim: a view of the reduction
        elif k == "bcast":
            env.append(a + v if st[1] == "+" else a * v)
        else:
            env.append(P.roundtrip(env[st[2]], st[1]))
    return env[-1]


def _kernels(prog):
    def k_static(x: S2, y: S2, v: S1, out: S2, rs: S1):
        pypto.set_vec_tile_shapes(16, 64)
        r = run_program(_P("pypto"), prog, x, y, v)
        out[:] = r
        rs[:] = pypto.sum(r, -1)

    def k_dynamic(x: D2, y: D2, v: S1, out: D2, rs: D1):
        r = run_program(_P("pypto"), prog, x, y, v)
        out[:] = r
        rs[:] = pypto.amax(r, -1)

    return k_static, k_dynamic


def _build(fn, args, fuse):
    return build_source(fn, args, fuse)


def _bits(t):
    return t.view(torch.int32)


@pytest.mark.parametrize("seed", range(10))
def test_fused_equals_unfused_bit_for_bit(seed):
    prog = random_program(seed)
    rows, cols = [(37, 50), (300, 257), (129, 64)][seed % 3]
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(rows, cols, generator=g), torch.randn(rows, cols, generator=g)
    v = torch.randn(cols, generator=g)
    for which, fn in zip(("static", "dynamic"), _kernels(prog)):
        outs = {}
        for fuse in (True, False):
            out, rs = torch.zeros(rows, cols), torch.zeros(rows)
            lib, src = _build(fn, (x, y, v, out, rs), fuse)
            assert ("// fused:" in src) == fuse
            launch(lib, [x, y, v, out, rs], num_threads=2)
            outs[fuse] = (out, rs)
            if fuse:                                       # any thread count: the same bits
                for nt in (1, 3):
                    o2, r2 = torch.zeros(rows, cols), torch.zeros(rows)
                    launch(lib, [x, y, v, o2, r2], num_threads=nt)
                    assert torch.equal(_bits(o2), _bits(out)) and torch.equal(_bits(r2), _bits(rs))
        (fo, fr), (uo, ur) = outs[True], outs[False]
        assert torch.equal(_bits(fo), _bits(uo)), (which, prog)
        assert torch.equal(_bits(fr), _bits(ur)), (which, prog)
        ref = run_program(_P("torch"), prog, x, y, v)
        tol = 2e-2 if any(st[0] == "cast" for st in prog) else 1e-3
        torch.testing.assert_close(fo, ref, rtol=tol, atol=tol, equal_nan=True)
        rref = ref.sum(-1) if which == "static" else ref.amax(-1)
        torch.testing.assert_close(fr, rref, rtol=tol, atol=tol * cols, equal_nan=True)


def test_small_kernels_never_touch_the_pool():
    def k(a: S1, b: S1, c: S1, out: S1):
        out[:] = a + b + c

    a, b, c = torch.randn(16), torch.randn(16), torch.randn(16)
    out = torch.zeros(16)
    lib, src = _build(k, (a, b, c, out), True)
    assert "PYPTO_RT_THREADS" not in src and "run_parts" not in src and "tb" not in src   # one loop, no buffer
    launch(lib, [a, b, c, out], num_threads=8)
    assert torch.equal(out, a + b + c)


def test_dynamic_dims_proved_equal_by_a_check_fuse_into_one_loop():
    """`out[:] = a + b + c` with DYNAMIC dims: the run-time checks (`a == b`, `a == c`, `a == out`) come first, so the
    write into `out` joins the group: one loop, no whole temporary (before: a heap buffer of a's size and a copy)."""
    D = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)

    def k(a: D, b: D, c: D, out: D):
        out[:] = a + b + c

    a, b, c = torch.randn(100), torch.randn(100), torch.randn(100)
    out = torch.zeros(100)
    lib, src = _build(k, (a, b, c, out), True)
    assert src.count("// fused:") == 1 and "Buffer" not in src
    launch(lib, [a, b, c, out], num_threads=2)
    torch.testing.assert_close(out, a + b + c, rtol=0, atol=0)
    short = torch.full((99,), -7.0)                  # the check still guards the write
    with pytest.raises(pypto.KernelRuntimeError, match="shape mismatch at run time: value dim a.shape\\[0\\] vs target dim "
                                                       "out.shape\\[0\\]"):
        launch(lib, [a, b, c, short], num_threads=1)
    assert torch.equal(short, torch.full((99,), -7.0))


def test_two_dynamic_dims_fuse_into_one_loop():
    """Rows and columns both DYNAMIC: both checked dims count as the group's extents."""
    D2_ = pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32)

    def k(a: D2_, b: D2_, out: D2_):
        out[:] = a * 2.0 + b

    a, b = torch.randn(37, 5), torch.randn(37, 5)
    out = torch.zeros(37, 5)
    lib, src = _build(k, (a, b, out), True)
    assert src.count("// fused:") == 1 and "Buffer" not in src
    launch(lib, [a, b, out], num_threads=2)
    torch.testing.assert_close(out, a * 2.0 + b, rtol=0, atol=0)
    wide = torch.full((37, 6), -7.0)
    with pytest.raises(pypto.KernelRuntimeError, match="shape mismatch at run time"):
        launch(lib, [a, b, wide], num_threads=1)
    assert torch.equal(wide, torch.full((37, 6), -7.0))


def test_reads_of_a_tensor_the_group_overwrote_are_not_recomputed_late():
    def k(a: S2, out: S2):
        t = a * 2.0
        a[:] = 0.0                 # t must keep the values a had before this write
        out[:] = t + 1.0

    a = torch.randn(300, 300)
    a0 = a.clone()
    out = torch.zeros(300, 300)
    lib, _ = _build(k, (a, out), True)
    launch(lib, [a, out], num_threads=2)
    assert torch.equal(out, a0 * 2.0 + 1.0) and torch.equal(a, torch.zeros(300, 300))


def _cpu_flags() -> set:
    from pypto.compiler import toolchain as T

    return set(T.cpu_identity().split("|")[1].split())


def _isas():
    """The kernel ISAs this machine can run (native always; avx2 needs AVX2 + FMA; sse4 needs SSE4.2)."""
    have = _cpu_flags()
    out = ["native"]
    if {"avx2", "fma"} <= have:
        out.append("avx2")
    if "sse4_2" in have:
        out.append("sse4")
    return out


def _softmax_source():
    def k(x: S2, out: S2):
        pypto.set_vec_tile_shapes(8, 256)
        out[:] = pypto.softmax(x, -1)

    x = torch.randn(64, 256)
    params = build_params(k.__name__, k)
    req, _, _ = simple_request(k.__name__, params, (x, torch.zeros(64, 256)), {})
    return generate(trace(prepare(k, k.__name__), req), with_ir_comment=False)


def _compile_for(isa, src, tmp_path, *extra):
    import subprocess

    from pypto.compiler import toolchain as T

    cpp = tmp_path / f"k_{isa}.cpp"
    cpp.write_text(src)
    out = tmp_path / f"k_{isa}.s"
    r = subprocess.run([T.CXX, *T.flags_for(isa), "-I", str(T.include_dir()), *extra, "-S", "-o", str(out),
                        str(cpp)], capture_output=True, text=True, check=True)
    return r.stderr, out.read_text()


@pytest.mark.parametrize("isa", _isas())
def test_fused_inner_loops_vectorize(tmp_path, isa):
    """g++'s vectorization report, for every kernel ISA this machine runs: every loop over a row of the fused
    softmax (max, exp, sum, divide) is vectorized (exp_ is libm-free, reductions use the lane order of
    codegen/lanes.py) and no loop became a memcpy/memset call (-fno-tree-loop-distribute-patterns)."""
    import re

    src = _softmax_source()
    err, asm = _compile_for(isa, src, tmp_path, "-fopt-info-vec-all")
    vec = {int(m.group(1)) for m in re.finditer(rf"k_{isa}\.cpp:(\d+):\d+: optimized: loop vectorized", err)}
    # a loop that only copies the exp block out becomes a fixed-size copy, which g++ expands inline (no call)
    vec |= {int(m.group(1)) for m in re.finditer(rf"k_{isa}\.cpp:(\d+):\d+: missed: statement clobbers memory: "
                                                 r"__builtin_memcpy \([^)]*, 256\)", err)}
    assert "memcpy" not in asm and "memset" not in asm
    lines = src.splitlines()
    # the lane-blocked reduction passes and the element loops (the lane tails never run: 256 % 64 == 0); the
    # exp pass runs in blocks of 64 with the next tile's prefetch, and inside a block the exp's argument loop and
    # the loop that stores the block (exp16 between them)
    row_loops = [i + 1 for i, ln in enumerate(lines)
                 if "+ 64 <= (int64_t)(256)" in ln or "< 256; ++" in ln or re.search(r"< e\d+; \+\+", ln)
                 or re.search(r"for \(int l\d+ = 0; l\d+ < 64; \+\+l\d+\) \{ const int64_t", ln)]
    assert len(row_loops) >= 5 and "pypto_rt::prefetch_at<256>" in src and "pypto_rt::exp16(" in src
    missed = [ln for ln in row_loops if not any(ln <= v <= ln + 2 for v in vec)]
    assert not missed, (isa, missed, err[-2000:])


@pytest.mark.parametrize("isa", _isas())
def test_each_isa_uses_its_vector_width(tmp_path, isa):
    """The code each ISA gets: AVX-512 (native on a machine that has it) uses zmm registers and vscalefps in the
    exp block; avx2 uses ymm, never zmm; sse4 only xmm. So the avx2 path is really what an AVX2-only machine runs."""
    import re

    _, asm = _compile_for(isa, _softmax_source(), tmp_path)
    zmm, ymm = bool(re.search(r"%zmm\d", asm)), bool(re.search(r"%ymm\d", asm))
    avx512 = isa == "native" and "avx512f" in _cpu_flags() and "PYPTO_MARCH" not in os.environ
    if avx512:
        assert zmm and "vscalefps" in asm
    elif isa == "sse4":
        assert not zmm and not ymm and "%xmm" in asm
    else:
        assert not zmm and "vscalefps" not in asm
        assert ymm or "avx" not in _cpu_flags()


@pytest.mark.parametrize("isa", _isas())
def test_softmax_same_bits_on_every_isa(isa, monkeypatch):
    """The fused softmax built for each ISA runs and matches torch; with FMA (native, avx2) it gives the native
    build's bits (exp_ is the same operations on every width, the reduction's lane order is fixed). sse4 has no
    FMA: exp_'s multiply-adds round twice there (PYPTO_RT_MADD), so only the tolerance holds."""
    from pypto.compiler import toolchain as T

    src = _softmax_source()
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(5))
    outs = {}
    for which in ("native", isa):
        monkeypatch.setattr(T, "FLAGS", T.flags_for(which))
        out = torch.zeros(64, 256)
        launch(compile_source(src, None, "k")[0], [x, out], num_threads=2)
        outs[which] = out
    if isa != "sse4":
        assert torch.equal(_bits(outs[isa]), _bits(outs["native"]))
    torch.testing.assert_close(outs[isa], torch.softmax(x, -1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_streaming_stores_give_the_same_bits(seed, monkeypatch):
    """With the streaming threshold at 0 every fused write whose last dim is contiguous streams whole 64-byte
    lines (or falls back to plain stores on odd widths / unaligned rows): the bits equal the unfused build's."""
    import pypto.codegen.machine as MC

    monkeypatch.setattr(MC, "STREAM_MIN_BYTES", 0)
    prog = random_program(seed)
    rows, cols = [(40, 64), (300, 257), (129, 48)][seed]
    g = torch.Generator().manual_seed(seed)
    x, y, v = torch.randn(rows, cols, generator=g), torch.randn(rows, cols, generator=g), torch.randn(cols, generator=g)
    k_static, _ = _kernels(prog)
    outs = {}
    for fuse in (True, False):
        out, rs = torch.zeros(rows, cols), torch.zeros(rows)
        lib, src = _build(k_static, (x, y, v, out, rs), fuse)
        assert ("pypto_rt::stream64" in src) == fuse
        launch(lib, [x, y, v, out, rs], num_threads=3 if fuse else 1)
        outs[fuse] = (out, rs)
    assert torch.equal(_bits(outs[True][0]), _bits(outs[False][0])), prog
    assert torch.equal(_bits(outs[True][1]), _bits(outs[False][1])), prog
    ref = run_program(_P("torch"), prog, x, y, v)
    tol = 2e-2 if any(st[0] == "cast" for st in prog) else 1e-3
    torch.testing.assert_close(outs[True][0], ref, rtol=tol, atol=tol, equal_nan=True)


def test_large_outputs_stream_and_stay_exact(monkeypatch):
    """At a 4 MiB threshold (the machine default's floor) an 8 MiB fp32 output and a 4 MiB bf16 output of a group
    with a reduction stream (rows of whole 64-byte lines); an output view that starts off a 64-byte line (a column
    slice) takes the plain stores, and so does a pure elementwise map (fused.py `streams`); all against torch, any
    thread count, and the bytes around the written view are untouched."""
    import pypto.codegen.machine as MC

    B2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)

    def k(x: S2, out: S2, half: B2):
        m = pypto.amax(x, -1, keepdim=True)
        out[:] = pypto.exp(x * 0.5) + (x - m)
        half[:] = pypto.cast((x - m) * 3.0, pypto.DT_BF16)

    def k_view(x: S2, out: S2):
        m = pypto.amax(x, -1, keepdim=True)
        out[:, 1:] = x[:, 1:] * 2.0 + m

    def k_map(x: S2, out: S2):
        out[:] = pypto.exp(x * 0.5) + x

    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 1024, generator=g)
    monkeypatch.setattr(MC, "STREAM_MIN_BYTES", 4 << 20)       # the smallest machine threshold
    for nt in (1, 2):
        out, half = torch.zeros(2048, 1024), torch.zeros(2048, 1024, dtype=torch.bfloat16)
        x2 = torch.randn(2048, 1024, generator=g)
        lib, src = _build(k, (x, out, half), True)
        # each output: blocks of four lines, then the run's last lines one at a time
        assert src.count("pypto_rt::stream64") == 4 and "pypto_rt::stream_fence()" in src
        assert "pypto_rt::exp16(" in src                        # the exp of a streamed block, 16 lanes at a time
        launch(lib, [x, out, half], num_threads=nt)
        m = x.amax(-1, keepdim=True)
        torch.testing.assert_close(out, torch.exp(x * 0.5) + (x - m), rtol=1e-6, atol=1e-6)
        assert torch.equal(half, ((x - m) * 3.0).bfloat16())
        o2 = torch.full((2048, 1024), 7.0)
        lib2, src2 = _build(k_view, (x2, o2), True)
        assert "pypto_rt::stream64" in src2
        launch(lib2, [x2, o2], num_threads=nt)
        assert torch.equal(o2[:, 1:], x2[:, 1:] * 2.0 + x2.amax(-1, keepdim=True))
        assert torch.equal(o2[:, 0], torch.full((2048,), 7.0))
        o3 = torch.zeros(2048, 1024)
        lib3, src3 = _build(k_map, (x, o3), True)
        assert "pypto_rt::stream64" not in src3
        launch(lib3, [x, o3], num_threads=nt)
        torch.testing.assert_close(o3, torch.exp(x * 0.5) + x, rtol=1e-6, atol=1e-6)


def test_matmul_writes_its_destination_directly_unless_it_overlaps_an_input():
    """`out[...] = matmul(a, b)` accumulates straight into out (no temporary, no copy): same bits as the unfused
    build; into a strided view of a wider tensor; and when out is also an input (aliasing parameters) the
    temporary path keeps the result right."""
    def k(a: S2, b: S2, out: S2):
        pypto.set_cube_tile_shapes([32, 32], [48, 48], [64, 64])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)

    def k_view(a: S2, b: S2, out: S2):
        pypto.set_cube_tile_shapes([32, 32], [48, 48], [64, 64])
        out[:, 8:72] = pypto.matmul(a, b, pypto.DT_FP32)

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(70, 100, generator=g), torch.randn(100, 64, generator=g)
    res = {}
    for fuse in (True, False):
        out = torch.zeros(70, 64)
        lib, src = _build(k, (a, b, out), fuse)
        assert ("pypto_rt::overlaps" in src) == fuse
        launch(lib, [a, b, out], num_threads=2)
        res[fuse] = out
    assert torch.equal(_bits(res[True]), _bits(res[False]))
    torch.testing.assert_close(res[True], a @ b, rtol=1e-5, atol=1e-4)
    wide = torch.full((70, 80), 5.0)
    lib, src = _build(k_view, (a, b, wide), True)
    launch(lib, [a, b, wide], num_threads=2)
    assert torch.equal(_bits(wide[:, 8:72]), _bits(res[True]))
    assert torch.equal(wide[:, :8], torch.full((70, 8), 5.0)) and torch.equal(wide[:, 72:], torch.full((70, 8), 5.0))
    sq = torch.randn(64, 64, generator=g)
    bsq = torch.randn(64, 64, generator=g)
    ref = sq @ bsq
    lib, src = _build(k, (sq, bsq, sq), True)
    launch(lib, [sq, bsq, sq], num_threads=1)         # out is a: the product must come from the old a
    torch.testing.assert_close(sq, ref, rtol=1e-5, atol=1e-4)


def test_matmul_bits_do_not_depend_on_the_thread_count():
    """A matmul big enough for the pool (200x150x170 > 4 Mi multiply-adds) with several runs of row blocks per
    column block (7 row blocks of 32, 3 column blocks of 64: 3-4 runs at 2-3 threads): B is then packed once into
    a buffer shared by the threads (kernel_gemm.h). Edge blocks in every dim (K = 150 is 3 blocks of 48 and one
    of 6; N = 170 ends in a 42-column block), fp32 and bf16 inputs (bf16 B converts while packing). Every thread
    count gives the bits of the serial run, and the result is the product."""
    B2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)

    def k(a: S2, b: S2, out: S2):
        pypto.set_cube_tile_shapes([32, 32], [48, 48], [64, 64])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)

    def k16(a: B2, b: B2, out: S2):
        pypto.set_cube_tile_shapes([32, 32], [48, 48], [64, 64])
        out[:] = pypto.matmul(a, b, pypto.DT_FP32)

    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(200, 150, generator=g), torch.randn(150, 170, generator=g)
    for fn, x, y in ((k, a, b), (k16, a.bfloat16(), b.bfloat16())):
        lib, _ = _build(fn, (x, y, torch.zeros(200, 170)), True)
        res = {}
        for nt in (1, 2, 3, 2):
            out = torch.full((200, 170), float("nan"))
            launch(lib, [x, y, out], num_threads=nt)
            res.setdefault(nt, out)
            assert torch.equal(_bits(out), _bits(res[1])), (fn.__name__, nt)
        torch.testing.assert_close(res[1], x.double() @ y.double(), rtol=1e-5, atol=1e-4, check_dtype=False)


def test_stream_threshold_follows_the_core_cache(monkeypatch):
    """Streaming from max(4 MiB, 2 x L2): 4 MiB where the machine cannot say or for a 2 MiB L2, 32 MiB for a
    16 MiB L2; an output below the threshold takes plain stores, one at it streams."""
    import pypto.codegen.machine as MC

    def k(x: S2, out: S2):
        out[:] = x * 2.0 + pypto.amax(x, -1, keepdim=True)     # a group with a reduction (fused.py `streams`)

    monkeypatch.setattr(MC, "STREAM_MIN_BYTES", None)
    try:
        for l2, want in ((0, 4 << 20), (2 << 20, 4 << 20), (16 << 20, 32 << 20)):
            MC._machine_stream_min.cache_clear()
            monkeypatch.setattr(MC, "cache_bytes", lambda level, l2=l2: l2 if level == 2 else 0)
            assert MC.stream_min_bytes() == want, l2
        x = torch.randn(4096, 1024)            # 16 MiB out: below 32 MiB
        out = torch.zeros(4096, 1024)
        _, src = _build(k, (x, out), True)
        assert "pypto_rt::stream64" not in src
        x, out = torch.randn(8192, 1024), torch.zeros(8192, 1024)      # 32 MiB: at the threshold
        lib, src = _build(k, (x, out), True)
        assert "pypto_rt::stream64" in src
        launch(lib, [x, out], num_threads=2)
        assert torch.equal(out, x * 2.0 + x.amax(-1, keepdim=True))
    finally:
        MC._machine_stream_min.cache_clear()


def test_cache_sizes_are_read_from_sysfs(tmp_path, monkeypatch):
    """A level's size is its data/unified cache in sysfs (sizes in K, M or plain bytes; instruction caches skipped);
    unreadable or absent, 0 unless sysconf knows. On this machine: what sysfs says (CPython's os.sysconf does not
    know SC_LEVEL2/3_CACHE_SIZE on glibc: the old code raised there and treated every machine as cache-less)."""
    import pypto.codegen.machine as MC

    def entry(name, level, kind, size):
        d = tmp_path / name
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")

    entry("index0", 1, "Data", "48K")
    entry("index1", 1, "Instruction", "64K")
    entry("index2", 2, "Unified", "2048K")
    entry("index3", 3, "Unified", "516096K")
    (tmp_path / "uevent").write_text("")
    monkeypatch.setattr(MC, "SYS_CACHE", str(tmp_path))
    assert (MC.cache_bytes(1), MC.cache_bytes(2), MC.cache_bytes(3)) == (48 << 10, 2 << 20, 516096 << 10)
    (tmp_path / "index2" / "size").write_text("1M\n")
    assert MC.cache_bytes(2) == 1 << 20
    (tmp_path / "index2" / "size").write_text("4194304\n")
    assert MC.cache_bytes(2) == 4 << 20
    knows = "SC_LEVEL2_CACHE_SIZE" in os.sysconf_names
    (tmp_path / "index2" / "size").write_text("garbage\n")
    assert MC.cache_bytes(2) == 0 or knows                     # unreadable: no answer from sysfs
    monkeypatch.setattr(MC, "SYS_CACHE", str(tmp_path / "absent"))
    assert MC.cache_bytes(2) == 0 or knows
    monkeypatch.undo()
    real = "/sys/devices/system/cpu/cpu0/cache/index2"
    if os.path.exists(real + "/size"):
        with open(real + "/level") as f:
            level = int(f.read())
        with open(real + "/size") as f:
            size = f.read().strip()
        assert MC.cache_bytes(level) == int(size[:-1]) * {"K": 1 << 10, "M": 1 << 20}[size[-1]]
    else:
        assert MC.cache_bytes(2) >= 0


def _softmax_src(rows, cols, fuse=True, view=False):
    """(library, source, x, x's softmax input): with view, the kernel's softmax reads x[:, 3:] (rows that start
    3 elements off a line)."""
    def k(x: S2, out: S2):
        pypto.set_vec_tile_shapes(8, 1024)
        out[:] = pypto.softmax(x, -1)

    def k_view(x: S2, out: S2):
        pypto.set_vec_tile_shapes(8, 1024)
        out[:] = pypto.softmax(x[:, 3:], -1)

    g = torch.Generator().manual_seed(rows + cols)
    x = torch.randn(rows, cols + 3 if view else cols, generator=g)
    out = torch.zeros(rows, cols)
    lib, src = _build(k_view if view else k, (x, out), fuse)
    return lib, src, x, (x[:, 3:] if view else x)


def test_second_pass_prefetches_the_next_tile_and_keeps_the_bits():
    """A group with two passes over whole rows (softmax: max, then exp) requests the next tile's input rows in its
    second pass, a block of 64 elements at a time; tiles hold at most 8 KiB of buffers and input rows. The
    prefetch and the tile size change where values live, not the bits: fused == unfused at 1-3 threads, for a row
    width with a tail (257) and an input view that starts off a line, and softmax matches torch."""
    import re

    import pypto.codegen.fused as FZ

    for rows, cols, view in ((300, 257, False), (300, 257, True), (64, 1024, False)):
        lib, src, x, xs = _softmax_src(rows, cols, True, view)
        assert src.count("pypto_rt::prefetch_at<256>") == 1, src
        t = int(re.search(r"const int64_t r0\d+ = tt\d+ \* (\d+);", src).group(1))
        assert t * cols * 4 * 2 <= FZ.TILE_L1_BYTES or t == 1          # x rows + the exp buffer
        ulib, usrc, _, _ = _softmax_src(rows, cols, False, view)
        assert "prefetch" not in usrc
        ref = torch.zeros(rows, cols)
        launch(ulib, [x, ref], num_threads=1)
        for nt in (1, 2, 3):
            out = torch.zeros(rows, cols)
            launch(lib, [x, out], num_threads=nt)
            assert torch.equal(_bits(out), _bits(ref)), (rows, cols, view, nt)
        torch.testing.assert_close(ref, torch.softmax(xs, -1), rtol=1e-5, atol=1e-6)


def test_one_pass_groups_and_short_rows_do_not_prefetch():
    """axpy reads each element once (the hardware prefetcher keeps up); rows of fewer than 64 elements have no
    block to spread requests over."""

    def axpy(a: S2, b: S2, out: S2):
        out[:] = a * 2.0 + b

    a, b, out = torch.randn(512, 1024), torch.randn(512, 1024), torch.zeros(512, 1024)
    lib, src = _build(axpy, (a, b, out), True)
    assert "prefetch" not in src
    launch(lib, [a, b, out], num_threads=2)
    assert torch.equal(out, a * 2.0 + b)
    lib, src, x, _ = _softmax_src(200, 50)
    assert "prefetch" not in src
    out = torch.zeros(200, 50)
    launch(lib, [x, out], num_threads=2)
    torch.testing.assert_close(out, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,dt", [("sum", torch.float32), ("amax", torch.float32), ("prod", torch.bfloat16)])
def test_one_pass_row_reduction_prefetches_8_kib_of_rows_ahead_and_keeps_the_bits(fn, dt):
    """A row reduction reads each row once and has no second pass to hide the next tile behind: its blocks request
    the rows PREFETCH_AHEAD bytes ahead (2 rows of 1024 fp32, 4 of 1024 bf16: the tile itself is 1 row), and the
    results equal the unfused kernel's bits and torch's reduction."""
    import re

    import pypto.codegen.fused as FZ

    pdt = pypto.DT_FP32 if dt == torch.float32 else pypto.DT_BF16

    def k(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pdt), out: pypto.Tensor([pypto.STATIC], pdt)):
        pypto.set_vec_tile_shapes(8, 1024)
        out[:] = getattr(pypto, fn)(x, -1)

    g = torch.Generator().manual_seed(7)
    x = (1 + 0.01 * torch.randn(37, 1024, generator=g)).to(dt)
    lib, src = _build(k, (x, torch.zeros(37, dtype=dt)), True)
    ahead = FZ.PREFETCH_AHEAD // (1024 * x.element_size())
    assert src.count("pypto_rt::prefetch_at<") == 1, src
    m = re.search(r"prefetch_at<\d+>\(q\d+, \(r0\d+ \+ (\d+) \+ i\d+\) \* 1024", src)
    assert m and int(m.group(1)) == ahead, src
    ulib, usrc = _build(k, (x, torch.zeros(37, dtype=dt)), False)
    assert "prefetch" not in usrc
    ref = torch.zeros(37, dtype=dt)
    launch(ulib, [x, ref], num_threads=1)
    for nt in (1, 2):
        out = torch.zeros(37, dtype=dt)
        launch(lib, [x, out], num_threads=nt)
        assert torch.equal(out.view(torch.int16 if dt == torch.bfloat16 else torch.int32),
                           ref.view(torch.int16 if dt == torch.bfloat16 else torch.int32)), (fn, nt)
    want = getattr(torch, fn)(x.float(), -1) if fn != "amax" else torch.amax(x.float(), -1)
    torch.testing.assert_close(ref.float(), want, rtol=1e-2 if dt == torch.bfloat16 else 1e-5, atol=1e-3)


B2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)
B1 = pypto.Tensor([pypto.STATIC], pypto.DT_BF16)


def test_a_cast_weight_vector_does_not_make_the_rows_tiles_of_columns():
    """RMSNorm with a bf16 weight: `cast(w)` is a 1-D group of its own; the 2-D statements after it keep rows as
    their tile axis (a broadcast weight once made the contiguous last dim the row axis: strided 31-column tiles,
    4x slower than torch). Fused and unfused bits agree, and match torch's rms_norm within bf16 rounding."""
    import re

    def k(x: B2, w: B1, out: B2):
        pypto.set_vec_tile_shapes(8, 1024)
        xf = pypto.cast(x, pypto.DT_FP32)
        ms = pypto.mean(xf * xf, -1, keepdim=True)
        out[:] = pypto.cast(xf * pypto.rsqrt(ms + 1e-6) * pypto.cast(w, pypto.DT_FP32), pypto.DT_BF16)

    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(64, 1024, generator=g).bfloat16(), torch.randn(1024, generator=g).bfloat16()
    outs = {}
    for fuse in (True, False):
        out = torch.zeros_like(x)
        lib, src = _build(k, (x, w, out), fuse)
        if fuse:
            assert not re.search(r"for \(int64_t i\d+ = 0; i\d+ < 64; \+\+i\d+\)", src), "rows looped inside tiles"
        launch(lib, [x, w, out], num_threads=2)
        outs[fuse] = out
    assert torch.equal(outs[True].view(torch.int16), outs[False].view(torch.int16))
    want = torch.nn.functional.rms_norm(x.float(), (1024,), w.float(), 1e-6)
    torch.testing.assert_close(outs[True].float(), want, rtol=2e-2, atol=2e-2)
