"""`python -m pypto.bench --kernels` with its filters: one kernel, one thread count, CPU-time clock. The rows are
checked for shape and consistency (the kernel's result was compared with torch before timing), never for speed."""
import json
import os
import subprocess
import sys


def _bench(args, tmp_path, **extra):
    env = dict(os.environ, **extra)
    env.setdefault("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    if "OMP_WAIT_POLICY" not in extra:
        env.pop("OMP_WAIT_POLICY", None)
    return subprocess.run([sys.executable, "-m", "pypto.bench", "--kernels", *args], env=env, capture_output=True,
                          text=True, timeout=600)


def test_only_one_kernel_at_one_thread_on_the_cpu_clock(tmp_path):
    out = tmp_path / "k.json"
    p = _bench(["--only", "row sum", "--threads", "1", "--rounds", "2", "--cpu", "--no-compile", "--json",
                str(out)], tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    res = json.loads(out.read_text())
    assert [(r["kernel"], r["threads"]) for r in res["rows"]] == [("row sum 4096x1024", 1)]
    r = res["rows"][0]
    assert r["pypto_ms"] > 0 and r["torch_ms"] > 0 and abs(r["ratio"] - r["pypto_ms"] / r["torch_ms"]) < 1e-9
    assert res["clock"] == "thread CPU time" and res["geomean_five"] == {}    # not all five ran: no geomean
    assert "compile_s" not in res and "| row sum 4096x1024 | 1 |" in p.stdout
    assert res["omp_wait_policy"] == "PASSIVE"      # torch's OpenMP workers sleep between calls (bench/__main__.py)
    assert res["allocator"] == "glibc mallopt: mmap threshold 32 MiB, trim threshold 1 GiB"   # this glibc machine


def test_an_explicit_omp_wait_policy_is_kept(tmp_path):
    out = tmp_path / "k.json"
    p = _bench(["--only", "row sum", "--threads", "1", "--rounds", "1", "--cpu", "--no-compile", "--json",
                str(out)], tmp_path, OMP_WAIT_POLICY="ACTIVE")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert json.loads(out.read_text())["omp_wait_policy"] == "ACTIVE"


def test_a_filter_that_matches_nothing_says_so(tmp_path):
    p = _bench(["--only", "no such kernel", "--no-compile"], tmp_path)
    assert p.returncode != 0 and "no kernel name contains any of ['no such kernel']" in p.stderr
