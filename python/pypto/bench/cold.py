"""Cold paths, each in a fresh process:

    import pypto                 `python -c "import pypto"`-style, median of 3 processes (torch not imported)
    first call, empty cache      a new PYPTO_CACHE_DIR: the fast torch reader's one-off build (timed apart), then the
                                 main kernel's first call: trace + codegen + g++ + load + launch
    first call, warm disk cache  the same cache dir, a new process: the reader and the kernel load from disk
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

_IMPORT = ("import time, sys; t = time.perf_counter(); import pypto; "
           "print(time.perf_counter() - t, 'torch' in sys.modules)")


def child() -> None:
    """Prints the first-call figures of this process as JSON."""
    t0 = time.perf_counter()
    import torch  # noqa: F401  the reader is built on the first miss when torch is loaded

    from ..compiler.torch_reader import ensure_installed
    from . import kernels as K

    t_imports = time.perf_counter() - t0
    from ..compiler.cache import cache_dir

    kernels_cached = sum(1 for p in cache_dir().rglob("*.so") if "torch_reader" not in p.parts)
    a, b, c, out = K.make_tensors(4)
    t0 = time.perf_counter()
    reader = ensure_installed(wait=True)  # its one-off build, timed on its own
    t_reader = time.perf_counter() - t0
    t0 = time.perf_counter()
    K.main_k(a, b, c, out, m=2, n=3)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    K.main_k(a, b, c, out, m=2, n=3)
    t_second = time.perf_counter() - t0
    info = K.main_k.cache_info()
    print(json.dumps({"imports_s": t_imports, "torch_reader_s": t_reader, "torch_reader": reader or "fast reader",
                      "first_call_s": t_first, "second_call_s": t_second,
                      "compile_s": info["compile_seconds"], "kernel_libraries_cached_before": kernels_cached}))


def _run(cmd: list[str], env: dict) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout.strip().splitlines()[-1]


def run(repeats: int = 3) -> dict:
    env = dict(os.environ)
    imports = []
    for _ in range(repeats):
        secs, torch_loaded = _run([sys.executable, "-c", _IMPORT], env).split()
        imports.append(float(secs))
    work = tempfile.mkdtemp(prefix="pypto-bench-cold-")
    try:
        env["PYPTO_CACHE_DIR"] = os.path.join(work, "cache")
        cmd = [sys.executable, "-m", "pypto.bench", "--child", "cold"]
        empty = json.loads(_run(cmd, env))
        warm = json.loads(_run(cmd, env))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"import_pypto_s": statistics.median(imports), "import_pypto_all_s": imports,
            "import_loads_torch": torch_loaded == "True", "empty_cache": empty, "warm_disk_cache": warm}
