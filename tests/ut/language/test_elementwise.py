"""Elementwise ops and operator overloads against torch: fp32 plus fp16/bf16/int32, broadcasting, scalar operands
and their promotion, casts, comparisons; every op of API.md §5 on odd and tail shapes (1, 7, 33, 130 elements,
3x5, 2x3x7) with tensor/tensor, broadcast and scalar operands. The math functions: test_math_ops.py."""
import pytest
import torch

import pypto

from _multi import ALL4, FLOATS, SHAPES, TOL, check, rand, run_multi
from _multi import rand as _rand

FP = [torch.float32, torch.float16, torch.bfloat16]


def _binary_kernel(fn):
    @pypto.frontend.jit
    def k(a: pypto.Tensor, b: pypto.Tensor, out: pypto.Tensor):
        out[:] = fn(a, b)
    return k


def _unary_kernel(fn):
    @pypto.frontend.jit
    def k(a: pypto.Tensor, out: pypto.Tensor):
        out[:] = fn(a)
    return k


def _op_sub(a, b):
    return a - b


def _op_div(a, b):
    return a / b


BINARY = {"add": (pypto.add, torch.add), "sub": (_op_sub, torch.sub), "mul": (pypto.mul, torch.mul),
          "div": (_op_div, torch.div), "maximum": (pypto.maximum, torch.maximum),
          "minimum": (pypto.minimum, torch.minimum)}


# int32 division returns FP32 (a different output dtype): covered by its own test, not in this grid
@pytest.mark.parametrize("name,dtype", [(n, d) for n in BINARY for d in FP + [torch.int32]
                                        if not (n == "div" and d == torch.int32)])
def test_binary_same_shape_exact(name, dtype):
    fn, ref = BINARY[name]
    a, b = _rand((7, 13), dtype, seed=1), _rand((7, 13), dtype, seed=2)
    if name == "div":
        b = torch.where(b == 0, torch.ones_like(b), b)
    out = torch.zeros(7, 13, dtype=dtype)
    _binary_kernel(fn)(a, b, out)
    assert torch.equal(out, ref(a, b)), (out, ref(a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("bshape", [(1, 13), (13,), (7, 1), (1, 1)])
def test_binary_broadcast(dtype, bshape):
    a, b = _rand((7, 13), dtype, seed=3), _rand(bshape, dtype, seed=4)
    out = torch.zeros(7, 13, dtype=dtype)
    _binary_kernel(lambda x, y: x * y + x)(a, b, out)
    assert torch.equal(out, a * b + a)


def test_int_div_is_fp32():
    a = torch.arange(1, 11, dtype=torch.int32).reshape(2, 5)
    b = torch.full((2, 5), 3, dtype=torch.int32)
    out = torch.zeros(2, 5)
    _binary_kernel(lambda x, y: x / y)(a, b, out)
    assert torch.equal(out, a / b)


@pytest.mark.parametrize("dtype", FP)
def test_scalar_operands(dtype):
    a = _rand((5, 9), dtype, seed=5)
    out = torch.zeros(5, 9, dtype=dtype)
    _unary_kernel(lambda x: (x * 0.1 + 2.5) * 3 - 1.0)(a, out)
    assert torch.equal(out, (a * 0.1 + 2.5) * 3 - 1.0)
    _unary_kernel(lambda x: 1.5 - x)(a, out)
    assert torch.equal(out, 1.5 - a)
    _unary_kernel(lambda x: 2.0 / x)(a, out)
    assert torch.equal(out, 2.0 / a)


def test_int_scalar_ops():
    a = _rand((4, 6), torch.int32, seed=6)
    out = torch.zeros(4, 6, dtype=torch.int32)
    _unary_kernel(lambda x: x * 3 + 7 - x)(a, out)
    assert torch.equal(out, a * 3 + 7 - a)
    _unary_kernel(lambda x: x // 4)(a, out)
    assert torch.equal(out, torch.floor_divide(a, 4))
    _unary_kernel(lambda x: x % 5)(a, out)
    assert torch.equal(out, torch.remainder(a, 5))
    outf = torch.zeros(4, 6)
    _unary_kernel(lambda x: x * 0.5)(a, outf)        # int tensor * float scalar -> fp32
    assert torch.equal(outf, a * 0.5)


def test_float_floordiv_remainder_pow():
    a, b = _rand((6, 7), torch.float32, seed=7), _rand((6, 7), torch.float32, 0.5, 3.0, seed=8)
    out = torch.zeros(6, 7)
    _binary_kernel(lambda x, y: x // y)(a, b, out)
    assert torch.equal(out, torch.floor_divide(a, b))
    _binary_kernel(lambda x, y: x % y)(a, b, out)
    assert torch.equal(out, torch.remainder(a, b))
    _binary_kernel(lambda x, y: pypto.abs(x) ** y)(a, b, out)
    torch.testing.assert_close(out, a.abs() ** b, rtol=2e-6, atol=1e-6)


def _log(x):
    return pypto.log(pypto.abs(x) + 0.5)


def _sqrt(x):
    return pypto.sqrt(pypto.abs(x))


def _rsqrt(x):
    return pypto.rsqrt(pypto.abs(x) + 0.5)


UNARY = {"exp": (pypto.exp, torch.exp), "log": (_log, lambda x: torch.log(x.abs() + 0.5)),
         "sqrt": (_sqrt, lambda x: torch.sqrt(x.abs())), "rsqrt": (_rsqrt, lambda x: torch.rsqrt(x.abs() + 0.5)),
         "tanh": (pypto.tanh, torch.tanh), "sigmoid": (pypto.sigmoid, torch.sigmoid)}


@pytest.mark.parametrize("dtype", FP)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_math(name, dtype):
    fn, ref = UNARY[name]
    a = _rand((9, 17), dtype, seed=9)
    out = torch.zeros(9, 17, dtype=dtype)
    _unary_kernel(fn)(a, out)
    tol = {torch.float32: 3e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(out.float(), ref(a).float(), rtol=tol, atol=tol)


def _neg(x):
    return -x


@pytest.mark.parametrize("dtype", FP + [torch.int32])
def test_unary_exact(dtype):
    a = _rand((9, 17), dtype, seed=10)
    out = torch.zeros(9, 17, dtype=dtype)
    for fn, ref in ((pypto.abs, torch.abs), (pypto.neg, torch.neg), (pypto.relu, torch.relu), (_neg, torch.neg)):
        _unary_kernel(fn)(a, out)
        assert torch.equal(out, ref(a))
    if dtype.is_floating_point:
        b = a * 2.5
        for fn, ref in ((pypto.round, torch.round), (pypto.floor, torch.floor), (pypto.ceil, torch.ceil)):
            _unary_kernel(fn)(b, out)
            assert torch.equal(out, ref(b))


def test_clip():
    a = _rand((5, 8), torch.float32, seed=11)
    out = torch.zeros(5, 8)
    _unary_kernel(lambda x: pypto.clip(x, -1.0, 0.5))(a, out)
    assert torch.equal(out, torch.clamp(a, -1.0, 0.5))


CASTS = [(torch.float32, torch.float16), (torch.float32, torch.bfloat16), (torch.float16, torch.float32),
         (torch.bfloat16, torch.float32), (torch.float32, torch.int32), (torch.float16, torch.int32),
         (torch.int32, torch.float32), (torch.int32, torch.float16), (torch.float32, torch.bool),
         (torch.bool, torch.float32), (torch.float16, torch.bfloat16), (torch.float64, torch.float32),
         (torch.int32, torch.int8)]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(src, dst):
    a = _rand((11, 7), src, -100.0, 100.0, seed=12)
    out = torch.zeros(11, 7, dtype=dst)
    pdst = pypto.vocab.dtypes.from_torch(dst)
    _unary_kernel(lambda x: pypto.cast(x, pdst))(a, out)
    assert torch.equal(out, a.to(dst))


def test_cast_rounding_edge_cases():
    vals = torch.tensor([0.0, -0.0, 1e-8, 5.960464477539063e-08, 2.98023223876953125e-08, 65504.0, 65519.99,
                         65520.0, 1e6, -1e6, float("inf"), float("-inf"), 1.0009765625, 1.00048828125,
                         1.00146484375, 6.1035156e-05, 3.0517578e-05, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -9],
                        dtype=torch.float32).reshape(1, -1)
    for dst in (torch.float16, torch.bfloat16):
        out = torch.zeros(vals.shape, dtype=dst)
        pdst = pypto.vocab.dtypes.from_torch(dst)
        _unary_kernel(lambda x: pypto.cast(x, pdst))(vals, out)
        assert torch.equal(out.view(torch.int16), vals.to(dst).view(torch.int16))


def _lt(x, y):
    return x < y


def _le(x, y):
    return x <= y


def _gt(x, y):
    return x > y


def _ge(x, y):
    return x >= y


def _eq(x, y):
    return x == y


def _ne(x, y):
    return x != y


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16])
def test_comparisons_and_where(dtype):
    a, b = _rand((6, 10), dtype, seed=13), _rand((6, 10), dtype, seed=14)
    b[0] = a[0]
    out = torch.zeros(6, 10, dtype=torch.bool)
    for fn, ref in ((_lt, torch.lt), (_le, torch.le), (_gt, torch.gt), (_ge, torch.ge), (_eq, torch.eq),
                    (_ne, torch.ne)):
        _binary_kernel(fn)(a, b, out)
        assert torch.equal(out, ref(a, b))
    res = torch.zeros(6, 10, dtype=dtype)
    _binary_kernel(lambda x, y: pypto.where(x > y, x, y * 2))(a, b, res)
    assert torch.equal(res, torch.where(a > b, a, b * 2))
    _binary_kernel(lambda x, y: pypto.where(pypto.logical_not(x > y), x, 0))(a, b, res)
    assert torch.equal(res, torch.where(~(a > b), a, torch.zeros_like(a)))


# ---- every op of API.md §5 on odd and tail shapes ----------------------------------------------------------------

def _nz(x):
    """x with zeros replaced by ones (safe divisor)."""
    return torch.where(x == 0, torch.ones_like(x), x)


def _float_cases(dt):
    p = pypto.vocab.dtypes.from_torch(dt)
    cases = [
        # operators, tensor (+) tensor, tensor (+) broadcast row, tensor (+) scalar, scalar (+) tensor
        ("add", lambda a, b, c: a + b, lambda a, b, c: a + b),
        ("add_bcast", lambda a, b, c: pypto.add(a, c), lambda a, b, c: a + c),
        ("sub", lambda a, b, c: a - c, lambda a, b, c: a - c),
        ("rsub", lambda a, b, c: 1.5 - a, lambda a, b, c: 1.5 - a),
        ("mul", lambda a, b, c: pypto.mul(a, b) * 0.75, lambda a, b, c: a * b * 0.75),
        ("div", lambda a, b, c: a / b, lambda a, b, c: a / b),
        ("rdiv", lambda a, b, c: 2 / b, lambda a, b, c: 2 / b),
        ("floordiv", lambda a, b, c: a // b, lambda a, b, c: torch.floor_divide(a, b)),
        ("floordiv_s", lambda a, b, c: a // 0.7, lambda a, b, c: torch.floor_divide(a, 0.7)),
        ("mod", lambda a, b, c: a % b, lambda a, b, c: torch.remainder(a, b)),
        ("mod_s", lambda a, b, c: pypto.remainder(a, -1.3), lambda a, b, c: torch.remainder(a, -1.3)),
        ("neg", lambda a, b, c: -a, lambda a, b, c: -a),
        ("neg_fn", lambda a, b, c: pypto.neg(c), lambda a, b, c: torch.neg(c)),
        ("abs", lambda a, b, c: pypto.abs(a), lambda a, b, c: torch.abs(a)),
        ("relu", lambda a, b, c: pypto.relu(a), lambda a, b, c: torch.relu(a)),
        ("maximum", lambda a, b, c: pypto.maximum(a, c), lambda a, b, c: torch.maximum(a, c)),
        ("minimum", lambda a, b, c: pypto.minimum(a, b), lambda a, b, c: torch.minimum(a, b)),
        ("round", lambda a, b, c: pypto.round(a * 2.5), lambda a, b, c: torch.round(a * 2.5)),
        ("floor", lambda a, b, c: pypto.floor(a), lambda a, b, c: torch.floor(a)),
        ("ceil", lambda a, b, c: pypto.ceil(a), lambda a, b, c: torch.ceil(a)),
        ("clip", lambda a, b, c: pypto.clip(a, -1.0, 0.5), lambda a, b, c: torch.clamp(a, -1.0, 0.5)),
        ("clip_min", lambda a, b, c: pypto.clamp(a, min=0.25), lambda a, b, c: torch.clamp(a, min=0.25)),
        ("clone", lambda a, b, c: pypto.clone(a), lambda a, b, c: a.clone()),
        ("lt", lambda a, b, c: a < b, lambda a, b, c: a < b),
        ("le", lambda a, b, c: a <= c, lambda a, b, c: a <= c),
        ("gt", lambda a, b, c: a > 0.5, lambda a, b, c: a > 0.5),
        ("ge", lambda a, b, c: pypto.ge(a, b), lambda a, b, c: a >= b),
        ("eq", lambda a, b, c: a == a, lambda a, b, c: a == a),
        ("ne", lambda a, b, c: pypto.ne(a, c), lambda a, b, c: a != c),
        ("not", lambda a, b, c: pypto.logical_not(a > b), lambda a, b, c: torch.logical_not(a > b)),
        ("invert", lambda a, b, c: ~(a > b), lambda a, b, c: ~(a > b)),
        ("where", lambda a, b, c: pypto.where(a > b, a, c), lambda a, b, c: torch.where(a > b, a, c)),
        ("where_s", lambda a, b, c: pypto.where(a > 0, a, 0.0), lambda a, b, c: torch.where(a > 0, a, 0.0)),
        ("cast_i32", lambda a, b, c: pypto.cast(a * 10, pypto.DT_INT32), lambda a, b, c: (a * 10).to(torch.int32)),
        ("cast_f32", lambda a, b, c: a.cast(pypto.DT_FP32), lambda a, b, c: a.float()),
        ("cast_back", lambda a, b, c: pypto.cast(pypto.cast(a, pypto.DT_FP32) * 3.0, p),
         lambda a, b, c: (a.float() * 3.0).to(dt)),
    ]
    approx = [
        ("exp", lambda a, b, c: pypto.exp(a), lambda a, b, c: torch.exp(a)),
        ("log", lambda a, b, c: pypto.log(pypto.abs(a) + 0.5), lambda a, b, c: torch.log(a.abs() + 0.5)),
        ("sqrt", lambda a, b, c: pypto.sqrt(pypto.abs(a)), lambda a, b, c: torch.sqrt(a.abs())),
        ("rsqrt", lambda a, b, c: pypto.rsqrt(pypto.abs(a) + 0.5), lambda a, b, c: torch.rsqrt(a.abs() + 0.5)),
        ("tanh", lambda a, b, c: pypto.tanh(a), lambda a, b, c: torch.tanh(a)),
        ("sigmoid", lambda a, b, c: pypto.sigmoid(a), lambda a, b, c: torch.sigmoid(a)),
        ("erfc", lambda a, b, c: pypto.erfc(a), lambda a, b, c: torch.erfc(a)),
        ("pow", lambda a, b, c: pypto.abs(a) ** b, lambda a, b, c: a.abs() ** b),
        ("pow_s", lambda a, b, c: a ** 2, lambda a, b, c: a ** 2),
        ("rpow", lambda a, b, c: 2.0 ** a, lambda a, b, c: 2.0 ** a),
        ("pow_fn", lambda a, b, c: pypto.pow(pypto.abs(c), 0.5), lambda a, b, c: torch.pow(c.abs(), 0.5)),
    ]
    return cases, approx


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dt", FLOATS)
def test_float_ops(dt, shape):
    a, b = rand(shape, dt, seed=1), rand(shape, dt, seed=2)
    b = _nz(b)
    c = rand(shape[-1:], dt, seed=3)
    a[..., 0] = b[..., 0]             # some equal elements for ==, <=, maximum ties
    exact, approx = _float_cases(dt)
    res = run_multi(exact + approx, a, b, c)
    check(res, exact=[n for n, _, _ in exact], tol=TOL)


def _int_cases():
    return [
        ("add", lambda a, b, c: a + b, lambda a, b, c: a + b),
        ("add_bcast", lambda a, b, c: a + c, lambda a, b, c: a + c),
        ("sub", lambda a, b, c: pypto.sub(a, 7), lambda a, b, c: a - 7),
        ("rsub", lambda a, b, c: 3 - a, lambda a, b, c: 3 - a),
        ("mul", lambda a, b, c: a * b * 3, lambda a, b, c: a * b * 3),
        ("floordiv", lambda a, b, c: a // b, lambda a, b, c: torch.floor_divide(a, b)),
        ("floordiv_s", lambda a, b, c: a // -4, lambda a, b, c: torch.floor_divide(a, -4)),
        ("rfloordiv", lambda a, b, c: 100 // b, lambda a, b, c: torch.floor_divide(100, b)),
        ("mod", lambda a, b, c: a % b, lambda a, b, c: torch.remainder(a, b)),
        ("mod_s", lambda a, b, c: a % 5, lambda a, b, c: torch.remainder(a, 5)),
        ("pow", lambda a, b, c: a ** 3, lambda a, b, c: a ** 3),
        ("pow_t", lambda a, b, c: pypto.pow(b, pypto.abs(c) % 4),
         lambda a, b, c: torch.pow(b, c.abs() % 4)),
        ("div", lambda a, b, c: a / b, lambda a, b, c: a / b),                   # int / int -> fp32
        ("mul_f", lambda a, b, c: a * 0.5, lambda a, b, c: a * 0.5),             # int * float -> fp32
        ("exp", lambda a, b, c: pypto.exp(a * 0), lambda a, b, c: torch.exp(a * 0)),  # int -> fp32
        ("neg", lambda a, b, c: -a, lambda a, b, c: -a),
        ("abs", lambda a, b, c: abs(a), lambda a, b, c: torch.abs(a)),
        ("relu", lambda a, b, c: pypto.relu(a), lambda a, b, c: torch.relu(a)),
        ("maximum", lambda a, b, c: pypto.maximum(a, c), lambda a, b, c: torch.maximum(a, c)),
        ("minimum", lambda a, b, c: pypto.minimum(a, 3), lambda a, b, c: torch.clamp(a, max=3)),
        ("clip", lambda a, b, c: pypto.clip(a, -5, 5), lambda a, b, c: torch.clamp(a, -5, 5)),
        ("clip_f", lambda a, b, c: pypto.clip(a, -4.5, max=2.5), lambda a, b, c: torch.clamp(a, -4.5, 2.5)),
        ("clip_t", lambda a, b, c: pypto.clip(a, min=c), lambda a, b, c: torch.clamp(a, min=c)),
        ("round", lambda a, b, c: pypto.round(a), lambda a, b, c: torch.round(a)),
        ("lt", lambda a, b, c: a < b, lambda a, b, c: a < b),
        ("ge", lambda a, b, c: a >= 0, lambda a, b, c: a >= 0),
        ("eq", lambda a, b, c: a == c, lambda a, b, c: a == c),
        ("ne", lambda a, b, c: a != b, lambda a, b, c: a != b),
        ("where", lambda a, b, c: pypto.where(a < b, a, b), lambda a, b, c: torch.where(a < b, a, b)),
        ("where_s", lambda a, b, c: pypto.where(a < 0, -1, a), lambda a, b, c: torch.where(a < 0, -1, a)),
        ("not", lambda a, b, c: pypto.logical_not(a), lambda a, b, c: torch.logical_not(a)),
        ("cast_f16", lambda a, b, c: pypto.cast(a, pypto.DT_FP16), lambda a, b, c: a.half()),
        ("cast_bool", lambda a, b, c: pypto.cast(a, pypto.DT_BOOL), lambda a, b, c: a.bool()),
        ("clone", lambda a, b, c: a.clone(), lambda a, b, c: a.clone()),
    ]


@pytest.mark.parametrize("shape", SHAPES)
def test_int32_ops(shape):
    a, b = rand(shape, torch.int32, seed=4), _nz(rand(shape, torch.int32, seed=5))
    c = _nz(rand(shape[-1:], torch.int32, seed=6))
    a.view(-1)[0] = 0
    res = run_multi(_int_cases(), a, b, c)
    check(res)


# dtype promotion (docs/language.md "dtype promotion"): each output is allocated with torch's result dtype, so
# a differing rule fails the write with a dtype-mismatch error
PROMOTION = [
    (torch.float16, torch.float32), (torch.bfloat16, torch.float16), (torch.bfloat16, torch.float32),
    (torch.int32, torch.float16), (torch.int32, torch.bfloat16), (torch.int8, torch.uint8),
    (torch.int16, torch.int32), (torch.int32, torch.int64), (torch.bool, torch.int32), (torch.bool, torch.float16),
    (torch.uint8, torch.int32), (torch.float32, torch.float64),
]


@pytest.mark.parametrize("da,db", PROMOTION)
def test_promotion_tensor_tensor(da, db):
    a, b = rand((3, 5), da, seed=7), rand((3, 5), db, seed=8)
    c = rand((5,), da, seed=9)
    cases = [("add", lambda a, b, c: a + b, lambda a, b, c: a + b),
             ("mul_rev", lambda a, b, c: b * c, lambda a, b, c: b * c),
             ("max", lambda a, b, c: pypto.maximum(a, b), lambda a, b, c: torch.maximum(a, b)),
             ("where", lambda a, b, c: pypto.where(b > 0, a, b), lambda a, b, c: torch.where(b > 0, a, b)),
             ("lt", lambda a, b, c: a < b, lambda a, b, c: a < b)]
    if torch.bool not in (da, db):
        cases.append(("sub", lambda a, b, c: b - c, lambda a, b, c: b - c))
    check(run_multi(cases, a, b, c))


SCALAR_PROMOTION = [torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int8, torch.uint8, torch.bool]


@pytest.mark.parametrize("dt", SCALAR_PROMOTION)
def test_promotion_tensor_scalar(dt):
    a = rand((7,), dt, 0, 3, seed=10)
    cases = [("add_int", lambda a, b, c: a + 2, lambda a, b, c: a + 2),
             ("mul_float", lambda a, b, c: a * 1.5, lambda a, b, c: a * 1.5),
             ("rsub_float", lambda a, b, c: 0.25 - a if dt != torch.bool else a * 0.25,
              lambda a, b, c: 0.25 - a if dt != torch.bool else a * 0.25),
             ("gt_float", lambda a, b, c: a > 1.5, lambda a, b, c: a > 1.5)]
    check(run_multi(cases, a, a, a))


def test_symbolic_scalar_operands():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 3], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 3], pypto.DT_FP32),
          iout: pypto.Tensor([pypto.DYNAMIC, 3], pypto.DT_INT32)):
        n = x.shape[0]
        out[:] = x * n + (n - 1)               # symbolic int scalars behave as Python ints
        iout[:] = pypto.cast(x, pypto.DT_INT32) % n

    for n in (1, 5):
        x = rand((n, 3), torch.float32, -20, 20, seed=11)
        out, iout = torch.zeros(n, 3), torch.zeros(n, 3, dtype=torch.int32)
        k(x, out, iout)
        assert torch.equal(out, x * n + (n - 1))
        assert torch.equal(iout, torch.remainder(x.to(torch.int32), n))


def test_inplace_operators():
    @pypto.frontend.jit
    def k(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = x
        out += 1.0
        out *= x
        out -= 0.5
        out /= 2.0
        out[0:1, :] += 10.0

    x = rand((3, 5), torch.float32, seed=12)
    out = torch.zeros(3, 5)
    k(x, out)
    ref = ((x + 1.0) * x - 0.5) / 2.0
    ref[0:1, :] += 10.0
    assert torch.equal(out, ref)


@pytest.mark.parametrize("dt", ALL4)
def test_vec_tiles_with_tails(dt):
    """Blocked loop nests (set_vec_tile_shapes) over sizes that are not multiples of the tile."""
    @pypto.frontend.jit
    def k(a: pypto.Tensor, b: pypto.Tensor, out: pypto.Tensor, s: pypto.Tensor):
        pypto.set_vec_tile_shapes(4, 16)
        out[:] = pypto.maximum(a * b, a - b)
        s[:] = pypto.sum(a, 1, keepdim=True)

    a, b = rand((9, 130), dt, seed=13), rand((9, 130), dt, seed=14)
    out, s = torch.zeros(9, 130, dtype=dt), torch.zeros(9, 1, dtype=dt)
    k(a, b, out, s)
    assert torch.equal(out, torch.maximum(a * b, a - b))
    ref = a.double().sum(1, keepdim=True)
    if dt == torch.int32:
        assert torch.equal(s, ref.to(dt))
    else:
        torch.testing.assert_close(s.double(), ref.to(dt).double(), rtol=TOL[dt] * 4, atol=TOL[dt] * 4)


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16, torch.float32])
def test_scalar_conversion_matches_torch(dt):
    """Python numbers that the dtype cannot hold exactly: rounded to the tensor's dtype first, except in mul,
    tensor / scalar and tensor // scalar (float32 precision), and scalar / tensor = reciprocal(x) * scalar —
    as torch does (docs/language.md)."""
    a = rand((130,), dt, -4.0, 4.0, seed=21)
    a = torch.where(a == 0, torch.ones_like(a), a)
    s1, s2 = 0.1, -1.3
    cases = [
        ("add", lambda a, b, c: a + s1, lambda a, b, c: a + s1),
        ("radd", lambda a, b, c: s2 + a, lambda a, b, c: s2 + a),
        ("sub", lambda a, b, c: a - s2, lambda a, b, c: a - s2),
        ("rsub", lambda a, b, c: s1 - a, lambda a, b, c: s1 - a),
        ("mul", lambda a, b, c: a * s1, lambda a, b, c: a * s1),
        ("rmul", lambda a, b, c: s2 * a, lambda a, b, c: s2 * a),
        ("div", lambda a, b, c: a / s2, lambda a, b, c: a / s2),
        ("rdiv", lambda a, b, c: s2 / a, lambda a, b, c: s2 / a),
        ("floordiv", lambda a, b, c: a // s1, lambda a, b, c: a // s1),
        ("mod", lambda a, b, c: a % s2, lambda a, b, c: a % s2),
        ("rmod", lambda a, b, c: s2 % a, lambda a, b, c: s2 % a),
        ("gt", lambda a, b, c: a > s1, lambda a, b, c: a > s1),
        ("eq", lambda a, b, c: a == 0.30000001192092896, lambda a, b, c: a == 0.30000001192092896),
        ("max", lambda a, b, c: pypto.maximum(a, s1), lambda a, b, c: torch.clamp(a, min=s1)),
        ("where", lambda a, b, c: pypto.where(a > 0, a, s2), lambda a, b, c: torch.where(a > 0, a, s2)),
        ("full", lambda a, b, c: pypto.full([3], s1, pypto.vocab.dtypes.from_torch(dt)),
         lambda a, b, c: torch.full((3,), s1, dtype=dt)),
    ]
    check(run_multi(cases, a, a, a))
