"""Guards: module globals and closure variables a kernel reads are compile-time constants; rebinding one makes the
next call specialize again (and rebinding back reuses the old specialization); unrelated names never do."""

import importlib.util
import itertools
import pathlib
import sys

import pytest
import torch

import pypto

from ._util import assert_untouched, info, rand, sentinel, snap

_SRC = pathlib.Path(__file__).with_name("_guard_kernels.py")
_counter = itertools.count()


@pytest.fixture
def mod():
    """A fresh copy of _guard_kernels (its own globals dict and kernels)."""
    name = f"_callpath_guard_kernels_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, _SRC)
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    yield m
    sys.modules.pop(name, None)


def counts(k):
    ci = info(k)
    return ci["hits"], ci["misses"], ci["specializations"]


def check(k, factor, n=9, offset=0.0, seed=0):
    a, out = rand(n, seed=seed), sentinel(n)
    k(a, out)
    torch.testing.assert_close(out, a * factor + offset, rtol=0, atol=1e-6)


def test_global_rebinding_respecializes(mod):
    k = mod.scale_kernel
    check(k, 2.0)
    check(k, 2.0, seed=1)
    assert counts(k) == (1, 1, 1)
    mod.SCALE = 4.0
    check(k, 4.0)
    assert counts(k) == (1, 2, 2)
    check(k, 4.0, seed=2)
    assert counts(k) == (2, 2, 2)


def test_global_rebinding_back_hits_old_specialization(mod):
    k = mod.scale_kernel
    check(k, 2.0)
    mod.SCALE = 4.0
    check(k, 4.0)
    mod.SCALE = 2.0
    check(k, 2.0, seed=3)
    assert counts(k) == (1, 2, 2)
    mod.SCALE = 4.0
    check(k, 4.0, seed=4)
    assert counts(k) == (2, 2, 2)


def test_global_rebound_to_equal_new_object_hits(mod):
    k = mod.scale_kernel
    check(k, 2.0)
    mod.SCALE = float("2.0")   # a new object, the same value
    check(k, 2.0, seed=1)
    assert counts(k) == (1, 1, 1)


def test_unrelated_global_never_misses(mod):
    k = mod.scale_kernel
    check(k, 2.0)
    for v in range(5):
        mod.UNRELATED = object()
        mod.NEW_NAME = v
        check(k, 2.0, seed=v)
    assert counts(k) == (5, 1, 1)


def test_local_shadowing_a_global_is_not_guarded(mod):
    k = mod.shadow_kernel
    check(k, 5.0)
    mod.SHADOW = 11.0
    check(k, 5.0, seed=1)
    assert counts(k) == (1, 1, 1)


def test_global_read_by_inlined_helper_is_guarded(mod):
    k = mod.helper_kernel
    check(k, 3.0)
    mod.HELPER_FACTOR = 6.0
    check(k, 6.0, seed=1)
    assert counts(k) == (0, 2, 2)
    mod.HELPER_FACTOR = 3.0
    check(k, 3.0, seed=2)
    assert counts(k) == (1, 2, 2)


def test_rebinding_the_helper_function_respecializes(mod):
    k = mod.helper_kernel
    check(k, 3.0)
    old = mod.helper_scale
    mod.helper_scale = lambda x: x * 10.0
    check(k, 10.0, seed=1)
    assert counts(k) == (0, 2, 2)
    mod.helper_scale = old  # alive (held here): its specialization is still there, a hit
    check(k, 3.0, seed=2)
    assert counts(k) == (1, 2, 1)  # and the lambda, now unreferenced, took its own specialization with it


def test_a_dropped_helper_functions_specialization_leaves_with_it(mod):
    k = mod.helper_kernel
    check(k, 3.0)
    mod.helper_scale = lambda x: x * 10.0  # the module held the only reference to the old helper
    check(k, 10.0, seed=1)
    # guard values are held weakly (docs/security.md): the old helper died, and its specialization with it
    assert counts(k) == (0, 2, 1)


def test_two_guarded_globals(mod):
    k = mod.two_globals_kernel
    check(k, 2.0, offset=0.5)
    mod.OFFSET = 1.5
    check(k, 2.0, offset=1.5)
    mod.SCALE = 3.0
    check(k, 3.0, offset=1.5)
    mod.SCALE, mod.OFFSET = 2.0, 0.5
    check(k, 2.0, offset=0.5, seed=5)
    assert counts(k) == (1, 3, 3)


def test_kernels_in_different_module_copies_are_independent(mod):
    name = "_callpath_guard_kernels_other"
    spec = importlib.util.spec_from_file_location(name, _SRC)
    other = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(other)
    other.SCALE = 8.0
    check(mod.scale_kernel, 2.0)
    check(other.scale_kernel, 8.0)


def test_explain_names_the_changed_global(mod):
    k = mod.scale_kernel
    check(k, 2.0)
    mod.SCALE = 4.0
    msg = k.explain(rand(9), sentinel(9))
    assert "miss" in msg and "SCALE" in msg
    assert counts(k) == (0, 1, 1)   # explain neither launches nor compiles


def test_closure_rebinding_respecializes():
    factor = 2.0

    @pypto.frontend.jit
    def closure_k(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
        out[:] = a * factor

    def set_factor(v):
        nonlocal factor
        factor = v

    check(closure_k, 2.0)
    check(closure_k, 2.0, seed=1)
    set_factor(5.0)
    check(closure_k, 5.0, seed=2)
    assert counts(closure_k) == (1, 2, 2)
    set_factor(2.0)
    check(closure_k, 2.0, seed=3)
    assert counts(closure_k) == (2, 2, 2)


def test_closure_in_factory_each_instance_bakes_its_own_value():
    def make(f):
        @pypto.frontend.jit
        def closure_f(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                      out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
            out[:] = a * f
        return closure_f

    k2, k3 = make(2.0), make(3.0)
    check(k2, 2.0)
    check(k3, 3.0)
    check(k2, 2.0, seed=1)
    assert counts(k2) == (1, 1, 1) and counts(k3) == (0, 1, 1)


def test_changing_defaults_is_seen_on_next_call():
    @pypto.frontend.jit
    def dflt(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
             alpha=2.0):
        out[:] = a * alpha

    check(dflt, 2.0)
    dflt.__wrapped__.__defaults__ = (5.0,)
    check(dflt, 5.0, seed=1)
    assert counts(dflt) == (0, 2, 2)
    dflt.__wrapped__.__defaults__ = (2.0,)
    check(dflt, 2.0, seed=2)
    assert counts(dflt) == (1, 2, 2)


def test_changing_defaults_of_the_original_function():
    def raw(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
            alpha=2.0):
        out[:] = a * alpha

    k = pypto.frontend.jit(raw)
    assert k.__wrapped__ is raw
    check(k, 2.0)
    raw.__defaults__ = (-1.0,)
    check(k, -1.0, seed=1)
    assert counts(k) == (0, 2, 2)


def test_changing_kwdefaults_is_seen_on_next_call():
    @pypto.frontend.jit
    def kwdflt(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
               *, beta=1.0):
        out[:] = a * beta

    check(kwdflt, 1.0)
    kwdflt.__wrapped__.__kwdefaults__ = {"beta": 4.0}
    check(kwdflt, 4.0, seed=1)
    assert counts(kwdflt) == (0, 2, 2)


def test_removing_a_required_default_is_an_error():
    @pypto.frontend.jit
    def dflt2(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
              alpha=2.0):
        out[:] = a * alpha

    check(dflt2, 2.0)
    dflt2.__wrapped__.__defaults__ = None
    out = sentinel(9)
    with pytest.raises(TypeError) as ei:
        dflt2(rand(9), out)
    assert "dflt2" in str(ei.value) and "'alpha'" in str(ei.value)
    assert (out == -12345.0).all()


def test_global_and_closure_guards_with_dict_version_fast_path(mod):
    # the globals dict's version proves its guards unchanged; closure cells are still checked by identity
    bias = 1.0

    @pypto.frontend.jit
    def mixed_k(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
        out[:] = mod.helper_offset(a) + bias  # noqa: B023 - `mod` and `bias` are closure cells here

    def set_bias(v):
        nonlocal bias
        bias = v

    check(mixed_k, 1.0, offset=1.5)
    set_bias(3.0)                       # only a cell changes: the module dict's version does not
    check(mixed_k, 1.0, offset=3.5, seed=1)
    assert counts(mixed_k) == (0, 2, 2)
    mod.UNRELATED = object()            # the version moves, no guarded value does
    check(mixed_k, 1.0, offset=3.5, seed=2)
    assert counts(mixed_k) == (1, 2, 2)
    mod.OFFSET = 0.25                   # a global read by the inlined helper
    check(mixed_k, 1.0, offset=3.25, seed=3)
    assert counts(mixed_k) == (1, 3, 3)
    vars(mod)["OFFSET"] = mod.OFFSET    # the same object stored again: version moves, identity holds
    check(mixed_k, 1.0, offset=3.25, seed=4)
    assert counts(mixed_k) == (2, 3, 3)


def test_deleted_guarded_global_is_seen(mod):
    k = mod.scale_kernel
    check(k, 2.0)
    del mod.SCALE
    a, out = rand(9), sentinel(9)
    before = snap(out)
    with pytest.raises(Exception, match="SCALE"):
        k(a, out)
    assert_untouched(before, out)
    mod.SCALE = 2.0
    check(k, 2.0, seed=1)


def test_module_attribute_read_is_guarded(mod):
    @pypto.frontend.jit
    def attr_k(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
        out[:] = a * mod.SCALE  # `cfg.VALUE`-style read of another module's global

    check(attr_k, 2.0)
    mod.SCALE = 6.0
    check(attr_k, 6.0, seed=1)
    mod.UNRELATED = 5
    check(attr_k, 6.0, seed=2)
    assert counts(attr_k) == (1, 2, 2)
    mod.SCALE = 2.0
    check(attr_k, 2.0, seed=3)
    assert counts(attr_k) == (2, 2, 2)
    mod.SCALE = 7.0
    why = attr_k.explain(rand(9), sentinel(9))
    assert "miss" in why.lower() and "SCALE" in why, why
