"""The `capture` scenario set: a model step of 32 tiny kernel launches, as 32 Python calls and as one replay.

    32 calls from Python   a function with 32 kernel-call lines (four bounded kernels on fp32[16] tensors, eight buffers;
                           the outputs of one launch are read by the next ones)
    replay from Python     `g.replay()` of the same 32 launches captured once (`pypto.capture()`)

The replay row's note gives the replay's cost per launch above the kernels' own work: (replay - kernels) / 32,
where `kernels` is the same 32 launches issued one by one from C++ (`g._native._time_kernels`: each launch's
entry called in a loop, its mean time summed). The C++ runtime's replay of the exported step is timed by the
capture_cpp.py driver in the same run (the note's last figure).
"""
from __future__ import annotations

import pypto

from .capture_cpp import cpp_step_ns
from .timing import Row

N = 16
T = pypto.Tensor([N], pypto.DT_FP32)
LAUNCHES = 32
BUFFERS = 8


# Kernels whose results stay within their inputs' range: replayed thousands of times, the values neither overflow
# nor decay into subnormals (which would change the kernels' speed).
@pypto.frontend.jit
def step_avg(x: T, y: T, out: T):
    out[:] = (x + y) * 0.5


@pypto.frontend.jit
def step_mix(x: T, y: T, out: T):
    out[:] = x * 0.75 + y * 0.25


@pypto.frontend.jit
def step_lerp(x: T, y: T, out: T, alpha: pypto.Scalar[pypto.DT_FP32]):
    out[:] = (x - y) * alpha + y


@pypto.frontend.jit
def step_sub(x: T, y: T, out: T):
    out[:] = (x - y) * 0.5 + 1.0


KERNELS = ("step_avg", "step_mix", "step_lerp", "step_sub")


def program() -> list[tuple[str, int, int, int]]:
    """(kernel, x, y, out) per launch: a fixed pattern over BUFFERS buffers; launch i reads launch i-1's output."""
    return [(KERNELS[i % 4], i % BUFFERS, (i + 3) % BUFFERS, (i + 1) % BUFFERS) for i in range(LAUNCHES)]


def step_source(prog) -> str:
    lines = ["def step(b):"]
    for name, x, y, out in prog:
        extra = ", 0.25" if name == "step_lerp" else ""
        lines.append(f"    {name}(b[{x}], b[{y}], b[{out}]{extra})")
    return "\n".join(lines)


def make_step():
    """(the Python step function, its buffers)."""
    import torch

    ns = {k: globals()[k] for k in KERNELS}
    exec(compile(step_source(program()), "<pypto.bench capture step>", "exec"), ns)  # 32 literal call lines
    g = torch.Generator().manual_seed(0)
    return ns["step"], [torch.rand(N, generator=g) + 0.5 for _ in range(BUFFERS)]


def capture_rows(quick: bool) -> list[Row]:
    import statistics

    import torch

    step, bufs = make_step()
    start = [b.clone() for b in bufs]
    eager = [b.clone() for b in bufs]
    step(eager)
    with pypto.capture() as g:
        step(bufs)
    for b, s in zip(bufs, start):
        b.copy_(s)
    g.replay()
    if not all(torch.equal(b, e) for b, e in zip(bufs, eager)):
        raise RuntimeError("pypto.bench: the captured step replayed a different result than its eager calls")
    kernels_ns = statistics.median([g._native._time_kernels(200) for _ in range(7 if quick else 21)])
    inputs = [t.clone() for t in g.tensors]
    g.replay()
    expected = [t.clone() for t in g.tensors]
    for t, i in zip(g.tensors, inputs):
        t.copy_(i)
    cpp = cpp_step_ns(g, expected, 2000 if quick else 20000)
    return [Row(f"{LAUNCHES} calls from Python", "capture", "step(b)", dict(step=step, b=bufs), x="eager"),
            Row(f"replay from Python ({LAUNCHES} launches)", "capture", "replay()", dict(replay=g.replay),
                x="replay", extra={"kernels_ns": kernels_ns, "launches": LAUNCHES, "cpp": cpp})]


def annotate(row: dict, best_ns: float) -> None:
    """The replay row's per-launch cost above the kernels' own work (in its extra and its note)."""
    ex = row.get("extra") or {}
    if "kernels_ns" not in ex:
        return
    per = (best_ns - ex["kernels_ns"]) / ex["launches"]
    ex["per_launch_overhead_ns"] = per
    cpp = ex.get("cpp", {})
    cpp_text = (f"; C++ Sequence::run {cpp['ns']:.0f} ns (this row / C++: {best_ns / cpp['ns']:.2f}x)"
                if "ns" in cpp else f"; C++ not measured: {cpp.get('skipped', '?')}")
    row["note"] = (f"{per:.1f} ns/launch above the kernels' own work ({ex['kernels_ns']:.0f} ns for the "
                   f"{ex['launches']} launches issued one by one from C++){cpp_text}")
