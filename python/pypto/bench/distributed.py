"""python -m pypto.bench --distributed: a one-shot all-reduce kernel against torch.distributed.all_reduce (gloo)
on the same tensors, 4 KiB to 64 MiB, on 2 and 4 ranks of this host; plus the latency of a put + signal + wait
exchange between two ranks.

The all-reduce kernel is the deterministic one-shot form: each rank SETs its tensor into its own window, a
barrier, then every rank reads the world's tiles straight from the peers' windows and sums them in rank order
(bit-identical on every rank, and equal to a fixed-order sum), then a barrier so that no rank overwrites a tile
still being read. gloo moves the same bytes over loopback TCP. Times: wall time of rank 0 from a
torch.distributed barrier to the end of the call, median of the repetitions; GB/s = tensor bytes / time (the
"algorithm bandwidth" of nccl-tests). One process per rank: on a loaded machine the figures are noisy; the
ratio of the two columns, measured interleaved in one run, is the figure to read.
"""
from __future__ import annotations

import datetime
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


@pypto.frontend.jit
def oneshot_allreduce(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
                      out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), group, world):
    rows, cols = x.shape
    t = min(rows, 16)                  # row tiles of <= 16 KiB: the gets and sums stay in stack buffers
    pypto.set_vec_tile_shapes(t, cols)
    sh = D.create_shmem_tensor(group, world, pypto.DT_FP32, [rows, cols])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    for i in pypto.loop(rows // t):
        D.shmem_put(pypto.view(x, [t, cols], [i * t, 0]), [i * t, 0], sh, me)
    D.shmem_barrier_all(sig)
    for i in pypto.loop(rows // t):
        acc = D.shmem_get(sh, 0, [t, cols], [i * t, 0])
        for pe in range(1, world):
            acc = acc + D.shmem_get(sh, pe, [t, cols], [i * t, 0])
        out[i * t:(i + 1) * t, :] = acc
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


def _timed(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _reps(nbytes: int) -> int:
    return max(3, min(30, (256 << 20) // max(nbytes, 1) // 8))


def _rank(rank, world, port, sizes, queue):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=300))
    try:
        D.set_timeout(30.0)
        group = D.group_name()
        rows = []
        for nbytes in sizes:
            n = nbytes // 4
            x = torch.randn(max(n // COLS, 1), min(n, COLS), generator=torch.Generator().manual_seed(rank))
            out = torch.empty_like(x)
            oneshot_allreduce(x, out, group, world)           # build + windows (collective), check
            gold = x.clone()
            dist.all_reduce(gold)
            ok = torch.allclose(out, gold, rtol=1e-5, atol=1e-5)
            reps = _reps(nbytes)
            t_gloo = t_pp = float("inf")
            for _ in range(2):                                 # interleaved
                y = x.clone()
                t_gloo = min(t_gloo, _timed(lambda: dist.all_reduce(y), reps))
                t_pp = min(t_pp, _timed(lambda: oneshot_allreduce(x, out, group, world), reps))
            rows.append((nbytes, t_pp, t_gloo, ok))
        lat = None
        if world == 2:
            pair = group
            x = torch.full((1, 16), float(rank))
            out = torch.empty(1, 16)
            exchange(x, out, pair, 10)
            n = 2000
            t = _timed(lambda: exchange(x, out, pair, n), 5)
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
    print("one-shot all-reduce (pypto shmem kernel) vs torch.distributed.all_reduce (gloo), fp32, this host")
    print(f"{'ranks':>5} {'size':>8} {'pypto ms':>10} {'gloo ms':>10} {'pypto GB/s':>11} {'gloo GB/s':>10} "
          f"{'speedup':>8} {'check':>6}")
    for world, rows, lat in run(worlds, sizes):
        for nbytes, t_pp, t_gloo, ok in rows:
            print(f"{world:>5} {_fmt_size(nbytes):>8} {t_pp * 1e3:>10.3f} {t_gloo * 1e3:>10.3f} "
                  f"{nbytes / t_pp / 1e9:>11.2f} {nbytes / t_gloo / 1e9:>10.2f} {t_gloo / t_pp:>7.1f}x "
                  f"{'ok' if ok else 'WRONG':>6}")
        if lat is not None:
            print(f"put + signal + wait exchange between 2 ranks: {lat[0] * 1e6:.2f} us per round "
                  f"({'ok' if lat[1] else 'WRONG'}; 64-byte tile, median of 5 kernels of 2000 rounds)")


__all__ = ["main", "run"]
