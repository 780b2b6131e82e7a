"""pypto's logger (`logging.getLogger("pypto")`), switched on by `PYPTO_LOG=info|debug`, and a terminal progress line.

A layer just above `errors`: it imports nothing from pypto, so every layer may log. Nothing is configured unless
`PYPTO_LOG` is set (a library must not add handlers of its own otherwise); with it, one stderr handler is attached
to the `pypto` logger. Callers that must compute something costly for a message (the `explain` text of a miss) ask
`enabled(level)` first, so a disabled logger costs one integer compare.
"""
from __future__ import annotations

import logging
import os
import sys
import time
from typing import Iterable, Iterator, TypeVar

logger = logging.getLogger("pypto")
_T = TypeVar("_T")
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_handler: logging.Handler | None = None


def configure(value: str | None = None) -> None:
    """Apply `PYPTO_LOG` (or `value`): a level name attaches a stderr handler; empty/unset leaves logging alone."""
    global _handler
    value = (os.environ.get("PYPTO_LOG", "") if value is None else value).strip().lower()
    if not value:
        return
    level = _LEVELS.get(value)
    if level is None:
        print(f"pypto: PYPTO_LOG={value!r} is not a level; use one of {', '.join(_LEVELS)}", file=sys.stderr)
        return
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        _handler.setFormatter(logging.Formatter("pypto %(levelname)s: %(message)s"))
        logger.addHandler(_handler)
    logger.setLevel(level)


def enabled(level: int = logging.INFO) -> bool:
    return logger.isEnabledFor(level)


def progress(items: Iterable[_T], total: int, label: str, stream=None) -> Iterator[_T]:
    """Yield `items`, drawing `label [i/total] elapsed` on one line of a terminal (nothing when not a terminal or
    for a single item: a pipe or a log file gets no carriage returns)."""
    stream = sys.stderr if stream is None else stream
    show = total > 1 and getattr(stream, "isatty", lambda: False)()
    t0 = time.perf_counter()
    done = 0
    for item in items:
        if show:
            stream.write(f"\r{label} [{done + 1}/{total}] {time.perf_counter() - t0:.1f} s")
            stream.flush()
        yield item
        done += 1
    if show:
        stream.write(f"\r{label} [{done}/{total}] done in {time.perf_counter() - t0:.1f} s\n")
        stream.flush()


configure()

__all__ = ["logger", "configure", "enabled", "progress"]
