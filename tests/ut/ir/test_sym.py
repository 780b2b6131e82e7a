"""Symbolic integer scalars: folding, canonical forms, bounds, C++ printing."""
import pytest

from pypto.errors import KernelTraceError
from pypto.ir import sym as S

n = S.var("n", "n")
i = S.var("i", "i")


def test_folding_to_ints():
    assert (i * 16 + 16) - i * 16 == 16
    assert isinstance((n + 3) - n, int)
    assert S.add(2, 3) == 5
    assert S.floordiv(i * 16 + 32, 16).same(i + 2)
    assert S.mod(i * 8, 4) == 0
    assert S.smin(n, n + 1).same(n)
    assert S.smax(n + 2, n) .same(n + 2)


def test_structural_equality():
    assert (n + i * 2).same(i * 2 + n)
    assert not (n + 1).same(n + 2)
    assert S.smin(16, n - i * 16).same(S.smin(n - i * 16, 16))


def test_min_distributes_and_bounds():
    r0 = i * 8
    length = S.smin(r0 + 8, n) - r0
    assert S.upper_bound(length) == 8
    assert S.upper_bound(S.smin(16, n)) == 16
    assert S.upper_bound(n) is None


def test_shifted_min_max_cancel():
    """min(p, q) - min(p - k, q - k) = k: the size of a slice `t[m - 1:m]` of a tail size m is 1."""
    m = S.smin(n - i * 4, 4)
    assert S.sub(m, S.sub(m, 1)) == 1
    assert S.sub(S.smin(n, i), S.smin(i - 2, n - 2)) == 2
    assert S.sub(S.smax(n, 4), S.smax(n - 3, 1)) == 3
    assert isinstance(S.sub(m, S.smin(n - i * 4, 5)), S.Sym)          # not a shift: kept
    assert isinstance(S.sub(S.smin(n, 4), S.smax(n - 1, 3)), S.Sym)   # min vs max: kept
    assert S.evaluate(S.sub(m, S.smin(n - i * 4, 5)), {"n": 3, "i": 0}, key=lambda v: v.args[0]) == 0


def test_bool_and_index_are_errors():
    with pytest.raises(KernelTraceError, match="pypto.cond"):
        bool(n > 3)
    with pytest.raises(KernelTraceError, match="pypto.loop"):
        range(n)


def test_compare_constant():
    assert (n + 1 > n) is True
    assert (n < n) is False
    assert isinstance(n < 4, S.Sym)


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3)])
def test_evaluate_python_semantics(a, b):
    env = {"n": a, "i": b}
    assert S.evaluate(S.floordiv(n, i), env) == a // b
    assert S.evaluate(S.mod(n, i), env) == a % b
    assert S.evaluate(S.smin(n, i) + S.smax(n, i) * 3, env) == min(a, b) + max(a, b) * 3


def test_cpp_printing():
    assert S.to_cpp(S.floordiv(n + 15, 16)) == "pypto_rt::floordiv((n + 15), 16)"
    assert S.to_cpp(S.smin(16, n)) == "pypto_rt::imin(16, n)" or S.to_cpp(S.smin(16, n)) == "pypto_rt::imin(n, 16)"
    assert S.cpp_float_literal(0.5) == "0x1.0000000000000p-1"
    assert "inf" in S.cpp_float_literal(float("inf"))
