"""Method forms of ops on kernel tensors (`x.sin()`, `x.where(c, y)`, `x.assemble(...)`, `x.name`) against their
function forms (bit for bit) and torch; the table's lazy lookup (a method whose function is missing says "not
supported yet", and works once the function exists); the attribute-like members; the method forms of the
structural and index ops (`x.argmax()`, `x.tril_()`, `x.index_add_(...)`, `x.round()`, `x.scatter(...)`)."""
import pytest
import torch

import pypto
import pypto.language as L
from pypto.errors import KernelTraceError, UnsupportedFeatureError
from pypto.language.tensor_methods import METHODS

T = pypto.Tensor


def _rand(shape, dt=torch.float32, lo=-3.0, hi=3.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dt)


def _pair_kernel(call_method, call_function, name):
    """out1 = the method form, out2 = the function form, of the same expression."""
    def body(x: T, y: T, out1: T, out2: T):
        out1[:] = call_method(x, y)
        out2[:] = call_function(x, y)

    body.__name__ = f"pair_{name}"
    return pypto.frontend.jit(body)


UNARY = {  # method name -> torch
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "log": torch.log, "log1p": torch.log1p,
    "log2": torch.log2, "log10": torch.log10, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin,
    "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "erf": torch.erf, "erfc": torch.erfc,
    "sigmoid": torch.sigmoid, "relu": torch.relu, "abs": torch.abs, "neg": torch.neg, "sign": torch.sign,
    "ceil": torch.ceil, "floor": torch.floor, "trunc": torch.trunc, "round": torch.round, "clone": torch.clone,
    "lrelu": torch.nn.functional.leaky_relu,
}
PREDICATES = {"signbit": torch.signbit, "isnan": torch.isnan, "isfinite": torch.isfinite,
              "logical_not": torch.logical_not}
BINARY = {  # method name -> torch; y broadcasts against x
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "fmod": torch.fmod,
    "remainder": torch.remainder, "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
    "hypot": torch.hypot, "atan2": torch.atan2, "floor_div": torch.floor_divide,
}
COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
           "logical_and": torch.logical_and}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_method_equals_function_and_torch(name):
    k = _pair_kernel(lambda x, y: getattr(x, name)(), lambda x, y: getattr(pypto, name)(x), name)
    lo = 1.0 if name == "acosh" else (-0.9 if name in ("asin", "acos", "atanh") else 0.1)
    x = _rand((6, 17), lo=lo, hi=3.0 if lo >= 0.1 else 0.9, seed=1)
    if lo < 0.1:
        x = x * (torch.arange(17) % 2 * 2 - 1) if name not in ("asin", "acos", "atanh") else x
    o1, o2 = torch.zeros_like(x), torch.full_like(x, 5.0)
    k(x, x, o1, o2)
    assert torch.equal(o1, o2)
    torch.testing.assert_close(o1, UNARY[name](x), rtol=3e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_predicate_methods(name):
    k = _pair_kernel(lambda x, y: getattr(x, name)(), lambda x, y: getattr(pypto, name)(x), name)
    x = torch.tensor([[0.0, -0.0, 1.5, -2.0, float("inf"), -float("inf"), float("nan"), 3.0]])
    o1, o2 = torch.zeros(1, 8, dtype=torch.bool), torch.ones(1, 8, dtype=torch.bool)
    k(x, x, o1, o2)
    assert torch.equal(o1, o2) and torch.equal(o1, PREDICATES[name](x))


@pytest.mark.parametrize("name", sorted(BINARY) + sorted(COMPARE))
def test_binary_method_equals_function_and_torch_with_broadcasting(name):
    k = _pair_kernel(lambda x, y: getattr(x, name)(y), lambda x, y: getattr(pypto, name)(x, y), name)
    x, y = _rand((5, 8), lo=0.2, hi=4.0, seed=2), _rand((8,), lo=0.5, hi=2.0, seed=3)
    y[0] = x[1, 0]
    ref = {**BINARY, **COMPARE}[name](x, y)
    o1, o2 = torch.zeros_like(ref), torch.ones_like(ref)
    k(x, y, o1, o2)
    assert torch.equal(o1, o2)
    torch.testing.assert_close(o1, ref, rtol=3e-6, atol=1e-6)


def test_integer_methods_gcd_bitwise():
    @pypto.frontend.jit
    def int_methods(a: T, b: T, o1: T, o2: T, o3: T, o4: T, o5: T, o6: T):
        o1[:] = a.gcd(b)
        o2[:] = a.bitwise_and(b).bitwise_or(3).bitwise_xor(a)
        o3[:] = a.bitwise_not()
        o4[:] = a.bitwise_left_shift(2)
        o5[:] = a.bitwise_right_shift(b.bitwise_and(7))
        o6[:] = pypto.bitwise_xor(pypto.bitwise_or(pypto.bitwise_and(a, b), 3), a)

    a = torch.randint(-500, 500, (4, 9), dtype=torch.int32)
    b = torch.randint(-50, 50, (9,), dtype=torch.int32)
    outs = [torch.zeros(4, 9, dtype=torch.int32) for _ in range(6)]
    int_methods(a, b, *outs)
    assert torch.equal(outs[0], torch.gcd(a, b.expand(4, 9)))
    assert torch.equal(outs[1], ((a & b) | 3) ^ a) and torch.equal(outs[1], outs[5])
    assert torch.equal(outs[2], ~a)
    assert torch.equal(outs[3], a << 2)
    assert torch.equal(outs[4], a >> (b & 7))


def test_precision_type_and_keyword_arguments_reach_the_function():
    @pypto.frontend.jit
    def kw_methods(x: T, w: T, o1: T, o2: T, o3: T):
        o1[:] = x.exp(precision_type=pypto.PrecisionType.INTRINSIC) + x.div(2.0, pypto.PrecisionType.HIGH_PRECISION) + x.log2(precision_type=None)
        o2[:] = x.round(decimals=1) + x.lrelu(negative_slope=0.3) + x.prelu(w)
        o3[:] = x.clip(min=-1.0, max=1.5) + x.clamp(max=0.25)

    x, w = _rand((3, 4), lo=0.1, hi=3.0, seed=4), _rand((4,), seed=5)
    x[0, 0] = -1.0
    o1, o2, o3 = torch.zeros(3, 4), torch.zeros(3, 4), torch.zeros(3, 4)
    kw_methods(x, w, o1, o2, o3)
    torch.testing.assert_close(o1, torch.exp(x) + x / 2.0 + torch.log2(x), rtol=2e-6, atol=1e-6, equal_nan=True)
    torch.testing.assert_close(o2, torch.round(x, decimals=1) + torch.nn.functional.leaky_relu(x, 0.3)
                               + torch.prelu(x, w), rtol=2e-6, atol=1e-6)
    torch.testing.assert_close(o3, x.clamp(-1.0, 1.5) + x.clamp(max=0.25), rtol=0, atol=0)


def test_reductions_scans_softmax_matmul_topk_methods():
    @pypto.frontend.jit
    def red_methods(x: T, y: T, s: T, m: T, sm: T, cs: T, mm: T, tv: T, ti: T, pr: T, me: T):
        s[:] = x.sum(1, keepdim=True)
        m[:] = x.amax(-1, True) - x.amin(-1, keepdim=True)
        sm[:] = x.softmax(1)
        cs[:] = x.cumsum(0)
        mm[:] = x.matmul(y, pypto.DT_FP32)
        v, i = x.topk(3)
        tv[:] = v
        ti[:] = i
        pr[:] = x.prod(1, keepdim=True)
        me[:] = x.mean(0, keepdim=True)

    x, y = _rand((4, 6), seed=6), _rand((6, 5), seed=7)
    outs = [torch.zeros(4, 1), torch.zeros(4, 1), torch.zeros(4, 6), torch.zeros(4, 6), torch.zeros(4, 5),
            torch.zeros(4, 3), torch.zeros(4, 3, dtype=torch.int64), torch.zeros(4, 1), torch.zeros(1, 6)]
    red_methods(x, y, *outs)
    s, m, sm, cs, mm, tv, ti, pr, me = outs
    tol = dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(s, x.sum(1, keepdim=True), **tol)
    torch.testing.assert_close(m, x.amax(-1, True) - x.amin(-1, True), rtol=0, atol=0)
    torch.testing.assert_close(sm, torch.softmax(x, 1), **tol)
    torch.testing.assert_close(cs, torch.cumsum(x, 0), **tol)
    torch.testing.assert_close(mm, x @ y, **tol)
    want_v, want_i = torch.topk(x, 3)
    assert torch.equal(tv, want_v) and torch.equal(ti, want_i)
    torch.testing.assert_close(pr, x.prod(1, keepdim=True), **tol)
    torch.testing.assert_close(me, x.mean(0, keepdim=True), **tol)


def test_shape_view_write_methods():
    @pypto.frontend.jit
    def shape_methods(x: T, v: T, big: T, p: T, u: T, e: T, c: T, f: T, g: T, w: T):
        p[:] = x.permute([1, 0])
        u[:] = x.view([2, 3], [1, 2]).unsqueeze(0).squeeze(0).transpose(0, 1)
        e[:] = v.expand_clone([4, 6])
        big.assemble(x.view([2, 2], [0, 0]), [1, 3])
        c[:] = x.concat([x, x], 0)                     # the listed tensors (x itself is not prepended)
        f.fill_(2.5)
        g[:] = x.reshape([6, 4], valid_shape=None).reshape(3, 8)
        w[:] = x.where(x > 0, -1.0)

    x, v = _rand((4, 6), seed=8), _rand((1, 6), seed=9)
    big = torch.zeros(5, 6)
    p, u, e = torch.zeros(6, 4), torch.zeros(3, 2), torch.zeros(4, 6)
    c, f, g, w = torch.zeros(8, 6), torch.zeros(2, 3), torch.zeros(3, 8), torch.zeros(4, 6)
    shape_methods(x, v, big, p, u, e, c, f, g, w)
    assert torch.equal(p, x.permute(1, 0))
    assert torch.equal(u, x[1:3, 2:5].t())
    assert torch.equal(e, v.expand(4, 6))
    want_big = torch.zeros(5, 6)
    want_big[1:3, 3:5] = x[0:2, 0:2]
    assert torch.equal(big, want_big)
    assert torch.equal(c, torch.cat([x, x], 0))
    assert torch.equal(f, torch.full((2, 3), 2.5))
    assert torch.equal(g, x.reshape(3, 8))
    assert torch.equal(w, torch.where(x > 0, x, -1.0))


def test_valid_shape_keywords_of_getitem_and_expand_clone():
    @pypto.frontend.jit
    def valid_methods(x: T, v: T, a: T, b: T):
        a[:] = x.__getitem__((slice(0, 4), slice(0, 4)), valid_shape=[2, 3]).exp()
        a[2:4, 0:4] = x.getitem((slice(2, 4), slice(0, 4)), valid_shape=[2, 4]).exp()
        b[:] = v.expand_clone([4, 6], valid_shape=[3, 6]) * 2.0

    x, v = _rand((4, 6), seed=10), _rand((1, 6), seed=11)
    a, b = torch.full((4, 4), 9.0), torch.full((4, 6), 9.0)
    valid_methods(x, v, a, b)
    want_a = torch.full((4, 4), 9.0)
    want_a[:2, :3] = torch.exp(x[:2, :3])
    want_a[2:4] = torch.exp(x[2:4, :4])
    torch.testing.assert_close(a, want_a, rtol=2e-6, atol=0)
    want_b = torch.full((4, 6), 9.0)
    want_b[:3] = v.expand(3, 6) * 2.0
    assert torch.equal(b, want_b)


def test_indexing_methods():
    @pypto.frontend.jit
    def index_methods(x: T, idx: T, src: T, g: T, s: T, su: T):
        g[:] = x.gather(1, idx)
        s[:] = x.scatter(1, idx, src)
        su[:] = x.scatter_update(1, idx, 0.5)

    x, src = _rand((3, 5), seed=12), _rand((3, 2), seed=13)
    idx = torch.tensor([[0, 4], [2, 1], [3, 3]], dtype=torch.int64)
    g, s, su = torch.zeros(3, 2), torch.zeros(3, 5), torch.zeros(3, 5)
    index_methods(x, idx, src, g, s, su)
    assert torch.equal(g, torch.gather(x, 1, idx))
    want_s = x.scatter(1, idx, src)
    want_s[2, 3] = src[2, 1]                          # duplicate index: the last write wins here
    assert torch.equal(s, want_s)
    assert torch.equal(su, x.scatter(1, idx, 0.5))


def test_matmul_method_refuses_an_nz_result_naming_it_and_outputs_stay():
    @pypto.frontend.jit
    def mm_nz(x: T, y: T, out: T):
        out[:] = x.matmul(y, pypto.DT_FP32, c_matrix_nz=True)

    x, y, out = torch.ones(2, 3), torch.ones(3, 4), torch.full((2, 4), 7.0)
    with pytest.raises(KernelTraceError) as e:
        mm_nz(x, y, out)
    assert "mm_nz" in str(e.value) and "c_matrix_nz" in str(e.value) and "not supported yet" in str(e.value)
    assert torch.equal(out, torch.full((2, 4), 7.0))


# ---- the table's lazy lookup ----------------------------------------------------------------------------------

def test_a_method_whose_function_is_missing_says_not_supported_yet_and_outputs_stay(monkeypatch):
    monkeypatch.delattr(L, "gcd")                    # as if pypto.gcd did not exist yet

    @pypto.frontend.jit
    def gcd_missing(x: T, out: T):
        out[:] = x.gcd(4)

    x, out = torch.arange(6, dtype=torch.int32), torch.full((6,), -1, dtype=torch.int32)
    with pytest.raises(UnsupportedFeatureError) as e:
        gcd_missing(x, out)
    msg = str(e.value)
    assert "gcd_missing" in msg and "pypto.Tensor.gcd" in msg and "not supported yet" in msg and \
        "pypto.gcd" in msg, msg
    assert torch.equal(out, torch.full((6,), -1, dtype=torch.int32))


def test_a_method_starts_working_when_its_function_is_added(monkeypatch):
    """tril_/triu_ (and argmax, cumprod, index_add_ ...) resolve their function by name when called: a function
    added to pypto.language later makes them work with no edit to the method table."""
    def tril(x, diagonal=0):               # a stand-in built from existing ops: keep j <= i + diagonal
        rows = pypto.cast(pypto.arange(x.shape[0]), pypto.DT_INT64).reshape([x.shape[0], 1])
        cols = pypto.cast(pypto.arange(x.shape[1]), pypto.DT_INT64).reshape([1, x.shape[1]])
        return pypto.where(cols <= rows + diagonal, x, 0.0)

    def index_add_(x, dim, index, source, alpha=1):
        x[:] = x + source * alpha                     # a stand-in: only what the method does with it matters

    monkeypatch.setattr(L, "tril", tril, raising=False)
    monkeypatch.setattr(L, "index_add_", index_add_, raising=False)

    @pypto.frontend.jit
    def lazy_methods(x: T, s: T, a: T, b: T):
        a[:] = x.tril(1)
        b[:] = x
        r = b.tril_(-1)
        r2 = b.index_add_(0, s, s, alpha=2.0)
        assert r is b and r2 is b

    x, s = _rand((4, 5), seed=14), _rand((4, 5), seed=15)
    a, b = torch.zeros(4, 5), torch.zeros(4, 5)
    lazy_methods(x, s, a, b)
    assert torch.equal(a, torch.tril(x, 1))
    assert torch.equal(b, torch.tril(x, -1) + s * 2.0)


def test_every_table_row_resolves_or_says_not_supported_yet():
    missing = [m for m, row in METHODS.items()
               if not callable(getattr(L, row if isinstance(row, str) else row[0], None))]
    assert not {"add", "sin", "gcd", "where", "assemble", "matmul", "topk"} & set(missing), missing
    for m in missing:
        @pypto.frontend.jit
        def uses_missing(x: T, out: T, _m=m):
            out[:] = getattr(x, _m)(0)

        x, out = torch.ones(2, 2), torch.full((2, 2), 4.0)
        with pytest.raises(UnsupportedFeatureError) as e:
            uses_missing(x, out)
        assert f"pypto.Tensor.{m} is not supported yet" in str(e.value), str(e.value)
        assert torch.equal(out, torch.full((2, 2), 4.0))


# ---- attribute-like members ---------------------------------------------------------------------------------

def test_name_id_format_dim_and_cache_policy_members():
    seen = {}

    @pypto.frontend.jit
    def members(x: T, out: T):
        y = x * 2.0
        seen["names"] = (x.name, y.name)
        y.name = "doubled"
        seen["renamed"] = y.name
        seen["ids"] = (x.id, y.id, x[0:1, :].id)
        seen["format"] = x.format
        seen["dim"] = (x.dim, x.dim(), x.dim == 2)
        seen["policy"] = [y.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE)]
        y.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
        seen["policy"].append(y.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE))
        seen["policy"].append(x.get_cache_policy(pypto.CachePolicy.NONE_CACHEABLE))
        out[:] = y

    x, out = torch.randn(3, 4), torch.zeros(3, 4)
    members(x, out)
    assert torch.equal(out, x * 2.0)
    assert seen["names"] == ("x", "") and seen["renamed"] == "doubled"
    ids = seen["ids"]
    assert len(set(ids)) == 3 and all(isinstance(i, int) for i in ids)
    assert seen["format"] == pypto.TileOpFormat.TILEOP_ND
    assert seen["dim"] == (2, 2, True)
    assert seen["policy"] == [False, True, False]


def test_a_non_str_name_is_refused():
    @pypto.frontend.jit
    def bad_name(x: T, out: T):
        x.name = 3
        out[:] = x

    x, out = torch.ones(2), torch.full((2,), 6.0)
    with pytest.raises(KernelTraceError) as e:
        bad_name(x, out)
    assert "bad_name" in str(e.value) and "Tensor.name" in str(e.value) and "3" in str(e.value)
    assert torch.equal(out, torch.full((2,), 6.0))


# ---- methods of the structural and index ops ---------------------------------------------------------------------

I32 = pypto.Tensor([pypto.STATIC], pypto.DT_INT32)


def _randn(shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def test_reduction_and_triangle_methods():
    @pypto.frontend.jit
    def m(x: T, amax_: T, amin_: T, v: T, cp: T, lo: T, hi: T):
        amax_[:] = x.argmax(-1)
        amin_[:] = x.argmin(0, keepdim=True)
        v[:] = x.var(-1)
        cp[:] = x.cumprod(1)
        lo[:] = x.tril(1)
        hi[:] = x.triu(-1)

    x = _randn((4, 6), 1)
    outs = [torch.zeros(4, dtype=torch.int32), torch.zeros(1, 6, dtype=torch.int32), torch.zeros(4),
            torch.zeros(4, 6), torch.zeros(4, 6), torch.zeros(4, 6)]
    m(x, *outs)
    assert torch.equal(outs[0], x.argmax(-1).int())
    assert torch.equal(outs[1], x.argmin(0, keepdim=True).int())
    torch.testing.assert_close(outs[2], x.var(-1))
    torch.testing.assert_close(outs[3], x.cumprod(1))
    assert torch.equal(outs[4], x.tril(1)) and torch.equal(outs[5], x.triu(-1))


def test_in_place_triangle_methods_write_the_tensor_they_are_called_on():
    @pypto.frontend.jit
    def m(x: T, out: T):
        t = pypto.tensor([5, 5], pypto.DT_FP32)
        t[:] = x
        t.tril_()
        u = pypto.tensor([5, 5], pypto.DT_FP32)
        u[:] = x * 2.0
        u.triu_(1)
        out[:] = t + u

    x, out = _randn((5, 5), 2), torch.zeros(5, 5)
    m(x, out)
    assert torch.equal(out, torch.tril(x) + torch.triu(x * 2.0, 1))


def test_index_methods_equal_torch():
    @pypto.frontend.jit
    def m(x: T, idx: I32, src: T, a: T, b: T, c: T):
        a[:] = x.index_add(0, idx, src, alpha=2)
        t = pypto.tensor([3, 4], pypto.DT_FP32)
        t[:] = x
        t.index_add_(0, idx, src)
        b[:] = t
        u = pypto.tensor([3, 4], pypto.DT_FP32)
        u[:] = x
        u.axpy_(src[0:3, :], 0.5)
        c[:] = u

    x, src = _randn((3, 4), 3), _randn((3, 4), 4)
    idx = torch.tensor([2, 0, 2], dtype=torch.int32)
    a, b, c = torch.zeros(3, 4), torch.zeros(3, 4), torch.zeros(3, 4)
    m(x, idx, src, a, b, c)
    torch.testing.assert_close(a, x.index_add(0, idx.long(), src, alpha=2))
    torch.testing.assert_close(b, x.index_add(0, idx.long(), src))
    torch.testing.assert_close(c, x + 0.5 * src)


# ---- round, trunc, scatter methods -------------------------------------------------------------------------------

F32 = pypto.DT_FP32


@pypto.frontend.jit
def k_methods(a: pypto.Tensor([], F32), idx: pypto.Tensor([], pypto.DT_INT64), out: pypto.Tensor([], F32)):
    out[:] = a.round(decimals=1) + a.trunc() + a.scatter(0, idx, 2.0)


def test_tensor_methods_round_trunc_scatter():
    a = torch.randn(3, 4) * 10
    idx = torch.randint(0, 3, (3, 4))
    out = torch.zeros(3, 4)
    k_methods(a, idx, out)
    torch.testing.assert_close(out, a.round(decimals=1) + a.trunc() + a.scatter(0, idx, 2.0), rtol=0, atol=0)


@pypto.frontend.jit
def k_valid_shape_attr(x: T([pypto.DYNAMIC, 8], pypto.DT_FP32), out: T([pypto.DYNAMIC, 8], pypto.DT_FP32),
                       sizes: T([4], pypto.DT_INT32)):
    """The reference's idiom (st/test_gdr_bn_parallel_sched.py): `l = t.valid_shape[0]`, then the last valid row."""
    n = x.shape[0]
    for i in pypto.loop(0, (n + 3) // 4):
        v = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[(n - i * 4).min(4), 8])
        rows = v.valid_shape[0]
        out[i * 4:, :] = v - v[rows - 1:rows, :]
    sizes[:] = pypto.full([4], len(pypto.full([2, 3], 1.0, pypto.DT_FP32).valid_shape), pypto.DT_INT32)


@pytest.mark.parametrize("n", [4, 6, 9])
def test_valid_shape_attribute_is_the_valid_region(n):
    x = _rand((n, 8), seed=n)
    out, sizes = torch.full((n, 8), 5.0), torch.zeros(4, dtype=torch.int32)
    k_valid_shape_attr(x, out, sizes)
    ref = torch.cat([t - t[-1:] for t in x.split(4)])
    assert torch.equal(out, ref)
    assert torch.equal(sizes, torch.full((4,), 2, dtype=torch.int32))
