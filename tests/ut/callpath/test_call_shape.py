"""The per-call-site binding cache (CallShape): layouts learned once, every layout still bound correctly."""
from __future__ import annotations

import torch

import pypto

from ._util import assert_untouched, raises, snap

T = pypto.Tensor([8], pypto.DT_FP32)


@pypto.frontend.jit
def shape_k(a: T, b: T, out: T, m=2, n=3):
    out[:] = a * m + b * n


def _ref(a, b, m, n):
    return a * m + b * n


def test_alternating_layouts_bind_each_correctly():
    a, b = torch.rand(8), torch.rand(8)
    out = torch.zeros(8)
    for _ in range(3):
        shape_k(a, b, out, m=4, n=5)
        torch.testing.assert_close(out, _ref(a, b, 4, 5))
        shape_k(a, b, out, n=7, m=6)           # same names, other order: another kwnames tuple
        torch.testing.assert_close(out, _ref(a, b, 6, 7))
        shape_k(a, b, out, 8, 9)               # positional constants
        torch.testing.assert_close(out, _ref(a, b, 8, 9))
        shape_k(a, b, out)                     # defaults
        torch.testing.assert_close(out, _ref(a, b, 2, 3))
        shape_k(out=out, b=b, a=a, n=1)        # everything by keyword
        torch.testing.assert_close(out, _ref(a, b, 2, 1))
        shape_k(a, b, out, **{"m": 3})         # a fresh kwnames tuple per call
        torch.testing.assert_close(out, _ref(a, b, 3, 3))


def test_errors_after_a_layout_was_cached():
    a, b = torch.rand(8), torch.rand(8)
    out = torch.zeros(8)
    shape_k(a, b, out, m=1)
    before = snap(out)
    raises(TypeError, lambda: shape_k(a, b), "kernel 'shape_k'", "missing required argument", "'out'")
    raises(TypeError, lambda: shape_k(a, b, out, m=1, q=2), "kernel 'shape_k'", "unexpected keyword argument 'q'")
    raises(TypeError, lambda: shape_k(a, b, out, 1, m=1), "kernel 'shape_k'", "multiple values for argument 'm'")
    raises(TypeError, lambda: shape_k(a, b, out, 1, 2, 3), "kernel 'shape_k'", "takes 5 positional argument(s)")
    assert_untouched(before, out)
    shape_k(a, b, out, m=1)                    # the cached layout still works after the failures
    torch.testing.assert_close(out, _ref(a, b, 1, 3))


def test_a_new_default_is_seen_with_a_cached_layout():
    @pypto.frontend.jit
    def dflt_k(a: T, out: T, m=2):
        out[:] = a * m

    a, out = torch.rand(8), torch.zeros(8)
    dflt_k(a, out)
    torch.testing.assert_close(out, a * 2)
    dflt_k.__wrapped__.__defaults__ = (5,)
    dflt_k(a, out)
    torch.testing.assert_close(out, a * 5)


def test_string_annotations_are_resolved_in_the_kernel_module():
    # this module uses `from __future__ import annotations`: every annotation above arrived as a string
    assert isinstance(shape_k.__wrapped__.__annotations__["a"], str)
    a, b, out = torch.rand(8), torch.rand(8), torch.zeros(8)
    shape_k(a, b, out, m=1, n=1)
    torch.testing.assert_close(out, a + b)


def test_unresolvable_string_annotation_is_a_clear_error():
    Local = pypto.Tensor([8], pypto.DT_FP32)  # noqa: F841 - a local the string annotation cannot see

    def k(a: Local, out: Local):  # noqa: F821
        out[:] = a

    raises(pypto.KernelDefinitionError, lambda: pypto.frontend.jit(k), "kernel 'k'", "parameter 'a'",
           "cannot evaluate the string annotation 'Local'", "NameError")
