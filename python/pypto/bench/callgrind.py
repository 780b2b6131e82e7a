"""Instructions per call under valgrind's callgrind: the stable figure on noisy machines.

The harness re-runs itself as `valgrind --tool=callgrind --toggle-collect=*jit_vectorcall*
--toggle-collect=*THPVariable_add(* python -m pypto.bench --child callgrind N` twice (N1 and N2 calls), with
PYTHONHASHSEED=0 (the interpreter's own work is identical in both processes), its own PYPTO_CACHE_DIR and
PYPTO_MARCH=x86-64-v3 (valgrind cannot run AVX-512 code). The child builds the main kernel through kernel.compile
(so every call counted inside jit_vectorcall is a hit), then makes N pypto calls and N torch.add calls;
callgrind_annotate gives the inclusive counts. Instructions per call = (I(N2) - I(N1)) / (N2 - N1): warm-up and
per-process constants cancel. For pypto that is everything its hit runs natively (binding, tensor reads, checks,
key, probe, guards, the kernel itself); for torch.add(out=) everything inside THPVariable_add.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

METHOD = ("two processes (N1, N2 calls, PYTHONHASHSEED=0); callgrind Ir inclusive of *jit_vectorcall* (every "
          "call a hit: the miss went through kernel.compile) and *THPVariable_add(*; (I(N2)-I(N1))/(N2-N1); "
          "kernels built with PYPTO_MARCH=x86-64-v3")


def available() -> str:
    """'' when callgrind can run, else why not."""
    missing = [t for t in ("valgrind", "callgrind_annotate") if shutil.which(t) is None]
    return f"{' and '.join(missing)} not on PATH" if missing else ""


def child(n: int) -> None:
    """Runs under callgrind: n pypto hits of the main call, then n torch.add(a, b, out=out) calls."""
    import torch

    from . import kernels as K

    a, b, c, out = K.make_tensors(4)
    k = K.main_k
    k.compile(a, b, c, out, m=2, n=3)  # build or load + install the torch reader, outside jit_vectorcall
    for _ in range(n):
        k(a, b, c, out, m=2, n=3)
    add = torch.add
    for _ in range(n):
        add(a, b, out=out)


def _inclusive(path: str, needle: str) -> int:
    """Inclusive instruction count of the function whose name contains `needle`."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        if needle in line and "=>" not in line:
            return int(line.split()[0].replace(",", ""))
    raise RuntimeError(f"callgrind_annotate: no function matching {needle!r} in {path}")


def run(n1: int, n2: int) -> dict:
    why = available()
    if why:
        raise RuntimeError(why)
    work = tempfile.mkdtemp(prefix="pypto-bench-cg-")
    env = dict(os.environ, PYPTO_MARCH="x86-64-v3", PYPTO_CACHE_DIR=os.path.join(work, "cache"),
               PYTHONHASHSEED="0")
    t0 = time.perf_counter()
    counts = {}
    try:
        for n in (n1, n2):
            out = os.path.join(work, f"callgrind.{n}.out")
            cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=*jit_vectorcall*",
                   "--toggle-collect=*THPVariable_add(*", f"--callgrind-out-file={out}", sys.executable, "-m",
                   "pypto.bench", "--child", "callgrind", str(n)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"callgrind child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
            counts[n] = (_inclusive(out, "jit_vectorcall"), _inclusive(out, "THPVariable_add("))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (p1, t1), (p2, t2) = counts[n1], counts[n2]
    return {"pypto_hit_instructions": (p2 - p1) / (n2 - n1), "torch_add_instructions": (t2 - t1) / (n2 - n1),
            "n1": n1, "n2": n2, "seconds": time.perf_counter() - t0, "method": METHOD}
