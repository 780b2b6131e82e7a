"""Exact, type-tagged keys for compile-time constants (API.md §3): each distinct (type, value) is its own
specialization, and the value baked into the kernel is the one passed."""

import enum

import pytest
import torch

import pypto

from ._util import bits_equal, info, rand, sentinel


def counts(k):
    ci = info(k)
    return ci["hits"], ci["misses"], ci["specializations"]


def make_scale():
    @pypto.frontend.jit
    def scale_c(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                c):
        out[:] = a * c
    return scale_c


def run_scale(k, c, a=None, expect_factor=None):
    a = rand(16, seed=5) if a is None else a
    out = sentinel(*a.shape)
    k(a, out, c)
    f = float(c) if expect_factor is None else expect_factor
    expect = a * f
    assert bits_equal(out, expect) or torch.allclose(out, expect, rtol=0, atol=1e-6, equal_nan=True), (c, out)
    return out


class MyInt(int):
    pass


class Small(enum.IntEnum):
    ONE = 1
    TWO = 2


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_one_true_onefloat_onestr_are_four_keys():
    @pypto.frontend.jit
    def tagged(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
               tag):
        # 1 == True == 1.0 in Python, "1" is not: the string variant doubles
        out[:] = a * (1.0 if tag == 1 else 2.0)

    a = rand(8)
    for rep in range(2):
        for tag, f in [(1, 1.0), (True, 1.0), (1.0, 1.0), ("1", 2.0)]:
            out = sentinel(8)
            tagged(a, out, tag)
            torch.testing.assert_close(out, a * f, rtol=0, atol=0)
        assert counts(tagged)[1:] == (4, 4)
    assert counts(tagged) == (4, 4, 4)


def test_specialization_records_the_typed_value():
    @pypto.frontend.jit
    def tagged2(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), tag):
        out[:] = a + a

    a = rand(4)
    for tag in (1, True, 1.0, "1"):
        tagged2(a, sentinel(4), tag)
    seen = [spec[1]["request"].constants["tag"] for spec in tagged2._specializations()]
    assert [(type(v), v) for v in seen] == [(int, 1), (bool, True), (float, 1.0), (str, "1")]


def test_negative_zero_differs_from_zero():
    k = make_scale()
    a = rand(16, seed=6).abs() + 1.0
    out_pos = sentinel(16)
    k(a, out_pos, 0.0)
    out_neg = sentinel(16)
    k(a, out_neg, -0.0)
    assert counts(k)[2] == 2
    assert bits_equal(out_pos, a * 0.0)
    assert bits_equal(out_neg, a * -0.0)     # every element is -0.0
    assert torch.signbit(out_neg).all() and not torch.signbit(out_pos).any()


def test_nan_key_is_stable():
    k = make_scale()
    nan1 = float("nan")
    run_scale(k, nan1)
    run_scale(k, nan1)                 # same object
    nan2 = float("nan")
    assert nan2 is not nan1
    run_scale(k, nan2)                 # another NaN object, same bits
    run_scale(k, float("inf"))
    assert counts(k) == (2, 2, 2)


def make_scale_f():
    @pypto.frontend.jit
    def scale_f(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                c):
        out[:] = a * float(c)
    return scale_f


def test_int_subclass_and_intenum_are_distinct_keys():
    k = make_scale_f()
    for _ in range(2):
        run_scale(k, 1)
        run_scale(k, MyInt(1))
        run_scale(k, Small.ONE)
    assert counts(k) == (3, 3, 3)
    run_scale(k, MyInt(1))             # a different MyInt object with the same value: same key
    assert counts(k) == (4, 3, 3)


def test_enum_members_are_distinct_keys():
    @pypto.frontend.jit
    def colored(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                color):
        out[:] = a * (2.0 if color is Color.RED else 3.0)

    a = rand(5)
    for color, f in [(Color.RED, 2.0), (Color.BLUE, 3.0), (Color.RED, 2.0)]:
        out = sentinel(5)
        colored(a, out, color)
        torch.testing.assert_close(out, a * f, rtol=0, atol=0)
    assert counts(colored) == (1, 2, 2)


def test_tuple_constant():
    @pypto.frontend.jit
    def lincomb(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), w=(1.0, 1.0)):
        out[:] = a * w[0] + b * w[1]

    a, b = rand(7, seed=1), rand(7, seed=2)
    for w in [(2.0, 3.0), (2.0, 3.0), tuple([2.0, 3.0]), (3.0, 2.0), (2.0, 3)]:
        out = sentinel(7)
        lincomb(a, b, out, w)
        torch.testing.assert_close(out, a * w[0] + b * w[1], rtol=0, atol=1e-6)
    # (2.0, 3.0) twice more (one a new tuple object) hit; (3.0, 2.0) and (2.0, 3) are new keys
    assert counts(lincomb) == (2, 3, 3)


def test_list_constant_mutated_in_place_rekeys():
    @pypto.frontend.jit
    def lincomb_l(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                  out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), w):
        out[:] = a * w[0] + b * w[1]

    a, b = rand(6, seed=3), rand(6, seed=4)
    w = [1.0, 2.0]

    def go():
        out = sentinel(6)
        lincomb_l(a, b, out, w)
        torch.testing.assert_close(out, a * w[0] + b * w[1], rtol=0, atol=1e-6)

    go()
    go()
    assert counts(lincomb_l) == (1, 1, 1)
    w[1] = 5.0                          # same list object, new value
    go()
    assert counts(lincomb_l) == (1, 2, 2)
    w[1] = 2.0                          # back: the first specialization serves it
    go()
    assert counts(lincomb_l) == (2, 2, 2)
    w.append(9.0)                       # a longer list is a different key
    go()
    assert counts(lincomb_l) == (2, 3, 3)


def test_nested_list_inside_tuple_rekeys():
    @pypto.frontend.jit
    def nested(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), w):
        out[:] = a * w[1][0]

    a = rand(4)
    inner = [2.0]
    w = ("scale", inner)
    out = sentinel(4)
    nested(a, out, w)
    torch.testing.assert_close(out, a * 2.0, rtol=0, atol=0)
    inner[0] = 4.0
    out = sentinel(4)
    nested(a, out, w)
    torch.testing.assert_close(out, a * 4.0, rtol=0, atol=0)
    assert counts(nested) == (0, 2, 2)


def test_pypto_dtype_constants():
    @pypto.frontend.jit
    def roundtrip(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                  dt):
        out[:] = pypto.cast(pypto.cast(a, dt), pypto.DT_FP32)

    a = rand(32, seed=7) * 3.3
    for dt, tdt in [(pypto.DT_FP32, torch.float32), (pypto.DT_FP16, torch.float16), (pypto.DT_FP32, torch.float32),
                    (pypto.DT_BF16, torch.bfloat16)]:
        out = sentinel(32)
        roundtrip(a, out, dt)
        assert bits_equal(out, a.to(tdt).to(torch.float32)), dt
    assert counts(roundtrip) == (1, 3, 3)


def test_none_and_str_constants():
    @pypto.frontend.jit
    def op_by_name(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                   out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), op=None):
        if op is None or op == "add":
            out[:] = a + b
        else:
            out[:] = a - b

    a, b = rand(5, seed=1), rand(5, seed=2)
    cases = [(None, a + b), ("add", a + b), ("sub", a - b), ("".join(["s", "ub"]), a - b), (None, a + b)]
    for op, expect in cases:
        out = sentinel(5)
        op_by_name(a, b, out, op)
        torch.testing.assert_close(out, expect, rtol=0, atol=0)
    assert counts(op_by_name) == (2, 3, 3)


def test_bool_false_and_zero_differ():
    k = make_scale_f()
    run_scale(k, 0)
    run_scale(k, False, expect_factor=0.0)
    run_scale(k, 0.0)
    run_scale(k, False, expect_factor=0.0)
    assert counts(k) == (1, 3, 3)


def test_big_ints_are_keyed_exactly():
    @pypto.frontend.jit
    def big(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), n):
        out[:] = a * (1.0 if n % 2 == 0 else 2.0)

    a = rand(4)
    values = [2 ** 64, 0, 2 ** 64 - 1, -1, 2 ** 70, 2 ** 70 + 1, -(2 ** 64)]
    for n in values + values:
        out = sentinel(4)
        big(a, out, n)
        torch.testing.assert_close(out, a * (1.0 if n % 2 == 0 else 2.0), rtol=0, atol=0)
    assert counts(big) == (len(values), len(values), len(values))


def test_constant_identity_cache_survives_equal_new_objects():
    k = make_scale()
    x = 2.5
    run_scale(k, x)
    y = float("2.5")                  # a different float object with the same value
    assert y is not x
    run_scale(k, y)
    run_scale(k, 2.5)
    assert counts(k) == (2, 1, 1)


@pytest.mark.parametrize("c", [1, -3, 0.25, 7.0], ids=repr)
def test_constant_value_is_baked(c):
    k = make_scale()
    run_scale(k, c)
    run_scale(k, c)
    assert counts(k) == (1, 1, 1)
