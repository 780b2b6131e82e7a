"""The suite's settings and shared fixtures: one compile cache per run, no CANN in the environment, the fast torch
reader built in the foreground, the area helper packages importable, and the exported test bundle."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# The fast torch reader is built in the foreground, so that every test sees the same reader from its first call
# (the background build, the product's default, has its own test in tests/ut/compiler).
os.environ.setdefault("PYPTO_TORCH_READER_WAIT", "1")

# Areas import each other's helpers as packages (callpath._util, embed._bundle): tests/ut is on the path whichever
# area pytest imports first, or alone.
_UT = str(Path(__file__).resolve().parent / "ut")
if _UT not in sys.path:
    sys.path.insert(0, _UT)

_made_cache: list[str] = []


def pytest_configure(config):
    # Every test kernel compiles real C++: one disk cache per run, set before xdist starts its workers so that
    # they inherit and share it. A cache the caller chose (PYPTO_CACHE_DIR) is kept, and never removed.
    if not os.environ.get("PYPTO_CACHE_DIR"):
        os.environ["PYPTO_CACHE_DIR"] = tempfile.mkdtemp(prefix="pypto-test-cache-")
        _made_cache.append(os.environ["PYPTO_CACHE_DIR"])
    # pass verify writes its log under pypto_impl.LogTopFolder() (./output by default): keep it out of the tree
    if not os.environ.get("TILE_FWK_OUTPUT_DIR"):
        os.environ["TILE_FWK_OUTPUT_DIR"] = tempfile.mkdtemp(prefix="pypto-test-output-")
        _made_cache.append(os.environ["TILE_FWK_OUTPUT_DIR"])


def pytest_unconfigure(config):
    # only the process that made the cache removes it (xdist workers inherited it), after every worker ended
    for d in _made_cache:
        shutil.rmtree(d, ignore_errors=True)
    _made_cache.clear()


@pytest.fixture(autouse=True)
def _no_cann(monkeypatch):
    # run_mode defaults to NPU when ASCEND_HOME_PATH is set: the tests run on the CPU simulator.
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)


@pytest.fixture(scope="session")
def bundle_dir(tmp_path_factory):
    """The bundle that the export tests read and the C++ runtime tests load (tests/ut/embed/_bundle.py)."""
    from embed._bundle import export_test_bundle

    d = tmp_path_factory.mktemp("bundle")
    export_test_bundle(d)
    return d
