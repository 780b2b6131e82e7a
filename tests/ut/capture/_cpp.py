"""The C++ side of the capture tests: tests/cpp/test_sequence.cpp built against the installed runtime (cached by
content, like tests/ut/embed/_bundle.py) and one case run through it."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

from embed._bundle import REPO, _run, _stamp, build_dir_root, pypto_dirs


def build_sequence_binary(extra_flags=(), tag: str = "") -> Path:
    dirs = pypto_dirs()
    nl = Path(importlib.util.find_spec("nlohmann_json").submodule_search_locations[0]) / "include"
    src = REPO / "tests" / "cpp" / "test_sequence.cpp"
    lib = dirs["lib"] / "libpypto_runtime.so"
    exe = build_dir_root() / f"test_sequence{tag}-{_stamp(src, dirs['include'] / 'pypto' / 'runtime.h', lib)}"
    if not exe.exists():
        tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
        _run([os.environ.get("CXX", "g++"), "-std=c++17", "-O2", "-Wall", *extra_flags, "-o", str(tmp), str(src),
              "-I", str(dirs["include"]), "-isystem", str(nl), "-L", str(dirs["lib"]), "-lpypto_runtime",
              f"-Wl,-rpath,{dirs['lib']}"])
        os.replace(tmp, exe)
    return exe


def run_case(exe: Path, case: dict, tmp_path: Path, tensors=None, env=None) -> dict:
    """Writes `tensors` (numpy-convertible) to files, runs the case, reads them back into `tensors` in place."""
    import numpy as np

    bufs = []
    for i, t in enumerate(tensors or []):
        p = tmp_path / f"buf{i}.bin"
        arr = np.ascontiguousarray(np.asarray(t))
        p.write_bytes(arr.tobytes())
        bufs.append({"path": str(p), "dtype": case.get("dtypes", {}).get(i, 8), "shape": list(arr.shape)})
    case = {k: v for k, v in case.items() if k != "dtypes"}
    case.setdefault("buffers", bufs)
    cfile = tmp_path / "case.json"
    cfile.write_text(json.dumps(case))
    r = subprocess.run([str(exe), str(cfile)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    for i, t in enumerate(tensors or []):
        data = np.frombuffer((tmp_path / f"buf{i}.bin").read_bytes(), dtype=np.asarray(t).dtype)
        np.asarray(t)[...] = data.reshape(np.asarray(t).shape)
    return json.loads(r.stdout.strip().splitlines()[-1])
