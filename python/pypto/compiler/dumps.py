"""Debug dumps (`debug_options={"compile_debug_mode": 1, "dump_dir": ...}`): each specialization's IR and C++ as files.

A debugging option must never stop the kernel it debugs: a `dump_dir` that cannot be used (an existing file, a path
under a file, a NUL byte, no permission, a full disk) is one `DumpWarning` naming the kernel and the directory, and
the call goes on. `~` expands to the home directory, as in every other path option.
"""
from __future__ import annotations

import os
import warnings

from ..codegen.names import file_component


class DumpWarning(RuntimeWarning):
    """The debug dump of a kernel could not be written; the kernel still runs."""


def dump_directory(dump_dir: str | os.PathLike | None) -> str:
    """The directory dumps go to: `dump_dir` with `~` expanded, or ./pypto_dump when it is empty."""
    if not dump_dir:
        return os.path.join(os.getcwd(), "pypto_dump")
    return os.path.expanduser(os.fspath(dump_dir))


def write_dump(kernel_name: str, result, dump_dir) -> list[str]:
    """Write `result`'s IR (and C++, when it has some) under `dump_dir`; returns the files written. Never raises for
    a directory or file that cannot be written: it warns once per call and returns what it wrote."""
    written: list[str] = []
    ddir = ""
    try:
        ddir = dump_directory(dump_dir)
        if "\0" in ddir:
            raise ValueError("the path contains a NUL byte")
        os.makedirs(ddir, exist_ok=True)
        lib = getattr(result, "library", None)
        tag = os.path.basename(lib).split(".")[0] if lib else getattr(result, "stage", "partial")
        stem = os.path.join(ddir, f"{file_component(kernel_name)}_{file_component(tag)}")  # never a path
        parts = [(".ir.txt", result.ir_text)]
        if getattr(result, "source", None):
            parts.append((".cpp", result.source))
        for suffix, text in parts:
            with open(stem + suffix, "w") as f:
                f.write(text)
            written.append(stem + suffix)
    except (OSError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        warnings.warn(f"pypto: kernel '{kernel_name}': cannot write the debug dump to {ddir or dump_dir!r}: {why}; "
                      f"the kernel runs without it (set debug_options['dump_dir'] to a writable directory)",
                      DumpWarning, stacklevel=4)
    return written


__all__ = ["DumpWarning", "dump_directory", "write_dump"]
