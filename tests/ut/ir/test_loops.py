"""Loops: every pypto.loop form, unroll_list (main + remainder loops), loop_unroll, parallel loops and
is_loop_begin/end — every result compared with torch. Branches and control transfer: test_control_flow.py."""
import re

import pytest
import torch

import pypto
from pypto.codegen import generate
from pypto.testing import simple_request
from pypto.errors import KernelTraceError
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import trace

F32 = pypto.DT_FP32
D4 = pypto.Tensor([pypto.DYNAMIC, 4], F32)
I32 = pypto.Scalar[pypto.DT_INT32]


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _ir_and_source(fn, *args, options=None, **kw):
    params = build_params(fn.__name__, fn)
    req, _, _ = simple_request(fn.__name__, params, args, kw, options)
    k = trace(prepare(fn, fn.__name__), req)
    return str(k), generate(k)


# ---------------------------------------------------------------------------------------------------------------
# pypto.loop forms
# ---------------------------------------------------------------------------------------------------------------

@pypto.frontend.jit
def k_loop_forms(x: D4, out: D4, lo: I32):
    n = x.shape[0]
    for i in pypto.loop(n):                      # stop only (symbolic)
        out[i:i + 1, :] = x[i:i + 1, :]
    for i in pypto.loop(lo, n, name="from_lo"):  # start, stop (runtime scalar start)
        out[i:i + 1, :] = out[i:i + 1, :] + 1.0
    for i in pypto.loop(0, n, 2):                # positive step
        out[i:i + 1, :] = out[i:i + 1, :] * 2.0
    for i in pypto.loop(n - 1, -1, -3):          # negative step, symbolic start
        out[i:i + 1, :] = out[i:i + 1, :] - 10.0


@pytest.mark.parametrize("n,lo", [(1, 0), (5, 2), (8, 8), (11, 3)])
def test_loop_forms(n, lo):
    x = _rand(n, 4, seed=n)
    out = torch.zeros(n, 4)
    k_loop_forms(x, out, lo)
    ref = x.clone()
    ref[lo:] += 1.0
    ref[0::2] *= 2.0
    ref[list(range(n - 1, -1, -3))] -= 10.0
    assert torch.equal(out, ref)


# ---------------------------------------------------------------------------------------------------------------
# unroll_list: unrolled main loops + remainder loop
# ---------------------------------------------------------------------------------------------------------------

def k_unroll(x: D4, out: D4):
    n = x.shape[0]
    for i in pypto.loop(0, n, 1, unroll_list=[4, 2]):
        out[i:i + 1, :] = pypto.exp(x[i:i + 1, :]) + 1.0


k_unroll_jit = pypto.frontend.jit(k_unroll)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 13])
def test_unroll_list_covers_every_iteration_once(n):
    x = _rand(n, 4, seed=n)
    out = torch.full((n, 4), -5.0)
    k_unroll_jit(x, out)
    torch.testing.assert_close(out, torch.exp(x) + 1.0, rtol=1e-6, atol=1e-6)


def test_unroll_list_generates_main_and_remainder_loops():
    ir, src = _ir_and_source(k_unroll, torch.zeros(5, 4), torch.zeros(5, 4))
    assert "unrolled loop(0, x.shape[0], 1)" in ir
    # one sub-loop per factor, largest first; the factor-4 body is traced 4 times (i, i+1, i+2, i+3)
    assert src.index("// unroll factor 4") < src.index("// unroll factor 2") < \
        src.index("// unroll factor 1 (remainder loop)")
    f4 = src[src.index("// unroll factor 4"):src.index("// unroll factor 2")]
    assert f4.count("pypto_rt::exp_") == 4
    assert "/ 4;" in f4 and "/ 2;" in src and "/ 1;" in src


@pypto.frontend.jit
def k_loop_unroll(x: D4, out: D4):
    n = x.shape[0]
    for i, f in pypto.loop_unroll(0, n, 1, unroll_list=[1, 4, 2, 4]):
        v = pypto.view(x, [f, 4], [i, 0])
        out[i:i + f, :] = v * float(f)


@pytest.mark.parametrize("n", [1, 3, 6, 7, 9, 16])
def test_loop_unroll_yields_index_and_factor(n):
    x = _rand(n, 4, seed=n)
    out = torch.zeros(n, 4)
    k_loop_unroll(x, out)
    factors, left = [], n
    for f in (4, 2, 1):          # sorted, de-duplicated, largest first
        factors += [f] * (left // f * f)
        left -= left // f * f
    torch.testing.assert_close(out, x * torch.tensor(factors, dtype=torch.float32)[:, None], rtol=0, atol=0)


def test_unroll_list_is_validated():
    def k_bad(x: D4, out: D4):
        for i in pypto.loop(0, x.shape[0], 1, unroll_list=[4, 0]):
            out[i:i + 1, :] = x[i:i + 1, :]

    with pytest.raises(KernelTraceError, match=r"k_bad.*loop: unroll_list must be a list of positive ints, got "
                                               r"\[4, 0\]"):
        _ir_and_source(k_bad, torch.zeros(2, 4), torch.zeros(2, 4))


# ---------------------------------------------------------------------------------------------------------------
# parallel loops
# ---------------------------------------------------------------------------------------------------------------

def _par_body(x: pypto.Tensor([pypto.DYNAMIC, 64], F32), out: pypto.Tensor([pypto.DYNAMIC, 64], F32)):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 7) // 8, parallel=True):
        v = pypto.view(x, [8, 64], [i * 8, 0], valid_shape=[pypto.min(8, n - i * 8), 64])
        r = pypto.sum(pypto.exp(v) * v, 1, keepdim=True) + v
        pypto.assemble(r, [i * 8, 0], out)


k_par1 = pypto.frontend.jit(_par_body, runtime_options={"sim_threads": 1})
k_par8 = pypto.frontend.jit(_par_body, runtime_options={"sim_threads": 8})


@pytest.mark.parametrize("n", [1, 8, 61, 200])
def test_parallel_loop_matches_serial_and_torch(n):
    x = _rand(n, 64, seed=n)
    o1, o8 = torch.zeros(n, 64), torch.zeros(n, 64)
    k_par1(x, o1)
    k_par8(x, o8)
    assert torch.equal(o1, o8)             # bit-identical: iterations are independent
    ref = (torch.exp(x) * x).sum(1, keepdim=True) + x
    torch.testing.assert_close(o8, ref, rtol=1e-5, atol=1e-4)


_PROBE = r"""
#define PYPTO_RT_THREADS 1
#include <pypto/kernel_abi.h>
#include <pypto/kernel_rt.h>
extern "C" __attribute__((visibility("default"))) int pypto_entry(const PyptoTensorArg*, const PyptoScalarArg*,
                                                                  PyptoLaunchContext*) { return 0; }
extern "C" __attribute__((visibility("default"))) int probe(int64_t n, int32_t nt, uint64_t* ids) {
  return pypto_rt::parallel_for(n, nt, [&](int64_t k) -> int {
    ids[k] = (uint64_t)pthread_self();
    for (volatile int spin = 0; spin < 200000; ++spin) {}
    return 0;
  });
}
"""


@pytest.mark.parametrize("n,threads,expected", [(64, 1, 1), (64, 4, 4), (64, 8, 8), (3, 8, 3), (0, 4, 0)])
def test_parallel_for_uses_up_to_num_threads(n, threads, expected):
    """The generated parallel loop dispatches through pypto_rt::parallel_for(count, ctx->num_threads, ...)
    (ctx->num_threads = runtime_options['sim_threads']): it must really use that many threads."""
    import ctypes

    from pypto.compiler import compile_source

    lib = ctypes.CDLL(compile_source(_PROBE, None, "probe")[0])
    ids = (ctypes.c_uint64 * max(n, 1))()
    assert lib.probe(ctypes.c_int64(n), ctypes.c_int32(threads), ids) == 0
    assert len({ids[k] for k in range(n)}) == expected
    _, src = _ir_and_source(_par_body, torch.zeros(16, 64), torch.zeros(16, 64))
    assert "#define PYPTO_RT_THREADS 1" in src
    assert re.search(r"pypto_rt::parallel_for\(cnt\d+, ctx->num_threads, ", src)


def _heavy_par(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32), b: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32),
               out: pypto.Tensor([pypto.STATIC, pypto.STATIC], F32)):
    for i in pypto.loop(0, 8, parallel=True):
        v = pypto.view(a, [128, 512], [i * 128, 0])
        r = pypto.matmul(pypto.matmul(v, b, pypto.DT_FP32), b, pypto.DT_FP32)
        pypto.assemble(r, [i * 128, 0], out)


@pytest.mark.parametrize("parallelism", [1, 3, 6])
def test_parallel_loop_runs_on_sim_threads(parallelism):
    """End to end: while the kernel runs (the native core releases the GIL for big tensors) a watcher thread
    counts this process's threads: serial kernels start none, parallel ones run on the process-wide pool
    (kernel_par.h, threads named pypto-pool), which then has at least sim_threads - 1 workers."""
    import os
    import threading

    k = pypto.frontend.jit(_heavy_par, runtime_options={"sim_threads": parallelism})
    a, b = _rand(1024, 512, seed=1) * 0.05, _rand(512, 512, seed=2) * 0.05
    out = torch.zeros(1024, 512)
    k(a, b, out)                                   # build first
    torch.testing.assert_close(out, (a @ b) @ b, rtol=1e-4, atol=1e-4)
    stop, seen = threading.Event(), [0]

    def watch():
        while not stop.is_set():
            seen[0] = max(seen[0], len(os.listdir("/proc/self/task")))

    base = len(os.listdir("/proc/self/task")) + 1  # + the watcher
    w = threading.Thread(target=watch)
    w.start()
    try:
        for _ in range(20):
            k(a, b, out)
            if seen[0] - base >= parallelism - 1 and parallelism > 1:
                break
    finally:
        stop.set()
        w.join()
    if parallelism == 1:
        assert seen[0] - base == 0
    else:
        names = []
        for t in os.listdir("/proc/self/task"):
            try:                                   # another thread of this process may exit between the two calls
                with open(f"/proc/self/task/{t}/comm") as f:
                    names.append(f.read().strip())
            except FileNotFoundError:
                pass
        assert names.count("pypto-pool") >= parallelism - 1, names


def test_parallel_unrolled_loop():
    @pypto.frontend.jit(runtime_options={"sim_threads": 4})
    def k(x: D4, out: D4):
        for i in pypto.loop(0, x.shape[0], 1, unroll_list=[3], parallel=True):
            out[i:i + 1, :] = x[i:i + 1, :] * 3.0 - 1.0

    for n in (2, 3, 10):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        k(x, out)
        assert torch.equal(out, x * 3.0 - 1.0)


# ---------------------------------------------------------------------------------------------------------------
# is_loop_begin / is_loop_end
# ---------------------------------------------------------------------------------------------------------------

@pypto.frontend.jit
def k_begin_end(x: D4, out: D4, step: int = 1):
    n = x.shape[0]
    for i in pypto.loop(0, n, step):
        if pypto.cond(pypto.is_loop_begin(i)):
            out[i:i + 1, :] = x[i:i + 1, :] + 100.0
        elif pypto.is_loop_end(i):
            out[i:i + 1, :] = x[i:i + 1, :] - 100.0
        else:
            out[i:i + 1, :] = x[i:i + 1, :]


@pytest.mark.parametrize("n,step", [(1, 1), (2, 1), (6, 1), (7, 3), (9, 2)])
def test_is_loop_begin_and_end(n, step):
    x = _rand(n, 4, seed=n)
    out = torch.zeros(n, 4)
    k_begin_end(x, out, step)
    idx = list(range(0, n, step))
    ref = torch.zeros(n, 4)
    for j, i in enumerate(idx):
        ref[i] = x[i] + 100.0 if j == 0 else (x[i] - 100.0 if j == len(idx) - 1 else x[i])
    assert torch.equal(out, ref)


def test_is_loop_begin_and_end_in_unrolled_copies():
    @pypto.frontend.jit
    def k(x: D4, out: D4):
        for i in pypto.loop(0, x.shape[0], 1, unroll_list=[2]):
            out[i:i + 1, :] = x[i:i + 1, :]
            if pypto.is_loop_begin(i):
                out[i:i + 1, :] = x[i:i + 1, :] * 0.0
            if pypto.is_loop_end(i):
                out[i:i + 1, :] = x[i:i + 1, :] * 10.0

    for n in (2, 5, 6):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        k(x, out)
        ref = x.clone()
        ref[0] = 0.0
        ref[-1] = x[-1] * 10.0
        assert torch.equal(out, ref)


def test_is_loop_begin_rejects_other_values():
    def k_bad(x: D4, out: D4):
        n = x.shape[0]
        if pypto.is_loop_begin(n):
            out[:] = x

    with pytest.raises(KernelTraceError, match=r"k_bad.*is_loop_begin: expects the index of a pypto.loop, got "
                                               r"x\.shape\[0\]"):
        _ir_and_source(k_bad, torch.zeros(2, 4), torch.zeros(2, 4))


# ---- loops written with shape-derived scalars --------------------------------------------------------------------

def test_loop_forms_and_symbolic_scalars():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32)):
        n = x.shape[0]
        for i in pypto.loop(n - 1, -1, -1, name="rev"):
            out[n - 1 - i, :] = x[i, :] + i
        for i in pypto.loop(0, n, 2, parallel=True):
            out[i, :] = out[i, :] * 2.0 + pypto.max(i, 1)

    for n in (1, 6, 7):
        x = torch.randn(n, 4)
        out = torch.zeros(n, 4)
        k(x, out)
        ref = torch.flip(x + torch.arange(n).reshape(n, 1), [0])
        for i in range(0, n, 2):
            ref[i] = ref[i] * 2.0 + max(i, 1)
        assert torch.equal(out, ref)


def test_parallel_loop_threads():
    @pypto.frontend.jit(runtime_options={"sim_threads": 4})
    def k(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
        n = x.shape[0]
        for i in pypto.loop(0, (n + 7) // 8, parallel=True):
            v = pypto.view(x, [8, 64], [i * 8, 0], valid_shape=[pypto.min(8, n - i * 8), 64])
            pypto.assemble(pypto.sqrt(pypto.abs(v)) * 3.0, [i * 8, 0], out)

    x = torch.randn(101, 64)
    out = torch.zeros(101, 64)
    k(x, out)
    torch.testing.assert_close(out, x.abs().sqrt() * 3.0, rtol=1e-6, atol=0)
