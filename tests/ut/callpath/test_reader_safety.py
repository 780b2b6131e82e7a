"""Tensor arguments are memory-safe: what a reader cannot express exactly (lazy views, NULL data, strides that are
not whole items) is refused before anything runs, and numpy arrays are read through their C struct."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import pypto

from ._util import assert_untouched, raises, snap

V4 = pypto.Tensor([4], pypto.DT_FP32)
M = pypto.Tensor([pypto.DYNAMIC, 3], pypto.DT_FP32)


@pypto.frontend.jit
def plus_one(a: V4, out: V4):
    out[:] = a + 1.0


@pypto.frontend.jit
def rows_times_two(a: M, out: M):
    out[:] = a * 2.0


def test_lazy_negation_view_is_refused_not_read_raw():
    a = torch.arange(4.0)
    neg = torch._neg_view(a)
    assert neg.is_neg()
    out = torch.full((4,), 7.0)
    before = snap(out)
    raises(TypeError, lambda: plus_one(neg, out), "kernel 'plus_one'", "parameter 'a'", "lazy negation view",
           "resolve_neg")
    assert_untouched(before, out)
    plus_one(neg.resolve_neg(), out)                       # resolved: the values torch sees
    torch.testing.assert_close(out, -a + 1.0)


def test_lazy_negation_view_as_output_is_refused():
    a = torch.arange(4.0)
    target = torch.zeros(4)
    neg = torch._neg_view(target)
    raises(TypeError, lambda: plus_one(a, neg), "parameter 'out'", "lazy negation view")
    assert bool((target == 0).all())


def test_structured_field_with_partial_item_stride_is_refused():
    """A float32 field of a 6-byte record: its stride is 1.5 items. Rounding it would read (and, as an output,
    overwrite) the neighbouring field."""
    rec = np.zeros(4, dtype=[("x", "<f4"), ("y", "<i2")])
    rec["y"] = np.arange(4, dtype=np.int16) + 100
    rec["x"] = np.arange(4, dtype=np.float32)
    before = rec.tobytes()
    out = np.zeros(4, np.float32)
    raises(TypeError, lambda: plus_one(rec["x"], out), "parameter 'a'", "not a multiple of the item size")
    raises(TypeError, lambda: plus_one(np.arange(4, dtype=np.float32), rec["x"]), "parameter 'out'",
           "stride 6 bytes")
    assert rec.tobytes() == before and not out.any()


def test_structured_field_with_whole_item_stride_gets_exact_element_strides():
    rec = np.zeros((5, 3), dtype=[("x", "<f4"), ("y", "<f4")])
    rec["x"] = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    out = np.zeros((5, 3), np.float32)
    msg = raises(ValueError, lambda: rows_times_two(rec["x"], out), "contiguous")
    assert "strides [6, 2]" in msg                       # element strides, exact (not rounded)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.float64, np.float16, np.bool_, np.uint8])
def test_numpy_arrays_read_through_the_struct_match_numpy(dtype):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((3, 5)) * 10).astype(dtype)
    out = np.zeros((3, 5), dtype)

    @pypto.frontend.jit
    def copy(x: pypto.Tensor, y: pypto.Tensor):
        y[:] = x

    copy(a, out)
    np.testing.assert_array_equal(out, a)


def test_numpy_views_and_flags():
    base = np.arange(24, dtype=np.float32).reshape(8, 3)
    out = np.zeros((4, 3), np.float32)
    rows_times_two(base[2:6], out)                        # an offset view: data pointer past the start
    np.testing.assert_array_equal(out, base[2:6] * 2)
    before = snap(out)
    raises(ValueError, lambda: rows_times_two(base[::2], out), "parameter 'a'", "contiguous")
    assert_untouched(before, out)
    ro = np.zeros((4, 3), np.float32)
    ro.flags.writeable = False
    raises(ValueError, lambda: rows_times_two(base[:4], ro), "parameter 'out'", "read-only")
    assert not ro.any()
    big = np.arange(12, dtype=">f4").reshape(4, 3)       # big-endian: not read as native floats
    raises(TypeError, lambda: rows_times_two(big, out), "parameter 'a'")
    assert_untouched(before, out)


def _child(code: str) -> subprocess.CompletedProcess:
    """Runs a risky case in a child process, so that a crash is a failed test and not a dead test run."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


PRELUDE = """
import torch, pypto
V4 = pypto.Tensor([4], pypto.DT_FP32)
@pypto.frontend.jit
def plus_one(a: V4, out: V4):
    out[:] = a + 1.0
a = torch.arange(4.0); out = torch.zeros(4)
plus_one(a, out)              # compiled, and the fast torch reader installed
"""


@pytest.mark.parametrize("case,expect", [
    ("st = torch.zeros(4); st.untyped_storage().resize_(0); bad = st", "data pointer is NULL"),
    ("from torch._subclasses.fake_tensor import FakeTensorMode\n"
     "with FakeTensorMode() as m:\n    bad = torch.zeros(4)", "parameter 'a'"),
    ("class Wrapper(torch.Tensor):\n"
     "    @staticmethod\n"
     "    def __new__(cls, elem):\n"
     "        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype)\n"
     "    @classmethod\n"
     "    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n"
     "        raise NotImplementedError(str(func))\n"
     "bad = Wrapper(torch.zeros(4))", "parameter 'a'"),
])
def test_tensors_without_data_are_errors_not_crashes(case, expect):
    r = _child(PRELUDE + case + f"""
out.fill_(5.0)
try:
    plus_one(bad, out)
except (TypeError, ValueError) as e:
    assert "kernel 'plus_one'" in str(e) and {expect!r} in str(e), str(e)
    assert bool((out == 5.0).all()), out
    print("REFUSED")
else:
    print("RAN", out)
""")
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-2000:])
    assert "REFUSED" in r.stdout, r.stdout


def test_meta_tensor_message_names_the_device_without_torch_internals():
    out = torch.zeros(4)
    msg = raises(TypeError, lambda: plus_one(torch.empty(4, device="meta"), out), "kernel 'plus_one'",
                 "parameter 'a'", "meta tensor")
    assert "Exception raised from" not in msg and "\n" not in msg
    assert not out.any()
