"""`PYPTO_LOG=info|debug`: each specialization built is logged with its reason, time split and disk-cache outcome;
off by default, and then the reason (the costly `explain` text) is never computed. The export's progress line."""
from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import textwrap

import torch

import pypto
from pypto import logger as plog
from pypto.frontend import explain as explain_module


def _make():
    @pypto.frontend.jit
    def logged_scale(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
                     out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), alpha=1.0):
        out[:] = a * alpha
    return logged_scale


def test_each_build_is_logged_with_its_reason_split_and_cache(caplog):
    k = _make()
    caplog.set_level(logging.INFO, logger="pypto")
    a, out = torch.randn(8), torch.zeros(8)
    k(a, out)
    k(a, out)                 # a hit: nothing logged
    k(a, out, alpha=2.0)
    torch.testing.assert_close(out, a * 2.0)
    lines = [r.getMessage() for r in caplog.records if r.name == "pypto"]
    assert len(lines) == 2, lines
    assert lines[0].startswith("kernel 'logged_scale': specializing: miss (no specialization compiled yet)"), lines[0]
    assert "constant 'alpha': compiled for 1.0, called with 2.0" in lines[1], lines[1]
    for line in lines:
        assert "trace " in line and "codegen " in line and " ms" in line, line
        assert ("disk cache hit" in line) != ("disk cache miss" in line), line
        assert ("g++ " in line) == ("disk cache miss" in line), line


def test_disabled_logger_never_computes_the_reason(monkeypatch):
    assert not logging.getLogger("pypto").isEnabledFor(logging.INFO) or os.environ.get("PYPTO_LOG")
    calls = []
    monkeypatch.setattr(explain_module, "explain", lambda *a: calls.append(a) or "")  # the log's reason
    monkeypatch.setattr(logging.getLogger("pypto"), "level", logging.WARNING)
    k = _make()
    a, out = torch.randn(8), torch.zeros(8)
    k(a, out, alpha=3.0)
    torch.testing.assert_close(out, a * 3.0)
    assert calls == []


def test_pypto_log_env_configures_a_stderr_handler(tmp_path):
    """In a fresh process: PYPTO_LOG=debug logs the build (INFO) and its shapes (DEBUG) to stderr; unset: silent."""
    script = textwrap.dedent("""
        import torch, pypto
        @pypto.frontend.jit
        def env_logged(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
            out[:] = a + 1
        x, y = torch.ones(4), torch.zeros(4)
        env_logged(x, y)
        assert torch.equal(y, x + 1)
    """)
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path))
    on = subprocess.run([sys.executable, "-c", script], env=dict(env, PYPTO_LOG="debug"), capture_output=True,
                        text=True, timeout=300)
    assert on.returncode == 0, on.stderr
    assert "pypto INFO: kernel 'env_logged': specializing: miss" in on.stderr, on.stderr
    assert "pypto DEBUG: kernel 'env_logged': tensor shapes a: (4,), out: (4,)" in on.stderr, on.stderr
    env.pop("PYPTO_LOG", None)
    off = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert off.returncode == 0 and "pypto INFO" not in off.stderr, off.stderr
    bad = subprocess.run([sys.executable, "-c", "import pypto"], env=dict(env, PYPTO_LOG="loud"),
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 0 and "PYPTO_LOG='loud' is not a level" in bad.stderr, bad.stderr


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_draws_on_a_terminal_only():
    tty = _Tty()
    assert list(plog.progress(range(3), 3, "export", stream=tty)) == [0, 1, 2]
    text = tty.getvalue()
    assert "\rexport [1/3]" in text and "\rexport [3/3]" in text and text.endswith("s\n"), text
    pipe = io.StringIO()
    assert list(plog.progress(range(3), 3, "export", stream=pipe)) == [0, 1, 2]
    assert pipe.getvalue() == ""
