"""cache_info(), explain(), compile() and the function-like attributes of a kernel."""

import torch

import pypto

from ._util import assert_untouched, info, raises, rand, sentinel, snap


def make_axpy():
    @pypto.frontend.jit
    def axpy_i(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), b: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
               out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), alpha=2.0):
        """Computes a * alpha + b."""
        out[:] = a * alpha + b
    return axpy_i


def test_cache_info_counters():
    k = make_axpy()
    ci = k.cache_info()
    assert set(ci) == {"hits", "misses", "specializations", "compile_seconds"}
    assert isinstance(ci["compile_seconds"], float)
    a, b = rand(8, seed=1), rand(8, seed=2)
    for i in range(5):
        out = sentinel(8)
        k(a, b, out)
        torch.testing.assert_close(out, a * 2.0 + b, rtol=0, atol=1e-6)
    ci = k.cache_info()
    assert (ci["hits"], ci["misses"], ci["specializations"]) == (4, 1, 1)
    assert ci["compile_seconds"] > 0.0


def test_cache_info_returns_a_fresh_dict():
    k = make_axpy()
    ci = k.cache_info()
    ci["hits"] = 99
    assert k.cache_info()["hits"] == 0


def test_explain_before_any_compile():
    k = make_axpy()
    msg = k.explain(rand(8), rand(8), sentinel(8))
    assert "axpy_i" in msg and "miss" in msg


def test_explain_hit_does_not_launch_or_count():
    k = make_axpy()
    a, b = rand(8, seed=1), rand(8, seed=2)
    k(a, b, sentinel(8))
    out = sentinel(8)
    before = snap(out)
    msg = k.explain(a, b, out)
    assert "hit" in msg and "miss" not in msg
    assert_untouched(before, out)
    ci = info(k)
    assert (ci["hits"], ci["misses"], ci["specializations"]) == (0, 1, 1)


def test_explain_names_the_constant_with_old_and_new_value():
    k = make_axpy()
    a, b = rand(8, seed=1), rand(8, seed=2)
    k(a, b, sentinel(8), 2.0)
    msg = k.explain(a, b, sentinel(8), alpha=3.5)
    assert "miss" in msg and "'alpha'" in msg and "2.0" in msg and "3.5" in msg
    assert info(k)["specializations"] == 1


def test_explain_names_the_tensor_dim():
    k = make_axpy()
    k(rand(8), rand(8), sentinel(8))
    msg = k.explain(rand(16), rand(16), sentinel(16))
    assert "miss" in msg and "'a'" in msg and "dim 0" in msg and "8" in msg and "16" in msg


def test_explain_names_dtype_or_rank_for_bare_tensors():
    @pypto.frontend.jit
    def add_bare(a: pypto.Tensor, out: pypto.Tensor):
        out[:] = a + a

    a = rand(4)
    add_bare(a, sentinel(4))
    msg = add_bare.explain(a.double(), torch.zeros(4, dtype=torch.float64))
    assert "miss" in msg and "'a'" in msg and ("dtype" in msg or "rank" in msg) and "float64" in msg


def test_explain_picks_the_nearest_specialization():
    k = make_axpy()
    a, b = rand(8), rand(8)
    k(a, b, sentinel(8), 2.0)
    k(rand(16), rand(16), sentinel(16), 3.0)
    msg = k.explain(rand(16), rand(16), sentinel(16), 5.0)   # nearest: the size-16 one, only alpha differs
    assert "'alpha'" in msg and "3.0" in msg and "5.0" in msg
    assert "dim 0" not in msg


def test_explain_raises_the_same_errors_as_a_call():
    k = make_axpy()
    raises(TypeError, lambda: k.explain(rand(8).double(), rand(8), sentinel(8)), "kernel 'axpy_i'",
           "parameter 'a'", "float64")
    raises(TypeError, lambda: k.explain(rand(8), rand(8)), "missing", "'out'")


def test_compile_builds_without_launching():
    k = make_axpy()
    a, b, out = rand(8, seed=3), rand(8, seed=4), sentinel(8)
    before = snap(out)
    assert k.compile(a, b, out) is None
    assert_untouched(before, out)
    ci = info(k)
    assert ci["misses"] == 1 and ci["specializations"] == 1 and ci["hits"] == 0
    k(a, b, out)
    torch.testing.assert_close(out, a * 2.0 + b, rtol=0, atol=1e-6)
    ci = info(k)
    assert (ci["hits"], ci["misses"], ci["specializations"]) == (1, 1, 1)


def test_compile_twice_compiles_once_and_checks_arguments():
    k = make_axpy()
    a, b, out = rand(8), rand(8), sentinel(8)
    k.compile(a, b, out, alpha=4.0)
    k.compile(a, b, out, alpha=4.0)
    assert info(k)["specializations"] == 1
    raises(TypeError, lambda: k.compile(a, b, out.int()), "kernel 'axpy_i'", "parameter 'out'")
    k(a, b, out, alpha=4.0)
    torch.testing.assert_close(out, a * 4.0 + b, rtol=0, atol=1e-6)
    assert info(k)["misses"] == 1


def test_function_attributes():
    k = make_axpy()
    assert k.__name__ == "axpy_i"
    assert k.__doc__ == "Computes a * alpha + b."
    assert callable(k.__wrapped__) and k.__wrapped__.__name__ == "axpy_i"
    assert k.__qualname__.endswith("axpy_i")
    assert k.__module__ == __name__
    assert "axpy_i" in repr(k)
    assert isinstance(k, pypto._core.JitFunction)


def test_wrapped_function_is_the_original():
    def orig(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = a + a

    k = pypto.jit(orig)
    assert k.__wrapped__ is orig
    a, out = rand(4), sentinel(4)
    k(a, out)
    torch.testing.assert_close(out, a + a, rtol=0, atol=0)


def test_kernel_is_weakrefable_and_collectable():
    import gc
    import weakref

    k = make_axpy()
    k(rand(8), rand(8), sentinel(8))
    r = weakref.ref(k)
    del k
    gc.collect()
    assert r() is None
