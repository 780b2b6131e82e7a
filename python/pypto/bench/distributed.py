"""python -m pypto.bench --distributed: one-shot all-reduce kernels against torch.distributed.all_reduce (gloo)
on the same tensors, 4 KiB to 64 MiB, on 2 and 4 ranks of this host; plus the latency of a put + signal + wait
exchange between two ranks.

Three one-shot kernels, all deterministic (every rank sums the world's tiles in rank order: bit-identical on
every rank and equal to a fixed-order sum), written with the reference's ops:
- `ring_allreduce` (pipelined): each rank SETs tile j of its tensor into slot j % R of a small ring in its own
  window and signals every rank; a rank sums tile j - L of every rank as soon as it is signalled and hands the
  slot back with a signal to its owner. The ring (R tiles of 64 KiB) stays in cache, so memory traffic is the
  tensor read once and the result written once; but every tile is a meeting point of all ranks.
- `rsag_allreduce`: each rank SETs its whole tensor into its window, a barrier, rank p sums slice p (rows/world
  rows) of every rank's window in rank order into a second window, a barrier, every rank copies the world's reduced
  slices into its output. Each rank reads the world's data once in all (not the whole world's tensors as the
  two-phase kernel does): the least memory traffic of the three, so the fastest when the ranks share few cores.
- `twophase_allreduce`: each rank SETs its whole tensor into its window, a barrier, every rank reads the world's
  tiles from the peers' windows and sums them, a barrier. Two meeting points per call, but the whole tensor
  goes through the windows (more memory traffic): better when the ranks do not each have a core.
gloo moves the same bytes over loopback TCP. Times: wall time of rank 0 from a torch.distributed barrier to the
end of the call, median of the repetitions, the three interleaved; GB/s = tensor bytes / time (the "algorithm
bandwidth" of nccl-tests). CPU ms: rank 0's process CPU time per call (all threads; gloo's socket copies count):
the cost of the work itself, less sensitive than wall time to how many other processes share the cores.
"""
from __future__ import annotations

import datetime
import math
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import pypto
import pypto.distributed as D

SIZES = (4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20)
COLS = 256


RING_ROWS, RING_SLOTS, RING_AHEAD = 64, 32, 16   # 64 KiB tiles, a 2 MiB ring, 1 MiB in flight per rank


@pypto.frontend.jit
def ring_allreduce(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
                   out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), group, world):
    rows, cols = x.shape
    t = math.gcd(rows, RING_ROWS)                      # tiles of <= 64 KiB that cover the rows
    n = rows // t
    r = min(RING_SLOTS, n)
    ahead = min(RING_AHEAD, r - 1) if n > r else n      # slot j % r is reused only after every rank read it
    pypto.set_vec_tile_shapes(t, cols)
    ring = D.create_shmem_tensor(group, world, pypto.DT_FP32, [r * t, cols])
    free = D.create_shmem_tensor(group, world, pypto.DT_INT32, [r, 1])   # slot [reader][s]: s read by reader
    me = D.my_symbolic_pe(group)
    add = pypto.AtomicType.ADD
    for s in pypto.loop(r):                           # every slot starts free for every reader
        for q in range(world):
            D.shmem_signal(free, q, 1, [1, 1], [s, 0], target_pe=me, sig_op=add)

    def produce(j):
        s = j % r
        for q in range(world):
            D.shmem_wait_until(free, q, 1, [1, 1], [s, 0], clear_signal=True)
        D.shmem_put(pypto.view(x, [t, cols], [j * t, 0]), [s * t, 0], ring, me)
        D.shmem_signal(ring, me, 1, [t, cols], [s * t, 0], target_pe=-1, sig_op=add)

    def consume(j):
        s = j % r
        acc = None
        for pe in range(world):                       # rank order: the same sum on every rank
            D.shmem_wait_until(ring, pe, 1, [t, cols], [s * t, 0], clear_signal=True)
            tile = D.shmem_get(ring, pe, [t, cols], [s * t, 0])
            D.shmem_signal(free, me, 1, [1, 1], [s, 0], target_pe=pe, sig_op=add)
            acc = tile if acc is None else acc + tile
        out[j * t:(j + 1) * t, :] = acc

    for j in pypto.loop(ahead):
        produce(j)
    if n > ahead:
        for j in pypto.loop(ahead, n):
            produce(j)
            consume(j - ahead)
    for j in pypto.loop(n - ahead, n):
        consume(j)
    for q in range(world):      # every reader has handed every slot back: signals at rest, no barrier needed
        D.shmem_wait_until(free, q, 1, [r, 1], [0, 0], clear_signal=True)


def _put_all(x, sh, me, t):
    """(trace time) the whole of `x` into this rank's window `sh`, in tiles of `t` rows"""
    rows, cols = x.shape
    for i in pypto.loop(rows // t):
        D.shmem_put(pypto.view(x, [t, cols], [i * t, 0]), [i * t, 0], sh, me)


def _world_sum(sh, world, t, cols, r0):
    """(trace time) rows [r0, r0 + t) of every rank's window `sh`, summed in rank order"""
    acc = D.shmem_get(sh, 0, [t, cols], [r0, 0])
    for pe in range(1, world):
        acc = acc + D.shmem_get(sh, pe, [t, cols], [r0, 0])
    return acc


@pypto.frontend.jit
def twophase_allreduce(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
                       out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), group, world):
    rows, cols = x.shape
    t = math.gcd(rows, 16)             # row tiles of <= 16 KiB: the gets and sums stay in stack buffers
    pypto.set_vec_tile_shapes(t, cols)
    sh = D.create_shmem_tensor(group, world, pypto.DT_FP32, [rows, cols])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    _put_all(x, sh, me, t)
    D.shmem_barrier_all(sig)
    for i in pypto.loop(rows // t):
        out[i * t:(i + 1) * t, :] = _world_sum(sh, world, t, cols, i * t)
    D.shmem_barrier_all(sig)


@pypto.frontend.jit
def rsag_allreduce(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
                   out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), group, world):
    rows, cols = x.shape
    part = rows // world if rows % world == 0 else rows    # rows of the slice each rank reduces
    t = math.gcd(part, 16)                             # row tiles of <= 16 KiB that cover the slice
    pypto.set_vec_tile_shapes(t, cols)
    sh = D.create_shmem_tensor(group, world, pypto.DT_FP32, [rows, cols])
    red = D.create_shmem_tensor(group, world, pypto.DT_FP32, [part, cols])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    _put_all(x, sh, me, t)
    D.shmem_barrier_all(sig)
    if part == rows:                                   # rows not divisible by the world: one-shot
        for i in pypto.loop(rows // t):
            out[i * t:(i + 1) * t, :] = _world_sum(sh, world, t, cols, i * t)
    else:
        for i in pypto.loop(part // t):                # reduce-scatter: my slice, rank order
            D.shmem_put(_world_sum(sh, world, t, cols, me * part + i * t), [i * t, 0], red, me)
        D.shmem_barrier_all(sig)
        for pe in range(world):                        # all-gather: every rank's reduced slice
            for i in pypto.loop(part // t):
                out[pe * part + i * t:pe * part + (i + 1) * t, :] = D.shmem_get(red, pe, [t, cols], [i * t, 0])
    D.shmem_barrier_all(sig)


@pypto.frontend.jit
def exchange(x: pypto.Tensor([1, 16], pypto.DT_FP32), out: pypto.Tensor([1, 16], pypto.DT_FP32), group, rounds):
    """`rounds` times: put a 64-byte tile into the peer's window, signal it, wait for the peer's."""
    pypto.set_vec_tile_shapes(1, 16)
    sh = D.create_shmem_tensor(group, 2, pypto.DT_FP32, [1, 16])
    sig = D.create_shmem_signal(group, 2)
    me = D.my_symbolic_pe(group)
    peer = 1 - me
    for _ in pypto.loop(rounds):
        D.shmem_put(x, [0, 0], sh, peer)
        D.shmem_signal(sh, peer, 1, [1, 16], [0, 0], target_pe=peer, sig_op=pypto.AtomicType.ADD)
        D.shmem_wait_until(sh, me, 1, [1, 16], [0, 0], clear_signal=True)
    out[:] = D.shmem_get(sh, me)
    D.shmem_barrier_all(sig)


def _timed(fn, reps: int) -> tuple:
    """(median wall seconds, median process CPU seconds) of `reps` calls, each started from a dist.barrier()"""
    ts, cs = [], []
    for _ in range(reps):
        dist.barrier()
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    return statistics.median(ts), statistics.median(cs)


def _reps(nbytes: int) -> int:
    return max(3, min(30, (256 << 20) // max(nbytes, 1) // 8))


KERNELS = (("ring", ring_allreduce), ("twophase", twophase_allreduce), ("rsag", rsag_allreduce))


def _size_row(rank, world, group, nbytes):
    n = nbytes // 4
    x = torch.randn(max(n // COLS, 1), min(n, COLS), generator=torch.Generator().manual_seed(rank))
    out = torch.empty_like(x)
    gold = x.clone()
    dist.all_reduce(gold)
    ok = True
    for _, k in KERNELS:                              # build + windows (collective), then check
        out.fill_(float("nan"))
        k(x, out, group, world)
        ok = ok and torch.allclose(out, gold, rtol=1e-5, atol=1e-5)
    reps = _reps(nbytes)
    best = {}
    for _ in range(2):                                 # interleaved: gloo, then each kernel, twice
        y = x.clone()
        fns = [("gloo", lambda: dist.all_reduce(y))]
        fns += [(name, (lambda k=k: k(x, out, group, world))) for name, k in KERNELS]
        for name, fn in fns:
            best[name] = min(best.get(name, (float("inf"), 0.0)), _timed(fn, reps))
    return nbytes, best, ok


def _rank(rank, world, port, sizes, queue):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    try:
        torch.set_num_threads(1)                       # one thread per rank, as gloo's compute
        D.set_timeout(30.0)
        group = D.group_name()
        rows = [_size_row(rank, world, group, nbytes) for nbytes in sizes]
        lat = None
        if world == 2:
            pair = group
            x = torch.full((1, 16), float(rank))
            out = torch.empty(1, 16)
            exchange(x, out, pair, 10)
            n = 2000
            t, _ = _timed(lambda: exchange(x, out, pair, n), 5)
            lat = (t / n, bool((out == 1 - rank).all()))
        if rank == 0:
            queue.put((world, rows, lat))
    finally:
        dist.destroy_process_group()


def _fmt_size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def run(worlds=(2, 4), sizes=SIZES) -> list:
    results = []
    for world in worlds:
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs = [ctx.Process(target=_rank, args=(r, world, port, sizes, q)) for r in range(world)]
        for p in procs:
            p.start()
        try:
            deadline = time.monotonic() + 900
            while True:     # bounded, and a rank that died ends the wait
                try:
                    results.append(q.get(timeout=1.0))
                    break
                except Exception:
                    if time.monotonic() > deadline or any(p.exitcode not in (None, 0) for p in procs):
                        raise RuntimeError(f"pypto.bench --distributed: {world} ranks: a rank failed or timed out "
                                           f"(exit codes {[p.exitcode for p in procs]})") from None
        finally:
            for p in procs:
                p.join(60)
                if p.is_alive():
                    p.kill()
    return results


def main(args) -> None:
    sizes = tuple(int(s) << 10 for s in args.dist_kib) if args.dist_kib else SIZES
    worlds = tuple(args.dist_world) if args.dist_world else (2, 4)
    print("one-shot all-reduce (pypto shmem kernels: ring = pipelined, 2-phase = barriers, rs+ag = reduce-scatter + "
          "all-gather through the windows) vs "
          "torch.distributed.all_reduce (gloo), fp32, this host")
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f} (one process per rank)")
    print(f"{'ranks':>5} {'size':>8} {'ring ms':>9} {'2-phase ms':>10} {'rs+ag ms':>9} {'gloo ms':>9} "
          f"{'best GB/s':>9} {'gloo GB/s':>9} {'speedup':>8} {'best cpu ms':>11} {'gloo cpu ms':>11} {'check':>6}")
    for world, rows, lat in run(worlds, sizes):
        for nbytes, best, ok in rows:
            gloo = best["gloo"]
            fast = min((best[name] for name, _ in KERNELS), key=lambda b: b[0])
            print(f"{world:>5} {_fmt_size(nbytes):>8} {best['ring'][0] * 1e3:>9.3f} {best['twophase'][0] * 1e3:>10.3f} "
                  f"{best['rsag'][0] * 1e3:>9.3f} {gloo[0] * 1e3:>9.3f} {nbytes / fast[0] / 1e9:>9.2f} "
                  f"{nbytes / gloo[0] / 1e9:>9.2f} {gloo[0] / fast[0]:>7.1f}x {fast[1] * 1e3:>11.3f} "
                  f"{gloo[1] * 1e3:>11.3f} {'ok' if ok else 'WRONG':>6}")
        if lat is not None:
            print(f"put + signal + wait exchange between 2 ranks: {lat[0] * 1e6:.2f} us per round "
                  f"({'ok' if lat[1] else 'WRONG'}; 64-byte tile, median of 5 kernels of 2000 rounds)")
    print(f"load average after: {os.getloadavg()[0]:.1f}; speedup = gloo ms / the faster pypto kernel's ms")


__all__ = ["main", "run"]
