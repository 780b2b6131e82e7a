"""What a miss logs (logger `pypto`, `PYPTO_LOG=info|debug`): the kernel, why it compiled, the time split, the cache.

Called by `JITKernel._build` only when the logger is enabled: the reason is the `explain` text, which probes the
call again and compares keys, so a disabled logger never pays for it.
"""
from __future__ import annotations

import logging

from ..logger import logger
from ..vocab.params import TENSOR
from .explain import explain


def _call_form(front, args: tuple) -> tuple[tuple, dict]:
    """The bound arguments (one per parameter) as a call would pass them: keyword-only ones by keyword."""
    pos, kw = [], {}
    for p, a in zip(front.params, args):
        if p.keyword_only:
            kw[p.name] = a
        else:
            pos.append(a)
    return tuple(pos), kw


def _reason(front, native, args: tuple) -> str:
    try:
        pos, kw = _call_form(front, args)
        text = explain(front, native, pos, kw)
    except Exception as e:  # the log line must never turn a successful build into a failure
        return f"(reason unavailable: {type(e).__name__}: {e})"
    prefix = f"kernel '{front.name}': "
    return text[len(prefix):] if text.startswith(prefix) else text


def log_build(front, native, args: tuple, meta: tuple, result, reader_seconds: float) -> None:
    """One INFO line per specialization built: reason, time split and disk-cache outcome; DEBUG adds the shapes."""
    split = getattr(result, "seconds", None) or {}
    parts = [f"{stage} {1e3 * s:.1f} ms" for stage, s in split.items()]
    if reader_seconds >= 1e-3:
        parts.insert(0, f"torch reader {1e3 * reader_seconds:.1f} ms (first miss of the process; compiled once "
                        f"per cache directory, then loaded)")
    cache = "disk cache hit (library loaded, not compiled)" if result.cached else "disk cache miss (compiled)"
    logger.info("kernel '%s': specializing: %s; %s; %s; library %s", front.name,
                _reason(front, native, args) if native is not None else "first call", "; ".join(parts) or "-",
                cache, result.library)
    if logger.isEnabledFor(logging.DEBUG):
        shapes = [f"{p.name}: {meta[p.kind_index][1]}" for p in front.params if p.kind == TENSOR]
        logger.debug("kernel '%s': tensor shapes %s; cache key %s", front.name, ", ".join(shapes), result.key)


__all__ = ["log_build"]
