"""The hit path's per-stage counters: compiled out of pypto._core, compiled into pypto._core_prof (PYPTO_PROFILE=1)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import pypto

STAGES = ["bind", "read", "guards", "key", "lookup", "launch"]


def test_default_build_has_no_counters():
    assert pypto._core.PROFILED is False
    assert pypto._core.__name__ == "pypto._core"
    with pytest.raises(RuntimeError, match="compiled out.*PYPTO_PROFILE=1"):
        pypto._core.profile_counters()


_CHILD = textwrap.dedent("""
    import json, torch, pypto
    T = pypto.Tensor([16], pypto.DT_FP32)

    @pypto.frontend.jit
    def k(a: T, b: T, out: T, m=2):
        out[:] = a + b * m

    a, b, out = torch.rand(16), torch.rand(16), torch.zeros(16)
    pypto._core.profile_reset()
    k(a, b, out, m=2)                      # a miss: not counted
    after_miss = pypto._core.profile_counters()
    for _ in range(500):
        k(a, b, out, m=2)                  # hits
    hits = pypto._core.profile_counters()
    torch.testing.assert_close(out, a + b * 2)
    pypto._core.profile_reset()
    reset = pypto._core.profile_counters()
    print(json.dumps({"name": pypto._core.__name__, "profiled": pypto._core.PROFILED,
                      "after_miss": after_miss, "hits": hits, "reset": reset,
                      "cache_info": k.cache_info()}))
""")


def test_profiled_build_counts_hits_per_stage(tmp_path):
    env = dict(os.environ, PYPTO_PROFILE="1", PYPTO_CACHE_DIR=os.environ.get("PYPTO_CACHE_DIR", str(tmp_path)))
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["name"] == "pypto._core_prof" and res["profiled"] is True
    assert res["after_miss"]["calls"] == 0
    hits = res["hits"]
    assert hits["calls"] == 500 == res["cache_info"]["hits"]
    assert sorted(k for k in hits if k != "calls") == sorted(STAGES)
    for stage in STAGES:
        assert hits[stage] >= 0.0
    assert hits["read"] > 0 and hits["launch"] > 0
    # per call, the stages sum to a plausible host time (well under a millisecond)
    assert 0 < sum(hits[s] for s in STAGES) / hits["calls"] < 1e6
    assert res["reset"]["calls"] == 0 and all(res["reset"][s] == 0 for s in STAGES)
