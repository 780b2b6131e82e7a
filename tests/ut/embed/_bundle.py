"""Shared helpers of the embedding tests: the test bundle, the C++ build (cached per session), tensors."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import pypto

from . import _kernels as K

REPO = Path(__file__).resolve().parents[3]


def export_test_bundle(directory) -> Path:
    """The bundle tests/cpp/test_runtime.cpp expects (see its header)."""
    z = lambda *s: torch.zeros(*s)  # noqa: E731
    return pypto.export(
        [K.scaled_add, K.rows_exp, K.axpy, K.act], directory,
        examples={
            "scaled_add": [(z(4, 4),) * 3, ((z(4, 4),) * 3, {"alpha": 2.0}),
                           ((pypto.Tensor([8, 8], pypto.DT_FP32),) * 3, {"alpha": 2.0, "tile": 16})],
            "rows_exp": [(z(3, 64),) * 2],
            "axpy": [(z(5),) * 3 + (1.0,)],
            "act": [(z(8, 4),) * 2, ((z(8, 4),) * 2, {"mode": "sigmoid", "shift": (2, 3)})],
        })


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"command failed ({r.returncode}): {' '.join(map(str, cmd))}\n{r.stdout}\n{r.stderr}")
    return r


def pypto_dirs() -> dict:
    """Installed runtime locations, from `python -m pypto --...-dir` (what a user's build would use)."""
    out = {}
    for k in ("cmake", "include", "lib"):
        out[k] = Path(_run([sys.executable, "-m", "pypto", f"--{k}-dir"]).stdout.strip())
    return out


def build_dir_root() -> Path:
    d = Path(tempfile.gettempdir()) / f"pypto-embed-build-{os.getuid()}"
    d.mkdir(exist_ok=True)
    return d


def _stamp(*paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        p = Path(p)
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_test_binary() -> Path:
    """tests/cpp/test_runtime.cpp compiled with g++ against the installed runtime; cached by content."""
    dirs = pypto_dirs()
    import nlohmann_json  # noqa: F401  (its headers; a build requirement of pypto)
    import importlib.util

    nl = Path(importlib.util.find_spec("nlohmann_json").submodule_search_locations[0]) / "include"
    src = REPO / "tests" / "cpp" / "test_runtime.cpp"
    lib = dirs["lib"] / "libpypto_runtime.so"
    stamp = _stamp(src, dirs["include"] / "pypto" / "runtime.h", lib)
    exe = build_dir_root() / f"test_runtime-{stamp}"
    if not exe.exists():
        tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")  # xdist workers may build at the same time
        _run([os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-pthread", "-Wall", "-o", str(tmp), str(src),
              "-I", str(dirs["include"]), "-isystem", str(nl), "-L", str(dirs["lib"]), "-lpypto_runtime",
              f"-Wl,-rpath,{dirs['lib']}"])
        os.replace(tmp, exe)
    return exe
