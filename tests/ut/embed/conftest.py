"""Fixture of the embedding tests: the C++ test binary (built once per session). The exported bundle it loads is
the suite's `bundle_dir` (tests/conftest.py), shared with the export tests."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def test_binary():
    from ._bundle import build_test_binary

    return build_test_binary()
