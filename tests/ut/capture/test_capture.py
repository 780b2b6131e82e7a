"""pypto.capture(): replay is identical to eager calls (random sequences with aliasing), scalar slots, torch custom
ops inside the region, calls from other threads, and the graph's lifetime."""
from __future__ import annotations

import gc
import random
import threading

import pytest
import torch

import pypto

from . import _kernels as K

TWO_INPUT = ("add", "mul", "axpy")


def _random_program(rng: random.Random, n_launches: int, n_buffers: int) -> list:
    """(kernel name, input buffer ids, output buffer id, alpha): outputs of launch i are read by later launches."""
    prog = []
    for _ in range(n_launches):
        name = rng.choice(TWO_INPUT)
        x, y = rng.randrange(n_buffers), rng.randrange(n_buffers)
        out = rng.choice([b for b in range(n_buffers) if b not in (x, y)] or [0])
        prog.append((name, (x, y), out, rng.choice([0.5, 2.0, -1.25])))
    return prog


def _run_eager(prog, bufs, slots=None):
    for i, (name, (x, y), out, alpha) in enumerate(prog):
        k = getattr(K, name)
        if name == "axpy":
            k(bufs[x], bufs[y], bufs[out], slots(i, alpha) if slots else alpha)
        else:
            k(bufs[x], bufs[y], bufs[out])


def _run_torch(prog, bufs):
    for name, (x, y), out, alpha in prog:
        bufs[out] = K.torch_ref(name, (bufs[x], bufs[y]), alpha)


@pytest.mark.parametrize("seed", range(6))
def test_random_sequences_replay_like_eager(seed):
    rng = random.Random(seed)
    n_buffers = rng.randrange(3, 7)
    prog = _random_program(rng, rng.randrange(1, 33), n_buffers)
    captured = [torch.rand(K.N) for _ in range(n_buffers)]
    eager = [b.clone() for b in captured]
    expected = [b.clone() for b in captured]
    with pypto.capture() as g:
        _run_eager(prog, captured)
    assert len(g) == len(prog) and g.launches == [p[0] for p in prog]
    _run_eager(prog, eager)
    _run_torch(prog, expected)
    for step in range(3):  # new inputs in place, then the same step: replay vs eager calls vs torch
        fresh = [torch.rand(K.N) for _ in range(n_buffers)]
        for c, e, x, f in zip(captured, eager, expected, fresh):
            c.copy_(f), e.copy_(f), x.copy_(f)
        g.replay()
        _run_eager(prog, eager)
        _run_torch(prog, expected)
        for i, (c, e, x) in enumerate(zip(captured, eager, expected)):
            assert torch.equal(c, e), (seed, step, i)
            torch.testing.assert_close(c, x, rtol=1e-5, atol=1e-5)


def test_capture_runs_the_launches_once_as_it_records():
    a, b, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.add(a, b, out)
    assert torch.equal(out, a + b)
    assert g.state == "done" and "1 launches" in repr(g)


def test_output_read_by_a_later_launch_sees_this_replays_value():
    x, y, t, out = torch.rand(K.N), torch.rand(K.N), torch.empty(K.N), torch.empty(K.N)
    with pypto.capture() as g:
        K.add(x, y, t)      # t = x + y
        K.mul(t, t, out)    # out = t * t: reads launch 0's output
        K.add(out, x, x)    # writes an input of launch 0: the next replay starts from it
    for _ in range(3):
        x0 = x.clone()
        g.replay()
        t_ref = x0 + y
        torch.testing.assert_close(t, t_ref)
        torch.testing.assert_close(out, t_ref * t_ref)
        torch.testing.assert_close(x, t_ref * t_ref + x0)


def test_scalar_slots_rebind_per_replay():
    x, y, out, out2 = torch.rand(K.N), torch.rand(K.N), torch.empty(K.N), torch.empty(K.N)
    with pypto.capture() as g:
        alpha = g.slot("alpha", 2.0)
        K.axpy(x, y, out, alpha)
        K.axpy(out, y, out2, alpha)      # one slot, two launches
        K.shift(x, out2, g.slot("k", 3))
    assert g.slots == {"alpha": [(0, "alpha"), (1, "alpha")], "k": [(2, "k")]}
    g.replay(alpha=0.5)
    torch.testing.assert_close(out, x * 0.5 + y)
    torch.testing.assert_close(out2, x + 3)
    g.replay(k=-4)  # alpha keeps its last value
    torch.testing.assert_close(out, x * 0.5 + y)
    torch.testing.assert_close(out2, x - 4)
    g.replay()
    torch.testing.assert_close(out2, x - 4)


def test_slot_outside_a_capture_passes_its_value():
    g = pypto.capture()
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.empty(K.N)
    K.axpy(x, y, out, g.slot("alpha", 3.0))
    torch.testing.assert_close(out, x * 3.0 + y)


def test_graph_keeps_its_tensors_alive():
    x, y = torch.rand(K.N), torch.rand(K.N)
    out = torch.empty(K.N)
    with pypto.capture() as g:
        K.add(x, y, out)
    x_value = x.clone()
    del x  # only the graph holds it now
    gc.collect()
    out.zero_()
    g.replay()
    torch.testing.assert_close(out, x_value + y)


def test_graph_in_a_cycle_is_collected():
    class Holder:
        pass

    h = Holder()
    x, out = torch.rand(K.N), torch.empty(K.N)
    with pypto.capture() as g:
        K.add(x, x, out)
    h.g, g.holder = g, h  # a cycle through the graph's Python side
    import weakref

    w = weakref.ref(h)
    del h, g
    gc.collect()
    assert w() is None


def test_as_torch_op_calls_are_recorded():
    op = K.add.as_torch_op("capture_add", returns={"out": "x"})
    x, y = torch.rand(K.N), torch.rand(K.N)
    with pypto.capture() as g:
        r = op(x, y)          # the op allocates its output inside the region: the replay writes that tensor
        r2 = op(r, y)
    assert g.launches == ["add", "add"]
    x.copy_(torch.rand(K.N))
    g.replay()
    torch.testing.assert_close(r, x + y)
    torch.testing.assert_close(r2, x + y + y)


def test_views_and_allocations_are_allowed_in_the_region():
    base = torch.rand(2, K.N)
    out = torch.empty(K.N)
    with pypto.capture() as g:
        tmp = torch.empty(K.N)
        K.add(base[0], base[1], tmp)
        K.mul(tmp, base[1], out)
        assert out.shape == (K.N,)
    base.copy_(torch.rand(2, K.N))
    g.replay()
    torch.testing.assert_close(out, (base[0] + base[1]) * base[1])


def test_eager_torch_ops_run_once_and_are_listed():
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.empty(K.N)
    with pypto.capture(torch_ops="eager") as g:
        y.mul_(2)               # runs once, at capture
        K.add(x, y, out)
    assert "mul_" in g.eager_ops and g.launches == ["add"]
    y0 = y.clone()
    g.replay()
    torch.testing.assert_close(y, y0)  # not replayed
    torch.testing.assert_close(out, x + y0)


def test_calls_from_other_threads_run_but_are_not_recorded():
    x, y, out, other = torch.rand(K.N), torch.rand(K.N), torch.empty(K.N), torch.empty(K.N)
    with pypto.capture() as g:
        K.add(x, y, out)
        t = threading.Thread(target=K.mul, args=(x, y, other))
        t.start()
        t.join(timeout=60)
        assert not t.is_alive(), "the other thread's kernel call did not finish within 60 s"
    torch.testing.assert_close(other, x * y)
    assert g.launches == ["add"]


def test_empty_capture_replays_nothing():
    with pypto.capture() as g:
        pass
    g.replay()
    assert len(g) == 0


def test_numpy_tensors_are_captured():
    import numpy as np

    x, y, out = (np.random.rand(K.N).astype(np.float32) for _ in range(3))
    with pypto.capture() as g:
        K.add(x, y, out)
    x[:] = np.random.rand(K.N)
    g.replay()
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
