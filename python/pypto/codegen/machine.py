"""What the code generator asks of the machine it runs on: cache sizes (sysfs, else sysconf) and the output size
from which fused writes use streaming stores (fused.py). Only speed depends on these answers, never a result."""
from __future__ import annotations

import functools
import os

STREAM_MIN_BYTES = None            # outputs at least this large use streaming stores (None: stream_min_bytes())
SYS_CACHE = "/sys/devices/system/cpu/cpu0/cache"
_SYSCONF_NAMES = {2: "SC_LEVEL2_CACHE_SIZE", 3: "SC_LEVEL3_CACHE_SIZE"}


def cache_bytes(level: int) -> int:
    """The size in bytes of cpu0's data or unified cache at `level` (0 when the machine does not say): from sysfs
    (Linux), else sysconf where Python knows the name. CPython does not know SC_LEVEL*_CACHE_SIZE on glibc
    (os.sysconf raises ValueError), so sysfs comes first."""
    try:
        for entry in sorted(os.scandir(SYS_CACHE), key=lambda e: e.name):
            if not entry.name.startswith("index"):
                continue
            with open(os.path.join(entry.path, "level")) as f:
                if int(f.read()) != level:
                    continue
            with open(os.path.join(entry.path, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(entry.path, "size")) as f:
                size = f.read().strip()
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:].upper(), 1)
            return int(size.rstrip("KkMmGg")) * mult
    except (OSError, ValueError):
        pass
    name = _SYSCONF_NAMES.get(level)
    if name in getattr(os, "sysconf_names", {}):
        try:
            return max(0, int(os.sysconf(name)))
        except (ValueError, OSError):
            return 0
    return 0


@functools.lru_cache(maxsize=None)
def _machine_stream_min() -> int:
    return max(4 << 20, 2 * cache_bytes(2))


def stream_min_bytes() -> int:
    """The output size from which fused writes use streaming (non-temporal) stores (in groups with a reduction
    only: fused.py `streams` has the measurement): 4 MiB or twice a core's L2,
    whichever is larger; an output that size cannot stay in the core's own caches between calls. Streaming saves
    the read of each output line before it is written (and the eviction of other data). Measured in the kernel
    harness (`python -m pypto.bench --kernels`, its calls interleaved with other kernels', 1 thread, 16 MiB
    outputs, two A/B runs): axpy 2.24-2.32 ms streaming vs 2.51-2.65 plain, softmax 1.77-1.78 vs 1.93-2.06,
    layernorm 1.40-1.44 vs 1.35-1.54. Plain stores win only when the same output is rewritten back to back with
    nothing in between (the LLC keeps it: layernorm 1.16 vs 1.38 ms in a C loop), which is not a program's steady
    state. Only speed depends on it: both stores give the same bits."""
    return _machine_stream_min() if STREAM_MIN_BYTES is None else STREAM_MIN_BYTES


__all__ = ["cache_bytes", "stream_min_bytes"]
