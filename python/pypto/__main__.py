"""`python -m pypto --cmake-dir | --include-dir | --lib-dir | --version`: where the C++ runtime lives.

    cmake -S app -B build -Dpypto_DIR="$(python -m pypto --cmake-dir)"   # then find_package(pypto CONFIG)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def package_root() -> Path:
    """The installed package directory holding lib/ and include/ (next to the compiled extension; in an
    editable install that is the site-packages copy, not the source tree)."""
    from . import _core

    return Path(_core.__file__).resolve().parent


def cmake_dir() -> Path:
    return package_root() / "lib" / "cmake" / "pypto"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pypto", description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--cmake-dir", action="store_true", help="directory of pyptoConfig.cmake (find_package(pypto))")
    g.add_argument("--include-dir", action="store_true", help="directory holding pypto/runtime.h")
    g.add_argument("--lib-dir", action="store_true", help="directory holding libpypto_runtime.so")
    g.add_argument("--version", action="store_true")
    a = ap.parse_args(argv)
    if a.version:
        from . import __version__

        print(__version__)
        return 0
    root = package_root()
    path, probe = {
        "cmake_dir": (cmake_dir(), "pyptoConfig.cmake"),
        "include_dir": (root / "include", "pypto/runtime.h"),
        "lib_dir": (root / "lib", "libpypto_runtime.so"),
    }[next(k for k in ("cmake_dir", "include_dir", "lib_dir") if getattr(a, k))]
    if not (path / probe).is_file():
        print(f"pypto: {path / probe} is missing; this pypto installation has no C++ runtime", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
