"""C++ dispatch cost per call (bind + checks + key + lookup; empty kernel body): time and instructions.

    python benchmarks/cpp_dispatch.py [--repeats 11] [--calls 1000000] [--no-callgrind] [--json out.json]

Exports a small bundle (kernels built with PYPTO_MARCH=x86-64-v3 so that valgrind can run them), builds
benchmarks/cpp_dispatch.cpp with g++ -O2 -march=x86-64-v3 against the installed runtime
(`python -m pypto --include-dir/--lib-dir`), runs it (median of repeats, ns/call) and, when valgrind is
installed, counts instructions per call with callgrind (--toggle-collect=bench_loop: only the call loop counts;
per call = (Ir(2N) - Ir(N)) / N, so the loop's setup cancels out). Results go to docs/embedding.md by hand.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("PYPTO_MARCH", "x86-64-v3")  # before pypto's toolchain reads it

import torch  # noqa: E402

import pypto  # noqa: E402

HERE = Path(__file__).resolve().parent


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def dispatch3(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
              b: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
              out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), alpha=1.0, tile=32):
    pypto.set_vec_tile_shapes(tile, tile)
    out[:] = a * alpha + b


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def dispatch_dyn(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
                 y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), s: pypto.Scalar[pypto.DT_FP32]):
    y[:] = x * s


def _dirs() -> dict:
    return {k: subprocess.run([sys.executable, "-m", "pypto", f"--{k}-dir"], capture_output=True, text=True,
                              check=True).stdout.strip() for k in ("include", "lib")}


def build(workdir: Path) -> Path:
    d = _dirs()
    exe = workdir / "cpp_dispatch"
    cmd = [os.environ.get("CXX", "g++"), "-std=c++17", "-O2", "-march=x86-64-v3", "-g", "-o", str(exe),
           str(HERE / "cpp_dispatch.cpp"), "-I", d["include"], "-L", d["lib"], "-lpypto_runtime",
           f"-Wl,-rpath,{d['lib']}"]
    subprocess.run(cmd, check=True)
    return exe


def callgrind_ir(exe: Path, bundle: Path, case: str, n: int) -> int:
    r = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=*bench_loop*", "--callgrind-out-file=/dev/null",
                        str(exe), str(bundle), "loop", case, str(n)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"callgrind failed:\n{r.stderr[-2000:]}")
    m = re.search(r"Collected\s*:\s*(\d+)", r.stderr)
    if not m:
        raise RuntimeError(f"no 'Collected' line in callgrind's output:\n{r.stderr[-2000:]}")
    return int(m.group(1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pypto-cpp-dispatch-"))
    try:
        bundle = work / "bundle"
        t = torch.zeros(4, 4)
        x = torch.zeros(8, 64)
        pypto.export([dispatch3, dispatch_dyn], bundle, examples={
            "dispatch3": [((t, t, t, 2.0), {"tile": 16})], "dispatch_dyn": [(x, x, 0.5)]})
        exe = build(work)
        r = subprocess.run([str(exe), str(bundle), "time", str(a.repeats), str(a.calls)], capture_output=True,
                           text=True, check=True)
        print(r.stdout, end="")
        results = {"ns": {}, "instructions": {}, "march": "x86-64-v3", "repeats": a.repeats, "calls": a.calls}
        for line in r.stdout.splitlines():
            parts = line.split()
            results["ns"][parts[0]] = float(parts[2])
        if not a.no_callgrind:
            if shutil.which("valgrind") is None:
                print("valgrind not found: no instruction counts", file=sys.stderr)
            else:
                n = 20000
                for case in ("prepare_dl", "prepare_named", "prepare_kw", "prepare_dyn", "call_empty"):
                    ir = (callgrind_ir(exe, bundle, case, 2 * n) - callgrind_ir(exe, bundle, case, n)) / n
                    results["instructions"][case] = ir
                    print(f"{case:<14} {ir:.0f} instructions/call (callgrind)")
        if a.json:
            Path(a.json).write_text(json.dumps(results, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
