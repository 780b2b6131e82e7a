"""Run a function on N ranks (spawned processes joined into a gloo group), with a bounded wait in the parent.

`run_ranks(fn, world, *args)` returns each rank's return value (rank order); a rank that raises makes the whole
call raise with every rank's traceback; a rank still running at the deadline is killed and named, so no test
can hang. `fn` must be importable (a top-level function of a module on the path)."""
from __future__ import annotations

import datetime
import os
import pickle
import queue as queue_mod
import socket
import time
import traceback

import torch.multiprocessing as mp

DEADLINE_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn, rank, world, port, queue, args):
    import torch.distributed as dist
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
        out = fn(rank, world, *args)
        # by value (plain pickle): torch's queue would pass tensors as shared memory the parent reads after exit
        queue.put((rank, "ok", pickle.dumps(out)))
    except BaseException:
        queue.put((rank, "error", traceback.format_exc()))
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            pass


def run_ranks(fn, world: int, *args, deadline: float = DEADLINE_S, allow_exit: tuple = ()):
    """fn(rank, world, *args) on `world` ranks; ranks in `allow_exit` may die without reporting (result None)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_child, args=(fn, r, world, port, queue, args), daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    results, errors = {}, {}
    end = time.monotonic() + deadline
    expected = world - len(allow_exit)
    while len(results) + len(errors) < world and time.monotonic() < end:
        try:
            rank, status, payload = queue.get(timeout=0.5)
        except queue_mod.Empty:
            if all(not p.is_alive() for p in procs) and queue.empty():
                if len(results) + len(errors) >= expected:
                    break
                time.sleep(0.2)
                if queue.empty():
                    break
            continue
        if status == "ok":
            results[rank] = pickle.loads(payload)
        else:
            errors[rank] = payload
    for p in procs:
        p.join(timeout=max(0.1, end - time.monotonic()))
    hung = [r for r, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(5)
    missing = [r for r in range(world) if r not in results and r not in errors and r not in allow_exit]
    if errors or hung or missing:
        parts = [f"rank {r} failed:\n{t}" for r, t in sorted(errors.items())]
        if hung:
            parts.append(f"ranks {hung} were still running after {deadline} s and were killed")
        if missing:
            parts.append(f"ranks {missing} exited without a result (exit codes "
                         f"{[procs[r].exitcode for r in missing]})")
        raise AssertionError("\n".join(parts))
    return [results.get(r) for r in range(world)]


__all__ = ["run_ranks", "free_port"]
