"""pypto's logger (`logging.getLogger("pypto")`), switched on by `PYPTO_LOG=info|debug`, and a terminal progress line.

A layer just above `errors`: it imports nothing from pypto, so every layer may log. Nothing is configured unless
`PYPTO_LOG` is set (a library must not add handlers of its own otherwise); with it, one stderr handler is attached
to the `pypto` logger. Callers that must compute something costly for a message (the `explain` text of a miss) ask
`enabled(level)` first, so a disabled logger costs one integer compare.
"""
from __future__ import annotations

import enum
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


# ---- the reference's logging API (pypto.log_info, pypto.check, ...) ------------------------------------------------

class LogLevel(enum.IntEnum):
    """The reference's log levels (its values); a message below the level set with set_log_level is dropped."""
    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    FATAL = 4
    EVENT = 5
    NONE = 6


_PY_LEVEL = {LogLevel.DEBUG: logging.DEBUG, LogLevel.INFO: logging.INFO, LogLevel.WARN: logging.WARNING,
             LogLevel.ERROR: logging.ERROR, LogLevel.FATAL: logging.CRITICAL, LogLevel.EVENT: logging.INFO}
_ref_level = LogLevel.WARN


def set_log_level(level: LogLevel) -> None:
    """The threshold of the log_* functions (messages go to the `pypto` logger at the matching level)."""
    global _ref_level
    if isinstance(level, bool) or not isinstance(level, int) or level not in set(LogLevel):
        raise TypeError(f"set_log_level: expected a pypto.LogLevel, got {level!r}")
    _ref_level = LogLevel(level)


def get_log_level() -> LogLevel:
    return _ref_level


def _log(level: LogLevel, message: str) -> None:
    if level >= _ref_level and _ref_level != LogLevel.NONE:
        logger.log(_PY_LEVEL[level], "%s", message)


def log_debug(message: str) -> None:
    _log(LogLevel.DEBUG, message)


def log_info(message: str) -> None:
    _log(LogLevel.INFO, message)


def log_warn(message: str) -> None:
    _log(LogLevel.WARN, message)


def log_error(message: str) -> None:
    _log(LogLevel.ERROR, message)


def log_fatal(message: str) -> None:
    _log(LogLevel.FATAL, message)


def log_event(message: str) -> None:
    _log(LogLevel.EVENT, message)


def raise_error(error_type: str, message: str):
    """Raise the builtin named `error_type` (or pypto's InternalError) with `message`, as the reference does."""
    from .errors import InternalError
    types = {t.__name__: t for t in (ValueError, TypeError, RuntimeError, IndexError, KeyError, NotImplementedError,
                                     AttributeError, InternalError)}
    if error_type not in types:
        raise ValueError(f"raise_error: unknown error type {error_type!r}; expected one of {', '.join(types)}")
    raise types[error_type](message)


def check(condition: bool, message: str) -> None:
    """A ValueError with `message` when `condition` is false."""
    if not condition:
        raise_error("ValueError", message)


def internal_check(condition: bool, message: str) -> None:
    """An InternalError with `message` when `condition` is false."""
    if not condition:
        raise_error("InternalError", message)
