"""The package is typed (py.typed, stubs for the native `pypto._core`): mypy accepts a user's file that uses the
public API correctly and reports each misuse in another (so the types say something, rather than being Any)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pypto

HERE = Path(__file__).resolve().parent


def _mypy(tmp_path, *files: Path) -> subprocess.CompletedProcess:
    # run outside the checkout, so the installed package (with its py.typed and _core.pyi) is what mypy reads
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                           "--cache-dir", str(tmp_path / "cache"), "--show-error-codes", *map(str, files)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_the_package_ships_its_type_information():
    root = Path(pypto.__file__).resolve().parent
    assert (root / "py.typed").is_file()
    stub = (root / "_core.pyi").read_text()
    for name in ("class JitFunction", "def cache_info", "def explain", "def export", "KERNEL_ABI_VERSION"):
        assert name in stub, name


def test_a_user_file_type_checks_and_misuse_is_reported(tmp_path):
    user, misuse = HERE / "_typed_user.py", HERE / "_typed_misuse.py"
    r = _mypy(tmp_path, user, misuse)
    out = r.stdout + r.stderr
    assert user.name not in out, out                                   # the correct file: no error at all
    reported = {int(m.group(1)) for m in re.finditer(rf"{re.escape(misuse.name)}:(\d+): error", out)}
    expected = {i for i, line in enumerate(misuse.read_text().splitlines(), 1) if line.endswith("# ERROR")}
    assert len(expected) == 3 and reported == expected, out
