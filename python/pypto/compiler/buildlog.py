"""What a miss logs (logger `pypto`, `PYPTO_LOG=info|debug`): the kernel, why it compiled, the time split, the cache.

`pipeline.miss` calls `log_build` for every specialization it builds; the texts that cost something (the reason is
the frontend's `explain`, which probes the call again and compares keys) are callables, asked for only when the
logger is enabled, so a disabled logger never pays for them.
"""
from __future__ import annotations

import logging
from typing import Callable

from ..logger import enabled, logger


def _text(make: Callable[[], str] | None, default: str) -> str:
    if make is None:
        return default
    try:
        return make()
    except Exception as e:  # the log line must never turn a successful build into a failure
        return f"(unavailable: {type(e).__name__}: {e})"


def log_build(kernel_name: str, result, reader_seconds: float, reason: Callable[[], str] | None,
              shapes: Callable[[], str] | None) -> None:
    """One INFO line per specialization built: reason, time split and disk-cache outcome; DEBUG adds the shapes."""
    if not enabled():
        return
    split = getattr(result, "seconds", None) or {}
    parts = [f"{stage} {1e3 * s:.1f} ms" for stage, s in split.items()]
    if reader_seconds >= 1e-3:
        parts.insert(0, f"torch reader {1e3 * reader_seconds:.1f} ms (first miss of the process; compiled once "
                        f"per cache directory, then loaded)")
    cache = "disk cache hit (library loaded, not compiled)" if result.cached else "disk cache miss (compiled)"
    logger.info("kernel '%s': specializing: %s; %s; %s; library %s", kernel_name, _text(reason, "first call"),
                "; ".join(parts) or "-", cache, result.library)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("kernel '%s': tensor shapes %s; cache key %s", kernel_name, _text(shapes, "?"), result.key)


__all__ = ["log_build"]
