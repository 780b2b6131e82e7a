"""pypto's row reductions against torch's in named cache states, one thread, thread CPU time, medians.

    python benchmarks/reduction_cache_states.py [ROW ...]      (default: sum / amax / prod fp32 4096x1024)

Each row of the op sweep (pypto/bench/op_sweep.py) is timed alternately with torch's call in four states: warm (an
untimed call of itself right before), after 16 MiB of other traffic then a warm call, after 16 MiB (no warm
call), and after 32 MiB then a warm call. The sweep's own protocol (kernel_speed.py) is one of these mixed with
the other rows' traffic; this shows how much of a row's ratio is the cache state it is measured in."""
import statistics
import sys
import time

import torch

import pypto
from pypto.bench import op_sweep


def _cpu(fn) -> float:
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def main(names: list[str], reps: int = 21) -> None:
    torch.set_num_threads(1)
    cases = {c[0]: c for c in op_sweep.cases()}
    src, dst = torch.ones(4 << 20), torch.empty(4 << 20)          # 16 MiB of other traffic per copy

    def traffic(n):
        for _ in range(n):
            dst.copy_(src)

    states = {"warm": (0, True), "16 MiB + warm": (1, True), "16 MiB, cold call": (1, False),
              "32 MiB + warm": (2, True)}
    for name in names:
        _n, body, args, tfn, _ref, _out, _moved, *_tol = cases[name]
        body, consts = body if isinstance(body, tuple) else (body, {})
        k = pypto.frontend.jit(body, runtime_options={"sim_threads": 1})
        k(*args, **consts)
        ours = lambda: k(*args, **consts)                          # noqa: E731
        for state, (copies, warm) in states.items():
            t = {"pypto": [], "torch": []}
            for _ in range(reps):
                for who, fn in (("pypto", ours), ("torch", tfn)):
                    traffic(copies)
                    if warm:
                        fn()
                    t[who].append(_cpu(fn))
            p, q = statistics.median(t["pypto"]) * 1e3, statistics.median(t["torch"]) * 1e3
            print(f"{name:24s} {state:18s} pypto {p:.3f} ms  torch {q:.3f} ms  {p / q:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:] or ["sum fp32 4096x1024", "amax fp32 4096x1024", "prod fp32 4096x1024"])
