"""Fixtures for the embedding tests: one compile cache per run, the exported test bundle, the C++ test binary."""
from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config):
    if not os.environ.get("PYPTO_CACHE_DIR"):
        os.environ["PYPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-embed-cache-")


@pytest.fixture(autouse=True)
def _no_cann(monkeypatch):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)


@pytest.fixture(scope="session")
def bundle_dir(tmp_path_factory):
    from ._bundle import export_test_bundle

    d = tmp_path_factory.mktemp("bundle")
    export_test_bundle(d)
    return d


@pytest.fixture(scope="session")
def test_binary():
    from ._bundle import build_test_binary

    return build_test_binary()
