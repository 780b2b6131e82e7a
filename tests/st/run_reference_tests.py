"""A tool (not a test; pytest does not collect it): run the reference pypto's own test suite, unmodified, on the CPU.

    python tests/st/run_reference_tests.py /tmp/ref/python/tests [-j 2] [-k FILTER] [--exclude PART] [-v] [--json OUT]

Get the tests from the reference project (hicann/pypto) first, e.g.
    git --git-dir=<mirror of hicann/pypto> archive HEAD python/tests | tar -x -C /tmp/ref

Which cases. Every `test_*` function (top level, or a method of a `Test*` class) of a `test_*.py` file under st/ and
ut/ whose file uses `pypto.frontend.jit` (`pypto.jit`), itself or through a module of the suite it imports. A case
is one function with all its parametrizations: it passes when pytest runs at least one and all it runs pass. The
parametrizations the suite itself skips (its own `skip` marks) are not run; a case it skips entirely is listed as
skipped and is not counted as runnable.

How each runs. In its own child process with a timeout, as a user of the reference would run it, `python -m pytest
FILE::CASE -p reference_shim --noconftest` from the suite's root. `reference_shim` (tests/st/reference_shim.py) maps
only NPU placement to the CPU: a torch_npu stand-in for `set_device`/`synchronize`, `.npu()` and `device="npu:0"`
placing tensors on the CPU, `RunMode.NPU` meaning SIM; ut/ is on the module path, as the suite's helpers
are imported by package (`from kirin.common import ...`). The suite's conftest files are not loaded: they clean NPU
devices up or patch the reference's internals (its interpreter's launcher), which do not exist here. A case that
reaches another torch_npu feature (`npu_format_cast`, the profiler, streams, graphs) or needs HCCL is listed as
needing that NPU-only feature, not run, with the feature named; so is a case that reads what only NPU tooling
writes or does (`_NPU_TOOLING`, each case listed by hand: the NPU's per-core traces and device performance dump,
msprof, its core limits). The Python processes a case starts itself (a script, a multiprocessing child)
get the same placement mapping (tests/st/reference_child/sitecustomize.py).

Golden or behaviour. A case is a golden case when it compares results (a call whose name contains "allclose",
"assert_close", "isclose", "equal", "compare" or "golden", in the case or in the suite's functions it calls) and
raises no expected error; every other case (a `pytest.raises`, an option or restriction it checks) is a behaviour
case. The summary reports passed / runnable for each kind.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_COMPARE = ("allclose", "assert_close", "isclose", "equal", "compare", "golden")
_NPU_ONLY_RE = re.compile(r"NPU-only torch_npu feature: ([\w.]+)")
_DISTRIBUTED = ("hccl", "HCCL")
# Cases that read what only NPU tooling writes or does, each read and listed here by hand (id prefix), with the texts
# its code must name for the entry to apply (so that an entry goes stale visibly rather than hiding a changed case):
# artefacts only an NPU run writes, a CANN tool, the NPU's own core control. The simulator has no such cores, traces
# or tools, so writing those files would be made up: the case is listed with the feature, not run.
_TRACES = ("the NPU's per-core task traces (tilefwk_L1_prof_data.json, merged_swimlane.json, dyn_topo.txt: the tasks "
           "its AIC / AIV cores ran)")
_PERF_DUMP = ("the NPU's device performance dump (DUMP_DEVICE_PERF: machine_trace_perf_data_*.json of its AICPU / "
              "AICore cores)")
_NPU_TOOLING = (
    ("st/test_control_cores.py::test_rts_", ("set_device_limit", "set_stream_limit"),
     "the NPU's core limits (torch.npu.set_device_limit / set_stream_limit: AIC / AIV cores per device or stream)"),
    ("st/test_control_cores.py::test_not_control_cores", ("tilefwk_L1_prof_data.json",), _TRACES),
    ("st/test_debug_mode_new_front.py::test_debug_mode", ("tilefwk_L1_prof_data.json", "dyn_topo.txt"), _TRACES),
    ("st/test_perf.py::test_perf", ("tilefwk_L1_prof_data.json", "dyn_topo.txt"), _TRACES),
    ("st/test_dump_perf.py::test_dump_perf", ("machine_trace_perf_data",), _PERF_DUMP),
    ("st/test_swim_line.py::test_swim", ("machine_trace_perf_data",), _PERF_DUMP),
    ("st/test_profiling.py::test_msprof_", ("msprof",), "msprof (CANN's command-line profiler)"),
    ("st/test_pmu_trace.py::test_pmu_trace_", ("kernel_aicore", "mark_stamp"),
     "the NPU's AICore kernel sources with PMU trace stamps (<LogTopFolder>/kernel_aicore/*.cce, mark_stamp)"),
)


def _uses_jit(text: str) -> bool:
    return "frontend.jit" in text or "pypto.jit" in text


def _local_imports(path: Path, tree: ast.Module, root: Path) -> list[Path]:
    """The suite's own modules a file imports (relative imports and sibling modules)."""
    found = []
    for n in ast.walk(tree):
        names = []
        if isinstance(n, ast.ImportFrom):
            base = path.parent
            for _ in range(max(n.level - 1, 0)):
                base = base.parent
            mod = (n.module or "").split(".") if n.module else []
            names = [(base, mod)] + [(base, mod + [a.name]) for a in n.names]
        elif isinstance(n, ast.Import):
            names = [(path.parent, a.name.split(".")) for a in n.names]
        for base, parts in names:
            if not parts:
                continue
            for b in [base] + [p for p in path.parents if root in p.parents or p == root]:
                c = b.joinpath(*parts).with_suffix(".py")
                if c.is_file():
                    found.append(c)
                    break
    return found


def _functions(tree: ast.Module) -> dict[str, ast.AST]:
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault(n.name, n)
    return out


def _called_names(fn: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            f = n.func
            names.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
        elif isinstance(n, ast.Name):
            names.add(n.id)  # a helper passed along (parametrized kernels, callbacks)
    return names


def _closure(case: ast.AST, funcs: dict[str, ast.AST]) -> tuple[set[str], list[ast.AST]]:
    """The names a case calls or passes along, with the suite's functions among them followed, and those functions."""
    seen, todo, calls, found = set(), [case], set(), []
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        found.append(fn)
        names = _called_names(fn)
        calls |= names
        todo += [funcs[c] for c in names if c in funcs]
    return calls, found


def npu_tooling(case_id: str, case: ast.AST, funcs: dict[str, ast.AST]) -> str:
    """The NPU tooling `_NPU_TOOLING` lists for this case, or '' (also when the case no longer names it)."""
    entry = next((e for e in _NPU_TOOLING if case_id.startswith(e[0])), None)
    if entry is None:
        return ""
    calls, fns = _closure(case, funcs)
    texts = calls | {n.value for fn in fns for n in ast.walk(fn) if isinstance(n, ast.Constant)
                     and isinstance(n.value, str)} | {n.attr for fn in fns for n in ast.walk(fn)
                                                      if isinstance(n, ast.Attribute)}
    return entry[2] if any(m in t for t in texts for m in entry[1]) else ""


def classify(case: ast.AST, funcs: dict[str, ast.AST]) -> str:
    """'golden' or 'behaviour' (see the module docstring)."""
    calls, _ = _closure(case, funcs)
    if "raises" in calls:
        return "behaviour"
    low = {c.lower() for c in calls}
    return "golden" if any(w in c for c in low for w in _COMPARE) else "behaviour"


def list_cases(root: Path) -> list[dict]:
    cases = []
    for f in sorted(root.rglob("test_*.py")):
        rel = f.relative_to(root)
        if rel.parts[0] not in ("st", "ut"):
            continue
        text = f.read_text(encoding="utf-8")
        tree = ast.parse(text)
        local = _local_imports(f, tree, root)
        texts = [text] + [p.read_text(encoding="utf-8") for p in local]
        if not any(_uses_jit(t) for t in texts):
            continue
        funcs = {}
        for p in reversed(local):
            funcs.update(_functions(ast.parse(p.read_text(encoding="utf-8"))))
        funcs.update(_functions(tree))
        needs = "HCCL (distributed communication)" if any(w in t for t in texts for w in _DISTRIBUTED) else ""
        tests = [(n.name, n) for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        for c in tree.body:
            if isinstance(c, ast.ClassDef) and c.name.startswith("Test"):
                tests += [(f"{c.name}::{n.name}", n) for n in c.body
                          if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        last = dict(tests)  # a name defined twice: pytest runs the last definition
        for name, node in last.items():
            case_id = f"{rel}::{name}"
            cases.append({"id": case_id, "kind": classify(node, funcs),
                          "needs": needs or npu_tooling(case_id, node, funcs)})
    return cases


def _outcome(out: str, rc: int) -> tuple[str, str]:
    """(status, detail) from pytest's output: pass, fail, skip, npu_only, timeout."""
    m = _NPU_ONLY_RE.search(out)
    if m:
        return "npu_only", m.group(1)
    summary = [ln for ln in out.splitlines() if re.search(r"\b(passed|failed|error|skipped|no tests ran)\b", ln)]
    last = summary[-1] if summary else ""
    if rc == 0 and "passed" in last:
        return "pass", last.strip("= ")
    if rc == 0 and "skipped" in last:
        return "skip", last.strip("= ")
    errs = [ln for ln in out.splitlines() if ln.startswith("E ") or re.match(r"^\w*(Error|Exception)\b", ln)]
    return "fail", (errs[0][2:].strip() if errs and errs[0].startswith("E ") else errs[0] if errs else last)


def run_case(root: Path, case: dict, timeout: float) -> dict:
    if case["needs"]:
        return dict(case, status="npu_only", detail=case["needs"], secs=0.0)
    # ut/ holds packages without an __init__.py above them (`from kirin.common import ...`)
    # reference_child/: the processes the case starts itself get the same placement mapping (its sitecustomize)
    path = [str(_HERE), str(_HERE / "reference_child"), str(root / "ut"), os.environ.get("PYTHONPATH", "")]
    # the verify log (pypto_impl.LogTopFolder) goes to a folder of the case's own, not into the suite's folder
    out_dir = tempfile.mkdtemp(prefix="pypto-ref-output-")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p), TILE_FWK_OUTPUT_DIR=out_dir)
    env.pop("ASCEND_HOME_PATH", None)
    cmd = [sys.executable, "-m", "pytest", case["id"], "-q", "-p", "reference_shim", "--noconftest",
           "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly", "--rootdir", str(root),
           "-W", "ignore::DeprecationWarning", "--tb=short", "--no-header"]
    t0 = time.time()
    # its own session, so that a timeout ends the case's compilers too, not only its pytest
    p = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        status, detail = _outcome(out, p.returncode)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        status, detail = "timeout", f"no result after {timeout:.0f}s (killed)"
    shutil.rmtree(out_dir, ignore_errors=True)
    return dict(case, status=status, detail=detail, secs=time.time() - t0)


def report(results: list[dict], verbose: bool) -> None:
    for r in results:
        if r["status"] == "npu_only":
            continue
        tag = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP", "timeout": "TIME"}[r["status"]]
        print(f"{tag}  [{r['kind']}]  {r['id']}  ({r['secs']:.1f}s)")
        if r["status"] != "pass" and verbose:
            print(f"      {r['detail'][:300]}")
    features: dict[str, list[str]] = {}
    for r in results:
        if r["status"] == "npu_only":
            features.setdefault(r["detail"], []).append(r["id"])
    print("\nnot run, NPU-only features:")
    for feat, ids in sorted(features.items()):
        print(f"  {feat}: {len(ids)} case(s)" + ("".join(f"\n      {i}" for i in ids) if verbose else ""))
    print()
    for kind in ("golden", "behaviour"):
        runnable = [r for r in results if r["kind"] == kind and r["status"] not in ("npu_only", "skip")]
        passed = sum(r["status"] == "pass" for r in runnable)
        print(f"{kind:9s} cases: {passed} of {len(runnable)} runnable pass")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tests", type=Path, help="the reference project's python/tests folder")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-k", "--filter", action="append", default=[],
                    help="only cases whose id contains this (repeatable: any of them)")
    ap.add_argument("--exclude", action="append", default=[], help="not the cases whose id contains this (repeatable)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print why each case failed")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--list", action="store_true", help="list the cases and their kind, run nothing")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args(argv)
    root = args.tests.resolve()
    cases = [c for c in list_cases(root) if (not args.filter or any(f in c["id"] for f in args.filter))
             and not any(x in c["id"] for x in args.exclude)]
    if args.list:
        for c in cases:
            print(f"[{c['kind']}] {c['id']}" + (f"  (needs {c['needs']})" if c["needs"] else ""))
        return 0
    def run_and_show(c):
        r = run_case(root, c, args.timeout)
        why = f"\n      {r['detail'][:300]}" if args.verbose and r["status"] in ("fail", "timeout") else ""
        print(f"[{r['status']}] {r['id']} ({r['secs']:.1f}s){why}", file=sys.stderr, flush=True)  # progress
        return r

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(run_and_show, cases))
    report(results, args.verbose)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["status"] in ("pass", "npu_only") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
