"""Wall-time measurement: interleaved rounds of timed loops, per-call percentiles, and a CPU-frequency probe.

A row is one call statement plus its arguments. Each row's loop is built by `timeit.Timer` with every name the
statement uses bound to a local of the loop (so every row pays the same loop overhead: FOR_ITER + LOAD_FAST).
Per round, every row runs once, in an order rotated by one each round, so drift (frequency, other load on the
shared cores) lands on all rows alike. GC is off for the whole measurement; every row is warmed up first.

Figures per row:
  median_ns / p10_ns / p90_ns  the per-call mean of one loop of `number` calls, over rounds (the robust figure)
  cpu_median_ns                the same loops timed with this thread's CPU clock: immune to preemption by other
                               processes, blind to work done on other threads (jax, warp, inductor)
  clean_median_ns              the median over the clean loops only: those whose wall time is within 5 % of their
                               thread CPU time (no other process took the core); null with fewer than 3
  p99_ns                       99th percentile of individually timed calls (the tail), with the clock's own
                               cost (an empty timed statement) subtracted; single_median_ns likewise
"""
from __future__ import annotations

import gc
import os
import statistics
import time
import timeit
from dataclasses import dataclass, field
from typing import Any, Callable


class _Stamp:
    """A timeit timer reading two clocks: the wall clock and this thread's CPU time (which stops while another
    process has the core: wall / CPU above 1 says how much of a loop was lost to preemption)."""

    __slots__ = ("wall", "cpu")

    def __init__(self):
        self.wall = time.perf_counter_ns()
        self.cpu = time.thread_time_ns()

    def __sub__(self, start: "_Stamp") -> tuple[int, int]:
        return self.wall - start.wall, self.cpu - start.cpu


@dataclass
class Row:
    """One timed call. `args` binds the names `stmt` uses; `group` is the scenario set; `x` the set's variable."""

    name: str
    group: str
    stmt: str
    args: dict[str, Any]
    x: Any = None
    note: str = ""
    floor: bool = False  # a peer that does none of the work (the no-ops): never the reference of ratios
    number: int = 0  # calls per loop, calibrated
    extra: dict = field(default_factory=dict)

    def _timer(self, stmt: str, extra_names: dict | None = None, timer=time.perf_counter) -> timeit.Timer:
        names = dict(self.args, **(extra_names or {}))
        setup = ", ".join(names) + ", = _args" if names else "pass"
        return timeit.Timer(stmt, setup=setup, timer=timer, globals={"_args": tuple(names.values())})

    def loop(self) -> Callable[[int], tuple[int, int]]:
        """number -> (wall ns, this thread's CPU ns) for `number` calls."""
        return self._timer(self.stmt, timer=_Stamp).timeit

    def single(self, samples: list) -> Callable[[int], float]:
        """number -> (appends `number` individually timed calls, in ns, to samples)."""
        stmt = f"_t0 = _clock()\n{self.stmt}\n_s(_clock() - _t0)"
        return self._timer(stmt, {"_clock": time.perf_counter_ns, "_s": samples.append}).timeit


def percentile(xs, q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return float(s[0])
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _calibrate(loop, target_s: float) -> int:
    """Calls per loop so that one loop takes about target_s (at least 100)."""
    n = 100
    while True:
        t = loop(n)[0] / 1e9
        if t >= target_s / 4 or n >= 10_000_000:
            return max(100, int(n * target_s / max(t, 1e-9)))
        n *= 4


def cpu_mhz() -> list[float]:
    """Current MHz of every CPU from /proc/cpuinfo (empty where the kernel does not say)."""
    try:
        with open("/proc/cpuinfo") as f:
            return [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
    except OSError:
        return []


NOISE_ROW = "fixed integer loop (noise probe)"


def noise_row() -> Row:
    """A fixed amount of pure-Python integer work: its spread across rounds is the noise and frequency effect."""
    return Row(NOISE_ROW, "noise", "_x = 0\nfor _i in _r: _x += _i", {"_r": range(64)},
               note="64 integer additions; not a call")


def measure(rows: list[Row], rounds: int, target_s: float, single_calls: int) -> tuple[dict[str, dict], dict]:
    """Interleaved rounds over all rows; returns (name -> stats (see module docstring), noise figures)."""
    loops = {r.name: r.loop() for r in rows}
    singles: dict[str, list] = {r.name: [] for r in rows}
    single_loops = {r.name: r.single(singles[r.name]) for r in rows}
    empty: list = []
    empty_loop = Row("empty", "", "pass", {}).single(empty)
    for r in rows:  # warm-up, then calibrate the loop length
        loops[r.name](100)
        r.number = _calibrate(loops[r.name], target_s)
    samples: dict[str, list[float]] = {r.name: [] for r in rows}
    cpu: dict[str, list[float]] = {r.name: [] for r in rows}
    per_round_single = max(1, single_calls // max(rounds, 1))
    mhz_before = cpu_mhz()
    gc_was = gc.isenabled()
    gc.disable()
    t_start = time.perf_counter()
    try:
        for k in range(rounds):
            order = rows[k % len(rows):] + rows[:k % len(rows)]
            for r in order:
                wall, thread_cpu = loops[r.name](r.number)
                samples[r.name].append(wall / r.number)
                cpu[r.name].append(thread_cpu / r.number)
                single_loops[r.name](per_round_single)
            empty_loop(per_round_single)
    finally:
        if gc_was:
            gc.enable()
    seconds = time.perf_counter() - t_start
    mhz_after = cpu_mhz()
    clock_ns = statistics.median(empty) if empty else 0.0
    out = {}
    for r in rows:
        s, one = samples[r.name], singles[r.name]
        out[r.name] = {
            "median_ns": percentile(s, 0.5), "p10_ns": percentile(s, 0.1), "p90_ns": percentile(s, 0.9),
            "p99_ns": max(0.0, percentile(one, 0.99) - clock_ns),
            "single_median_ns": max(0.0, percentile(one, 0.5) - clock_ns),
            "cpu_median_ns": percentile(cpu[r.name], 0.5),
            **_clean(samples[r.name], cpu[r.name]),
            "number": r.number, "rounds": rounds, "single_calls": len(one),
        }
    noise = {"clock_overhead_ns": clock_ns, "measure_seconds": seconds,
             "cpu_mhz_before": _mhz_summary(mhz_before), "cpu_mhz_after": _mhz_summary(mhz_after)}
    if NOISE_ROW in out:
        st = out[NOISE_ROW]
        noise["probe_p90_over_p10"] = st["p90_ns"] / st["p10_ns"] if st["p10_ns"] else None
        noise["probe_max_over_min"] = max(samples[NOISE_ROW]) / min(samples[NOISE_ROW])
    spreads = sorted(st["p90_ns"] / st["p10_ns"] for st in out.values() if st["p10_ns"] > 0)
    noise["rows_median_p90_over_p10"] = percentile(spreads, 0.5) if spreads else None
    lost = sorted(w / c for r in rows for w, c in zip(samples[r.name], cpu[r.name]) if c > 0)
    noise["wall_over_cpu_median"] = percentile(lost, 0.5) if lost else None
    noise["wall_over_cpu_p90"] = percentile(lost, 0.9) if lost else None
    noise["preempted_loops"] = sum(1 for x in lost if x > 1.2) / len(lost) if lost else None
    noise["cpus"] = os.cpu_count()
    return out, noise


CLEAN = 1.05  # a loop is clean when its wall time is within 5 % of its thread's CPU time
MIN_CLEAN = 3


def _clean(wall: list[float], cpu: list[float]) -> dict:
    """The median over the loops no other process interrupted (null with fewer than MIN_CLEAN of them: a row
    whose work runs on other threads never looks clean)."""
    ok = [w for w, c in zip(wall, cpu) if c > 0 and w / c <= CLEAN]
    return {"clean_median_ns": percentile(ok, 0.5) if len(ok) >= MIN_CLEAN else None, "clean_rounds": len(ok)}


def _mhz_summary(xs: list[float]) -> dict | None:
    return {"min": min(xs), "max": max(xs), "mean": sum(xs) / len(xs)} if xs else None
