"""The reference namespace's remaining names: enums and the ops that take them, SymbolicScalar,
Element, sub-functions, hints, pass configs, from_torch, platform and pypto.experimental — each against torch, each
error path checked for its message and for untouched outputs."""
import enum
import math

import pytest
import torch

import pypto
from pypto.errors import KernelTraceError, PassError, UnsupportedFeatureError

from callpath._util import fails_untouched as _fails_untouched

F32, I32 = pypto.DT_FP32, pypto.DT_INT32
ANY = pypto.Tensor([])


# ---- enums --------------------------------------------------------------------------------------------------

REFERENCE_ENUMS = {
    "CachePolicy": ["PREFETCH", "NONE_CACHEABLE"],
    "CastMode": ["CAST_NONE", "CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC", "CAST_ODD"],
    "LogBaseType": ["LOG_E", "LOG_2", "LOG_10"],
    "OpType": ["EQ", "NE", "LT", "LE", "GT", "GE"],
    "OutType": ["BOOL", "BIT"],
    "PrecisionType": ["INTRINSIC", "HIGH_PRECISION"],
    "ReLuType": ["NO_RELU", "RELU"],
    "ReduceMode": ["ATOMIC_ADD"],
    "SaturationMode": ["ON", "OFF"],
    "ScatterMode": ["NONE", "ADD", "MULTIPLY"],
    "TopKAlgo": ["MERGE_SORT", "RADIX_SELECT"],
    "TransMode": ["CAST_NONE", "CAST_RINT", "CAST_ROUND"],
}


@pytest.mark.parametrize("name", sorted(REFERENCE_ENUMS))
def test_enums_have_the_reference_members(name):
    cls = getattr(pypto, name)
    assert issubclass(cls, enum.Enum)
    assert [m.name for m in cls] == REFERENCE_ENUMS[name]


def test_enum_values_are_the_reference_values():
    assert [m.value for m in pypto.CastMode] == list(range(7))
    assert (pypto.SaturationMode.ON.value, pypto.SaturationMode.OFF.value) == (0, 1)
    assert (pypto.TransMode.CAST_ROUND.value, pypto.ReLuType.RELU.value) == (2, 1)


# ---- cast(mode=, satmode=) ------------------------------------------------------------------------------------

@pypto.frontend.jit
def k_cast(a: ANY, out: ANY, dt: pypto.DataType, mode: pypto.CastMode, sat: pypto.SaturationMode):
    out[:] = pypto.cast(a, dt, mode, sat)


_SPECIAL = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -2.7, 2.7, 0.49999997, -0.49999997, 3.0, -3.0, 7.5,
                         1e6 + 0.5, -0.0, 0.0])


def _rounded(x, mode):
    if mode == pypto.CastMode.CAST_RINT:
        return torch.round(x)
    if mode == pypto.CastMode.CAST_ROUND:
        return torch.sign(x) * torch.floor(torch.abs(x) + 0.5) if x.dtype == torch.float64 else \
            (torch.sign(x.double()) * torch.floor(torch.abs(x.double()) + 0.5)).to(x.dtype)
    if mode == pypto.CastMode.CAST_FLOOR:
        return torch.floor(x)
    if mode == pypto.CastMode.CAST_CEIL:
        return torch.ceil(x)
    return torch.trunc(x)


@pytest.mark.parametrize("mode", list(pypto.CastMode))
def test_cast_float_to_int_rounds_by_mode(mode):
    x = torch.cat([_SPECIAL, torch.randn(48) * 50])
    out = torch.zeros(x.shape, dtype=torch.int32)
    k_cast(x, out, I32, mode, pypto.SaturationMode.OFF)
    default = mode in (pypto.CastMode.CAST_NONE, pypto.CastMode.CAST_ODD)   # ODD falls back to TRUNC here
    ref = (torch.trunc(x) if default else _rounded(x, mode)).to(torch.int32)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("mode", [pypto.CastMode.CAST_RINT, pypto.CastMode.CAST_ROUND, pypto.CastMode.CAST_FLOOR,
                                  pypto.CastMode.CAST_CEIL, pypto.CastMode.CAST_TRUNC])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_cast_same_float_type_rounds_to_integral_values(mode, dtype):
    x = torch.cat([_SPECIAL, torch.randn(48) * 20]).to(dtype)
    out = torch.zeros(x.shape, dtype=dtype)
    k_cast(x, out, {torch.float32: F32, torch.float16: pypto.DT_FP16}[dtype], mode, pypto.SaturationMode.OFF)
    assert torch.equal(out, _rounded(x, mode))


def test_cast_none_same_type_is_a_copy_and_widening_ignores_the_mode():
    x = torch.randn(40)
    out = torch.zeros(40)
    k_cast(x, out, F32, pypto.CastMode.CAST_NONE, pypto.SaturationMode.OFF)
    assert torch.equal(out, x)
    h = x.half()
    out = torch.zeros(40)
    k_cast(h, out, F32, pypto.CastMode.CAST_FLOOR, pypto.SaturationMode.OFF)
    assert torch.equal(out, h.float())
    out = torch.zeros(40, dtype=torch.float16)
    k_cast(x, out, pypto.DT_FP16, pypto.CastMode.CAST_RINT, pypto.SaturationMode.OFF)
    assert torch.equal(out, x.half())


@pytest.mark.parametrize("dt,tdt", [(pypto.DT_INT8, torch.int8), (pypto.DT_INT16, torch.int16),
                                    (I32, torch.int32), (pypto.DT_INT64, torch.int64), (pypto.DT_UINT8, torch.uint8)])
def test_cast_float_to_int_saturates_with_satmode_on(dt, tdt):
    info = torch.iinfo(tdt)
    x = torch.tensor([1e30, -1e30, float("inf"), float("-inf"), float("nan"), 300.7, -300.7, 70000.2, -70000.2,
                      3e9, -3e9, 1e19, -1e19, 5.9, -5.9, 0.0], dtype=torch.float32)
    out = torch.zeros(x.shape, dtype=tdt)
    k_cast(x, out, dt, pypto.CastMode.CAST_NONE, pypto.SaturationMode.ON)
    ref = torch.trunc(x.double()).nan_to_num(0.0).clamp(info.min, info.max)
    ref = torch.where(ref >= 2.0 ** 63, torch.tensor(float(info.max), dtype=torch.float64), ref)
    expect = [int(min(max(v, info.min), info.max)) for v in ref.tolist()]
    assert out.tolist() == expect


def test_cast_int_narrowing_wraps_by_default_and_saturates_with_satmode_on():
    x = torch.tensor([0, 127, 128, -129, 300, -300, 70000, -70000, 2 ** 40], dtype=torch.int64)
    out = torch.zeros(x.shape, dtype=torch.int8)
    k_cast(x, out, pypto.DT_INT8, pypto.CastMode.CAST_NONE, pypto.SaturationMode.ON)
    assert torch.equal(out, x.clamp(-128, 127).to(torch.int8))
    k_cast(x, out, pypto.DT_INT8, pypto.CastMode.CAST_NONE, pypto.SaturationMode.OFF)
    assert torch.equal(out, x.to(torch.int8))


@pytest.mark.parametrize("src,dt,mode,what", [
    # the directed modes themselves are computed (tests/ut/language/test_cast_directed.py); these are not
    (torch.float32, pypto.DT_FP8E4M3, pypto.CastMode.CAST_FLOOR, "mode=CastMode.CAST_FLOOR for float32 -> "),
    (torch.int64, F32, pypto.CastMode.CAST_CEIL, "mode=CastMode.CAST_CEIL for int64 -> float32"),
])
def test_cast_modes_not_computed_here_raise_unsupported(src, dt, mode, what):
    x = torch.ones(8, dtype=src)
    out = torch.full((8,), 7, dtype=pypto.vocab.dtypes.to_torch(dt))
    _fails_untouched(UnsupportedFeatureError, lambda: k_cast(x, out, dt, mode, pypto.SaturationMode.OFF), out,
                     "kernel 'k_cast'", "cast", what, "is not supported yet")


def test_cast_mode_of_the_wrong_type_is_a_trace_error():
    @pypto.frontend.jit
    def k_badmode(a: ANY, out: ANY):
        out[:] = pypto.cast(a, I32, mode="floor")

    out = torch.full((4,), 5, dtype=torch.int32)
    _fails_untouched(KernelTraceError, lambda: k_badmode(torch.ones(4), out), out, "kernel 'k_badmode'",
                     "cast: mode must be a pypto.CastMode", "got str 'floor'")


# ---- precision_type, topk algo, scatter reduce, matmul relu/trans --------------------------------------------

@pypto.frontend.jit
def k_precise(a: ANY, b: ANY, out: ANY, pt: pypto.PrecisionType):
    out[:] = pypto.div(a, b, pt) + pypto.exp(a, precision_type=pt) + pypto.sqrt(pypto.abs(a), pt) \
        + pypto.pow(pypto.abs(a), 2.0, pt) + pypto.remainder(a, b, pt) + pypto.log(pypto.abs(a) + 1.0, pt) \
        + pypto.rsqrt(pypto.abs(a) + 1.0, pt) + a.exp(pt) + pypto.abs(a).sqrt(precision_type=pt)


@pytest.mark.parametrize("pt", list(pypto.PrecisionType))
def test_precision_type_is_accepted_and_results_are_exact(pt):
    a, b = torch.randn(4, 32), torch.rand(4, 32) + 0.5
    out = torch.zeros(4, 32)
    k_precise(a, b, out, pt)
    ref = a / b + torch.exp(a) + torch.sqrt(a.abs()) + a.abs() ** 2 + torch.remainder(a, b) + \
        torch.log(a.abs() + 1) + torch.rsqrt(a.abs() + 1) + torch.exp(a) + a.abs().sqrt()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_precision_type_of_the_wrong_type_is_a_trace_error():
    @pypto.frontend.jit
    def k_badpt(a: ANY, out: ANY):
        out[:] = pypto.exp(a, "high")

    out = torch.full((4,), 5.0)
    _fails_untouched(KernelTraceError, lambda: k_badpt(torch.ones(4), out), out, "kernel 'k_badpt'",
                     "exp: precision_type must be a pypto.PrecisionType", "got str 'high'")


@pypto.frontend.jit
def k_topk(a: ANY, vals: ANY, idx: ANY, algo: pypto.TopKAlgo):
    v, i = pypto.topk(a, 3, -1, True, algo)
    vals[:] = v
    idx[:] = i


@pytest.mark.parametrize("algo", list(pypto.TopKAlgo))
def test_topk_takes_the_reference_algo_argument(algo):
    a = torch.randn(5, 20)
    vals, idx = torch.zeros(5, 3), torch.zeros(5, 3, dtype=torch.int64)
    k_topk(a, vals, idx, algo)
    rv, ri = torch.topk(a, 3, -1, True)
    assert torch.equal(vals, rv) and torch.equal(idx, ri)


@pypto.frontend.jit
def k_scatter_reduce(x: ANY, index: ANY, src: ANY, out: ANY, reduce):
    out[:] = pypto.scatter(x, 1, index, src, reduce=reduce)


@pytest.mark.parametrize("reduce,torch_reduce", [(None, None), ("add", "add"), ("multiply", "multiply"),
                                                 (pypto.ScatterMode.NONE, None), (pypto.ScatterMode.ADD, "add"),
                                                 (pypto.ScatterMode.MULTIPLY, "multiply")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16])
def test_scatter_reduce_matches_torch(reduce, torch_reduce, dtype):
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(4, 6, generator=g) * 4).to(dtype)
    index = torch.randint(0, 6, (4, 5), generator=g)      # duplicates: the reduction combines them
    src = (torch.randn(4, 5, generator=g) * 3).to(dtype)
    out = torch.zeros(4, 6, dtype=dtype)
    k_scatter_reduce(x, index, src, out, reduce)
    ref = x.scatter(1, index, src) if torch_reduce is None else \
        x.scatter_reduce(1, index, src, {"add": "sum", "multiply": "prod"}[torch_reduce], include_self=True)
    if dtype == torch.float16 and torch_reduce is not None:   # torch rounds each step to fp16 as we do
        torch.testing.assert_close(out, ref, rtol=0, atol=0)
    elif torch_reduce is None:
        # with duplicate indices torch's winner is unspecified; ours: the last write in row-major order of index
        ref = x.clone()
        for r in range(4):
            for c in range(5):
                ref[r, index[r, c]] = src[r, c]
        assert torch.equal(out, ref)
    else:
        assert torch.equal(out, ref)


def test_scatter_reduce_rejects_an_unknown_mode():
    x, index, src = torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.int64), torch.ones(2, 3)
    out = torch.full((2, 3), 9.0)
    _fails_untouched(KernelTraceError, lambda: k_scatter_reduce(x, index, src, out, "max"), out,
                     "kernel 'k_scatter_reduce'", "scatter: reduce must be None, 'add', 'multiply' or a "
                                                  "pypto.ScatterMode, got 'max'")


@pypto.frontend.jit
def k_mm_ext(a: ANY, b: ANY, bias: ANY, out: ANY, relu: pypto.ReLuType, trans: pypto.TransMode):
    out[:] = pypto.matmul(a, b, pypto.DT_FP32, extend_params={"bias_tensor": bias, "relu_type": relu,
                                                              "trans_mode": trans})


@pytest.mark.parametrize("relu", list(pypto.ReLuType))
def test_matmul_relu_type_applies_relu_after_the_bias(relu):
    a, b, bias = torch.randn(8, 16), torch.randn(16, 12), torch.randn(1, 12)
    out = torch.zeros(8, 12)
    k_mm_ext(a, b, bias, out, relu, pypto.TransMode.CAST_NONE)
    ref = a @ b + bias
    torch.testing.assert_close(out, torch.relu(ref) if relu == pypto.ReLuType.RELU else ref, rtol=1e-5, atol=1e-5)


# ---- SymbolicScalar, symbolic_scalar, Element -------------------------------------------------------------------

def test_symbolic_scalar_methods_follow_the_reference_docs():
    s1, s2, x = pypto.SymbolicScalar(10), pypto.SymbolicScalar(5), pypto.SymbolicScalar("x")
    assert isinstance(s1, pypto.SymbolicScalar) and isinstance(x, pypto.SymbolicScalar)
    assert (s1.is_concrete(), x.is_concrete()) == (True, False)
    assert s1.concrete() == 10
    with pytest.raises(ValueError, match="Not concrete value"):
        x.concrete()
    assert (s1.is_immediate(), x.is_immediate()) == (True, False)
    assert (s1.is_symbol(), x.is_symbol()) == (False, True)
    assert (s1.is_expression(), x.is_expression(), (x + 5).is_expression()) == (False, False, True)
    assert int(s1.max(s2)) == 10 and s1.max(13) == 13 and int(s1.min(s2)) == 5 and s1.min(3) == 3
    assert str(x.max(2)) == "max(x, 2)"
    assert pypto.SymbolicScalar(x) is x and pypto.SymbolicScalar("n", 4).concrete() == 4
    assert pypto.SymbolicScalar().is_symbol()
    assert x.as_variable() is None
    assert pypto.symbolic_scalar is pypto.SymbolicScalar
    assert s1 + 1 == 11 and int(s1) == 10 and range(pypto.SymbolicScalar(3)) == range(3)


@pypto.frontend.jit
def k_symscalar(a: pypto.Tensor([pypto.DYNAMIC, 8], F32), out: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
    n = a.shape[0]
    assert isinstance(n, pypto.SymbolicScalar) and n.is_symbol() and not n.is_concrete()
    rows = (n - 2).max(1)
    assert isinstance(rows, pypto.SymbolicScalar) and rows.is_expression()
    v = pypto.view(a, [16, 8], [0, 0], valid_shape=[rows, pypto.symbolic_scalar(8)])
    out[:] = a * 0.0
    pypto.assemble(v * 2.0, [0, 0], out)


def test_symbolic_scalars_in_kernels_are_symbolic_scalar_instances():
    for n in (2, 5, 9):
        a, out = torch.randn(n, 8), torch.full((n, 8), 7.0)
        k_symscalar(a, out)
        ref = torch.zeros(n, 8)
        r = max(n - 2, 1)
        ref[:r] = a[:r] * 2
        assert torch.equal(out, ref)


def test_a_named_symbolic_scalar_has_no_value_in_a_kernel():
    x = pypto.SymbolicScalar("x")

    @pypto.frontend.jit
    def k_free_sym(a: ANY, out: ANY):
        out[:] = a + x

    out = torch.full((4,), 2.0)
    _fails_untouched(KernelTraceError, lambda: k_free_sym(torch.ones(4), out), out, "kernel 'k_free_sym'",
                     "the symbolic scalar `x` was made by pypto.SymbolicScalar('x') and has no value inside a kernel")


def test_element_holds_a_typed_constant_and_is_an_operand():
    e = pypto.Element(pypto.DT_FP32, 3)
    assert (e.dtype, e.value, type(e.value)) == (pypto.DT_FP32, 3.0, float)
    assert pypto.Element(I32, 7.0).value == 7
    with pytest.raises(AttributeError, match="read-only"):
        e.value = 4
    with pytest.raises(ValueError, match="not an integer"):
        pypto.Element(I32, 2.5)

    @pypto.frontend.jit
    def k_elem(a: ANY, idx: ANY, out: ANY, c: pypto.Element):
        out[:] = pypto.scatter(pypto.add(a, c), 1, idx, pypto.Element(pypto.DT_FP32, -1.0))

    a, idx = torch.randn(3, 4), torch.tensor([[0], [2], [3]])
    out = torch.zeros(3, 4)
    k_elem(a, idx, out, pypto.Element(pypto.DT_FP32, 2.5))
    assert torch.equal(out, (a + 2.5).scatter(1, idx, -1.0))


# ---- pypto.frontend.function, pypto.function ------------------------------------------------------------------

SCALE = 3.0


@pypto.frontend.function
def scaled_sum(x, y):
    return (x + y) * SCALE


@pypto.frontend.jit
def k_uses_function(a: ANY, b: ANY, out: ANY):
    with pypto.function("main", a, b, out):
        out[:] = scaled_sum(a, b) - scaled_sum(b, b)


def test_frontend_function_is_inlined_and_its_globals_are_guarded():
    global SCALE
    a, b, out = torch.randn(4, 8), torch.randn(4, 8), torch.zeros(4, 8)
    k_uses_function(a, b, out)
    torch.testing.assert_close(out, (a + b) * 3.0 - (b + b) * 3.0)
    SCALE = 5.0
    try:
        k_uses_function(a, b, out)          # the function's global changed: a new specialization
        torch.testing.assert_close(out, (a + b) * 5.0 - (b + b) * 5.0)
    finally:
        SCALE = 3.0


def test_frontend_function_argument_rules():
    @pypto.frontend.jit
    def k_kw(a: ANY, out: ANY):
        out[:] = scaled_sum(a, y=a)

    @pypto.frontend.jit
    def k_few(a: ANY, out: ANY):
        out[:] = scaled_sum(a)

    out = torch.full((4,), 1.0)
    _fails_untouched(KernelTraceError, lambda: k_kw(torch.ones(4), out), out, "kernel 'k_kw'",
                     "scaled_sum: a pypto.frontend.function takes its arguments by position only", "['y']")
    _fails_untouched(KernelTraceError, lambda: k_few(torch.ones(4), out), out, "kernel 'k_few'",
                     "scaled_sum: expects 2 argument(s) (x, y), got 1")
    with pytest.raises(UnsupportedFeatureError, match="can only be called inside a @pypto.frontend.jit kernel"):
        scaled_sum(torch.ones(2), torch.ones(2))
    with pytest.raises(UnsupportedFeatureError, match="outside a @pypto.frontend.jit kernel is not supported yet"):
        pypto.function("main")


def test_recursive_frontend_function_is_an_error():
    @pypto.frontend.function
    def rec(x):
        return rec(x)

    @pypto.frontend.jit
    def k_rec(a: ANY, out: ANY):
        out[:] = rec(a)

    out = torch.full((4,), 1.0)
    _fails_untouched(KernelTraceError, lambda: k_rec(torch.ones(4), out), out, "kernel 'k_rec'",
                     "recursive pypto.frontend.function calls are not supported")


# ---- hints, pass configs, platform, from_torch ----------------------------------------------------------------

@pypto.frontend.jit
def k_hints(a: ANY, b: ANY, out: ANY):
    pypto.set_semantic_label("mm")
    pypto.set_matrix_size([a.shape[0], a.shape[1], b.shape[1]])
    pypto.pass_verify_print(a, 3, "text", cond=1)
    pypto.pass_verify_save(a, "a_dump", cond=a.shape[0] > 1, idx=2)
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)


def test_hints_are_accepted_kept_and_change_nothing():
    a, b, out = torch.randn(4, 8), torch.randn(8, 3), torch.zeros(4, 3)
    k_hints(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-5, atol=1e-5)
    from pypto.language import hints
    assert hints.get_semantic_label() == "mm" and hints.get_matrix_size() == [4, 8, 3]


def test_hint_argument_errors():
    @pypto.frontend.jit
    def k_bad_size(a: ANY, out: ANY):
        pypto.set_matrix_size([4, 8])
        out[:] = a

    @pypto.frontend.jit
    def k_bad_cond(a: ANY, out: ANY):
        pypto.pass_verify_print(a, cond=None)
        out[:] = a

    out = torch.full((4,), 1.0)
    _fails_untouched(KernelTraceError, lambda: k_bad_size(torch.ones(4), out), out, "kernel 'k_bad_size'",
                     "set_matrix_size: size must be a list of 3 ints [m, k, n], got list [4, 8]")
    _fails_untouched(KernelTraceError, lambda: k_bad_cond(torch.ones(4), out), out, "kernel 'k_bad_cond'",
                     "pass_verify_print: cond must be an int or a symbolic scalar (None is not allowed)")
    with pytest.raises(TypeError, match="label must be a str"):
        pypto.set_semantic_label(3)


def test_conv_tile_shapes_are_validated_and_read_back():
    l1 = pypto.TileL1Info(tileHin=4, tileHout=4, tileWin=8, tileWout=16, tileCinFmap=16, tileCinWeight=32,
                          tileN=16, tileBatch=1)
    l0 = pypto.TileL0Info(tileH=2, tileW=16, tileK=32, tileN=16)
    pypto.set_conv_tile_shapes(tile_l1_info=l1, tile_l0_info=l0)
    assert pypto.get_conv_tile_shapes() == (l1, l0, True)
    pypto.set_conv_tile_shapes(l1)
    got = pypto.get_conv_tile_shapes()
    assert got[0] == l1 and got[2] is False
    with pytest.raises(ValueError, match=r"TileL0Info.tileH \(3\) must divide TileL1Info.tileHout \(4\)"):
        pypto.set_conv_tile_shapes(l1, pypto.TileL0Info(tileH=3))
    with pytest.raises(ValueError, match="TileL1Info.tileBatch must be 1, got 2"):
        pypto.set_conv_tile_shapes(pypto.TileL1Info(tileBatch=2))
    with pytest.raises(ValueError, match="TileL1Info.tileWout must be a multiple of 16, got 8"):
        pypto.set_conv_tile_shapes(pypto.TileL1Info(tileWout=8))


def test_pass_configs_read_back_with_their_defaults():
    key = pypto.PassConfigKey.KEY_DUMP_GRAPH
    assert pypto.get_pass_config("PVC2_OOO", "ExpandFunction", key, False) is False
    pypto.set_pass_default_config(key, True)
    try:
        assert pypto.get_pass_default_config(key, False) is True
        assert pypto.get_pass_config("PVC2_OOO", "Other", key, False) is True
        pypto.set_pass_config("PVC2_OOO", "ExpandFunction", key, False)
        assert pypto.get_pass_config("PVC2_OOO", "ExpandFunction", key, True) is False
        assert pypto.get_pass_configs("PVC2_OOO", "ExpandFunction").dumpGraph is False
        assert pypto.get_pass_configs("PVC2_OOO", "Other").dumpGraph is True
    finally:
        pypto.set_pass_default_config(key, False)
        pypto.set_pass_config("PVC2_OOO", "ExpandFunction", key, False)
    with pytest.raises(PassError, match="Expected boolean type for value, but received int") as ei:
        pypto.set_pass_config("PVC2_OOO", "ExpandFunction", key, 1)
    assert isinstance(ei.value, PassError)
    with pytest.raises(PassError, match="key must be a member of PassConfigKey"):
        pypto.get_pass_default_config("KEY_DUMP_GRAPH", True)


def test_platform_npuarch_reads_back():
    # the reference's default simulation platform (A2A3, NpuArch 2201) when it finds no NPU and no CANN
    assert pypto.platform.npuarch == "DAV_2201"
    try:
        pypto.platform.npuarch = "DAV_3510"
        assert pypto.platform.npuarch == "DAV_3510"
        pypto.platform.npuarch = "1001"                 # the reference also takes the bare number
        assert pypto.platform.npuarch == "DAV_1001"
        pypto.platform.npuarch = "DAV_9999"             # an unknown one: the reference's fallback, 2201
        assert pypto.platform.npuarch == "DAV_2201"
    finally:
        pypto.platform.npuarch = "DAV_2201"
    with pytest.raises(TypeError, match="npuarch must be a str"):
        pypto.platform.npuarch = 3


def test_from_torch_gives_a_tensor_kernels_take():
    @pypto.frontend.jit
    def k_twice(a: pypto.Tensor([pypto.DYNAMIC, 3], F32), out: pypto.Tensor([pypto.DYNAMIC, 3], F32)):
        out[:] = a * 2.0

    x = torch.randn(2, 3)
    xp = pypto.from_torch(x, "x", dynamic_axis=[0], tensor_format=pypto.TileOpFormat.TILEOP_ND, dtype=F32)
    out = torch.zeros(2, 3)
    k_twice(xp, pypto.from_torch(out))
    assert torch.equal(out, x * 2)
    with pytest.raises(ValueError, match="must be contiguous"):
        pypto.from_torch(torch.randn(3, 2).t())
    with pytest.raises(ValueError, match="dynamic_axis entries must be dims of a rank-2 tensor, got 2"):
        pypto.from_torch(x, dynamic_axis=[2])
    with pytest.raises(ValueError, match=r"DT_FP16 \(2-byte elements\) cannot reinterpret a torch.float32 tensor"):
        pypto.from_torch(x, dtype=pypto.DT_FP16)
    with pytest.raises(UnsupportedFeatureError, match="DT_FP4_E2M1 has no torch dtype .* not supported yet"):
        pypto.from_torch(torch.zeros(2, 4, dtype=torch.uint8), dtype=pypto.DT_FP4_E2M1)


def test_from_torch_dtype_reinterprets_the_data():
    @pypto.frontend.jit
    def k_bits(a: pypto.Tensor([4], pypto.DT_INT32), out: pypto.Tensor([4], pypto.DT_INT32)):
        out[:] = pypto.bitwise_and(a, 0x7FFFFFFF)                    # |x| on the float32 bits

    x = torch.tensor([-1.5, 2.0, -0.0, 3.25])
    xi = pypto.from_torch(x, "x", dtype=pypto.DT_INT32)
    assert xi.dtype == torch.int32 and xi.data_ptr() == x.data_ptr()    # the same memory, as the reference
    out = torch.zeros(4, dtype=torch.int32)
    k_bits(xi, out)
    assert torch.equal(out.view(torch.float32), x.abs())
    u = pypto.from_torch(torch.tensor([-1, 2], dtype=torch.int8), dtype=pypto.DT_UINT8)
    assert u.tolist() == [255, 2]


# ---- pypto.experimental -----------------------------------------------------------------------------------------

@pypto.frontend.jit
def k_online(scores: ANY, pm: ANY, ps: ANY, po: ANY, v: ANY, e_out: ANY, m_out: ANY, s_out: ANY, um: ANY,
             us: ANY, uo: ANY, scale: float):
    pypto.set_vec_tile_shapes(64, 64)
    e, m, s = pypto.experimental.online_softmax(scores, scale)
    e_out[:] = e
    m_out[:] = m
    s_out[:] = s
    co = pypto.matmul(v, pypto.cast(e, pypto.DT_FP32), pypto.DT_FP32)     # [head_dim, q_len]
    a, b, c = pypto.experimental.online_softmax_update(pm, ps, po, m, s, co)
    um[:] = a
    us[:] = b
    uo[:] = c


def test_online_softmax_and_update_match_the_formulas():
    k_len, q_len, hd = 16, 24, 8
    g = torch.Generator().manual_seed(5)
    scores, v = torch.randn(k_len, q_len, generator=g), torch.randn(hd, k_len, generator=g)
    pm, ps, po = torch.randn(1, q_len, generator=g), torch.rand(1, q_len, generator=g) + 1, \
        torch.randn(hd, q_len, generator=g)
    outs = [torch.zeros(k_len, q_len, dtype=torch.bfloat16), torch.zeros(1, q_len), torch.zeros(1, q_len),
            torch.zeros(1, q_len), torch.zeros(1, q_len), torch.zeros(hd, q_len)]
    scale = 1.0 / math.sqrt(hd)
    k_online(scores, pm, ps, po, v, *outs, scale)
    s = scores * scale
    m = s.amax(0, keepdim=True)
    e = torch.exp(s - m)
    assert torch.equal(outs[0], e.to(torch.bfloat16))
    assert torch.equal(outs[1], m)
    torch.testing.assert_close(outs[2], e.sum(0, keepdim=True), rtol=1e-6, atol=1e-6)
    co = v @ e.to(torch.bfloat16).float()
    um = torch.maximum(pm, m)
    p, c = torch.exp(pm - um), torch.exp(m - um)
    assert torch.equal(outs[3], um)
    torch.testing.assert_close(outs[4], p * ps + c * e.sum(0, keepdim=True), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(outs[5], po * p + co * c, rtol=1e-5, atol=1e-5)


def test_online_softmax_rejects_other_dtypes():
    @pypto.frontend.jit
    def k_os16(scores: ANY, out: ANY):
        e, m, s = pypto.experimental.online_softmax(scores, 1.0)
        out[:] = m

    out = torch.full((1, 4), 2.0, dtype=torch.float16)
    _fails_untouched(KernelTraceError, lambda: k_os16(torch.ones(4, 4, dtype=torch.float16), out), out,
                     "kernel 'k_os16'", "online_softmax: scores must have dtype float32, got float16")


@pypto.frontend.jit
def k_tbmm(a: ANY, b: ANY, out: ANY):
    out[:] = pypto.experimental.transposed_batchmatmul(a, b, pypto.DT_FP16)


def test_transposed_batchmatmul():
    a, b = torch.randn(16, 2, 32).half(), torch.randn(2, 32, 24).half()
    out = torch.zeros(16, 2, 24, dtype=torch.float16)
    k_tbmm(a, b, out)
    ref = torch.bmm(a.float().permute(1, 0, 2), b.float()).permute(1, 0, 2).half()
    torch.testing.assert_close(out.float(), ref.float(), rtol=2e-3, atol=2e-3)


@pypto.frontend.jit
def k_gather_ub(param: ANY, idx: ANY, table: ANY, out: ANY, bs: int):
    out[:] = pypto.experimental.gather_in_ub(param, idx, table, bs, -2)


@pypto.frontend.jit
def k_gather_l1(src: ANY, idx: ANY, table: ANY, out: ANY, bs: int, size: int, isb: bool, trans: bool):
    out[:] = pypto.experimental.gather_in_l1(src, idx, table, bs, size, isb, trans)


def _paged_ref(param, idx, table, bs):
    ids = idx.reshape(-1).long()
    rows = table.reshape(-1).long()[ids // bs] * bs + ids % bs
    return param[rows]


def test_gather_in_ub_reads_through_the_page_table():
    param = torch.tensor([[0., 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23], [30, 31, 32, 33], [40, 41, 42, 43],
                          [50, 51, 52, 53]])
    idx, table = torch.tensor([[0, 4, 3]], dtype=torch.int32), torch.tensor([[0, 2, 1]], dtype=torch.int32)
    out = torch.zeros(3, 4)
    k_gather_ub(param, idx, table, out, 2)
    assert torch.equal(out, torch.tensor([[0., 1, 2, 3], [20, 21, 22, 23], [50, 51, 52, 53]]))   # the docs' example
    g = torch.Generator().manual_seed(1)
    param = torch.randn(32, 16, generator=g)
    table = torch.randperm(8, generator=g).reshape(1, 8).int()
    idx = torch.randint(0, 32, (1, 10), generator=g).int()
    out = torch.zeros(10, 16)
    k_gather_ub(param, idx, table, out, 4)
    assert torch.equal(out, _paged_ref(param, idx, table, 4))


@pytest.mark.parametrize("isb,trans", [(False, False), (True, True)])
def test_gather_in_l1_takes_the_first_size_columns(isb, trans):
    g = torch.Generator().manual_seed(2)
    src = torch.randn(16, 32, generator=g).half()
    table = torch.tensor([[3, 0, 2, 1]], dtype=torch.int32)
    idx = torch.randint(0, 16, (1, 12), generator=g).long()
    out = torch.zeros(12, 16, dtype=torch.float16)
    k_gather_l1(src, idx, table, out, 4, 16, isb, trans)
    assert torch.equal(out, _paged_ref(src, idx, table, 4)[:, :16])


def test_gather_in_ub_checks_axis_and_a_row_outside_fails_at_run_time():
    param, table = torch.randn(6, 4), torch.tensor([[0, 2, 1]], dtype=torch.int32)
    out = torch.full((1, 4), 8.0)

    @pypto.frontend.jit
    def k_axis(param: ANY, idx: ANY, table: ANY, out: ANY):
        out[:] = pypto.experimental.gather_in_ub(param, idx, table, 2, 0)

    _fails_untouched(KernelTraceError, lambda: k_axis(param, torch.zeros(1, 1, dtype=torch.int32), table, out), out,
                     "kernel 'k_axis'", "gather_in_ub: axis must be -2, got 0")
    _fails_untouched(pypto.KernelRuntimeError, lambda: k_gather_ub(param, torch.tensor([[7]], dtype=torch.int32),
                                                                    table, out, 2), out, "kernel 'k_gather_ub'")


def test_operation_options_read_back_and_hold_inside_a_kernel():
    assert pypto.experimental.get_operation_options() == {"combine_axis": False}
    seen = []

    @pypto.frontend.jit
    def k_opts(a: ANY, out: ANY):
        pypto.experimental.set_operation_options(combine_axis=True)
        seen.append(pypto.experimental.get_operation_options())
        out[:] = a + pypto.amax(a, 1, keepdim=True)

    a, out = torch.randn(4, 8), torch.zeros(4, 8)
    k_opts(a, out)
    torch.testing.assert_close(out, a + a.amax(1, keepdim=True))
    assert seen == [{"combine_axis": True}]
    assert pypto.experimental.get_operation_options() == {"combine_axis": False}
    with pytest.raises(TypeError, match="combine_axis must be a bool, got 1"):
        pypto.experimental.set_operation_options(combine_axis=1)


def test_cache_policy_is_kept_per_tensor_and_changes_nothing():
    seen = []

    @pypto.frontend.jit
    def k_cache(a: ANY, out: ANY):
        a.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
        seen.append((a.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE),
                     a.get_cache_policy(pypto.CachePolicy.PREFETCH),
                     out.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE)))
        out[:] = a.cast(pypto.DT_INT32, pypto.CastMode.CAST_FLOOR)

    a, out = torch.randn(4, 8) * 9, torch.zeros(4, 8, dtype=torch.int32)
    k_cache(a, out)
    assert seen == [(True, False, False)] and torch.equal(out, torch.floor(a).to(torch.int32))

    @pypto.frontend.jit
    def k_bad_policy(a: ANY, out: ANY):
        a.set_cache_policy("prefetch", True)
        out[:] = a

    out = torch.full((4,), 3.0)
    _fails_untouched(KernelTraceError, lambda: k_bad_policy(torch.ones(4), out), out, "kernel 'k_bad_policy'",
                     "set_cache_policy: policy must be a pypto.CachePolicy, got str 'prefetch'")

