"""A tool (not a test; pytest does not collect it): run the reference pypto's example programs, unmodified, in sim mode.

    python tests/st/run_reference_examples.py /tmp/ref/examples [-j 2] [-k FILTER] [-v]

Get the examples from the reference project (hicann/pypto) first, e.g.
    git --git-dir=<mirror of hicann/pypto> archive HEAD examples | tar -x -C /tmp/ref

What "pass" means. Each example file holds one or more sub-examples (the keys of its `examples = {...}` dict in
`main`; a file without one is a single example). Programs without a `--run_mode` option (aclgraph, cost_model)
need an NPU and are listed as not run. Each sub-example runs in its own child process, exactly as a user
would run it: `python file.py <id> --run_mode sim` (or `-t <id> -m sim` for the files that take `-t/--tests`),
with `__name__ == "__main__"`. It passes when the process exits with status 0 **and** every golden comparison it
reaches was executed.

How the NPU-only golden checks are forced on. The reference examples compare with their golden data only on NPU,
e.g. `if global_run_mode == pypto.RunMode.NPU: assert_allclose(...)` or `if "npu" in device: assert_close(...)`,
because the reference simulator does not compute values. Ours does, so the child process does not exec the file
as is: it parses it and, for every `if` statement whose test mentions the NPU run mode (`RunMode.NPU`, the string
"npu") **and** whose body contains a comparison (an `assert` statement or a call whose name contains "assert",
"allclose" or "compare"), replaces the test by `True` and drops its `else` branch. Nothing else changes: the run
mode given to the kernels stays SIM, device strings stay "cpu", and `if`s that only synchronise a device or pick
the run mode are left alone. The rewritten tree keeps the file's line numbers, so a traceback points into the
original file. The child counts the forced blocks it entered; the report shows that count per example
("golden=N"), so a pass with golden=0 is visible as a run that compared nothing under an NPU gate (it may still
compare unconditionally, as hello_world does).
"""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

_GOLDEN_WORDS = ("assert", "allclose", "compare")
_COUNTER = "__pypto_forced_golden__"


def _mentions_npu(test: ast.AST) -> bool:
    for n in ast.walk(test):
        if isinstance(n, ast.Attribute) and n.attr == "NPU":
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.lower() == "npu":
            return True
    return False


def _compares(body: list[ast.stmt]) -> bool:
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Assert):
                return True
            if isinstance(n, ast.Call):
                f = n.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if any(w in name.lower() for w in _GOLDEN_WORDS):
                    return True
    return False


class _ForceGolden(ast.NodeTransformer):
    def __init__(self):
        self.forced = 0

    def visit_If(self, node: ast.If):
        self.generic_visit(node)
        if _mentions_npu(node.test) and _compares(node.body):
            self.forced += 1
            count = ast.parse(f"{_COUNTER}[0] += 1").body[0]
            node.test = ast.copy_location(ast.Constant(True), node.test)
            node.body = [ast.copy_location(count, node.body[0])] + node.body
            node.orelse = []
            ast.fix_missing_locations(node)
        return node


def takes_run_mode(path: Path) -> bool:
    """Whether the program has a sim mode (a `--run_mode` option); the others need an NPU and are not run."""
    text = path.read_text(encoding="utf-8")
    return "'--run_mode'" in text or '"--run_mode"' in text


def list_examples(path: Path) -> tuple[list[str], str]:
    """(sub-example ids, how to select one: 'positional' | 'tests' | 'none')."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    keys, style = [], "none"
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict) and any(
                isinstance(t, ast.Name) and t.id == "examples" for t in n.targets):
            keys = [k.value for k in n.value.keys if isinstance(k, ast.Constant)]
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "add_argument":
            names = [a.value for a in n.args if isinstance(a, ast.Constant)]
            if "example_id" in names:
                style = "positional"
            elif "--tests" in names or "-t" in names:
                style = "tests"
    return keys, style


def _run_one_in_this_process(path: str, argv: list[str]) -> None:
    """The child: exec the example with its golden gates forced on, as `__main__`."""
    src = Path(path).read_text(encoding="utf-8")
    tree = _ForceGolden().visit(ast.parse(src, path))
    code = compile(tree, path, "exec", dont_inherit=True)  # not this file's __future__ flags
    counter = [0]
    sys.argv = [path] + argv
    sys.path.insert(0, str(Path(path).parent))
    # A real module object as __main__ (dataclasses, pickling and inspect look the module up in sys.modules).
    main_mod = types.ModuleType("__main__")
    main_mod.__file__ = path
    main_mod.__dict__[_COUNTER] = counter
    sys.modules["__main__"] = main_mod
    try:
        exec(code, main_mod.__dict__)
    finally:
        print(f"\n[run_reference_examples] golden={counter[0]}", flush=True)


def run_example(path: Path, example_id: str | None, style: str, timeout: float) -> dict:
    argv = []
    if example_id is not None:
        argv = [example_id] if style == "positional" else ["-t", example_id]
    argv += ["--run_mode", "sim"]
    cmd = [sys.executable, __file__, "--child", str(path), "--"] + argv
    t0 = time.time()
    # the verify log (pypto_impl.LogTopFolder) goes to a folder of the example's own, not into the caller's folder
    out_dir = tempfile.mkdtemp(prefix="pypto-ref-output-")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, TILE_FWK_OUTPUT_DIR=out_dir))
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired:
        out, rc = f"TIMEOUT after {timeout}s", -1
    shutil.rmtree(out_dir, ignore_errors=True)
    golden = 0
    for line in out.splitlines():
        if line.startswith("[run_reference_examples] golden="):
            golden = int(line.split("=", 1)[1])
    last = [ln for ln in out.strip().splitlines() if ln.strip() and not ln.startswith("[run_reference")]
    return {"path": path, "id": example_id, "rc": rc, "golden": golden, "secs": time.time() - t0,
            "tail": last[-1] if last else ""}


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        _run_one_in_this_process(argv[1], argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", type=Path, help="the reference project's examples/ folder")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("-k", "--filter", default="", help="only examples whose 'path::id' contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the last line of each failure")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    jobs = []
    for f in sorted(args.examples.rglob("*.py")):
        if f.name in ("validate_examples.py", "__init__.py"):
            continue
        if not takes_run_mode(f):
            print(f"not run: {f.relative_to(args.examples)} (no --run_mode option: an NPU-only program)")
            continue
        ids, style = list_examples(f)
        for i in (ids or [None]):
            label = f"{f.relative_to(args.examples)}" + (f"::{i}" if i is not None else "")
            if args.filter in label:
                jobs.append((label, f, i, style))
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda j: (j[0], run_example(j[1], j[2], j[3], args.timeout)), jobs))
    passed = 0
    for label, r in results:
        ok = r["rc"] == 0
        passed += ok
        print(f"{'PASS' if ok else 'FAIL'}  {label}  golden={r['golden']}  ({r['secs']:.1f}s)")
        if not ok and args.verbose:
            print(f"      {r['tail'][:300]}")
    print(f"\n{passed} of {len(results)} reference examples pass (sim mode, golden checks forced on)")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
