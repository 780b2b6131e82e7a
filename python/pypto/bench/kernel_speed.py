"""Kernel speed (`python -m pypto.bench --kernels`): pypto's compiled kernels next to torch eager and a plain copy.

Every row is one kernel at one thread count: pypto (runtime_options sim_threads = threads), torch
eager with torch.set_num_threads(threads), and `dst.copy_(src)` of (bytes read + bytes written) / 2 (a copy reads
and writes its size, so it moves the bytes the kernel must move: the memory-bound limit). Rounds are interleaved
(each round times every row once, the three calls of a row taking turns to go first) and the figure is the
median over rounds, so the machine's noise falls on all
rows alike; compare the ratios, not the absolute times. Results are checked against torch before timing.
"""
from __future__ import annotations

import ctypes
import math
import os
import statistics
import tempfile
import time

import torch

import pypto

F2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
F1 = pypto.Tensor([pypto.STATIC], pypto.DT_FP32)
B2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)


def axpy(a: F2, b: F2, out: F2, alpha=2.0):
    pypto.set_vec_tile_shapes(32, 1024)
    out[:] = a * alpha + b


def softmax(x: F2, out: F2):
    pypto.set_vec_tile_shapes(8, 1024)
    out[:] = pypto.softmax(x, -1)


def layernorm(x: F2, w: F1, b: F1, out: F2, eps=1e-5):
    pypto.set_vec_tile_shapes(8, 1024)
    mu = pypto.mean(x, -1, keepdim=True)
    d = x - mu
    var = pypto.mean(d * d, -1, keepdim=True)
    out[:] = d * pypto.rsqrt(var + eps) * w + b


def row_sum(x: F2, out: F1):
    pypto.set_vec_tile_shapes(32, 1024)
    out[:] = pypto.sum(x, -1)


def matmul(a: F2, b: F2, out: F2):
    pypto.set_cube_tile_shapes([128, 128], [256, 256], [256, 256])
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)


def matmul_bf16(a: B2, b: B2, out: F2):
    pypto.set_cube_tile_shapes([128, 128], [256, 256], [256, 256])
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)


FIVE = ("axpy 4096x1024", "softmax 4096x1024", "layernorm 4096x1024", "matmul fp32 512^3", "row sum 4096x1024")


def _cases():
    """(name, pypto body, args builder -> (pypto args, torch callable, reference, output, bytes moved))."""
    g = torch.Generator().manual_seed(0)
    R, C = 4096, 1024
    x, y = torch.randn(R, C, generator=g), torch.randn(R, C, generator=g)
    w, b = torch.randn(C, generator=g), torch.randn(C, generator=g)
    out, tout, o1, to1 = torch.empty(R, C), torch.empty(R, C), torch.empty(R), torch.empty(R)
    nb = R * C * 4
    cases = [
        ("axpy 4096x1024", axpy, (x, y, out), lambda: torch.add(y, x, alpha=2.0, out=tout),
         lambda: x * 2.0 + y, out, 3 * nb),
        ("softmax 4096x1024", softmax, (x, out), lambda: torch.softmax(x, -1),
         lambda: torch.softmax(x, -1), out, 2 * nb),
        ("layernorm 4096x1024", layernorm, (x, w, b, out),
         lambda: torch.nn.functional.layer_norm(x, (C,), w, b, 1e-5),
         lambda: torch.nn.functional.layer_norm(x, (C,), w, b, 1e-5), out, 2 * nb),
        ("row sum 4096x1024", row_sum, (x, o1), lambda: torch.sum(x, -1, out=to1), lambda: x.sum(-1), o1,
         nb + R * 4),
    ]
    for n in (512, 1024):
        a, bm = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
        c, tc = torch.empty(n, n), torch.empty(n, n)
        cases.append((f"matmul fp32 {n}^3", matmul, (a, bm, c), lambda a=a, bm=bm, tc=tc: torch.matmul(a, bm, out=tc),
                      lambda a=a, bm=bm: a @ bm, c, 3 * n * n * 4))
    n = 1024
    a, bm = torch.randn(n, n, generator=g).bfloat16(), torch.randn(n, n, generator=g).bfloat16()
    c, tc = torch.empty(n, n), torch.empty(n, n, dtype=torch.bfloat16)
    cases.append((f"matmul bf16 {n}^3", matmul_bf16, (a, bm, c), lambda: torch.matmul(a, bm, out=tc),
                  lambda: a.float() @ bm.float(), c, 2 * n * n * 2 + n * n * 4))
    return cases


def _time(fn, clock=time.perf_counter) -> float:
    t0 = clock()
    fn()
    return clock() - t0


def compile_times() -> dict:
    """Seconds of a fresh g++ build of three kernels' generated sources (empty cache), and of the bare runtime
    header alone (what every kernel pays before its own code)."""
    import subprocess

    from ..compiler import toolchain as T
    from ..vocab.modes import CompileStage

    out = {}
    old = os.environ.get("PYPTO_CACHE_DIR")
    with tempfile.TemporaryDirectory() as d:
        os.environ["PYPTO_CACHE_DIR"] = d
        try:
            for name, body, args in (("axpy", axpy, 3), ("softmax", softmax, 2), ("matmul fp32", matmul, 3)):
                k = pypto.frontend.jit(body, host_options={"compile_stage": CompileStage.CODEGEN_INSTRUCTION})
                z = torch.zeros(64, 1024) if "matmul" not in name else torch.zeros(64, 64)
                k(*([z] * args))
                src = k.last_stage.source
                t0 = time.perf_counter()
                T.compile_source(src, None, name)
                out[name] = time.perf_counter() - t0
            hdr = os.path.join(d, "hdr.cpp")
            with open(hdr, "w") as f:
                f.write("#include <pypto/kernel_abi.h>\n#include <pypto/kernel_rt.h>\n")
            t0 = time.perf_counter()
            subprocess.run([T.CXX, *T.FLAGS, "-I", str(T.include_dir()), "-o", hdr + ".so", hdr], check=True)
            out["runtime header alone"] = time.perf_counter() - t0
        finally:
            if old is None:
                os.environ.pop("PYPTO_CACHE_DIR", None)
            else:
                os.environ["PYPTO_CACHE_DIR"] = old
    return out


def steady_allocator() -> str | None:
    """Keep freed blocks in glibc's heap (mmap threshold 32 MiB, its maximum; trim threshold 1 GiB), so that torch
    eager's fresh outputs reuse memory instead of being faulted in page by page on every call. Measured here:
    torch.softmax 4096x1024 at 1 thread, ~9 ms with 4096 minor page faults per call, ~2.2 ms without; which of the
    two a process gets depends on its allocation history (glibc's dynamic mmap threshold), and one bench run in a
    few got the slow one for every torch row. Fixed in torch's favour. Returns what was set (None: not glibc)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    if mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 or mallopt(M_TRIM_THRESHOLD, 1 << 30) != 1:
        return None
    return "glibc mallopt: mmap threshold 32 MiB, trim threshold 1 GiB"


def isa_record() -> dict:
    """What the kernels were built for and what torch runs: PYPTO_KERNEL_ISA, the target's vector features as g++
    defines them, torch's CPU capability (ATen's dispatch: ATEN_CPU_CAPABILITY=avx2 makes it take its AVX2
    kernels on an AVX-512 machine) and oneDNN's ISA cap (ONEDNN_MAX_CPU_ISA: torch's bf16 matmul is oneDNN's,
    which ATen's capability does not reach; unset, it uses AVX512-BF16 where the CPU has it)."""
    from ..compiler import toolchain as T

    cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: None)()
    return {"kernel_isa": T.kernel_isa(), "target_features": T.target_features(), "torch_cpu_capability": cap,
            "torch_onednn_max_isa": os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip() or "unset",
            "pypto_march": os.environ.get("PYPTO_MARCH", "native")}


def _geomean(vals) -> float:
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def run(rounds: int = 7, threads=None, say=print, only=None, cpu=False, sweep=False) -> dict:
    """Time every case (or those whose name contains one of `only`) at each thread count; with `sweep` the op
    sweep's cases (op_sweep.py) too. cpu: the calling thread's CPU time instead of wall time (a loaded machine:
    what a call costs, not when it got a core); it misses work done on other threads, so only 1-thread rows mean
    anything with it."""
    allt = max(1, min(64, len(os.sched_getaffinity(0))))
    threads = threads or sorted({1, allt})
    every = _cases()
    if sweep:
        from . import op_sweep
        every = every + op_sweep.cases()
    cases = [c for c in every if not only or any(o in c[0] for o in only)]
    if not cases:
        raise SystemExit(f"pypto.bench --kernels: no kernel name contains any of {only}")
    allocator = steady_allocator()
    rows = []
    for nt in threads:
        for name, body, args, tfn, ref, out, moved, *tol in cases:
            body, consts = body if isinstance(body, tuple) else (body, {})
            k = pypto.frontend.jit(body, runtime_options={"sim_threads": nt})
            k(*args, **consts)
            rtol, atol = tol[0] if tol else (2e-3 if "bf16" in name else 1e-4, 2e-2 if "matmul" in name else 1e-4)
            torch.testing.assert_close(out.float(), ref().float(), rtol=rtol, atol=atol, equal_nan=True,
                                       msg=lambda m, name=name: f"{name}: {m}")
            n = max(1, moved // 2 // 4)
            src, dst = torch.ones(n), torch.empty(n)
            rows.append({"kernel": name, "threads": nt, "pypto": (lambda k=k, a=args, c=consts: k(*a, **c)),
                         "torch": tfn, "copy": (lambda s=src, d=dst: d.copy_(s)), "bytes": moved})
    say(f"timing {len(rows)} rows x 3 at threads {threads}, {rounds} interleaved rounds")
    times = {(i, c): [] for i in range(len(rows)) for c in ("pypto", "torch", "copy")}
    order = ("pypto", "torch", "copy")
    for rd in range(rounds + 1):                # the first round warms up and is dropped
        for i, r in enumerate(rows):
            torch.set_num_threads(r["threads"])
            # the three take turns going first: whatever the previous call leaves behind (torch's OpenMP
            # workers still spinning) falls on each of them alike. Each timed call follows an untimed call of
            # itself, so each finds its inputs where its own last call left them: with turns alone the first to
            # read the row's input after the other rows evicted it paid for the misses (the copy reads buffers
            # of its own), and with 5 rounds that was pypto in 3 and torch in 2, so pypto's median was a cold
            # call and torch's a warm one
            for c in order[rd % 3:] + order[:rd % 3]:
                r[c]()
                times[(i, c)].append(_time(r[c], time.thread_time if cpu else time.perf_counter))
    torch.set_num_threads(allt)
    res = []
    for i, r in enumerate(rows):
        med = {c: statistics.median(times[(i, c)][1:]) * 1e3 for c in ("pypto", "torch", "copy")}
        res.append({"kernel": r["kernel"], "threads": r["threads"], "pypto_ms": med["pypto"],
                    "torch_ms": med["torch"], "copy_ms": med["copy"], "ratio": med["pypto"] / med["torch"],
                    "copy_ratio": med["pypto"] / med["copy"]})
    geo, geo_sweep = {}, {}
    five = set(FIVE)
    for nt in threads:
        rs = [x["ratio"] for x in res if x["threads"] == nt and x["kernel"] in five]
        if len(rs) == len(FIVE):                # the figure: only when all five ran
            geo[nt] = _geomean(rs)
        sw = [x["ratio"] for x in res if x["threads"] == nt and x["kernel"] not in five
              and not x["kernel"].startswith("matmul")]
        if sweep and sw:
            geo_sweep[nt] = _geomean(sw)
    return {"rows": res, "geomean_five": geo, "geomean_sweep": geo_sweep, "isa": isa_record(), "threads": threads,
            "rounds": rounds,
            "clock": "thread CPU time" if cpu else "wall", "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "allocator": allocator}


def print_table(res: dict, compile_s: dict | None = None, say=print):
    from .docs import kernel_table
    for line in kernel_table(res):
        say(line)
    isa = res.get("isa") or {}
    if isa:
        say(f"kernels built for PYPTO_KERNEL_ISA={isa['kernel_isa']} ({isa['target_features']}); torch's CPU "
            f"capability {isa['torch_cpu_capability']}, oneDNN's ISA cap {isa['torch_onednn_max_isa']}")
    for nt, gm in res["geomean_five"].items():
        say(f"geometric mean of pypto / torch over the five kernels at {nt} thread(s): {gm:.2f}x")
    for nt, gm in (res.get("geomean_sweep") or {}).items():
        say(f"geometric mean of pypto / torch over the sweep at {nt} thread(s): {gm:.2f}x")
    if compile_s:
        say("compile (fresh g++ build): " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in compile_s.items()))


def main(args=None):
    import json

    rounds = getattr(args, "rounds", None) or 7
    res = run(rounds=rounds, threads=getattr(args, "threads", None), only=getattr(args, "only", None),
              cpu=getattr(args, "cpu", False), sweep=getattr(args, "sweep", False))
    print_table(res)
    if not getattr(args, "no_compile", False):
        comp = compile_times()
        res["compile_s"] = comp
        print("compile (fresh g++ build): " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in comp.items()))
    path = getattr(args, "json", None)
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
