"""The cache-hit path of a pypto kernel, against its floors and peers — one run, one table.

    python benchmarks/hot_path.py                 # full run (timing + callgrind when valgrind is on PATH)
    python benchmarks/hot_path.py --quick         # a few rounds, small scale rows, no callgrind (<= 30 s)
    python benchmarks/hot_path.py --json out.json # also write the numbers

This is a measurement, not a test: it prints numbers and the targets next to them, and asserts nothing about speed.

Scenario "main": `k(a, b, c, out, m=2, n=3)` — four 16-element fp32 torch tensors (STATIC dims) and two int
constants passed by keyword; the body is `out[:] = a + b + c`, trivial on purpose so that host overhead dominates.
Every other row is called with the same arguments (numpy copies of them for Numba):

    pypto._core.noop(...)   the C vectorcall floor (METH_FASTCALL|METH_KEYWORDS, returns None)
    python no-op            `def f(a, b, c, out, m=2, n=3): pass`
    torch.add(a, b, out=out)
    numba @njit f(a, b, c, out, m, n) doing `out[:] = a + b + c` on numpy arrays (keyword and positional calls)

Timing: `time.perf_counter_ns` around a loop of `--number` calls, GC disabled, after a warm-up; `--rounds` rounds,
interleaved (each round runs every row once, in an order rotated by one each round), so drift and noise from the
two shared cores land on all rows alike. Per row: median, p10 and p90 of the per-call time over rounds, and the
ratio of medians to the pypto row. Wall times are only comparable within one run; the ratios are the figure.

Scale rows, each pair in the same interleaved rounds as everything else:
    specializations  1 vs 10,000 entries in the kernel's table. The table is filled with `kernel.compile(...)` over
                     10,000 distinct values of the constant `m`, each an instance of `Tag(int)` whose repr is fixed:
                     the constant is part of the key but not of the generated source (which quotes constants with
                     repr in a comment), so the disk cache serves every build after the first. Both kernels of the
                     pair take the same `Tag` constant, so the only difference is the table size.
    tensor args      1 vs 8 tensor arguments (`out[:] = out` vs `out[:] = x0`; same constants)
    guarded globals  0 vs 20 module globals read by the body (`a * 1.0` vs `a * (G00 + ... + G19)`, equal values)

Callgrind (`--callgrind`, the default when `valgrind` is on PATH and not `--quick`): this script re-runs itself as
`valgrind --tool=callgrind --toggle-collect=*jit_vectorcall* --toggle-collect=*THPVariable_add(* python
hot_path.py --child N` twice (N1 and N2 calls) with PYPTO_MARCH=x86-64-v3 (valgrind cannot run AVX-512 code),
PYTHONHASHSEED=0 and its own PYPTO_CACHE_DIR. The child builds the kernel through kernel.compile (so every call
counted inside jit_vectorcall is a hit), then makes N pypto calls and N torch.add calls; callgrind_annotate gives
the inclusive counts of both functions. Instructions per call = (I(N2) - I(N1)) / (N2 - N1), so warm-up and the per-phase
constant cancel. For pypto this is everything the hit runs natively (argument binding, tensor reads, key, probe,
guards, the kernel itself); for torch.add it is everything inside THPVariable_add.

JSON (`--json PATH`), keys:
    meta:       {python, torch, numpy, numba, pypto_march, number, rounds, specializations, kernel_body, ...}
    rows:       {name: {median_ns, p10_ns, p90_ns, ratio_to_pypto}}   (numba rows absent when not installed)
    scale:      {specializations|tensor_args|guarded_globals:
                    {base, scaled, base_median_ns, scaled_median_ns, ratio}}
    callgrind:  {pypto_hit_instructions, torch_add_instructions, n1, n2, method} or null when not run
    targets:    {median_le_400ns, below_numba, instructions_le_1500, specializations_within_15pct}: true/false/null
"""

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------------------------------------------------------
# Module globals read by the 20-global kernel (guarded by identity on every call). Their sum is 1.0.
G00 = 1.0
G01 = G02 = G03 = G04 = G05 = G06 = G07 = G08 = G09 = 0.0
G10 = G11 = G12 = G13 = G14 = G15 = G16 = G17 = G18 = G19 = 0.0

KERNEL_BODY = "out[:] = a + b + c"
N_ELEMS = 16


class Tag(int):
    """An int constant whose repr never changes: keys differ by value, generated source does not."""

    def __repr__(self):
        return "Tag"


# ---- the kernels ----------------------------------------------------------------------------------------------
def make_kernels():
    import pypto

    T = pypto.Tensor([pypto.STATIC], pypto.DT_FP32)

    @pypto.frontend.jit
    def main_k(a: T, b: T, c: T, out: T, m=2, n=3):
        out[:] = a + b + c

    def spec_kernel():
        @pypto.frontend.jit
        def spec_k(a: T, b: T, c: T, out: T, m=2, n=3):
            out[:] = a + b + c
        return spec_k

    @pypto.frontend.jit
    def t1_k(out: T, m=2, n=3):
        out[:] = out

    @pypto.frontend.jit
    def t8_k(x0: T, x1: T, x2: T, x3: T, x4: T, x5: T, x6: T, out: T, m=2, n=3):
        out[:] = x0

    @pypto.frontend.jit
    def g0_k(a: T, b: T, c: T, out: T, m=2, n=3):
        out[:] = a * 1.0

    @pypto.frontend.jit
    def g20_k(a: T, b: T, c: T, out: T, m=2, n=3):
        out[:] = a * (G00 + G01 + G02 + G03 + G04 + G05 + G06 + G07 + G08 + G09
                      + G10 + G11 + G12 + G13 + G14 + G15 + G16 + G17 + G18 + G19)

    return dict(main=main_k, spec1=spec_kernel(), specN=spec_kernel(), t1=t1_k, t8=t8_k, g0=g0_k, g20=g20_k)


def make_tensors():
    import torch

    g = torch.Generator().manual_seed(0)
    a, b, c = (torch.randn(N_ELEMS, generator=g) for _ in range(3))
    return a, b, c, torch.zeros(N_ELEMS)


# ---- timing loops: one function per call shape, so every row of a shape pays the same loop overhead --------------
def _loop_kw(f, a, b, c, out, number):
    rng = range(number)
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in rng:
        f(a, b, c, out, m=2, n=3)
    return clock() - t0


def _loop_pos(f, a, b, c, out, number):
    rng = range(number)
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in rng:
        f(a, b, c, out, 2, 3)
    return clock() - t0


def _loop_kw_tag(f, a, b, c, out, tag, number):
    rng = range(number)
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in rng:
        f(a, b, c, out, m=tag, n=3)
    return clock() - t0


def _loop_torch_add(add, a, b, out, number):
    rng = range(number)
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in rng:
        add(a, b, out=out)
    return clock() - t0


def _loop_t1(f, out, number):
    rng = range(number)
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in rng:
        f(out, m=2, n=3)
    return clock() - t0


def _loop_t8(f, x, out, number):
    x0, x1, x2, x3, x4, x5, x6 = x
    rng = range(number)
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in rng:
        f(x0, x1, x2, x3, x4, x5, x6, out, m=2, n=3)
    return clock() - t0


def python_noop(a, b, c, out, m=2, n=3):
    pass


def percentile(xs, q):
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def measure(rows: dict, rounds: int, number: int) -> dict:
    """rows: name -> callable(number) returning elapsed ns. Interleaved, rotated rounds; per-call stats in ns."""
    names = list(rows)
    samples = {n: [] for n in names}
    for n in names:  # warm-up: every row, a full loop
        rows[n](number)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for r in range(rounds):
            k = r % len(names)
            for n in names[k:] + names[:k]:
                samples[n].append(rows[n](number) / number)
    finally:
        if gc_was:
            gc.enable()
    return {n: {"median_ns": percentile(s, 0.5), "p10_ns": percentile(s, 0.1), "p90_ns": percentile(s, 0.9)}
            for n, s in samples.items()}


# ---- numba ----------------------------------------------------------------------------------------------------
def make_numba():
    try:
        import numba
    except ImportError:
        return None, None

    @numba.njit(cache=False)
    def nb_add(a, b, c, out, m, n):
        out[:] = a + b + c

    return nb_add, numba.__version__


# ---- callgrind ------------------------------------------------------------------------------------------------
def child(ns: list[int]) -> None:
    """Runs under callgrind: n pypto hits, then n torch.add calls. The miss goes through kernel.compile (not the
    vectorcall entry), so everything counted inside jit_vectorcall is a cache hit."""
    import torch

    n = ns[0]
    ks = make_kernels()
    k = ks["main"]
    a, b, c, out = make_tensors()
    k.compile(a, b, c, out, m=2, n=3)  # build or load + install the torch reader, outside jit_vectorcall
    _loop_kw(k, a, b, c, out, n)
    _loop_torch_add(torch.add, a, b, out, n)


def _inclusive(path: str, needle: str) -> int:
    """Inclusive instruction count of the function whose name contains `needle` (callgrind_annotate)."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if needle in line and "=>" not in line:
            return int(line.split()[0].replace(",", ""))
    return 0


def run_callgrind(n1: int, n2: int) -> dict:
    valgrind = shutil.which("valgrind")
    work = tempfile.mkdtemp(prefix="pypto-bench-cg-")
    # a fixed hash seed keeps the interpreter's own work identical between the two processes
    env = dict(os.environ, PYPTO_MARCH="x86-64-v3", PYPTO_CACHE_DIR=os.path.join(work, "cache"), PYTHONHASHSEED="0")
    t0 = time.perf_counter()
    counts = {}
    for n in (n1, n2):
        out = os.path.join(work, f"callgrind.{n}.out")
        cmd = [valgrind, "--tool=callgrind", "--toggle-collect=*jit_vectorcall*", "--toggle-collect=*THPVariable_add(*",
               f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__), "--child", str(n)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"callgrind child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        counts[n] = (_inclusive(out, "jit_vectorcall"), _inclusive(out, "THPVariable_add("))
    shutil.rmtree(work, ignore_errors=True)
    (p1, t1), (p2, t2) = counts[n1], counts[n2]
    return {"pypto_hit_instructions": (p2 - p1) / (n2 - n1), "torch_add_instructions": (t2 - t1) / (n2 - n1),
            "n1": n1, "n2": n2, "seconds": time.perf_counter() - t0,
            "method": "two processes (N1, N2 calls, PYTHONHASHSEED=0); callgrind Ir inclusive of *jit_vectorcall* "
                      "(every call a hit: the miss went through kernel.compile) and *THPVariable_add(*; "
                      "(I(N2)-I(N1))/(N2-N1); kernels built with PYPTO_MARCH=x86-64-v3"}


# ---- the run --------------------------------------------------------------------------------------------------
def run(args) -> dict:
    import numpy as np
    import torch

    import pypto

    ks = make_kernels()
    a, b, c, out = make_tensors()
    k = ks["main"]
    k(a, b, c, out, m=2, n=3)
    if not torch.equal(out, a + b + c):
        raise SystemExit("hot_path: the main kernel's result differs from a + b + c")
    from pypto.compiler.torch_reader import ensure_installed

    reader = ensure_installed() or "fast TensorImpl reader"

    # scale kernels: fill the tables, check they hit
    tag0 = Tag(0)
    t_fill = time.perf_counter()
    ks["spec1"](a, b, c, out, m=tag0, n=3)
    ks["specN"](a, b, c, out, m=tag0, n=3)
    for i in range(1, args.specializations):
        ks["specN"].compile(a, b, c, out, m=Tag(i), n=3)
    t_fill = time.perf_counter() - t_fill
    n_specs = ks["specN"].cache_info()["specializations"]
    xs = tuple(torch.randn(N_ELEMS) for _ in range(7))
    ks["t1"](out, m=2, n=3)
    ks["t8"](*xs, out, m=2, n=3)
    ks["g0"](a, b, c, out, m=2, n=3)
    ks["g20"](a, b, c, out, m=2, n=3)
    guards = {name: len(getattr(ks[name], "guards", ()) or ()) for name in ("g0", "g20")}

    an, bn, cn, outn = (x.numpy().copy() for x in (a, b, c, out))
    nb_fn, nb_version = make_numba()
    noop = pypto._core.noop
    N = args.number
    rows = {
        "pypto hit": lambda n: _loop_kw(k, a, b, c, out, n),
        "C vectorcall no-op": lambda n: _loop_kw(noop, a, b, c, out, n),
        "python no-op": lambda n: _loop_kw(python_noop, a, b, c, out, n),
        "torch.add(a, b, out=)": lambda n: _loop_torch_add(torch.add, a, b, out, n),
        "pypto hit (numpy arrays)": lambda n: _loop_kw(k, an, bn, cn, outn, n),
    }
    if nb_fn is not None:
        nb_fn(an, bn, cn, outn, 2, 3)
        nb_fn(an, bn, cn, outn, m=2, n=3)
        rows["numba njit (keywords)"] = lambda n: _loop_kw(nb_fn, an, bn, cn, outn, n)
        rows["numba njit (positional)"] = lambda n: _loop_pos(nb_fn, an, bn, cn, outn, n)
    spec_label = f"{n_specs} specializations"
    scale_rows = {
        "1 specialization": lambda n: _loop_kw_tag(ks["spec1"], a, b, c, out, tag0, n),
        spec_label: lambda n: _loop_kw_tag(ks["specN"], a, b, c, out, tag0, n),
        "1 tensor arg": lambda n: _loop_t1(ks["t1"], out, n),
        "8 tensor args": lambda n: _loop_t8(ks["t8"], xs, out, n),
        "0 guarded globals": lambda n: _loop_kw(ks["g0"], a, b, c, out, n),
        "20 guarded globals": lambda n: _loop_kw(ks["g20"], a, b, c, out, n),
    }
    t_meas = time.perf_counter()
    stats = measure({**rows, **scale_rows}, args.rounds, N)
    t_meas = time.perf_counter() - t_meas
    hits = ks["specN"].cache_info()
    if hits["specializations"] != n_specs:
        raise SystemExit(f"hot_path: the {n_specs}-entry kernel specialized again during timing: {hits}")

    base = stats["pypto hit"]["median_ns"]
    result_rows = {}
    for name in rows:
        st = dict(stats[name])
        st["ratio_to_pypto"] = st["median_ns"] / base
        result_rows[name] = st
    scale = {}
    for key, lo, hi in (("specializations", "1 specialization", spec_label),
                        ("tensor_args", "1 tensor arg", "8 tensor args"),
                        ("guarded_globals", "0 guarded globals", "20 guarded globals")):
        lm, hm = stats[lo]["median_ns"], stats[hi]["median_ns"]
        scale[key] = {"base": lo, "scaled": hi, "base_median_ns": lm, "scaled_median_ns": hm, "ratio": hm / lm,
                      "base_p10_ns": stats[lo]["p10_ns"], "base_p90_ns": stats[lo]["p90_ns"],
                      "scaled_p10_ns": stats[hi]["p10_ns"], "scaled_p90_ns": stats[hi]["p90_ns"]}

    cg = None
    cg_error = None
    if args.callgrind:
        try:
            cg = run_callgrind(args.cg_n1, args.cg_n2)
        except Exception as e:  # report, do not hide the timing results
            cg_error = f"{type(e).__name__}: {e}"

    nb_med = result_rows.get("numba njit (keywords)", {}).get("median_ns")
    targets = {
        "median_le_400ns": base <= 400,
        "below_numba": None if nb_med is None else base < nb_med,
        "instructions_le_1500": None if cg is None else cg["pypto_hit_instructions"] <= 1500,
        "specializations_within_15pct": abs(scale["specializations"]["ratio"] - 1) <= 0.15,
    }
    meta = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "numba": nb_version, "pypto_march": os.environ.get("PYPTO_MARCH", "native"), "number": N,
            "rounds": args.rounds, "specializations": n_specs, "fill_seconds": t_fill,
            "measure_seconds": t_meas, "kernel_body": KERNEL_BODY, "tensors": f"4 x fp32[{N_ELEMS}] STATIC",
            "torch_reader": reader, "guards": guards, "cpus": os.cpu_count(), "callgrind_error": cg_error}
    return {"meta": meta, "rows": result_rows, "scale": scale, "callgrind": cg, "targets": targets}


def _fmt_targets(t: dict) -> str:
    def yn(v):
        return "n/a" if v is None else ("met" if v else "NOT met")

    return (f"  median <= 400 ns: {yn(t['median_le_400ns'])}; below Numba: {yn(t['below_numba'])}; "
            f"<= 1,500 instructions/hit: {yn(t['instructions_le_1500'])}; "
            f"1 -> many specializations within 15 %: {yn(t['specializations_within_15pct'])}")


def report(res: dict) -> str:
    m = res["meta"]
    lines = [
        "pypto cache-hit path benchmark",
        f"  python {m['python']}, torch {m['torch']}, numpy {m['numpy']}, numba {m['numba'] or 'not installed'}, "
        f"{m['cpus']} CPUs, PYPTO_MARCH={m['pypto_march']}",
        f"  call: k(a, b, c, out, m=2, n=3), {m['tensors']}, body `{m['kernel_body']}`; torch reader: "
        f"{m['torch_reader']}",
        f"  {m['rounds']} interleaved rounds x {m['number']} calls, GC off; per-call ns over rounds "
        f"(measuring took {m['measure_seconds']:.1f} s)",
        "",
        f"  {'row':<28}{'median':>9}{'p10':>9}{'p90':>9}{'vs pypto':>10}",
    ]
    for name, st in res["rows"].items():
        lines.append(f"  {name:<28}{st['median_ns']:>9.0f}{st['p10_ns']:>9.0f}{st['p90_ns']:>9.0f}"
                     f"{st['ratio_to_pypto']:>9.2f}x")
    if m["numba"] is None:
        lines.append(f"  {'numba njit':<28}{'not installed':>27}")
    lines += ["", "  scale (pairs measured in the same interleaved rounds)",
              f"  {'pair':<44}{'base':>8}{'scaled':>9}{'ratio':>8}"]
    for key, s in res["scale"].items():
        lines.append(f"  {s['base'] + ' -> ' + s['scaled']:<44}{s['base_median_ns']:>8.0f}"
                     f"{s['scaled_median_ns']:>9.0f}{s['ratio']:>7.3f}x")
    lines.append(f"  (the {m['specializations']}-entry table was filled with kernel.compile over Tag(int) constants "
                 f"in {m['fill_seconds']:.1f} s; guards counted: {m['guards']})")
    lines.append("")
    cg = res["callgrind"]
    if cg is not None:
        lines += [f"  callgrind, instructions per call ((I(N2)-I(N1))/(N2-N1), N1={cg['n1']}, N2={cg['n2']}, "
                  f"{cg['seconds']:.0f} s):",
                  f"    pypto hit (inside jit_vectorcall)      {cg['pypto_hit_instructions']:>9.1f}",
                  f"    torch.add(out=) (inside THPVariable_add){cg['torch_add_instructions']:>8.1f}",
                  f"    method: {cg['method']}"]
    elif m["callgrind_error"]:
        lines.append(f"  callgrind failed: {m['callgrind_error']}")
    else:
        lines.append("  callgrind: not run")
    lines += ["", "  targets (reported, not asserted):", _fmt_targets(res["targets"])]
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="few rounds, 200 specializations, no callgrind (<= 30 s)")
    p.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    p.add_argument("--callgrind", dest="callgrind", action="store_true", default=None,
                   help="count instructions under valgrind (default: on when valgrind is on PATH, off with --quick)")
    p.add_argument("--no-callgrind", dest="callgrind", action="store_false")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 15; 3 with --quick)")
    p.add_argument("--number", type=int, help="calls per loop (default 20000; 2000 with --quick)")
    p.add_argument("--specializations", type=int, help="table size of the scale row (default 10000; 200 quick)")
    p.add_argument("--cg-n1", type=int, default=2000)
    p.add_argument("--cg-n2", type=int, default=12000)
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child([int(x) for x in args.child.split(",")])
        return
    args.rounds = args.rounds or (3 if args.quick else 15)
    args.number = args.number or (2000 if args.quick else 20000)
    args.specializations = args.specializations or (200 if args.quick else 10000)
    if args.callgrind is None:
        args.callgrind = not args.quick and shutil.which("valgrind") is not None
    res = run(args)
    print(report(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
