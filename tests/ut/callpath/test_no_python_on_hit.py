"""A cache hit runs no Python: sys.setprofile / sys.settrace see no Python-level 'call' event during a hit."""

import sys

import numpy as np
import torch

import pypto

from ._util import info, rand, sentinel


def _events_during(hook_setter, kernel, *args, **kwargs):
    """Python-level 'call' events while `kernel(*args, **kwargs)` runs (the kernel is called directly from this
    frame, so the only Python calls recorded are ones made by the call path itself)."""
    events = []

    def hook(frame, event, arg):
        events.append((event, frame.f_code.co_name, frame.f_code.co_filename))
        return hook if hook_setter is sys.settrace else None

    hook_setter(hook)
    try:
        kernel(*args, **kwargs)
    finally:
        hook_setter(None)
    return [e for e in events if e[0] == "call"]


def make_kernel():
    scale = 1.5

    @pypto.frontend.jit
    def hot(a: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32),
            out: pypto.Tensor([pypto.DYNAMIC, 8], pypto.DT_FP32), alpha=2.0, *, mode="add"):
        if mode == "add":
            out[:] = a * alpha + b * scale
        else:
            out[:] = a * alpha - b * scale
    return hot


def _check(out, a, b, alpha=2.0, sign=1.0):
    torch.testing.assert_close(torch.as_tensor(out), torch.as_tensor(a) * alpha + sign * torch.as_tensor(b) * 1.5,
                               rtol=0, atol=1e-5)


def test_setprofile_sees_no_python_call_on_hit():
    k = make_kernel()
    a, b, out = rand(4, 8, seed=1), rand(4, 8, seed=2), sentinel(4, 8)
    k(a, b, out)
    calls = _events_during(sys.setprofile, k, a, b, out)
    assert calls == [], calls
    _check(out, a, b)
    assert info(k)["hits"] == 1


def test_settrace_sees_no_python_call_on_hit():
    k = make_kernel()
    a, b, out = rand(4, 8, seed=1), rand(4, 8, seed=2), sentinel(4, 8)
    k(a, b, out)
    calls = _events_during(sys.settrace, k, a, b, out)
    assert calls == [], calls
    _check(out, a, b)


def test_no_python_on_hit_with_keywords_constants_and_new_dynamic_size():
    k = make_kernel()
    a, b, out = rand(4, 8, seed=1), rand(4, 8, seed=2), sentinel(4, 8)
    k(a, b, out, 3.0, mode="sub")
    a2, out2 = rand(6, 8, seed=3), sentinel(6, 8)   # DYNAMIC first dim: still a hit
    b2 = rand(6, 8, seed=4)
    alpha = float("3.0")                            # a different float object, same key
    mode = "".join(["s", "ub"])                     # a non-interned equal string
    calls = _events_during(sys.setprofile, k, a2, b2, out2, alpha, mode=mode)
    assert calls == [], calls
    assert info(k)["hits"] == 1 and info(k)["misses"] == 1
    _check(out2, a2, b2, 3.0, -1.0)


def test_no_python_on_hit_with_numpy_arrays():
    k = make_kernel()
    a, b = rand(4, 8, seed=1).numpy(), rand(4, 8, seed=2).numpy()
    out = np.zeros((4, 8), np.float32)
    k(a, b, out)
    calls = _events_during(sys.setprofile, k, a, b, out)
    assert calls == [], calls
    _check(out, a, b)


def test_no_python_on_hit_with_a_list_constant():
    @pypto.frontend.jit
    def lc(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), w):
        out[:] = a * w[0]

    a, out = rand(8), sentinel(8)
    w = [2.0]
    lc(a, out, w)
    calls = _events_during(sys.setprofile, lc, a, out, w)   # lists are re-keyed by value: still native
    assert calls == [], calls
    torch.testing.assert_close(out, a * 2.0, rtol=0, atol=0)
