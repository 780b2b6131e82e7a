"""`python -m pypto.bench`: it runs (--quick, one scenario set), its JSON has the documented schema, missing peers
are reported as missing. Numbers are checked for shape and consistency, never for speed."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pypto.bench import peers, schema, timing

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    e = dict(os.environ)
    e.setdefault("PYPTO_CACHE_DIR", str(tmp_path_factory.mktemp("bench-cache")))
    e.pop("ASCEND_HOME_PATH", None)  # the CPU simulator
    return e


def _bench(args, env, cwd):
    proc = subprocess.run([sys.executable, "-m", "pypto.bench", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_quick_one_set_runs_and_writes_the_documented_json(env, tmp_path):
    out, plots = tmp_path / "bench.json", tmp_path / "plots"
    args = ["--quick", "--set", "tensors", "--plain", "--json", str(out)]
    if not _has_matplotlib():  # the optional extra is missing: --plot must say so and stop
        proc = subprocess.run([sys.executable, "-m", "pypto.bench", *args, "--plot", str(plots)], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode != 0 and "--plot needs matplotlib" in proc.stderr
    else:
        args += ["--plot", str(plots)]
    proc = _bench(args, env, tmp_path)
    assert "scenario set 'tensors'" in proc.stdout and "16 tensor args" in proc.stdout
    assert "fixed integer loop" in proc.stdout  # the noise report
    if _has_matplotlib():
        png = plots / "latency_vs_tensors.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    res = json.loads(out.read_text())
    assert schema.errors(res) == []
    assert res["schema"] == schema.SCHEMA_ID
    assert res["meta"]["quick"] is True and res["meta"]["sets"] == ["tensors"]
    assert res["callgrind"] is None and res["breakdown"] is None and res["cold"] is None  # off with --quick
    rows = {r["name"]: r for r in res["rows"]}
    tensors = [r for r in res["rows"] if r["group"] == "tensors"]
    assert [r["x"] for r in tensors] == [1, 4, 8, 16]
    for r in tensors:
        assert 0 < r["p10_ns"] <= r["median_ns"] <= r["p90_ns"], r
        assert r["p99_ns"] >= 0 and r["single_calls"] >= 1 and r["number"] >= 100
        assert r["ratio_to"] == "1 tensor arg"
        best = r["clean_median_ns"] if r["clean_median_ns"] is not None else r["median_ns"]
        base = rows["1 tensor arg"]
        base_best = base["clean_median_ns"] if base["clean_median_ns"] is not None else base["median_ns"]
        assert r["ratio"] == pytest.approx(best / base_best)
        assert r["cpu_ratio"] == pytest.approx(r["cpu_median_ns"] / base["cpu_median_ns"])
        assert 0 <= r["clean_rounds"] <= r["rounds"]
    assert rows[timing.NOISE_ROW]["group"] == "noise" and rows[timing.NOISE_ROW]["ratio"] is None
    assert res["noise"]["probe_p90_over_p10"] >= 1.0


def test_schema_validator_catches_what_it_documents():
    row = {"name": "r", "group": "peers", "median_ns": 1.0, "p10_ns": 1.0, "p90_ns": 1.0, "p99_ns": 1.0,
           "single_median_ns": 1.0, "cpu_median_ns": 1.0, "clean_median_ns": None, "clean_rounds": 0, "number": 100, "rounds": 3, "single_calls": 3, "ratio": None, "cpu_ratio": None, "ratio_to": None}
    assert schema.errors(row, schema.ROW) == []
    bad = dict(row, number=0, median_ns="fast")
    del bad["ratio_to"]
    errs = schema.errors(bad, schema.ROW)
    assert "$: missing key 'ratio_to'" in errs
    assert any(e.startswith("$.median_ns: expected number, got str") for e in errs)
    assert "$.number: 0 < minimum 1" in errs
    assert schema.errors({"schema": "other/9"})[0] == "$: missing key 'meta'"
    assert any("expected one of ['pypto.bench/1']" in e for e in schema.errors({"schema": "other/9"}))
    assert schema.errors(True, {"type": "integer"}) == ["$: expected integer, got bool True"]


def test_missing_peer_is_reported_not_installed(monkeypatch):
    real = peers.importlib.import_module

    def fail_numba(name, *a, **k):
        if name == "numba":
            raise ImportError("No module named 'numba'")
        return real(name, *a, **k)

    monkeypatch.setattr(peers.importlib, "import_module", fail_numba)
    rows, missing = peers.build_peers(["floors", "numba", "nosuch"])
    assert [r.name for r in rows] == ["C vectorcall no-op", "python no-op"]
    assert missing["numba"] == "not installed (numba: ImportError: No module named 'numba')"
    assert missing["nosuch"].startswith("not installed (no peer named 'nosuch'")


def test_missing_peer_through_the_cli(env, tmp_path):
    # a numba that fails to import, first on the path: the harness must list numba as not installed
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "numba.py").write_text("raise ImportError('simulated: numba is not installed')\n")
    e = dict(env, PYTHONPATH=os.pathsep.join([str(fake), env.get("PYTHONPATH", "")]))
    out = tmp_path / "peers.json"
    proc = _bench(["--quick", "--set", "peers", "--peer", "floors", "--peer", "numba", "--peer", "reference",
                   "--plain", "--json", str(out)], e, tmp_path)
    res = json.loads(out.read_text())
    assert schema.errors(res) == []
    assert res["peers"]["missing"] == {"numba": "not installed (numba: ImportError: simulated: numba is not "
                                                "installed)"}
    assert "not installed (numba" in proc.stdout
    names = [r["name"] for r in res["rows"] if r["group"] == "peers"]
    assert names == ["C vectorcall no-op", "python no-op", "reference dispatcher (Python)"]
    assert not any("numba" in n for n in names)
    # ratios refer to the fastest peer doing the work (the floors do none)
    fastest = res["peers"]["fastest"]
    assert fastest == "reference dispatcher (Python)"
    by = {r["name"]: r for r in res["rows"]}
    assert by[fastest]["ratio"] == 1.0
    assert all(r["ratio_to"] == fastest for r in res["rows"] if r["group"] == "peers")


def test_reference_dispatcher_binds_defaults_and_keys_per_call():
    import torch

    calls = []

    def k(a, out, m=2, n=3):
        pass

    ref = peers.ReferenceDispatcher(k, lambda *args: calls.append(args))
    a, out = torch.zeros(4), torch.zeros(4)
    ref(a, out, m=5)
    ref(a, out=out, m=5)
    ref(a, out)
    assert [c[2:] for c in calls] == [(5, 3), (5, 3), (2, 3)]
    assert all(c[0] is a and c[1] is out for c in calls)
    assert len(ref.table) == 2  # (m=5, n=3) and (m=2, n=3); the tensors' shape and dtype are the same


def test_hot_path_script_is_a_wrapper_over_the_package(env, tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "hot_path.py"), "--help"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "python -m pypto.bench" in proc.stdout and "--quick" in proc.stdout


def test_cold_paths_measure_an_empty_then_a_warm_cache(env):
    from pypto.bench import cold

    res = cold.run(repeats=1)
    assert schema.errors(res, schema.SCHEMA["properties"]["cold"]) == []
    assert res["import_pypto_s"] > 0 and res["import_loads_torch"] is False
    empty, warm = res["empty_cache"], res["warm_disk_cache"]
    assert empty["kernel_libraries_cached_before"] == 0  # a fresh cache dir: the first call compiles
    assert warm["kernel_libraries_cached_before"] >= 1  # the second process finds the library on disk
    for r in (empty, warm):
        assert r["first_call_s"] > 0 and r["second_call_s"] > 0 and r["compile_s"] > 0


def test_breakdown_is_reported_or_explained(env):
    from pypto.bench import breakdown

    res = breakdown.run(2100)
    assert schema.errors(res, schema.SCHEMA["properties"]["breakdown"]) == []
    if res["available"]:  # the profiled build is there: every stage counted, over exactly the calls made
        assert res["calls"] == 2100 and res["rounds"] == breakdown.ROUNDS  # 100 calls a round
        assert 0 <= res["clean_rounds"] <= res["rounds"]
        assert set(res["stages_ns"]) == set(breakdown.STAGES)
        assert all(v >= 0 for v in res["stages_ns"].values()) and res["sum_ns"] > 0
    else:  # not built: said so, in words
        assert "profiled build" in res["reason"] or "counters" in res["reason"], res
