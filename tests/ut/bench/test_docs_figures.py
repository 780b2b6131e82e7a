"""`python -m pypto.bench.docs`: marked regions of the docs are rewritten from a harness JSON and nothing else
changes; the committed docs are exactly what docs/figures/bench.json renders, so a hand-edited figure fails."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pypto.bench import docs, schema

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
REGION = re.compile(r"(<!-- bench:([\w-]+) -->)(.*?)(<!-- /bench:\2 -->)", re.S)


def _row(name, group, ns, ratio_to, x=None, floor=False):
    return {"name": name, "group": group, "x": x, "note": "", "floor": floor, "median_ns": ns, "p10_ns": ns - 1,
            "p90_ns": ns + 1, "p99_ns": ns + 9, "single_median_ns": ns, "cpu_median_ns": ns,
            "clean_median_ns": ns, "clean_rounds": 5, "number": 1000, "rounds": 5, "single_calls": 100,
            "ratio": None, "cpu_ratio": None, "ratio_to": ratio_to}


def synthetic() -> dict:
    """A small result that conforms to the schema, with figures that appear nowhere in the committed docs."""
    rows = [_row("pypto hit", "peers", 777.0, "pypto hit"), _row("python no-op", "peers", 333.0, "pypto hit", floor=True),
            _row("numba njit (keywords)", "peers", 4444.0, "pypto hit"),
            _row("1 tensor arg", "tensors", 500.0, "1 tensor arg", x=1),
            _row("9 tensor args", "tensors", 900.0, "1 tensor arg", x=9),
            _row("fixed integer loop (noise probe)", "noise", 1000.0, None)]
    for r in rows:
        if r["ratio_to"]:
            ref = next(x for x in rows if x["name"] == r["ratio_to"])
            r["ratio"] = r["cpu_ratio"] = r["median_ns"] / ref["median_ns"]
    mhz = {"min": 1000.0, "max": 1000.0, "mean": 1000.0}
    res = {"schema": schema.SCHEMA_ID,
           "meta": {"command": "python -m pypto.bench --synthetic", "python": "3.x", "pypto": "9.9", "torch": None,
                    "numpy": "2", "cpus": 1, "pypto_march": "native", "quick": False, "rounds": 5,
                    "target_loop_s": 0.002, "sets": ["peers", "tensors"], "peers": ["pypto"],
                    "started_utc": "2000-01-01T00:00:00+00:00", "total_seconds": 1.0},
           "noise": {"clock_overhead_ns": 50.0, "measure_seconds": 1.0, "cpu_mhz_before": mhz, "cpu_mhz_after": mhz,
                     "probe_p90_over_p10": 1.0, "probe_max_over_min": 1.0, "rows_median_p90_over_p10": 1.0,
                     "wall_over_cpu_median": 1.0, "wall_over_cpu_p90": 1.0, "preempted_loops": 0.0},
           "rows": rows, "peers": {"fastest": "pypto hit", "missing": {"jax": "not installed (No module named 'jax')"}},
           "callgrind": {"pypto_hit_instructions": 4321.0, "torch_add_instructions": 8765.0, "n1": 10, "n2": 20,
                         "seconds": 3.0, "method": "m"},
           "breakdown": {"available": True, "calls": 10, "rounds": 3, "clean_rounds": 3, "sum_ns": 100.0,
                         "profiled_wall_ns": 120.0, "stages_ns": {"bind": 11.0, "read": 22.0, "guards": 3.0,
                                                                 "key": 4.0, "lookup": 27.0, "launch": 33.0}},
           "cold": None, "errors": {"cold": "RuntimeError: synthetic"}}
    assert schema.errors(res) == []
    return res


def _outside(text: str) -> str:
    """The document with every marked region emptied: what the generator must leave alone."""
    return REGION.sub(lambda m: m.group(1) + m.group(4), text)


def _regions(text: str) -> dict[str, str]:
    return {m.group(2): m.group(3) for m in REGION.finditer(text)}


def _run(*args):
    return subprocess.run([sys.executable, "-m", "pypto.bench.docs", *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_the_command_rewrites_only_the_marked_regions(tmp_path):
    for name in docs.DOCS:
        shutil.copy(DOCS / name, tmp_path / name)
    result = tmp_path / "r.json"
    result.write_text(json.dumps(synthetic()))
    proc = _run(result, "--docs", tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in docs.DOCS:
        old, new = (DOCS / name).read_text(), (tmp_path / name).read_text()
        assert _outside(new) == _outside(old)  # byte-identical outside the markers
        assert _regions(new).keys() == _regions(old).keys() and new != old
    perf = _regions((tmp_path / "performance.md").read_text())
    assert "| **pypto hit** | **777** | 1.00x |" in perf["peers"]
    assert "| Numba `@njit` (keywords / positional) | 4,444 | 5.7x |" in perf["peers"]
    assert "| jax | not installed (No module named 'jax') | |" in perf["peers"]
    assert "| `torch.compile` |" not in perf["peers"]  # a peer the run did not have is not shown with old figures
    assert perf["callgrind"] == "**4,321** for the call above (torch.add(out=): 8,765)"
    assert perf["breakdown"].startswith("bind 11 %, read tensors 22 %, guards 3 %")
    assert "1 -> 9 tensor arguments 500 -> 900 ns (1.80x; ~50 ns per tensor)" in " ".join(perf["scale"].split())
    assert perf["cold"] == "not measured in this run (RuntimeError: synthetic)"
    report = _regions((tmp_path / "bench.md").read_text())["report"]
    assert "command: python -m pypto.bench --synthetic" in report and "4,321.0" in report
    # a second run is a no-op, and --check agrees
    assert _run(result, "--docs", tmp_path, "--check").returncode == 0


def test_committed_docs_are_what_the_committed_json_renders():
    res = dict(docs.load(DOCS / "figures" / "bench.json"),
               kernels=docs.load_kernels(DOCS / "figures" / "kernels.json"),
               sweep=[docs.load_sweep(DOCS / "figures" / f"sweep-{run}.json")
                      for run in ("native", "avx2", "native-2t", "avx2-2t")])   # docs/performance.md's command
    seen = set()
    for name in docs.DOCS:
        text = (DOCS / name).read_text()
        seen |= _regions(text).keys()
        assert docs.rewrite(text, res, name) == text, f"docs/{name}: a marked figure differs from docs/figures/bench.json"
    assert seen == set(docs.REGIONS)  # every region the generator knows is in the docs


def test_a_figure_edited_by_hand_fails_the_check(tmp_path):
    for name in docs.DOCS:
        shutil.copy(DOCS / name, tmp_path / name)
    perf = tmp_path / "performance.md"
    text = perf.read_text()
    assert "| **pypto hit** | **108** |" in text
    perf.write_text(text.replace("| **pypto hit** | **108** |", "| **pypto hit** | **99** |"))
    before = perf.read_text()
    proc = _run(DOCS / "figures" / "bench.json", "--docs", tmp_path, "--check")
    assert proc.returncode == 1 and str(perf) in proc.stdout
    assert perf.read_text() == before  # --check writes nothing
    assert _run(DOCS / "figures" / "bench.json", "--docs", tmp_path).returncode == 0
    assert perf.read_text() == (DOCS / "performance.md").read_text()


@pytest.mark.parametrize("doc, message", [
    ("a\n<!-- bench:peers -->\nx\n", "doc.md: 'bench:peers' is never closed"),
    ("a\n<!-- bench:nope -->x<!-- /bench:nope -->\n", "doc.md:2: unknown figure region 'bench:nope'"),
    ("<!-- bench:peers --><!-- bench:cold -->x<!-- /bench:cold --><!-- /bench:peers -->",
     "doc.md:1: 'bench:cold' opens inside 'bench:peers'"),
    ("x<!-- /bench:cold -->", "doc.md:1: '/bench:cold' closes a region that is not open"),
])
def test_broken_markers_are_errors_that_say_where(tmp_path, doc, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        docs.rewrite(doc, synthetic(), "doc.md")
    for name in docs.DOCS:
        (tmp_path / name).write_text(doc)
    result = tmp_path / "r.json"
    result.write_text(json.dumps(synthetic()))
    proc = _run(result, "--docs", tmp_path)
    assert proc.returncode == 2 and message.split(":", 1)[1] in proc.stderr
    assert (tmp_path / "performance.md").read_text() == doc  # untouched


def test_a_json_that_is_not_a_harness_result_is_refused(tmp_path):
    bad = synthetic()
    del bad["rows"][0]["median_ns"]
    (tmp_path / "r.json").write_text(json.dumps(bad))
    shutil.copy(DOCS / "performance.md", tmp_path / "performance.md")
    proc = _run(tmp_path / "r.json", "--docs", tmp_path)
    assert proc.returncode == 2 and "not a pypto.bench result" in proc.stderr and "$.rows[0]: missing key 'median_ns'" in proc.stderr
    assert (tmp_path / "performance.md").read_text() == (DOCS / "performance.md").read_text()


def _kernels_result() -> dict:
    rows = [{"kernel": f"k{i}", "threads": t, "pypto_ms": 1.25 + i, "torch_ms": 2.5, "ratio": (1.25 + i) / 2.5,
             "copy_ms": 0.625, "copy_ratio": (1.25 + i) / 0.625} for t in (1, 2) for i in range(2)]
    return {"rows": rows, "geomean_five": {"1": 0.7777, "2": 1.2345}, "threads": [1, 2], "rounds": 3,
            "clock": "wall", "compile_s": {"axpy": 0.111}}


def test_the_kernel_speed_region_comes_from_the_kernels_json_and_only_with_it(tmp_path):
    for name in docs.DOCS:
        shutil.copy(DOCS / name, tmp_path / name)
    k = tmp_path / "k.json"
    k.write_text(json.dumps(_kernels_result()))
    bench = DOCS / "figures" / "bench.json"
    assert _run(bench, "--docs", tmp_path).returncode == 0            # without --kernels: the region stays
    assert (tmp_path / "performance.md").read_text() == (DOCS / "performance.md").read_text()
    proc = _run(bench, "--docs", tmp_path, "--kernels", k)
    assert proc.returncode == 0, proc.stderr
    old, new = (DOCS / "performance.md").read_text(), (tmp_path / "performance.md").read_text()
    assert _outside(new) == _outside(old)
    changed = {n for n, body in _regions(new).items() if body != _regions(old)[n]}
    assert changed == {"kernels"}
    region = _regions(new)["kernels"]
    assert "| k1 | 2 | 2.25 | 2.50 | 0.90x | 0.62 | 3.60x |" in region
    assert "**0.78x at 1 thread**, **1.23x at 2 threads**" in " ".join(region.split())
    assert "axpy 111 ms" in region
    assert _run(bench, "--docs", tmp_path, "--kernels", k, "--check").returncode == 0


def test_a_kernels_json_without_its_rows_is_refused(tmp_path):
    k = tmp_path / "k.json"
    k.write_text(json.dumps({"rows": [{"kernel": "x"}], "geomean_five": {}}))
    proc = _run(DOCS / "figures" / "bench.json", "--docs", tmp_path, "--kernels", k)
    assert proc.returncode == 2 and "not a `pypto.bench --kernels --json` result" in proc.stderr
