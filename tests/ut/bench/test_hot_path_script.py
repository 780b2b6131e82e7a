"""benchmarks/hot_path.py runs end to end and writes its documented JSON (numbers are checked for shape, not speed)."""
import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "hot_path.py"

ROW_KEYS = {"median_ns", "p10_ns", "p90_ns", "ratio_to_pypto"}
SCALE_KEYS = {"base", "scaled", "base_median_ns", "scaled_median_ns", "ratio"}
TARGET_KEYS = {"median_le_400ns", "below_numba", "instructions_le_1500", "specializations_within_15pct"}


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def test_quick_run_writes_documented_json(tmp_path):
    out = tmp_path / "hot_path.json"
    env = dict(os.environ)
    env.setdefault("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    env.pop("ASCEND_HOME_PATH", None)  # the CPU simulator
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--no-callgrind", "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pypto hit" in proc.stdout and "C vectorcall no-op" in proc.stdout

    res = json.loads(out.read_text())
    assert set(res) >= {"meta", "rows", "scale", "callgrind", "targets"}
    assert res["callgrind"] is None  # --no-callgrind

    rows = res["rows"]
    for name in ("pypto hit", "C vectorcall no-op", "python no-op", "torch.add(a, b, out=)"):
        assert name in rows, sorted(rows)
    if res["meta"]["numba"] is not None:
        assert "numba njit (keywords)" in rows and "numba njit (positional)" in rows
    for name, st in rows.items():
        assert set(st) >= ROW_KEYS, (name, st)
        assert all(_positive(st[k]) for k in ROW_KEYS), (name, st)
        assert st["p10_ns"] <= st["median_ns"] <= st["p90_ns"], (name, st)
    assert rows["pypto hit"]["ratio_to_pypto"] == 1.0

    assert set(res["scale"]) == {"specializations", "tensor_args", "guarded_globals"}
    for key, s in res["scale"].items():
        assert set(s) >= SCALE_KEYS, (key, s)
        assert all(_positive(s[k]) for k in ("base_median_ns", "scaled_median_ns", "ratio")), (key, s)

    meta = res["meta"]
    assert meta["specializations"] == 200  # --quick fills a 200-entry table
    assert meta["guards"] == {"g0": 0, "g20": 20}
    assert set(res["targets"]) == TARGET_KEYS
    assert res["targets"]["instructions_le_1500"] is None  # no callgrind, no verdict
