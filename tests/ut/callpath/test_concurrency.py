"""Many threads calling one kernel: correct results, one build per specialization."""

import threading

import pytest
import torch

import pypto
import pypto.compiler

from ._util import info, rand, sentinel


def make_axpy(name_suffix=""):
    @pypto.frontend.jit
    def axpy_mt(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), alpha=2.0):
        out[:] = a * alpha + b
    return axpy_mt


@pytest.fixture
def build_calls(monkeypatch):
    """Counts calls of pypto.compiler.pipeline.build (the one function a miss calls to trace + generate + compile)."""
    calls = []
    lock = threading.Lock()
    real = pypto.compiler.pipeline.build

    def counting_build(*args, **kwargs):
        with lock:
            calls.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(pypto.compiler.pipeline, "build", counting_build)
    return calls


def _run_threads(n, target):
    errors = []

    def wrap(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001  reported below
            errors.append((i, repr(e)))

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in ts), "a thread hung"
    assert errors == []


def test_8_threads_200_calls_each_correct():
    k = make_axpy()
    k(rand(4), rand(4), sentinel(4))   # warm
    bad = []

    def work(i):
        for j in range(200):
            n = 1 + (i * 37 + j) % 50
            a, b, out = rand(n, seed=i * 1000 + j), rand(n, seed=i * 1000 + j + 7), sentinel(n)
            k(a, b, out)
            if not torch.allclose(out, a * 2.0 + b, rtol=0, atol=1e-6):
                bad.append((i, j))

    _run_threads(8, work)
    assert bad == []
    ci = info(k)
    assert ci["specializations"] == 1 and ci["misses"] == 1 and ci["hits"] == 1600


def test_concurrent_identical_first_calls_build_once(build_calls):
    k = make_axpy()
    barrier = threading.Barrier(8)
    results = {}

    def work(i):
        a, b, out = rand(33, seed=i), rand(33, seed=i + 50), sentinel(33)
        barrier.wait()
        k(a, b, out)
        results[i] = torch.allclose(out, a * 2.0 + b, rtol=0, atol=1e-6)

    _run_threads(8, work)
    assert results == {i: True for i in range(8)}
    assert len(build_calls) == 1
    ci = info(k)
    assert ci["specializations"] == 1
    assert ci["hits"] + ci["misses"] == 8


def test_concurrent_first_calls_count_compile_seconds_once(build_calls):
    k = make_axpy()
    barrier = threading.Barrier(8)

    def work(i):
        a, b, out = rand(21, seed=i), rand(21, seed=i + 50), sentinel(21)
        barrier.wait()
        k(a, b, out, 3.0)
        assert torch.allclose(out, a * 3.0 + b, rtol=0, atol=1e-6)

    _run_threads(8, work)
    assert len(build_calls) == 1
    per_spec = sum(s[3] for s in k._specializations())
    # cache_info()["compile_seconds"] is time spent compiling: threads that waited for the one build compiled nothing
    assert info(k)["compile_seconds"] == pytest.approx(per_spec)


def test_concurrent_different_constants_one_build_each(build_calls):
    k = make_axpy()
    barrier = threading.Barrier(8)
    bad = []

    def work(i):
        alpha = float(1 + i % 4)
        barrier.wait()
        for j in range(50):
            a, b, out = rand(17, seed=j), rand(17, seed=j + 1), sentinel(17)
            k(a, b, out, alpha)
            if not torch.allclose(out, a * alpha + b, rtol=0, atol=1e-6):
                bad.append((i, j))

    _run_threads(8, work)
    assert bad == []
    assert info(k)["specializations"] == 4
    assert len(build_calls) == 4


def test_large_tensors_released_gil_concurrent():
    # Kernels touching many elements run without the GIL: threads overlap inside the kernel.
    k = make_axpy()
    n = 1 << 17
    bad = []

    def work(i):
        a, b = rand(n, seed=i), rand(n, seed=i + 100)
        expect = a * 2.0 + b
        for j in range(20):
            out = sentinel(n)
            k(a, b, out)
            if not torch.allclose(out, expect, rtol=0, atol=1e-5):
                bad.append((i, j))

    _run_threads(4, work)
    assert bad == []
    assert info(k)["specializations"] == 1


def test_concurrent_errors_and_successes():
    k = make_axpy()
    k(rand(4), rand(4), sentinel(4))
    bad = []

    def work(i):
        for j in range(100):
            if (i + j) % 3 == 0:
                out = sentinel(8)
                try:
                    k(rand(8).double(), rand(8), out)
                except TypeError as e:
                    if "parameter 'a'" not in str(e) or not (out == -12345.0).all():
                        bad.append(("msg", i, j))
                else:
                    bad.append(("no error", i, j))
            else:
                a, b, out = rand(8, seed=j), rand(8, seed=i), sentinel(8)
                k(a, b, out)
                if not torch.allclose(out, a * 2.0 + b, rtol=0, atol=1e-6):
                    bad.append(("value", i, j))

    _run_threads(6, work)
    assert bad == []


def test_a_thread_waiting_for_another_threads_build_gives_up_after_twice_the_compile_timeout(monkeypatch):
    """Two identical first calls: the second waits for the first one's build, at most 2 x host_options
    compile_timeout; past that it raises CompileError naming the kernel and what it waited for, with its output
    untouched, while the owner's build still completes and runs."""
    release, started = threading.Event(), threading.Event()
    real = pypto.compiler.pipeline.build

    def slow_build(*args, **kwargs):
        started.set()
        assert release.wait(60), "the test never released the build"
        return real(*args, **kwargs)

    monkeypatch.setattr(pypto.compiler.pipeline, "build", slow_build)

    @pypto.frontend.jit(host_options={"compile_timeout": 1})
    def axpy_wait(a: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), b: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                  out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
        out[:] = a * 2.0 + b

    a, b = rand(9, seed=1), rand(9, seed=2)
    out_owner, out_waiter = sentinel(9), sentinel(9)
    owner = threading.Thread(target=lambda: axpy_wait(a, b, out_owner))
    owner.start()
    assert started.wait(60)
    with pytest.raises(pypto.errors.CompileError, match=r"axpy_wait: waited 2 s for another thread's build") as ei:
        axpy_wait(a, b, out_waiter)
    assert "nothing was run" in str(ei.value)
    assert torch.equal(out_waiter, sentinel(9))
    release.set()
    owner.join(60)
    assert not owner.is_alive()
    assert torch.allclose(out_owner, a * 2.0 + b, rtol=0, atol=1e-6)
