"""The benchmark's all-reduce kernels are deterministic (bit-identical on every rank, on every call, and equal to
a fixed rank-order sum in torch), in each shape of their pipeline; a waiting rank sleeps instead of spinning;
shmem ops in a parallel loop and the interpreter's verify stage are refused with a clear message."""
from __future__ import annotations

import time

import pytest
import torch

import pypto
import pypto.distributed as D
from pypto.bench.distributed import (RING_ROWS, RING_SLOTS, exchange, ring_allreduce, rsag_allreduce,
                                     twophase_allreduce)
from pypto.distributed import leftover_windows

from .ranks import run_ranks

# tiles of the ring: 1 (one partial tile), fewer than the ring's slots (no slot reused), more (slots reused);
# 20 rows: 16 does not divide them (nor, on 4 ranks, their slices of 5)
ROWS = (4, 20, RING_ROWS * 8, RING_ROWS * (RING_SLOTS + 9))


def _x(rank, rows):
    g = torch.Generator().manual_seed(1000 + rank)
    return torch.randn(rows, 256, generator=g) * (10.0 ** (rank - 1))   # mixed magnitudes: rounding matters


@pypto.frontend.jit
def parallel_put_kernel(x: pypto.Tensor([8, 16], pypto.DT_FP32), out: pypto.Tensor([8, 16], pypto.DT_FP32),
                        group, world):
    pypto.set_vec_tile_shapes(1, 16)
    sh = D.create_shmem_tensor(group, world, pypto.DT_FP32, [8, 16])
    me = D.my_symbolic_pe(group)
    for i in pypto.loop(8, parallel=True):
        D.shmem_put(pypto.view(x, [1, 16], [i, 0]), [i, 0], sh, me)
    out[:] = D.shmem_get(sh, me)


@pypto.frontend.jit(verify_options={"enable_pass_verify": True})
def verified_allgather(x: pypto.Tensor([2, 16], pypto.DT_FP32), out: pypto.Tensor([4, 16], pypto.DT_FP32), group):
    pypto.set_vec_tile_shapes(2, 16)
    sh = D.create_shmem_tensor(group, 2, pypto.DT_FP32, [4, 16])
    sig = D.create_shmem_signal(group, 2)
    me = D.my_symbolic_pe(group)
    for p in range(2):
        D.shmem_put(x, [me * 2, 0], sh, p)
    D.shmem_barrier_all(sig)
    out[:] = D.shmem_get(sh, me)
    D.shmem_barrier_all(sig)


def determinism_session(rank, world):
    group = D.group_name()
    D.set_timeout(60.0)
    res = {}
    for rows in ROWS:
        x = _x(rank, rows)
        outs = []
        for k in (ring_allreduce, ring_allreduce, ring_allreduce, twophase_allreduce, twophase_allreduce,
                  rsag_allreduce, rsag_allreduce):
            out = torch.full_like(x, float("nan"))
            k(x, out, group, world)
            outs.append(out)
        res[rows] = outs
    return res


@pytest.mark.parametrize("world", [2, 4])
def test_allreduce_kernels_are_bit_identical(world):
    results = run_ranks(determinism_session, world, deadline=240.0)
    for rows in ROWS:
        gold = _x(0, rows)
        for p in range(1, world):
            gold = gold + _x(p, rows)            # the kernels' order: ((x0 + x1) + x2) + x3
        for rank, res in enumerate(results):
            for call, out in enumerate(res[rows]):
                assert torch.equal(out, gold), f"rows {rows}, rank {rank}, call {call}"
    assert leftover_windows() == []


def waits_session(rank, world):
    group = D.group_name()
    D.set_timeout(60.0)
    x = torch.full((1, 16), float(rank))
    out = torch.empty(1, 16)
    exchange(x, out, group, 4)                    # built, windows mapped
    torch.distributed.barrier()
    if rank == 1:
        time.sleep(1.0)                           # rank 0 waits about a second for this rank's signal
    c0 = time.process_time()
    exchange(x, out, group, 1)
    cpu = time.process_time() - c0
    exchanged = bool((out == 1 - rank).all())

    bad = torch.full((8, 16), 7.0)
    try:
        parallel_put_kernel(torch.ones(8, 16), bad, group, world)
        refused = None
    except pypto.KernelTraceError as e:
        refused = str(e)
    untouched = bool((bad == 7.0).all())

    xa = torch.full((2, 16), float(rank + 1))
    got = torch.zeros(4, 16)
    verified_allgather(xa, got, group)
    reports = [(r.stage, r.status, r.detail) for r in verified_allgather.last_verify]
    return cpu, exchanged, refused, untouched, got, reports


def test_waiting_rank_sleeps_and_refusals():
    results = run_ranks(waits_session, 2, deadline=240.0)
    cpu0, exchanged, refused, untouched, got, reports = results[0]
    assert all(r[1] for r in results), "exchange results"
    # rank 0 waited ~1 s for its peer: it spins 0.5 us, yields 100 us, then sleeps on the futex (a spinning
    # waiter would spend most of that second on the CPU)
    assert cpu0 < 0.5, f"rank 0 used {cpu0:.3f} s of CPU while waiting"
    for rank, (_, _, refused, untouched, got, reports) in enumerate(results):
        assert refused is not None and untouched, f"rank {rank}"
        assert "kernel 'parallel_put_kernel'" in refused and "shmem_put" in refused
        assert "parallel=True" in refused and "sequential pypto.loop" in refused
        assert torch.equal(got, torch.cat([torch.full((2, 16), 1.0), torch.full((2, 16), 2.0)]))
        stage, status, detail = reports[0]
        assert (stage, status) == ("TENSOR_GRAPH", "skipped")
        assert "multi-rank shmem ops of kernel 'verified_allgather'" in detail
        assert reports[1][:2] == ("CODEGEN_BINARY", "ok")
    assert leftover_windows() == []
