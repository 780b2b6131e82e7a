"""The harness: command line, the run, the result dict (schema.py documents it).

    python -m pypto.bench                      # every scenario set and peer, callgrind, breakdown, cold paths
    python -m pypto.bench --quick              # 7 rounds, small tables, no callgrind / breakdown / cold paths (seconds a set)
    python -m pypto.bench --set tensors --set peers --json out.json --plot plots/
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import shlex
import sys
import time

from . import breakdown, callgrind, cold, peers, report, scenarios, schema, timing

ALL_SETS = ("peers",) + scenarios.SETS


def _best(st: dict) -> float:
    """The wall figure ratios use: the clean median when the row has one, else the median over all loops."""
    return st["clean_median_ns"] if st["clean_median_ns"] is not None else st["median_ns"]


def _ratios(rows: list[timing.Row], stats: dict) -> tuple[list[dict], str | None]:
    """Row dicts with ratios: peers to the fastest peer doing the work (floors excluded), sets to their first row."""
    fastest = None
    workers = [r for r in rows if r.group == "peers" and not r.floor]
    if workers:
        fastest = min(workers, key=lambda r: _best(stats[r.name])).name
    first: dict[str, str] = {}
    out = []
    for r in rows:
        first.setdefault(r.group, r.name)
        ref = None if r.group == "noise" else fastest if r.group == "peers" else first[r.group]
        st = stats[r.name]
        d = {"name": r.name, "group": r.group, "x": r.x, "note": r.note, "floor": r.floor, **st,
             "ratio": None if ref is None else _best(st) / _best(stats[ref]),
             "cpu_ratio": None if ref is None else st["cpu_median_ns"] / stats[ref]["cpu_median_ns"], "ratio_to": ref}
        if r.extra:
            d["extra"] = r.extra
        out.append(d)
    return out, fastest


def run(sets=ALL_SETS, peer_names=tuple(peers.PEERS), quick: bool = False, rounds: int | None = None,
        target_loop_s: float | None = None, do_callgrind: bool | None = None, do_breakdown: bool | None = None,
        do_cold: bool | None = None, cg_n=(2000, 12000), command: str = "", progress=None) -> dict:
    """Measure and return the result dict (schema.SCHEMA). None for a do_* flag: on unless quick."""
    import numpy as np

    import pypto

    t_start = time.perf_counter()
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    say = progress or (lambda msg: None)
    # short loops, many rounds: on shared cores a 2 ms loop often runs within one time slice, and the median over
    # many rounds shrugs off the rounds another process interrupted
    rounds = rounds or (7 if quick else 31)
    target_loop_s = target_loop_s or 0.002
    errors: dict[str, str] = {}
    rows: list[timing.Row] = []
    missing: dict[str, str] = {}
    if "peers" in sets:
        say(f"peers: building {', '.join(peer_names)}")
        prows, missing = peers.build_peers(peer_names)
        rows += prows
    for s in sets:
        if s != "peers":
            say(f"scenario set {s}: compiling its kernels")
            rows += scenarios.BUILDERS[s](quick)
    rows.append(timing.noise_row())
    say(f"timing {len(rows)} rows, {rounds} interleaved rounds")
    gc.collect()
    stats, noise = timing.measure(rows, rounds, target_loop_s, single_calls=2000 if quick else 20000)
    row_dicts, fastest = _ratios(rows, stats)
    from .capture_step import annotate

    for d in row_dicts:
        annotate(d, _best(d))

    cg = None
    if do_callgrind is None:
        do_callgrind = not quick and not callgrind.available()
    if do_callgrind:
        say("callgrind: two processes under valgrind (about 2 minutes)")
        try:
            cg = callgrind.run(*cg_n)
        except Exception as e:  # report, never hide the timing results
            errors["callgrind"] = f"{type(e).__name__}: {e}"
    bd = None
    if do_breakdown if do_breakdown is not None else not quick:
        say("breakdown: the profiled build in a subprocess")
        bd = breakdown.run(100_000 if not quick else 20_000)
    cd = None
    if do_cold if do_cold is not None else not quick:
        say("cold paths: fresh processes, an empty and a warm cache")
        try:
            cd = cold.run()
        except Exception as e:
            errors["cold"] = f"{type(e).__name__}: {e}"
    torch = sys.modules.get("torch")
    meta = {"command": command, "python": platform.python_version(), "pypto": pypto.__version__,
            "torch": getattr(torch, "__version__", None), "numpy": np.__version__, "cpus": os.cpu_count(),
            "machine": platform.machine(), "pypto_march": os.environ.get("PYPTO_MARCH", "native"), "quick": quick,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "rounds": rounds, "target_loop_s": target_loop_s, "sets": list(sets), "peers": list(peer_names),
            "started_utc": started, "total_seconds": time.perf_counter() - t_start}
    res = {"schema": schema.SCHEMA_ID, "meta": meta, "noise": noise, "rows": row_dicts,
           "peers": {"fastest": fastest, "missing": missing}, "callgrind": cg, "breakdown": bd, "cold": cd,
           "errors": errors}
    problems = schema.errors(res)
    if problems:  # a harness bug: say so loudly rather than write a file that breaks its documented schema
        raise RuntimeError("pypto.bench: the result does not match its schema:\n  " + "\n  ".join(problems))
    return res


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pypto.bench", description="pypto per-call host-latency harness",
                                epilog="sets: " + ", ".join(ALL_SETS) + "; peers: " + ", ".join(peers.PEERS))
    p.add_argument("--quick", action="store_true",
                   help="7 rounds, tables of 1/100 entries, no callgrind/breakdown/cold paths (a few seconds a set)")
    p.add_argument("--set", dest="sets", action="append", choices=ALL_SETS, metavar="SET",
                   help="a scenario set to run (repeatable; default: all)")
    p.add_argument("--peer", dest="peers", action="append", metavar="PEER",
                   help="a peer for the 'peers' set (repeatable; default: all). An unknown or uninstalled peer "
                        "is reported as not installed")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON (schema: docs/bench.md)")
    p.add_argument("--plot", metavar="DIR", help="write PNG plots (needs matplotlib)")
    p.add_argument("--plain", action="store_true", help="plain-text tables even when rich is installed")
    p.add_argument("--kernels", action="store_true",
                   help="kernel speed instead: pypto vs torch eager vs a copy (pypto/bench/kernel_speed.py)")
    p.add_argument("--distributed", action="store_true",
                   help="multi-rank instead: one-shot all-reduce kernel vs torch.distributed (gloo), put+signal+wait "
                        "latency (pypto/bench/distributed.py)")
    p.add_argument("--dist-world", dest="dist_world", type=int, action="append", metavar="N",
                   help="with --distributed: this many ranks (repeatable; default 2 and 4)")
    p.add_argument("--dist-kib", dest="dist_kib", type=int, action="append", metavar="KIB",
                   help="with --distributed: this tensor size in KiB (repeatable; default 4 KiB to 64 MiB)")
    p.add_argument("--only", dest="only", action="append", metavar="TEXT",
                   help="with --kernels: only the kernels whose name contains TEXT (repeatable)")
    p.add_argument("--threads", dest="threads", type=int, action="append", metavar="N",
                   help="with --kernels: this thread count (repeatable; default: 1 and all cores)")
    p.add_argument("--cpu", action="store_true",
                   help="with --kernels: time by the calling thread's CPU time (a loaded machine; 1-thread rows only)")
    p.add_argument("--sweep", action="store_true",
                   help="with --kernels: also the op sweep (every elementwise op and reduction x fp32/bf16 x two "
                        "shapes, and model-shaped kernels: pypto/bench/op_sweep.py)")
    p.add_argument("--no-compile", dest="no_compile", action="store_true",
                   help="with --kernels: skip the compile-time table")
    for flag, what in (("callgrind", "instruction counts under valgrind"),
                       ("breakdown", "per-stage breakdown (PYPTO_PROFILE=1 build)"),
                       ("cold", "import time and first calls in fresh processes")):
        p.add_argument(f"--{flag}", dest=flag, action="store_true", default=None, help=f"{what} (default: on "
                       "unless --quick)")
        p.add_argument(f"--no-{flag}", dest=flag, action="store_false")
    p.add_argument("--rounds", type=int, help="interleaved rounds (default 31; 7 with --quick)")
    p.add_argument("--loop-ms", type=float, help="target time of one timed loop in ms (default 2)")
    p.add_argument("--cg-n", type=int, nargs=2, default=(2000, 12000), metavar=("N1", "N2"))
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    return p


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    # every measured hit uses the fast torch reader (the default builds it in the background); children inherit it
    os.environ.setdefault("PYPTO_TORCH_READER_WAIT", "1")
    if args.kernels:
        from . import kernel_speed
        return kernel_speed.main(args)
    if args.distributed:
        from . import distributed
        return distributed.main(args)
    if args.child:
        kind, *rest = args.child
        {"callgrind": lambda: callgrind.child(int(rest[0])), "breakdown": lambda: breakdown.child(int(rest[0])),
         "cold": cold.child}[kind]()
        return
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise SystemExit("pypto.bench: --plot needs matplotlib (pip install matplotlib; from a checkout: pip install '.[bench]')") from None
    res = run(sets=tuple(args.sets or ALL_SETS), peer_names=args.peers or list(peers.PEERS),
              quick=args.quick, rounds=args.rounds, target_loop_s=args.loop_ms and args.loop_ms / 1e3,
              do_callgrind=args.callgrind, do_breakdown=args.breakdown, do_cold=args.cold, cg_n=tuple(args.cg_n),
              command="python -m pypto.bench " + shlex.join(argv),
              progress=lambda msg: print(f"[pypto.bench] {msg}", file=sys.stderr, flush=True))
    report.print_report(res, plain=args.plain)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    if args.plot:
        for path in report.plot(res, args.plot):
            print(f"wrote {path}")
