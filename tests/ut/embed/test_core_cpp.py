"""C++ unit tests of src/core (tests/cpp/test_core.cpp): binder checks, key layout and messages, the
specialization table under concurrent readers, dtype mapping, constant values — built from the source tree with
AddressSanitizer and UndefinedBehaviorSanitizer, and run."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import shutil
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[3]
CXX = os.environ.get("CXX", "g++")


def _build() -> pathlib.Path:
    sources = [ROOT / "tests/cpp/test_core.cpp", *sorted((ROOT / "src/core").glob("*.cpp"))]
    headers = sorted((ROOT / "src/core").glob("*.h")) + sorted((ROOT / "include/pypto").glob("*.h"))
    # nlohmann/json: the headers of the nlohmann-json package (a build requirement; core/param_table_json uses it)
    nlohmann = pathlib.Path(importlib.util.find_spec("nlohmann_json").submodule_search_locations[0]) / "include"
    flags = ["-std=c++17", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
             "-Wall", "-Wextra", f"-I{ROOT / 'src'}", f"-I{ROOT / 'include'}", f"-isystem{nlohmann}"]
    h = hashlib.sha256(" ".join(flags).encode())
    for p in sources + headers:
        h.update(p.read_bytes())
    out = pathlib.Path(tempfile.gettempdir()) / f"pypto-core-test-{os.getuid()}" / h.hexdigest()[:20] / "test_core"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"test_core.{os.getpid()}.tmp")
        proc = subprocess.run([CXX, *flags, *map(str, sources), "-ldl", "-pthread", "-o", str(tmp)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"building the core tests failed:\n{proc.stderr[-4000:]}"
        os.replace(tmp, out)
    return out


def test_core_unit_tests_pass_under_sanitizers():
    assert shutil.which(CXX), f"{CXX} is needed to build the C++ core tests"
    binary = _build()
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    names = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert names == ["bind_key_layout", "bind_errors", "row_major", "dtypes", "spec_table_concurrent",
                     "const_values", "table_limits"]
    assert "checks passed" in proc.stdout and "runtime error" not in proc.stderr
