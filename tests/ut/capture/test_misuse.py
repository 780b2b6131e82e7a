"""pypto.capture() misuse: every rule of the capture has a clear CaptureError (or TypeError), raised before any
launch runs, so outputs are untouched after it."""
from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path

import pytest
import torch

import pypto

from . import _kernels as K


def _captured_add():
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.add(x, y, out)
    out.fill_(-7.0)  # a value no launch writes: the tests check that a refused replay leaves it
    return g, x, y, out


def _refused(g, out, *words, exc=pypto.CaptureError, **slots):
    with pytest.raises(exc) as e:
        g.replay(**slots)
    for w in words:
        assert w in str(e.value), str(e.value)
    assert torch.equal(out, torch.full_like(out, -7.0)), "a refused replay ran a launch"
    return str(e.value)


def test_resized_tensor_is_refused():
    g, x, y, out = _captured_add()
    x.resize_(2 * K.N)
    _refused(g, out, "launch 0 of 1 (kernel 'add')", "tensor argument 'x'", "resized", "float32[16]",
             "float32[32]", "update them in place")


def test_freed_storage_is_refused():
    g, x, y, out = _captured_add()
    y.untyped_storage().resize_(0)  # the memory the launch would read is gone
    _refused(g, out, "tensor argument 'y'", "can no longer be read", "NULL")


def test_replaced_storage_is_refused():
    g, x, y, out = _captured_add()
    x.set_(torch.rand(K.N))  # same shape, other memory
    _refused(g, out, "tensor argument 'x'", "storage moved")


def test_restrided_tensor_is_refused():
    x, out = torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.scaled(x, out)
    out.fill_(-7.0)
    x.as_strided_((K.N // 2,), (2,))
    _refused(g, out, "tensor argument 'x'", "float32[8]")


def test_dynamic_size_is_frozen():
    x, out = torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.scaled(x, out)  # DYNAMIC: one kernel serves every size, but the capture holds this size
    out.fill_(-7.0)
    out.resize_(K.N // 2)
    with pytest.raises(pypto.CaptureError, match="tensor argument 'out'"):
        g.replay()


def _fresh_module():
    path = Path(K.__file__)
    name = f"_capture_guard_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_rebound_global_is_reported_and_rebinding_back_replays():
    mod = _fresh_module()
    x, out = torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        mod.scaled(x, out)
    out.fill_(-7.0)
    mod.SCALE = 3.0
    _refused(g, out, "kernel 'scaled'", "the global 'SCALE'", "would now miss", "capture again")
    mod.SCALE = 2.0
    g.replay()
    torch.testing.assert_close(out, x * 2.0)


def test_replay_inside_its_region_and_before_capture():
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    g = pypto.capture()
    with pytest.raises(pypto.CaptureError, match="nothing was captured yet"):
        g.replay()
    with g:
        K.add(x, y, out)
        with pytest.raises(pypto.CaptureError, match="still recording"):
            g.replay()


def test_nested_capture_is_refused_and_graphs_record_once():
    with pypto.capture() as g:
        with pytest.raises(pypto.CaptureError, match="do not nest"):
            with pypto.capture():
                pass
    with pytest.raises(pypto.CaptureError, match="already captured"):
        with g:
            pass


def test_exception_in_region_fails_the_graph():
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    with pytest.raises(ZeroDivisionError):
        with pypto.capture() as g:
            K.add(x, y, out)
            1 / 0
    assert g.state == "failed"
    out.fill_(-7.0)
    _refused(g, out, "the capture failed", "ZeroDivisionError", "capture again")
    with pypto.capture() as g2:  # the failed capture ended: a new one records
        K.add(x, y, out)
    g2.replay()


def test_failing_call_in_region_fails_the_graph():
    x, y, out, longer = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N), torch.rand(K.N + 1)
    with pytest.raises(ValueError, match="kernel 'add'"):
        with pypto.capture() as g:
            K.add(x, y, out)
            K.add(x, longer, out)  # wrong shape: refused by the call, before it records
    assert g.state == "failed" and len(g) == 1


def test_unknown_slot_and_wrong_slot_values():
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.axpy(x, y, out, g.slot("alpha", 2.0))
        K.shift(x, out, g.slot("k", 1))
    out.fill_(-7.0)
    _refused(g, out, "scalar slot 'beta'", "'alpha', 'k'", exc=TypeError, beta=1.0)
    _refused(g, out, "launch 0 of 2 (kernel 'axpy')", "slot 'alpha' (parameter 'alpha')", "real number", "str",
             exc=TypeError, alpha="x")
    _refused(g, out, "launch 1 of 2 (kernel 'shift')", "slot 'k'", "expected an integer", "1.5", exc=TypeError,
             k=1.5)
    _refused(g, out, "does not fit in int64", exc=OverflowError, k=1 << 70)
    g.replay(alpha=1.0, k=2)  # nothing was rebound by the refused calls; valid values replay
    torch.testing.assert_close(out, x + 2)


def test_slot_names_and_values_are_checked():
    g = pypto.capture()
    with pytest.raises(pypto.CaptureError, match="identifier"):
        g.slot("not a name", 1.0)
    with pytest.raises(pypto.CaptureError, match="int or a float, got str"):
        g.slot("a", "1.0")
    with pytest.raises(ValueError, match="torch_ops must be one of"):
        pypto.capture(torch_ops="ignore")


def test_torch_op_in_region_is_refused_by_default():
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    x0 = x.clone()
    with pytest.raises(pypto.CaptureError) as e:
        with pypto.capture() as g:
            K.add(x, y, out)
            x.add_(1.0)
    assert "the torch op 'add_'" in str(e.value) and "never on replay" in str(e.value)
    assert "torch_ops='eager'" in str(e.value)
    assert torch.equal(x, x0), "the refused op ran"
    assert g.state == "failed"


def test_copying_index_is_refused_view_is_not():
    x, out, rows = torch.rand(2, K.N), torch.zeros(K.N), torch.tensor([0])
    with pytest.raises(pypto.CaptureError, match="'__getitem__'.*copies here"):
        with pypto.capture():
            K.add(x[rows][0], x[1], out)


def test_written_tensor_that_requires_grad_is_refused_at_replay():
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.add(x, y, out)
    out.fill_(-7.0)
    out.requires_grad_(True)
    with pytest.raises(RuntimeError, match="parameter 'out'.*in-place"):
        g.replay()
    assert torch.equal(out.detach(), torch.full_like(out, -7.0))
