"""The modes options choose between, and the values they default to: where a kernel runs (`RunMode`), where its
compile stops (`CompileStage`), the CANN environment, the default thread count, sizes as text ('500M').

Nothing here validates an option (that is `option_tables.py`) or resolves one (`options.py`).
"""
from __future__ import annotations

import enum
import math
import os

from ..errors import OptionError

INT32_MAX = 2147483647


_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
               "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
               "TIB": 1 << 40}


def parse_size(text: str) -> int:
    """'500M', '2G', '1048576' -> bytes (binary units). Here, not in the cache, so that an option can use it."""
    t = str(text).strip().upper()
    num = t.rstrip("BKMGTI")
    unit = t[len(num):]
    try:
        if num and unit in _SIZE_UNITS and math.isfinite(float(num)) and float(num) >= 0:
            return int(float(num) * _SIZE_UNITS[unit])
    except ValueError:
        pass
    raise ValueError(f"not a size: {text!r} (examples: 500M, 2G, 1048576)")


class RunMode(enum.IntEnum):
    """Where a kernel runs. NPU needs the CANN toolkit; SIM compiles to native CPU code."""
    NPU = 0
    SIM = 1

    def __repr__(self) -> str:
        return f"pypto.RunMode.{self.name}"

    __str__ = __repr__


class CompileStage(enum.IntEnum):
    """`host_options["compile_stage"]`: stop compiling after this stage (anything but ALL_COMPLETE: no launch)."""
    ALL_COMPLETE = 0
    TENSOR_GRAPH = 1
    TILE_GRAPH = 2
    EXECUTE_GRAPH = 3
    CODEGEN_INSTRUCTION = 4
    CODEGEN_BINARY = 5

    def __repr__(self) -> str:
        return f"pypto.CompileStage.{self.name}"

    __str__ = __repr__


CompStage = CompileStage  # the reference's name


def detect_cann() -> str | None:
    """The CANN home (`$ASCEND_HOME_PATH`) if it is set and the directory exists, else None."""
    home = os.environ.get("ASCEND_HOME_PATH")
    return home if home and os.path.isdir(home) else None


SIM_THREADS_ENV = "PYPTO_SIM_THREADS"


def default_threads() -> int:
    """The CPU simulator's default thread count (`runtime_options["sim_threads"]`): `$PYPTO_SIM_THREADS` when set,
    else the cores this process may run on; 1..64."""
    text = os.environ.get(SIM_THREADS_ENV, "").strip()
    if text:
        try:
            n = int(text)
        except ValueError:
            n = 0
        if not 1 <= n <= 64:
            raise OptionError(f"environment variable {SIM_THREADS_ENV}={text!r}: expected an int in 1..64 (the CPU "
                             f"simulator's threads), got {text!r}")
        return n
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(64, n))


def default_run_mode() -> RunMode:
    # Decided at validation time, like the reference: the environment variable alone decides.
    return RunMode.NPU if os.environ.get("ASCEND_HOME_PATH") else RunMode.SIM


__all__ = ["INT32_MAX", "SIM_THREADS_ENV", "CompStage", "CompileStage", "RunMode", "default_run_mode", "default_threads",
           "detect_cann", "parse_size"]
