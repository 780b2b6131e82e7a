"""Writes respect autograd (refused where torch refuses an in-place write, version bumped where it allows one), and
Python code that runs during a call (an __index__, the compile) cannot leave the kernel a stale pointer."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

import pypto

from ._util import raises

V4 = pypto.Tensor([4], pypto.DT_FP32)


@pypto.frontend.jit
def exp_into(a: V4, out: V4):
    out[:] = pypto.exp(a)


@pypto.frontend.jit
def scaled(a: V4, out: V4, s: pypto.Scalar[pypto.DT_INT32]):
    out[:] = a * s


def test_leaf_that_requires_grad_is_refused_with_torchs_meaning():
    a = torch.rand(4)
    w = torch.zeros(4, requires_grad=True)
    raises(RuntimeError, lambda: exp_into(a, w), "kernel 'exp_into'", "parameter 'out'",
           "a leaf Variable that requires grad is being used in an in-place operation")
    assert not w.detach().any()
    with torch.no_grad():                                   # what optimizers do: allowed, as for torch's own ops
        exp_into(a, w)
    torch.testing.assert_close(w.detach(), a.exp())


def test_non_leaf_that_requires_grad_is_refused():
    x = torch.rand(4, requires_grad=True)
    y = x * 2
    before = y.detach().clone()
    raises(RuntimeError, lambda: exp_into(torch.rand(4), y), "parameter 'out'", "requires grad",
           "no derivative")
    assert torch.equal(y.detach(), before)


def test_written_tensor_version_is_bumped_so_a_stale_backward_raises():
    x = torch.rand(4, requires_grad=True)
    y = x.exp()                                             # exp saves its output for backward
    v0 = y._version
    with torch.no_grad():
        exp_into(torch.rand(4), y)
    assert y._version > v0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_read_only_inputs_are_not_bumped():
    a, out = torch.rand(4), torch.zeros(4)
    exp_into(a, out)
    va, vo = a._version, out._version
    exp_into(a, out)
    assert a._version == va and out._version == vo + 1


def test_inference_tensor_outside_inference_mode_is_refused():
    with torch.inference_mode():
        out = torch.zeros(4)
    raises(RuntimeError, lambda: exp_into(torch.rand(4), out), "parameter 'out'", "inference tensor")
    with torch.inference_mode():
        exp_into(torch.ones(4), out)
    torch.testing.assert_close(out, torch.ones(4).exp())


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


PRELUDE = """
import torch, pypto
V4 = pypto.Tensor([4], pypto.DT_FP32)
@pypto.frontend.jit
def scaled(a: V4, out: V4, s: pypto.Scalar[pypto.DT_INT32]):
    out[:] = a * s
a, out = torch.arange(4.0), torch.zeros(4)
scaled(a, out, 2)                 # compiled: the calls below are hits
class Sneaky:
    def __init__(self, action): self.action = action
    def __index__(self):
        self.action()
        return 3
"""


def test_index_that_replaces_a_tensors_storage_reads_it_again():
    """__index__ runs after the tensors were read: the kernel must see the storage as it is at launch."""
    r = _child(PRELUDE + """
fresh = torch.full((4,), 5.0)
scaled(a, out, Sneaky(lambda: a.set_(fresh)))   # the old storage may be freed by now
assert torch.equal(out, torch.full((4,), 15.0)), out
print("OK")
""")
    assert r.returncode == 0 and "OK" in r.stdout, (r.returncode, r.stdout, r.stderr[-2000:])


def test_index_that_resizes_a_tensor_is_an_error_and_nothing_runs():
    r = _child(PRELUDE + """
out.fill_(-1.0)
try:
    scaled(a, out, Sneaky(lambda: a.resize_(2)))
except RuntimeError as e:
    assert "kernel 'scaled'" in str(e) and "changed shape" in str(e), str(e)
    assert torch.equal(out, torch.full((4,), -1.0)), out
    print("REFUSED")
""")
    assert r.returncode == 0 and "REFUSED" in r.stdout, (r.returncode, r.stdout, r.stderr[-2000:])
