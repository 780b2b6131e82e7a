"""The verify log: `<LogTopFolder>/verify/interpreter.log`, one line per stage and tensor that pass verify checked.

The reference's verifier writes this file (its users and tests read it for `result PASS` / `result FAILED`), so
ours does too, with the same folder rule and line shape, and with only what `check.verify` really did: a tensor
compared within tolerance is PASS, one outside it (or a stage that failed to run) is FAILED at ERROR level with the
reference's `[VERIFY:FAIL]` marker, a tensor without golden data or a stage not run is NO_COMPARE with the reason.
"""
from __future__ import annotations

import os
import socket
import threading
import time

_lock = threading.Lock()
_folders: dict = {}        # output base dir -> this process's log folder under it


def output_base_dir() -> str:
    """The reference's rule: $TILE_FWK_OUTPUT_DIR, else $ASCEND_WORK_PATH/pypto, else ./output."""
    base = os.environ.get("TILE_FWK_OUTPUT_DIR")
    if base:
        return base
    work = os.environ.get("ASCEND_WORK_PATH")
    return os.path.join(work, "pypto") if work else "output"


def log_top_folder() -> str:
    """`pypto.pypto_impl.LogTopFolder()`: this process's log folder, `<base>/output_<date>_<time>_<us>_<pid>_<host>`,
    made on first use (one per output base dir, so a changed TILE_FWK_OUTPUT_DIR gets its own)."""
    base = output_base_dir()
    with _lock:
        folder = _folders.get(base)
        if folder is None:
            now = time.time()
            stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(now)) + f"_{int(now * 1e6) % 1000000:06d}"
            folder = os.path.join(base, f"output_{stamp}_{os.getpid()}_{socket.gethostname()}")
            os.makedirs(folder, exist_ok=True)
            _folders[base] = folder
    return folder


def _line(level: str, text: str) -> str:
    return f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][{level}][tid:{threading.get_native_id()}] {text}\n"


def report_lines(kernel: str, reports) -> list:
    """The log lines of one verification: per stage, one line per tensor it compared (StageReport.tensors), or one
    line for the stage when it did not run or failed."""
    lines = []
    for rep in reports:
        head = f"{kernel} {rep.stage} Verify"
        if rep.status == "skipped":
            lines.append(_line("EVENT", f"{head} result NO_COMPARE ({rep.detail})"))
            continue
        if rep.status == "error":
            lines.append(_line("ERROR", f"[VERIFY:FAIL] {head} result FAILED: {rep.detail}"))
            continue
        for param, (index, result, note) in rep.tensors.items():
            text = f"{head} for tensor '{param}' (tensor parameter {index}) result {result}"
            if result == "FAILED":
                lines.append(_line("ERROR", f"[VERIFY:FAIL] {text}: {note}"))
            else:
                lines.append(_line("EVENT", text + (f" ({note})" if note else "")))
    return lines


def write_report(kernel: str, reports) -> str:
    """Append one verification's lines to `<LogTopFolder>/verify/interpreter.log`; returns the file's path."""
    d = os.path.join(log_top_folder(), "verify")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "interpreter.log")
    with _lock, open(path, "a", encoding="utf-8") as f:
        f.writelines(report_lines(kernel, reports))
    return path
