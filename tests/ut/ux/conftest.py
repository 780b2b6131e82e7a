"""Fixtures for the newcomer-experience tests: a per-run compile cache, no CANN in the environment."""
from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config):
    # Every test kernel compiles real C++; share one disk cache per run (xdist workers inherit the variable when
    # it is set before they start). The project's tests/conftest.py may already have set one: keep it.
    if not os.environ.get("PYPTO_CACHE_DIR"):
        os.environ["PYPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-callpath-cache-")


@pytest.fixture(autouse=True)
def _no_cann(monkeypatch):
    # run_mode defaults to NPU when ASCEND_HOME_PATH is set: these tests run on the CPU simulator.
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
