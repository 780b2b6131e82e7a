"""A tool (not a test; pytest does not collect it): run the reference pypto's four multi-rank tests, unmodified,
on CPU ranks through the test-only shim in ./shim, and report pass/fail per test.

    python tests/st/ref_distributed/run_reference_distributed.py [--mirror DIR] [-k FILTER] [--timeout S]

The test files (python/tests/st/operator/distributed/test_*.py of hicann/pypto) are read from the reference's git
mirror into a temporary directory, next to the shim's `torch_npu.py` (npu placement -> CPU, `torch.npu.*`) and
`distributed_config.py` (HCCL -> a gloo group; `get_hccl_comm_name` -> pypto.distributed.group_name); nothing in
the test files changes. Each file runs under pytest in its own process group with a deadline (a hang is killed
and reported), with a cache directory of its own; the report lists each test's outcome and seconds.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIRROR = "/work/.mirror/hicann+pypto/repo"
REF_DIR = "python/tests/st/operator/distributed"
TESTS = ("test_allgather_matmul.py", "test_matmul_allreduce_add_rmsnorm.py", "test_multi_comm_groups.py",
         "test_moe_distributed_dispatch_combine.py")
SHIM = Path(__file__).resolve().parent / "shim"


def extract(mirror: str, dest: Path) -> None:
    for name in TESTS:
        text = subprocess.run(["git", "-C", mirror, "show", f"HEAD:{REF_DIR}/{name}"], check=True,
                              capture_output=True).stdout
        (dest / name).write_bytes(text)
    for f in SHIM.glob("*.py"):
        shutil.copy(f, dest / f.name)


def run_file(dest: Path, name: str, kfilter: str, timeout: float) -> tuple[int, str, float]:
    argv = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-c", os.devnull,
            "--rootdir", str(dest), "-W", "ignore::pytest.PytestUnknownMarkWarning", str(dest / name)]
    if kfilter:
        argv += ["-k", kfilter]
    env = dict(os.environ, PYTHONPATH=str(dest))
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=dest, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True, text=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        rc, out = 124, out + f"\n[killed after {timeout} s]"
    return rc, out, time.monotonic() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=MIRROR)
    ap.add_argument("-k", default="", help="pytest -k filter (e.g. 'not 16')")
    ap.add_argument("--only", default="", help="run only test files whose name contains this")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("-v", action="store_true", help="print each file's full output")
    args = ap.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="pypto-ref-dist-") as tmp:
        dest = Path(tmp)
        extract(args.mirror, dest)
        for name in TESTS:
            if args.only and args.only not in name:
                continue
            rc, out, secs = run_file(dest, name, args.k, args.timeout)
            lines = [ln for ln in out.splitlines() if ln.startswith(("PASSED", "FAILED", "ERROR", "SKIPPED"))]
            status = "pass" if rc == 0 else ("timeout" if rc == 124 else "FAIL")
            failed += rc != 0
            print(f"{status:7s} {name} ({secs:.0f} s)")
            for ln in lines:
                print(f"    {ln}")
            if args.v or rc != 0:
                print("\n".join("    | " + ln for ln in out.splitlines()[-60:]))
    print(f"{len(TESTS) - failed if not args.only else '-'} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
