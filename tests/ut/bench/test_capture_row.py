"""The bench's capture set: its step replays what its 32 calls compute, and the report carries the per-launch
figure (measured, never asserted)."""
from __future__ import annotations

import math

import torch

import pypto
from pypto.bench import capture_step, harness


def test_step_program_reads_earlier_outputs_and_replays_like_eager():
    prog = capture_step.program()
    assert len(prog) == capture_step.LAUNCHES
    assert any(x == prog[i - 1][3] or y == prog[i - 1][3] for i, (_, x, y, _o) in enumerate(prog) if i)
    step, bufs = capture_step.make_step()
    ref = [b.clone() for b in bufs]
    for name, x, y, out in prog:  # the torch reference of the step
        a, b = ref[x], ref[y]
        ref[out] = {"step_avg": (a + b) * 0.5, "step_mix": a * 0.75 + b * 0.25, "step_lerp": (a - b) * 0.25 + b,
                    "step_sub": (a - b) * 0.5 + 1.0}[name]
    with pypto.capture() as g:
        step(bufs)
    for got, want in zip(bufs, ref):
        torch.testing.assert_close(got, want)


def test_capture_set_reports_per_launch_cost():
    res = harness.run(sets=("capture",), peer_names=(), quick=True, rounds=3, do_callgrind=False,
                      do_breakdown=False, do_cold=False)
    rows = {r["name"]: r for r in res["rows"] if r["group"] == "capture"}
    assert set(rows) == {"32 calls from Python", "replay from Python (32 launches)"}
    replay = rows["replay from Python (32 launches)"]
    per = replay["extra"]["per_launch_overhead_ns"]
    assert math.isfinite(per) and "ns/launch above the kernels' own work" in replay["note"]
    assert replay["extra"]["kernels_ns"] > 0 and replay["ratio_to"] == "32 calls from Python"
    cpp = replay["extra"]["cpp"]
    assert ("ns" in cpp and cpp["ns"] > 0 and "C++ Sequence::run" in replay["note"]) or "skipped" in cpp
