"""All-reduce + RMSNorm across 4 ranks in one pypto kernel, checked against torch.distributed.

    python examples/distributed_allreduce.py [--world 4] [--rows 32] [--hidden 256]

Each rank is an OS process (torch.multiprocessing, spawn) in a gloo group. The kernel receives the group as a name
(pypto.distributed.group_name), puts its tile into every rank's symmetric shmem tensor with atomic ADD, meets the
others at a barrier, reads the sum from its own window and normalizes it. torch computes the same with
dist.all_reduce + the RMSNorm formula; every rank compares.
"""
from __future__ import annotations

import argparse
import datetime
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import pypto
import pypto.distributed as D


@pypto.frontend.jit
def allreduce_rmsnorm(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
                      gamma: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
                      out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), group, world):
    rows, hidden = x.shape
    pypto.set_vec_tile_shapes(rows, hidden)
    acc = D.create_shmem_tensor(group, world, pypto.DT_FP32, [rows, hidden])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    D.shmem_clear_data(acc)                        # my window starts at zero ...
    ready = D.shmem_barrier_all(sig)               # ... on every rank before anyone adds
    for pe in range(world):
        D.shmem_put(x, [0, 0], acc, pe, put_op=pypto.AtomicType.ADD, pred=[ready])
    done = D.shmem_barrier_all(sig)                # every rank's adds have landed everywhere
    total = D.shmem_get(acc, me, pred=[done])
    out[:] = pypto.rms_norm(total, gamma, eps=1e-6)


def rank_main(rank, world, port, rows, hidden):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        pypto.distributed.set_timeout(30.0)
        group = D.group_name()
        x = torch.randn(rows, hidden, generator=torch.Generator().manual_seed(rank))
        gamma = torch.linspace(0.5, 1.5, hidden)
        out = torch.empty(rows, hidden)
        allreduce_rmsnorm(x, gamma, out, group, world)
        s = x.clone()
        dist.all_reduce(s)
        gold = s * torch.rsqrt((s * s).mean(-1, keepdim=True) + 1e-6) * gamma
        # float ADD arrives in any order: the sum is rounded differently from run to run (docs/distributed.md)
        torch.testing.assert_close(out, gold, rtol=1e-5, atol=1e-5)
        print(f"rank {rank}: all-reduce + RMSNorm of {rows}x{hidden} matches torch.distributed")
    finally:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=256)
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # join() raises if a rank failed; each rank's waits are bounded by set_timeout, so nothing hangs
    mp.spawn(rank_main, args=(a.world, port, a.rows, a.hidden), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
