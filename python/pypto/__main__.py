"""`python -m pypto --cmake-dir | --include-dir | --lib-dir | --version`: where the C++ runtime lives;
`python -m pypto cache info | list | prune [--max-size SIZE] [--older-than AGE] | clear`: the kernel cache.

    cmake -S app -B build -Dpypto_DIR="$(python -m pypto --cmake-dir)"   # then find_package(pypto CONFIG)
    python -m pypto cache prune --max-size 500M --older-than 30d
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def package_root() -> Path:
    """The installed package directory holding lib/ and include/ (next to the compiled extension; in an
    editable install that is the site-packages copy, not the source tree)."""
    from .native import core as _core

    return Path(_core.__file__).resolve().parent


def cmake_dir() -> Path:
    return package_root() / "lib" / "cmake" / "pypto"


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def cache_main(argv) -> int:
    """The kernel cache: entries are removed only under their key's lock, so a library another process is
    building or loading is never deleted (compiler/cache.py)."""
    import time

    from .compiler import cache

    ap = argparse.ArgumentParser(prog="python -m pypto cache", description="inspect or trim the kernel cache")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="directory, trust, entries, size and size cap")
    sub.add_parser("list", help="one line per entry, least recently used first")
    pr = sub.add_parser("prune", help="remove old entries, then least recently used ones beyond a size")
    pr.add_argument("--max-size", help="keep at most this much (e.g. 500M, 2G)")
    pr.add_argument("--older-than", help="remove entries unused for this long (e.g. 30d, 12h)")
    sub.add_parser("clear", help="remove every entry no process holds")
    a = ap.parse_args(argv)
    root = cache.cache_dir()
    if a.cmd == "info":
        items = cache.entries(root)
        cap = cache.max_size()
        print(f"directory: {root}")
        if root != cache.configured_dir():
            print(f"configured: {cache.configured_dir()} (not used: see the warning above)")
        print(f"entries: {len(items)}")
        print(f"size: {_human(sum(e['size'] for e in items))}")
        print(f"max size: {_human(cap) if cap else 'unbounded'} (PYPTO_CACHE_MAX_SIZE)")
        return 0
    if a.cmd == "list":
        for e in sorted(cache.entries(root), key=lambda e: e["last_used"] or 0.0):
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e["last_used"])) if e["last_used"] else "never"
            print(f"{e['key'][:16]}  {_human(e['size']):>10}  {used}  {e['kernel']}")
        return 0
    if a.cmd == "prune":
        try:
            size = cache.parse_size(a.max_size) if a.max_size else None
            age = cache.parse_age(a.older_than) if a.older_than else None
        except ValueError as e:
            ap.error(str(e))
        if size is None and age is None:
            ap.error("prune needs --max-size and/or --older-than")
        n, freed = cache.prune(max_bytes=size, older_than=age, root=root)
    else:
        n, freed = cache.clear(root)
    print(f"removed {n} entries ({_human(freed)}) from {root}")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["cache"]:
        return cache_main(argv[1:])
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
