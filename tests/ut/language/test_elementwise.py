"""Elementwise ops against torch: fp32 plus fp16/bf16/int32, broadcasting, scalars, odd shapes."""
import pytest
import torch

import pypto

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
