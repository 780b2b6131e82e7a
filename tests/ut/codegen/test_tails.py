"""Every shape at vector speed: odd widths run as flat loops (codegen/flat.py), bf16 results that are bf16 values
by construction narrow without rounding (templates.py EXACT_OPS) or stay in 16-bit lanes (neg, abs). Each case
is checked against the plain generator's bits (the rounding narrowing, nested loops) and against torch."""
import re

import pytest
import torch

import pypto
import pypto.codegen.templates as TP
from pypto.testing import build_source
from pypto.verify import launch

B2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)
F2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
F3 = pypto.Tensor([pypto.STATIC, pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
F1 = pypto.Tensor([pypto.STATIC], pypto.DT_FP32)
UNARY = ["neg", "abs", "relu", "floor", "ceil", "round", "trunc", "sign"]
BINARY = ["maximum", "minimum"]


def _unary(fn):
    def k(x: B2, out: B2, fn=fn):
        out[:] = getattr(pypto, fn)(x)
    return k


def _binary(fn):
    def k(a: B2, b: B2, out: B2, fn=fn):
        out[:] = getattr(pypto, fn)(a, b)
    return k


def _every_bf16(rows=67, cols=1000):
    """Every bf16 bit pattern (NaNs quiet and signalling of both signs, infinities, zeros, subnormals), then a
    repeat of the first ones, as a rows x cols tensor (an odd width)."""
    n = rows * cols
    bits = (torch.arange(n, dtype=torch.int32) % 65536).to(torch.int16)
    return bits.view(torch.bfloat16).reshape(rows, cols)


def _bits16(t):
    return t.contiguous().view(torch.int16)


def _plain(monkeypatch, k, args, fuse=True):
    """The library and source of k with every bf16 store rounding through Cvt (no EXACT_OPS)."""
    with monkeypatch.context() as m:
        m.setattr(TP, "EXACT_OPS", frozenset())
        return build_source(k, args, fuse)


def _torch_ref(fn, *xs):
    """torch's result in float32 rounded to bf16, and where it is NaN (torch's NaN bits are its own)."""
    f = {"relu": torch.relu}.get(fn) or getattr(torch, fn)
    r = f(*[x.float() for x in xs])
    return r.bfloat16(), torch.isnan(r)


@pytest.mark.parametrize("fn", UNARY + BINARY)
def test_exact_bf16_ops_keep_the_rounding_narrowings_bits(fn, monkeypatch):
    """neg, abs (on the bf16 bits), relu, floor, ceil, round, trunc, sign, maximum, minimum (float, narrowed without
    rounding) give the rounding narrowing's bits on every bf16 input, fused and unfused, at an odd width; the
    numbers are torch's, NaN stays NaN."""
    x = _every_bf16()
    args_in = (x,) if fn in UNARY else (x, torch.roll(x.flatten(), 12345).reshape(x.shape))
    k = _unary(fn) if fn in UNARY else _binary(fn)
    for fuse in (True, False):
        out, ref = torch.zeros_like(x), torch.zeros_like(x)
        lib, src = build_source(k, (*args_in, out), fuse)
        want = {"neg": "bf16_neg(", "abs": "bf16_abs("}.get(fn, "bf16_exact(")
        assert want in src and "Cvt<pypto_rt::bf16>" not in src, src
        launch(lib, [*args_in, out], num_threads=2)
        plib, psrc = _plain(monkeypatch, k, (*args_in, ref), fuse)
        assert "bf16_" not in psrc.split("kernel_body")[1]
        launch(plib, [*args_in, ref], num_threads=1)
        assert torch.equal(_bits16(out), _bits16(ref)), (fn, fuse)
    tref, tnan = _torch_ref(fn, *args_in)
    nan = torch.isnan(out.float())
    if fn != "sign":                      # pypto's sign of NaN is 0 (the comparisons' result), torch's NaN
        assert torch.equal(nan, tnan), fn
    assert torch.equal(_bits16(out)[~tnan], _bits16(tref)[~tnan]), fn


def test_only_bf16_values_skip_the_rounding():
    """The exact narrowing needs every input to be a bf16 value: a float32 input, a constant operand, an fp32
    output or an op that can make new digits (add) keep Cvt's rounding, and torch's values."""
    def mixed(a: B2, b: F2, out: B2):
        out[:] = pypto.cast(pypto.maximum(pypto.cast(a, pypto.DT_FP32), b), pypto.DT_BF16)

    def const(a: B2, out: B2):
        out[:] = pypto.maximum(a, 0.1)

    def widen(a: B2, out: F2):
        out[:] = pypto.neg(pypto.cast(a, pypto.DT_FP32))

    def add(a: B2, b: B2, out: B2):
        out[:] = a + b

    g = torch.Generator().manual_seed(4)
    a = torch.randn(4, 100, generator=g).bfloat16()
    b = torch.randn(4, 100, generator=g)
    for k, args, want in ((mixed, (a, b), torch.maximum(a.float(), b).bfloat16()),
                          (const, (a,), torch.maximum(a.float(), torch.tensor(0.1)).bfloat16()),
                          (widen, (a,), -a.float()), (add, (a, a), (a.float() + a.float()).bfloat16())):
        out = torch.zeros_like(want)
        lib, src = build_source(k, (*args, out), True)
        assert "bf16_exact" not in src and "bf16_neg" not in src, k.__name__
        launch(lib, [*args, out], num_threads=1)
        assert torch.equal(out, want), k.__name__


def _nested_loops(src) -> int:
    return len(re.findall(r"for \(int64_t i\d+ = 0; i\d+ < nr\d+; \+\+i\d+\)", src))


@pytest.mark.parametrize("rows,cols", [(1023, 1000), (37, 50), (300, 257), (5, 7)])
def test_contiguous_tiles_run_as_one_flat_loop(rows, cols):
    """A contiguous elementwise group loops over a tile's rows x cols elements at once (one vector remainder per
    tile, not per row) and gives the nested loops' bits at every thread count."""
    def k(a: F2, b: F2, out: F2):
        out[:] = pypto.exp(a) * 0.5 + b

    g = torch.Generator().manual_seed(rows)
    a, b = torch.randn(rows, cols, generator=g), torch.randn(rows, cols, generator=g)
    lib, src = build_source(k, (a, b, torch.zeros(rows, cols)), True)
    assert _nested_loops(src) == 0 and re.search(r"\(int64_t\)\(nr\d+\) \* \(int64_t\)\(" + str(cols) + r"\)", src)
    ulib, usrc = build_source(k, (a, b, torch.zeros(rows, cols)), False)
    ref = torch.zeros(rows, cols)
    launch(ulib, [a, b, ref], num_threads=1)
    for nt in (1, 2, 3):
        out = torch.zeros(rows, cols)
        launch(lib, [a, b, out], num_threads=nt)
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32)), nt
    torch.testing.assert_close(ref, torch.exp(a) * 0.5 + b, rtol=1e-6, atol=1e-6)


def test_strided_or_broadcast_accesses_keep_the_nested_loops():
    """A column slice (rows not contiguous), a transposed input and a row vector broadcast over the rows cannot
    run flat: those groups keep one loop per row; a 3-D view contiguous only over its last two dims runs those
    two flat. Bits equal the unfused generator's, values torch's."""
    def sliced(x: F2, out: F2):
        out[:] = x[:, 1:] * 2.0

    def transposed(x: F2, out: F2):
        out[:] = pypto.transpose(x, 0, 1) + 1.0

    def bcast(x: F2, v: F1, out: F2):
        out[:] = x * v

    def inner(x: F3, out: F3):
        out[:] = x[:, 0:6, :] - 1.0

    g = torch.Generator().manual_seed(7)
    x = torch.randn(40, 31, generator=g)
    xt = torch.randn(31, 40, generator=g)
    v = torch.randn(31, generator=g)
    x3 = torch.randn(4, 9, 33, generator=g)
    cases = [(sliced, (x,), (40, 30), x[:, 1:] * 2.0, "nested"), (transposed, (xt,), (40, 31), xt.T + 1.0, "nested"),
             (bcast, (x, v), (40, 31), x * v, "nested"), (inner, (x3,), (4, 6, 33), x3[:, 0:6, :] - 1.0, "inner")]
    for k, ins, shape, want, how in cases:
        lib, src = build_source(k, (*ins, torch.zeros(shape)), True)
        body = src.split("kernel_body")[1]
        if how == "nested":
            assert _nested_loops(body) == 1, (k.__name__, body)
        else:                             # the outer (row) dim loops, the two inner dims run as one
            assert _nested_loops(body) == 1 and "(int64_t)(6) * (int64_t)(33)" in body, body
        out, ref = torch.zeros(shape), torch.zeros(shape)
        launch(lib, [*ins, out], num_threads=2)
        ulib, _ = build_source(k, (*ins, ref), False)
        launch(ulib, [*ins, ref], num_threads=1)
        assert torch.equal(out.view(torch.int32), ref.view(torch.int32)), k.__name__
        assert torch.equal(out, want), k.__name__


def _isas():
    from pypto.compiler import toolchain as T

    have = set(T.cpu_identity().split("|")[1].split())
    return ["native"] + (["avx2"] if {"avx2", "fma"} <= have else []) + (["sse4"] if "sse4_2" in have else [])


@pytest.mark.parametrize("isa", _isas())
def test_flat_loops_and_exact_narrowings_vectorize(tmp_path, isa):
    """g++'s vectorization report for each kernel ISA this machine runs: the flat loop of every bf16 exact op
    (16-bit lanes for neg/abs, float lanes narrowed without rounding for the others) and of an fp32 add is
    vectorized, in the generated kernels themselves."""
    import subprocess

    from pypto.compiler import toolchain as T

    def add(a: F2, b: F2, out: F2):
        out[:] = a + b

    x = _every_bf16()
    f = torch.randn(67, 1000)
    kernels = [(_unary(fn), (x, x)) for fn in ("neg", "abs", "floor", "relu")]
    kernels += [(_binary("maximum"), (x, x, x)), (add, (f, f, f))]
    for k, args in kernels:
        _, src = build_source(k, args, True)
        lines = [n + 1 for n, ln in enumerate(src.splitlines())
                 if re.search(r"for \(int64_t i\d+ = 0; i\d+ < \(int64_t\)\(nr\d+\) \* \(int64_t\)\(1000\)", ln)]
        assert len(lines) == 1, (k.__name__, src)
        cpp = tmp_path / "k.cpp"
        cpp.write_text(src)
        r = subprocess.run([T.CXX, *T.flags_for(isa), "-I", str(T.include_dir()), "-fopt-info-vec-optimized", "-S",
                            "-o", str(tmp_path / "k.s"), str(cpp)], capture_output=True, text=True, check=True)
        vec = {int(m.group(1)) for m in re.finditer(r"k\.cpp:(\d+):\d+: optimized: loop vectorized", r.stderr)}
        assert lines[0] in vec, (isa, k.__name__, r.stderr)
