"""Binding of call arguments in the native call path: positional, keyword, defaults, keyword-only, and the
tensor readers (torch exchange API, numpy buffer protocol, generic __dlpack__)."""

import numpy as np
import pytest
import torch

import pypto
from pypto.testing import DLPackOnly

from ._util import assert_untouched, info, raises, rand, sentinel, snap

N = 8
T1 = pypto.Tensor([N], pypto.DT_FP32)


def make_axpy():
    @pypto.frontend.jit
    def axpy(a: pypto.Tensor([8], pypto.DT_FP32), b: pypto.Tensor([8], pypto.DT_FP32),
             out: pypto.Tensor([8], pypto.DT_FP32), alpha=2.0, *, beta=0.0):
        out[:] = a * alpha + b + beta
    return axpy


def make_add(dtype=pypto.DT_FP32):
    @pypto.frontend.jit
    def add(a: pypto.Tensor([pypto.STATIC], dtype), b: pypto.Tensor([pypto.STATIC], dtype),
            out: pypto.Tensor([pypto.STATIC], dtype)):
        out[:] = a + b
    return add


def ref_axpy(a, b, alpha=2.0, beta=0.0):
    return a * alpha + b + beta


@pytest.fixture
def abo():
    return rand(N, seed=1), rand(N, seed=2), sentinel(N)


# -- positional / keyword / defaults ------------------------------------------------------------------------

def test_all_positional_and_keyword_only(abo):
    a, b, out = abo
    k = make_axpy()
    assert k(a, b, out, 3.0, beta=1.0) is None
    torch.testing.assert_close(out, ref_axpy(a, b, 3.0, 1.0), rtol=0, atol=1e-6)


def test_all_keyword(abo):
    a, b, out = abo
    k = make_axpy()
    k(out=out, b=b, a=a, beta=0.5, alpha=-1.0)
    torch.testing.assert_close(out, ref_axpy(a, b, -1.0, 0.5), rtol=0, atol=1e-6)


def test_defaults_for_constants(abo):
    a, b, out = abo
    k = make_axpy()
    k(a, b, out)
    torch.testing.assert_close(out, ref_axpy(a, b), rtol=0, atol=1e-6)


def test_mixed_positional_keyword(abo):
    a, b, out = abo
    k = make_axpy()
    k(a, b=b, out=out, alpha=0.5)
    torch.testing.assert_close(out, ref_axpy(a, b, 0.5), rtol=0, atol=1e-6)


def test_default_and_explicit_default_share_a_specialization(abo):
    a, b, out = abo
    k = make_axpy()
    k(a, b, out)
    k(a, b, out, 2.0, beta=0.0)
    k(a, b, out, alpha=2.0)
    ci = info(k)
    assert ci["specializations"] == 1 and ci["misses"] == 1 and ci["hits"] == 2
    torch.testing.assert_close(out, ref_axpy(a, b), rtol=0, atol=1e-6)


def test_positional_and_keyword_constant_share_a_specialization(abo):
    a, b, out = abo
    k = make_axpy()
    k(a, b, out, 3.0)
    k(a, b, out, alpha=3.0)
    assert info(k)["specializations"] == 1
    torch.testing.assert_close(out, ref_axpy(a, b, 3.0), rtol=0, atol=1e-6)


def test_non_interned_keyword_names(abo):
    a, b, out = abo
    k = make_axpy()
    kw = {"".join(["o", "ut"]): out, "".join(["al", "pha"]): 4.0, "".join(["be", "ta"]): 1.0}
    k(a, b, **kw)
    torch.testing.assert_close(out, ref_axpy(a, b, 4.0, 1.0), rtol=0, atol=1e-6)


def test_call_through_star_args(abo):
    a, b, out = abo
    k = make_axpy()
    args, kwargs = (a, b), {"out": out, "beta": 2.0}
    k(*args, **kwargs)
    torch.testing.assert_close(out, ref_axpy(a, b, 2.0, 2.0), rtol=0, atol=1e-6)


def test_returns_none_on_hit_and_miss(abo):
    a, b, out = abo
    k = make_axpy()
    assert k(a, b, out) is None
    assert k(a, b, out) is None
    assert info(k)["hits"] == 1


# -- binding errors -------------------------------------------------------------------------------------------

def test_too_many_positional(abo):
    a, b, out = abo
    k = make_axpy()
    before = snap(a, b, out)
    raises(TypeError, lambda: k(a, b, out, 1.0, 2.0), "kernel 'axpy'", "4 positional", "5")
    assert_untouched(before, a, b, out)


def test_keyword_only_given_positionally(abo):
    a, b, out = abo
    k = make_axpy()
    k(a, b, out)  # warm: the error must also be raised on the compiled path
    out.fill_(-1.0)
    before = snap(out)
    raises(TypeError, lambda: k(a, b, out, 1.0, 0.0), "kernel 'axpy'", "positional")
    assert_untouched(before, out)


def test_missing_argument(abo):
    a, b, out = abo
    k = make_axpy()
    before = snap(a, b)
    raises(TypeError, lambda: k(a, b), "kernel 'axpy'", "missing", "'out'")
    assert_untouched(before, a, b)


def test_missing_middle_argument_named(abo):
    a, b, out = abo
    k = make_axpy()
    before = snap(out)
    msg = raises(TypeError, lambda: k(a, out=out), "kernel 'axpy'", "missing", "'b'")
    assert "'out'" not in msg.split("missing", 1)[1]
    assert_untouched(before, out)


def test_unexpected_keyword(abo):
    a, b, out = abo
    k = make_axpy()
    before = snap(out)
    raises(TypeError, lambda: k(a, b, out, gamma=1.0), "kernel 'axpy'", "unexpected keyword", "'gamma'")
    assert_untouched(before, out)


def test_duplicate_positional_and_keyword(abo):
    a, b, out = abo
    k = make_axpy()
    before = snap(out)
    raises(TypeError, lambda: k(a, b, out, a=a), "kernel 'axpy'", "multiple values", "'a'")
    raises(TypeError, lambda: k(a, b, out, 1.0, alpha=1.0), "kernel 'axpy'", "multiple values", "'alpha'")
    assert_untouched(before, out)
    assert info(k)["misses"] == 0


# -- tensor kinds -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("np_dtype, pdt", [(np.float32, pypto.DT_FP32), (np.int32, pypto.DT_INT32),
                                           (np.float16, pypto.DT_FP16)])
def test_numpy_inputs_and_output(np_dtype, pdt):
    k = make_add(pdt)
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(16) * 10).astype(np_dtype)
    b = (rng.standard_normal(16) * 10).astype(np_dtype)
    out = np.zeros(16, np_dtype)
    k(a, b, out)
    expect = (torch.from_numpy(a) + torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(out, expect)


def test_numpy_bool_mask():
    @pypto.frontend.jit
    def select(m: pypto.Tensor([pypto.STATIC], pypto.DT_BOOL), x: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
               y: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32)):
        out[:] = pypto.where(m, x, y)

    rng = np.random.default_rng(1)
    m = rng.standard_normal(32) > 0
    x = rng.standard_normal(32).astype(np.float32)
    y = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(32, np.float32)
    select(m, x, y, out)
    np.testing.assert_array_equal(out, np.where(m, x, y))


def test_mixed_torch_and_numpy():
    k = make_add()
    a = rand(12, seed=3)
    b = rand(12, seed=4).numpy()
    out_np = np.zeros(12, np.float32)
    k(a, b, out_np)
    np.testing.assert_array_equal(out_np, (a + torch.from_numpy(b)).numpy())
    out_t = sentinel(12)
    k(b, a, out_t)
    torch.testing.assert_close(out_t, a + torch.from_numpy(b), rtol=0, atol=0)
    assert info(k)["specializations"] == 1


def test_nn_parameter_without_grad():
    k = make_add()
    p = torch.nn.Parameter(rand(8, seed=5), requires_grad=False)
    b, out = rand(8, seed=6), sentinel(8)
    k(p, b, out)
    torch.testing.assert_close(out, p.detach() + b, rtol=0, atol=0)


def test_nn_parameter_requiring_grad_as_input():
    # Weights are nn.Parameters that require grad; reading them as kernel inputs must work.
    k = make_add()
    p = torch.nn.Parameter(rand(8, seed=7))
    assert p.requires_grad
    b, out = rand(8, seed=8), sentinel(8)
    k(p, b, out)
    torch.testing.assert_close(out, p.detach() + b, rtol=0, atol=0)


def test_dlpack_only_object_inputs_and_output():
    k = make_add()
    a, b, out = rand(10, seed=9), rand(10, seed=10), sentinel(10)
    k(DLPackOnly(a), DLPackOnly(b), DLPackOnly(out))
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    # mixed with torch and numpy, second call is a hit
    out2 = np.zeros(10, np.float32)
    k(DLPackOnly(a), b.numpy(), out2)
    np.testing.assert_array_equal(out2, (a + b).numpy())
    ci = info(k)
    assert ci["specializations"] == 1 and ci["hits"] == 1


def test_dlpack_only_object_on_a_hit():
    # the same call after a torch warm-up: isolates the native (hit) path from the miss path
    k = make_add()
    a, b, out = rand(10, seed=9), rand(10, seed=10), sentinel(10)
    k(a, b, sentinel(10))
    k(DLPackOnly(a), DLPackOnly(b), DLPackOnly(out))
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    assert info(k)["hits"] == 1


def test_dlpack_only_object_wrong_dtype_is_checked():
    k = make_add()
    a, out = rand(10, seed=9), sentinel(10)
    before = snap(out)
    raises(TypeError, lambda: k(DLPackOnly(a.double()), a, out), "kernel 'add'", "parameter 'a'", "float32",
           "float64")
    assert_untouched(before, out)


def test_dlpack_only_object_old_protocol_without_max_version():
    class OldDLPack:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):  # a producer predating max_version
            return self.t.__dlpack__()

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    k = make_add()
    a, b, out = rand(6, seed=11), rand(6, seed=12), sentinel(6)
    k(OldDLPack(a), b, OldDLPack(out))
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)


def test_tensor_views_with_storage_offset_are_read_at_their_offset():
    k = make_add()
    base_a, base_b, base_o = rand(20, seed=13), rand(20, seed=14), sentinel(20)
    a, b, out = base_a[5:13], base_b[2:10], base_o[7:15]
    k(a, b, out)
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    assert (base_o[:7] == -12345.0).all() and (base_o[15:] == -12345.0).all()


def test_readonly_numpy_input_is_accepted():
    k = make_add()
    a = np.arange(8, dtype=np.float32)
    a.setflags(write=False)
    b = np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    k(a, b, out)
    np.testing.assert_array_equal(out, a + b)
