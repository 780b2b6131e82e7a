"""Where a hit's time goes: bind / read tensors / guards / key / lookup / launch, from counters compiled into a
second build of the extension (`pypto._core_prof`, loaded instead of `pypto._core` when PYPTO_PROFILE=1 is set
before `import pypto`; the normal build has no counters and costs nothing for them).

The harness runs `python -m pypto.bench --child breakdown N` with PYPTO_PROFILE=1: the child makes one call (the
miss), then in 21 rounds resets the counters, makes N/21 hits of the main call and reads them. Stage times are
TSC-timed totals over a round's hits divided by its calls; the figure is the per-stage median over the clean
rounds (wall time within 5 % of the thread's CPU time: no other process took the core), over all rounds when
fewer than 3 are clean. The profiled build's own per-call wall time is reported
next to them (the counters' reads cost a little; the normal build's figure is in the main table).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

STAGES = ("bind", "read", "guards", "key", "lookup", "launch")
ROUNDS = 21
CLEAN = 1.05  # as in timing.py: wall within 5 % of the thread's CPU time


def child(n: int) -> None:
    from ..native import core as _core
    from . import kernels as K

    res: dict = {"available": False}
    if not getattr(_core, "PROFILED", False) or not hasattr(_core, "profile_counters"):
        res["reason"] = ("this pypto has no profiled build of the extension (pypto._core.PROFILED is "
                         f"{getattr(_core, 'PROFILED', 'missing')} with PYPTO_PROFILE=1)")
        print(json.dumps(res))
        return
    a, b, c, out = K.make_tensors(4)
    k = K.main_k
    k(a, b, c, out, m=2, n=3)
    for _ in range(1000):  # warm-up
        k(a, b, c, out, m=2, n=3)
    per_round = max(1, n // ROUNDS)
    kept, all_rounds = [], []
    for _ in range(ROUNDS):  # rounds, so that the ones another process interrupted can be left out
        _core.profile_reset()
        w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        for _ in range(per_round):
            k(a, b, c, out, m=2, n=3)
        wall, cpu = time.perf_counter_ns() - w0, time.thread_time_ns() - c0
        cnt = _core.profile_counters()
        if cnt.get("calls", 0) != per_round:
            res["reason"] = f"the counters saw {cnt.get('calls', 0)} calls, the child made {per_round}"
            print(json.dumps(res))
            return
        r = {s: cnt[s] / per_round for s in STAGES}
        r["wall"] = wall / per_round
        all_rounds.append(r)
        if cpu > 0 and wall / cpu <= CLEAN:
            kept.append(r)
    use = kept if len(kept) >= 3 else all_rounds
    stages = {s: statistics.median(r[s] for r in use) for s in STAGES}
    res.update(available=True, calls=per_round * ROUNDS, rounds=ROUNDS, clean_rounds=len(kept),
               stages_ns=stages, sum_ns=sum(stages.values()),
               profiled_wall_ns=statistics.median(r["wall"] for r in use))
    print(json.dumps(res))


def run(n: int) -> dict:
    env = dict(os.environ, PYPTO_PROFILE="1")
    proc = subprocess.run([sys.executable, "-m", "pypto.bench", "--child", "breakdown", str(n)], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit status {proc.returncode}"
        return {"available": False, "reason": f"the profiled build could not run (PYPTO_PROFILE=1 child: {last})"}
    return json.loads(proc.stdout.strip().splitlines()[-1])
