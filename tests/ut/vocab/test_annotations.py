"""Reference annotation spellings: every any-shape form and `pypto.tensor`, run against torch."""
import pytest
import torch

import pypto

ANY_SHAPE_FORMS = {
    "empty list": lambda: pypto.Tensor([], pypto.DT_FP32),
    "dtype only": lambda: pypto.Tensor(dtype=pypto.DT_FP32),
    "dtype positional": lambda: pypto.Tensor(pypto.DT_FP32),
    "ellipsis list": lambda: pypto.Tensor([...], pypto.DT_FP32),
    "bracket ellipsis": lambda: pypto.Tensor[...],
    "bracket empty": lambda: pypto.Tensor[[], pypto.DT_FP32],
    "bracket ellipsis list": lambda: pypto.Tensor[[...], pypto.DT_FP32],
    "call": lambda: pypto.Tensor(),
    "lowercase": lambda: pypto.tensor([], pypto.DT_FP32),
    "lowercase bracket": lambda: pypto.tensor[[], pypto.DT_FP32],
}


def _kernel(ann):
    @pypto.frontend.jit
    def k(a: ann, out: ann):
        pypto.set_vec_tile_shapes(*([4] * len(a.shape)))
        out[:] = a * 2.0 + 1.0
    return k


@pytest.mark.parametrize("form", sorted(ANY_SHAPE_FORMS))
def test_any_shape_form_runs_every_rank(form):
    k = _kernel(ANY_SHAPE_FORMS[form]())
    g = torch.Generator().manual_seed(1)
    for shape in [(5,), (3, 7), (2, 3, 4)]:
        a = torch.randn(shape, generator=g)
        out = torch.zeros(shape)
        k(a, out)
        assert torch.equal(out, a * 2.0 + 1.0), (form, shape)


def test_bare_lowercase_tensor_annotation():
    @pypto.frontend.jit
    def k(a: pypto.tensor, out: pypto.tensor):
        pypto.set_vec_tile_shapes(8)
        out[:] = pypto.exp(a)
    a, out = torch.randn(9, generator=torch.Generator().manual_seed(3)), torch.zeros(9)
    k(a, out)
    torch.testing.assert_close(out, torch.exp(a))   # exp: the C library's, within an ulp of torch's


def test_any_shape_dtype_is_checked_and_outputs_untouched():
    k = _kernel(pypto.Tensor([], pypto.DT_FP32))
    a = torch.ones(4, dtype=torch.float16)
    out = torch.full((4,), 7.0, dtype=torch.float16)
    with pytest.raises(TypeError) as e:
        k(a, out)
    msg = str(e.value)
    assert "'k'" in msg and "'a'" in msg and "float32" in msg and "float16" in msg
    assert torch.equal(out, torch.full((4,), 7.0, dtype=torch.float16))


def test_rank_and_sizes_are_keyed():
    k = _kernel(pypto.Tensor([], pypto.DT_FP32))
    for shape in [(4,), (4,), (5,), (2, 2)]:
        k(torch.ones(shape), torch.zeros(shape))
    assert k.cache_info()["specializations"] == 3


def test_reprs_say_any_shape():
    assert repr(pypto.Tensor([], pypto.DT_FP16)) == "pypto.Tensor(dtype=pypto.DT_FP16)"
    assert repr(pypto.Tensor[...]) == "pypto.Tensor()"


def test_local_tensor_with_name():
    @pypto.frontend.jit
    def k(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
          out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(4, 4)
        t = pypto.tensor([a.shape[0], a.shape[1]], pypto.DT_FP32, "scratch")
        t[:] = a + 3.0
        out[:] = t * a
    a, out = torch.randn(3, 5), torch.zeros(3, 5)
    k(a, out)
    assert torch.equal(out, (a + 3.0) * a)


def test_local_tensor_needs_shape_and_dtype():
    @pypto.frontend.jit
    def k_bad(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        t = pypto.tensor([4])
        out[:] = t
    out = torch.full((4,), 5.0)
    with pytest.raises(pypto.KernelTraceError, match=r"kernel 'k_bad': tensor: a local tensor needs a shape and a "
                                                      r"dtype"):
        k_bad(torch.ones(4), out)
    assert torch.equal(out, torch.full((4,), 5.0))
