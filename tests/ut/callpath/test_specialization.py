"""Specialization rules, observed through kernel.cache_info(): which argument changes compile a new kernel."""

import numpy as np
import pytest
import torch

import pypto

from ._util import assert_untouched, info, raises, rand, sentinel, snap


def counts(k):
    ci = info(k)
    return ci["hits"], ci["misses"], ci["specializations"]


def make_static():
    @pypto.frontend.jit
    def add_static(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), b: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
                   out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32)):
        out[:] = a + b
    return add_static


def make_dynamic():
    @pypto.frontend.jit
    def add_dyn(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
        out[:] = a + b
    return add_dyn


def run_add(k, n, seed=0, shape=None):
    shape = shape or (n,)
    a, b, out = rand(*shape, seed=seed), rand(*shape, seed=seed + 100), sentinel(*shape)
    k(a, b, out)
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)


def test_cache_info_starts_empty():
    k = make_static()
    ci = info(k)
    assert ci == {"hits": 0, "misses": 0, "specializations": 0, "compile_seconds": 0.0}


def test_static_new_size_specializes():
    k = make_static()
    run_add(k, 8)
    assert counts(k) == (0, 1, 1)
    run_add(k, 8, seed=1)
    assert counts(k) == (1, 1, 1)
    run_add(k, 16)
    assert counts(k) == (1, 2, 2)
    run_add(k, 8, seed=2)
    run_add(k, 16, seed=3)
    assert counts(k) == (3, 2, 2)


def test_dynamic_sizes_share_one_specialization():
    k = make_dynamic()
    for i, n in enumerate([1, 7, 8, 64, 1000, 3]):
        run_add(k, n, seed=i)
    assert counts(k) == (5, 1, 1)


def test_dynamic_zero_size():
    k = make_dynamic()
    run_add(k, 5)
    a = torch.empty(0)
    k(a, a, torch.empty(0))
    assert counts(k) == (1, 1, 1)


def test_named_dims_agree():
    N = pypto.frontend.dynamic("N")

    @pypto.frontend.jit
    def add_named(a: pypto.Tensor([N], pypto.DT_FP32), b: pypto.Tensor([N], pypto.DT_FP32),
                  out: pypto.Tensor([N], pypto.DT_FP32)):
        out[:] = a + b

    run_add(add_named, 8)
    run_add(add_named, 20)
    assert counts(add_named) == (1, 1, 1)


def test_named_dims_disagree_names_both_params():
    N = pypto.frontend.dynamic("N")

    @pypto.frontend.jit
    def add_named2(a: pypto.Tensor([N, 4], pypto.DT_FP32), b: pypto.Tensor([N, 4], pypto.DT_FP32),
                   out: pypto.Tensor([N, 4], pypto.DT_FP32)):
        out[:] = a + b

    run_add(add_named2, 0, shape=(3, 4))
    out = sentinel(8, 4)
    before = snap(out)
    raises(ValueError, lambda: add_named2(rand(8, 4), rand(6, 4), out), "kernel 'add_named2'", "'a'", "'b'",
           "'N'", "8", "6")
    assert_untouched(before, out)
    out = sentinel(8, 4)
    before = snap(out)
    raises(ValueError, lambda: add_named2(rand(8, 4), rand(8, 4), out[:5]), "'a'", "'out'", "'N'")
    assert_untouched(before, out)
    assert counts(add_named2)[2] == 1


def test_named_dim_across_axes():
    M = pypto.frontend.dynamic("M")

    @pypto.frontend.jit
    def add_t(a: pypto.Tensor([M, 4], pypto.DT_FP32), b: pypto.Tensor([4, M], pypto.DT_FP32),
              out: pypto.Tensor([M, 4], pypto.DT_FP32)):
        out[:] = a + pypto.transpose(b, 0, 1)

    a, b, out = rand(5, 4), rand(4, 5), sentinel(5, 4)
    add_t(a, b, out)
    torch.testing.assert_close(out, a + b.t(), rtol=0, atol=0)
    before = snap(out)
    raises(ValueError, lambda: add_t(a, rand(4, 6), out), "'a'", "'b'", "'M'")
    assert_untouched(before, out)


def test_fixed_dims_compile_once():
    @pypto.frontend.jit
    def add_fixed(a: pypto.Tensor([2, 3], pypto.DT_FP32), out: pypto.Tensor([2, 3], pypto.DT_FP32)):
        out[:] = a + a

    for s in range(3):
        a, out = rand(2, 3, seed=s), sentinel(2, 3)
        add_fixed(a, out)
        torch.testing.assert_close(out, a + a, rtol=0, atol=0)
    assert counts(add_fixed) == (2, 1, 1)


def make_axpy():
    @pypto.frontend.jit
    def axpy_c(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
               out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), alpha):
        out[:] = a * alpha + b
    return axpy_c


def test_new_constant_specializes_same_constant_hits():
    k = make_axpy()
    a, b = rand(9, seed=1), rand(9, seed=2)
    for alpha in [2.0, 3.0, 2.0, 3.0, 0.5]:
        out = sentinel(9)
        k(a, b, out, alpha)
        torch.testing.assert_close(out, a * alpha + b, rtol=0, atol=1e-6)
    assert counts(k) == (2, 3, 3)


def test_constant_and_static_dim_combine():
    @pypto.frontend.jit
    def axpy_s(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
               alpha):
        out[:] = a * alpha

    for n in (4, 8):
        for alpha in (1.0, 2.0):
            a, out = rand(n), sentinel(n)
            axpy_s(a, out, alpha)
            torch.testing.assert_close(out, a * alpha, rtol=0, atol=0)
    assert counts(axpy_s) == (0, 4, 4)


def test_bare_tensor_keyed_by_dtype_rank_and_shape():
    @pypto.frontend.jit
    def add_any(a: pypto.Tensor, b: pypto.Tensor, out: pypto.Tensor):
        out[:] = a + b

    def go(shape, dtype):
        a, b, out = rand(*shape, dtype=dtype, seed=1), rand(*shape, dtype=dtype, seed=2), sentinel(*shape, dtype=dtype)
        add_any(a, b, out)
        torch.testing.assert_close(out, a + b, rtol=0, atol=0)

    go((8,), torch.float32)
    go((8,), torch.float32)
    assert counts(add_any) == (1, 1, 1)
    go((8,), torch.int32)          # dtype
    assert counts(add_any)[2] == 2
    go((2, 4), torch.float32)      # rank
    assert counts(add_any)[2] == 3
    go((4,), torch.float32)        # any-shape dims are static
    assert counts(add_any)[2] == 4
    go((2, 4), torch.float32)
    go((8,), torch.int32)
    assert counts(add_any) == (3, 4, 4)


def test_bare_tensor_dtype_mismatch_between_params_is_an_error_not_a_crash():
    @pypto.frontend.jit
    def add_any2(a: pypto.Tensor, b: pypto.Tensor, out: pypto.Tensor):
        out[:] = a + b

    a, b = rand(4), rand(4)
    out = torch.zeros(4, dtype=torch.int32)
    before = snap(out)
    # float32 + float32 written into an int32 output: either a trace-time error or a defined cast; never garbage
    try:
        add_any2(a, b, out)
    except (TypeError, ValueError) as e:
        assert "add_any2" in str(e)
        assert_untouched(before, out)
    else:
        torch.testing.assert_close(out, (a + b).to(torch.int32), rtol=0, atol=0)


def test_trailing_ellipsis():
    @pypto.frontend.jit
    def add_ell(a: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32)):
        out[:] = a + b

    run_add(add_ell, 0, shape=(3, 4))
    run_add(add_ell, 0, shape=(5, 4), seed=1)      # first dim DYNAMIC: same specialization
    assert counts(add_ell) == (1, 1, 1)
    run_add(add_ell, 0, shape=(5, 8))              # a trailing dim is static
    assert counts(add_ell)[2] == 2
    run_add(add_ell, 0, shape=(2, 3, 4))           # rank is free after `...`
    assert counts(add_ell)[2] == 3
    run_add(add_ell, 0, shape=(7,))                # `...` may match zero dims
    assert counts(add_ell)[2] == 4
    run_add(add_ell, 0, shape=(9, 3, 4), seed=2)
    assert counts(add_ell) == (2, 4, 4)


def test_ellipsis_requires_at_least_the_annotated_dims():
    @pypto.frontend.jit
    def add_ell2(a: pypto.Tensor([pypto.DYNAMIC, 4, ...], pypto.DT_FP32),
                 out: pypto.Tensor([pypto.DYNAMIC, 4, ...], pypto.DT_FP32)):
        out[:] = a + a

    out = sentinel(4)
    before = snap(out)
    raises(ValueError, lambda: add_ell2(rand(4), out), "kernel 'add_ell2'", "parameter 'a'", "at least 2")
    assert_untouched(before, out)
    a, out = rand(3, 4, 2), sentinel(3, 4, 2)
    add_ell2(a, out)
    torch.testing.assert_close(out, a + a, rtol=0, atol=0)


def test_runtime_scalar_never_recompiles():
    @pypto.frontend.jit
    def scale_rt(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                 s: pypto.Scalar[pypto.DT_FP32]):
        out[:] = a * s

    a = rand(11)
    for s in (1.5, -2.0, 0.0, 3, 0.25):
        out = sentinel(11)
        scale_rt(a, out, s)
        torch.testing.assert_close(out, a * float(s), rtol=0, atol=1e-6)
    assert counts(scale_rt) == (4, 1, 1)


@pytest.mark.parametrize("s", [np.float32(0.25), np.float64(-1.5), np.int32(3)], ids=lambda v: type(v).__name__)
def test_runtime_scalar_accepts_numpy_scalars(s):
    # numpy scalars are what a user gets from arr.sum() or arr[0]; they are numbers, not tensors
    @pypto.frontend.jit
    def scale_rt2(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                  s: pypto.Scalar[pypto.DT_FP32]):
        out[:] = a * s

    a, out = rand(7), sentinel(7)
    scale_rt2(a, out, s)
    torch.testing.assert_close(out, a * float(s), rtol=0, atol=1e-6)


def test_format_is_part_of_the_kernel_not_a_crash():
    @pypto.frontend.jit
    def add_nz(a: pypto.Tensor([4, 4], pypto.DT_FP32, format=pypto.TileOpFormat.TILEOP_NZ),
               out: pypto.Tensor([4, 4], pypto.DT_FP32)):
        out[:] = a + a

    a, out = rand(4, 4), sentinel(4, 4)
    add_nz(a, out)
    torch.testing.assert_close(out, a + a, rtol=0, atol=0)


def test_compile_seconds_accumulate_on_misses_only():
    k = make_static()
    run_add(k, 8)
    s1 = info(k)["compile_seconds"]
    assert s1 > 0.0
    run_add(k, 8)
    assert info(k)["compile_seconds"] == s1
    run_add(k, 32)
    assert info(k)["compile_seconds"] > s1


def test_two_kernels_with_same_body_have_separate_counters():
    k1, k2 = make_static(), make_static()
    run_add(k1, 8)
    run_add(k1, 8)
    run_add(k2, 8)
    assert counts(k1) == (1, 1, 1)
    assert counts(k2) == (0, 1, 1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int16,
                                   torch.int64, torch.uint8])
def test_each_supported_dtype_runs(dtype):
    @pypto.frontend.jit
    def add_dt(a: pypto.Tensor, b: pypto.Tensor, out: pypto.Tensor):
        out[:] = a + b

    if dtype == torch.uint8:
        a, b = torch.arange(16, dtype=dtype), torch.arange(16, dtype=dtype) * 3
    else:
        a, b = rand(16, dtype=dtype, seed=1), rand(16, dtype=dtype, seed=2)
    out = torch.zeros(16, dtype=dtype)
    add_dt(a, b, out)
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
