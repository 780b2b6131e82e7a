"""Multi-rank test kernels and the per-rank bodies that run them against torch.distributed goldens (spawned by
ranks.run_ranks: each function here runs on every rank and returns what the parent checks)."""
from __future__ import annotations

import os
import time

import torch
import torch.distributed as dist

import pypto
import pypto.distributed as D

from .ring_kernels import ring_checks, ring_mismatch_check

ROWS, COLS = 8, 16


@pypto.frontend.jit
def allgather_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world):
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows * world, cols])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    D.shmem_barrier_all(sig)
    for p in range(world):
        put = D.shmem_put(x, [me * rows, 0], sh, p)
        D.shmem_signal(sh, p, 1, [rows, cols], [me * rows, 0], target_pe=p, sig_op=pypto.AtomicType.ADD, pred=[put])
    for p in range(world):
        w = D.shmem_wait_until(sh, me, 1, [rows, cols], [p * rows, 0], cmp=pypto.OpType.EQ, clear_signal=True)
        out[p * rows:(p + 1) * rows, :] = pypto.experimental.shmem_load(sh, me, [rows, cols], [p * rows, 0], pred=[w])


@pypto.frontend.jit
def allreduce_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world):
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    D.shmem_clear_data(sh)
    D.shmem_barrier_all(sig)
    for p in range(world):
        D.shmem_put(x, [0, 0], sh, p, put_op=pypto.AtomicType.ADD)
    D.shmem_barrier_all(sig)
    out[:] = D.shmem_get(sh, me)


@pypto.frontend.jit
def neighbour_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world):
    """out = the tensor of rank (me + 1) % world, read remotely with shmem_get."""
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    D.shmem_barrier_all(sig)
    D.shmem_put(x, [0, 0], sh, me)
    D.shmem_barrier_all(sig)
    out[:] = D.shmem_get(sh, (me + 1) % world, [rows, cols], [0, 0])
    D.shmem_barrier_all(sig)


@pypto.frontend.jit
def bad_pe_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world, pe):
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    me = D.my_symbolic_pe(group)
    D.shmem_put(x, [0, 0], sh, me + pe)
    out[:] = x


@pypto.frontend.jit
def flags_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world, rounds):
    """Signals to every rank (target_pe=-1), exact waits, clear_signal, then a ping-pong of consumed signals."""
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    sig = D.create_shmem_signal(group, world)
    me = D.my_symbolic_pe(group)
    D.shmem_clear_data(sh)
    D.shmem_barrier_all(sig)
    D.shmem_signal(sh, me, 7, [rows, cols], [0, 0], target_pe=-1)
    for q in range(world):
        D.shmem_wait_until(sh, q, 7, [rows, cols], [0, 0])
    D.shmem_barrier_all(sig)
    D.shmem_clear_signal(sh)
    for q in range(world):
        D.shmem_wait_until(sh, q, 0, [rows, cols], [0, 0])      # cleared: returns at once
    D.shmem_barrier_all(sig)
    peer = (me + 1) % world
    for i in pypto.loop(rounds):
        D.shmem_put(x, [0, 0], sh, peer, put_op=pypto.AtomicType.ADD)
        D.shmem_signal(sh, peer, 1, [rows, cols], [0, 0], target_pe=peer, sig_op=pypto.AtomicType.ADD)
        D.shmem_wait_until(sh, me, 1, [rows, cols], [0, 0], clear_signal=True)
    D.shmem_barrier_all(sig)
    out[:] = D.shmem_get(sh, me)


@pypto.frontend.jit
def bad_const_pe_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world, pe):
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    out[:] = x
    D.shmem_put(x, [0, 0], sh, pe)


@pypto.frontend.jit
def deadlock_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world):
    """Every rank waits for a signal nobody sends."""
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    me = D.my_symbolic_pe(group)
    D.shmem_wait_until(sh, me, 1, [rows, cols], [0, 0])
    out[:] = x


@pypto.frontend.jit
def barrier_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world):
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sig = D.create_shmem_signal(group, world)
    D.shmem_barrier_all(sig)
    out[:] = x


@pypto.frontend.jit
def sized_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world, rows_here):
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    D.create_shmem_tensor(group, world, x.dtype, [rows_here, cols])
    out[:] = x


def _data(rank, dtype, seed=0):
    g = torch.Generator().manual_seed(1000 * seed + rank)
    if dtype in (torch.int32, torch.int64):
        return torch.randint(-1000, 1000, (ROWS, COLS), generator=g, dtype=dtype)
    return torch.randn(ROWS, COLS, generator=g).to(dtype)


def ops_session(rank, world):
    """Each op against its torch.distributed golden, twice in a row (windows and signals are reused)."""
    group = D.group_name()
    out = {}
    for dtype in (torch.float32, torch.int32, torch.float16, torch.bfloat16):
        for call in range(2):
            x = _data(rank, dtype, call)
            got = torch.zeros(ROWS * world, COLS, dtype=dtype)
            allgather_kernel(x, got, group, world)
            parts = [torch.empty_like(x) for _ in range(world)]
            dist.all_gather(parts, x)
            out[f"allgather {dtype} #{call}"] = (got, torch.cat(parts))
            got = torch.zeros(ROWS, COLS, dtype=dtype)
            allreduce_kernel(x, got, group, world)
            gold = x.to(torch.float64 if dtype.is_floating_point else dtype).clone()
            dist.all_reduce(gold)
            out[f"allreduce {dtype} #{call}"] = (got, gold.to(dtype))
    x = _data(rank, torch.float32, 7)
    got = torch.zeros_like(x)
    neighbour_kernel(x, got, group, world)
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x)
    out["neighbour"] = (got, parts[(rank + 1) % world])
    x = _data(rank, torch.int32, 9)
    got = torch.zeros_like(x)
    flags_kernel(x, got, group, world, 50)
    parts = [torch.empty_like(x) for _ in range(world)]
    dist.all_gather(parts, x)
    out["flags"] = (got, parts[(rank - 1) % world] * 50)   # 50 ADD puts from the rank before me
    x = _data(rank, torch.float32, 7)
    # a dst_pe outside the group: a constant one at trace time, a computed one when the put runs; outputs untouched
    for name, kernel in (("bad_pe_const", bad_const_pe_kernel), ("bad_pe", bad_pe_kernel)):
        keep = torch.full((ROWS, COLS), -5.0)
        try:
            kernel(x, keep, group, world, world + 3)
            out[name] = "no error"
        except Exception as e:
            out[name] = (type(e).__name__, str(e), bool((keep == -5.0).all()))
    return out


def contention_session(rank, world):
    """Every rank ADDs into the same elements of every rank at once, many times: int32 must be exact."""
    group = D.group_name()
    x = torch.full((64, 256), rank + 1, dtype=torch.int32)
    got = torch.zeros_like(x)
    for _ in range(20):
        allreduce_kernel(x, got, group, world)
    return got, world * (world + 1) // 2


def subgroup_session(rank, world):
    """Two sub-groups ({0, 1}, {2, 3}) each all-reduce on their own windows, in one process each."""
    pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    mine = pairs[rank // 2]
    group = D.group_name(mine)
    x = _data(rank, torch.int32, 3)
    got = torch.zeros_like(x)
    allreduce_kernel(x, got, group, 2)
    gold = x.clone()
    dist.all_reduce(gold, group=mine)
    whole = torch.zeros_like(x)
    allreduce_kernel(x, whole, D.group_name(), world)
    gold_all = x.clone()
    dist.all_reduce(gold_all)
    rings = ring_checks(rank, world, [[[0, 2], [1, 3]], [[0, 1], [2, 3]]])   # (sharing this spawned world)
    return group, (got, gold), (whole, gold_all), rings


def failure_session(rank, world):
    """Deadlock -> timeout error on every rank; different allocations -> an error; a group name never made."""
    group = D.group_name()
    out = {}
    D.set_timeout(1.0)
    x = _data(rank, torch.float32)
    keep = torch.full((ROWS, COLS), -5.0)
    t0 = time.monotonic()
    try:
        deadlock_kernel(x, keep, group, world)
        out["deadlock"] = "no error"
    except Exception as e:
        out["deadlock"] = (type(e).__name__, str(e), time.monotonic() - t0, bool((keep == -5.0).all()))
    out["ring"] = ring_mismatch_check(rank, world, x)
    try:
        sized_kernel(x, keep, group, world, ROWS + rank)
        out["digest"] = "no error"
    except Exception as e:
        out["digest"] = (type(e).__name__, str(e))
    try:
        sized_kernel(x, keep, "pypto:not-a-group", world, ROWS)
        out["unknown_group"] = "no error"
    except Exception as e:
        out["unknown_group"] = (type(e).__name__, str(e))
    try:
        sized_kernel(x, keep, group, world + 1, ROWS)
        out["n_pes"] = "no error"
    except Exception as e:
        out["n_pes"] = (type(e).__name__, str(e))
    import socket
    real = socket.gethostname
    if rank == 1:
        socket.gethostname = lambda: "elsewhere"
    try:
        D.group_name()
        out["hosts"] = "no error"
    except Exception as e:
        out["hosts"] = (type(e).__name__, str(e))
    finally:
        socket.gethostname = real
    return out


def killed_session(rank, world):
    """Rank 1 dies after the windows exist; rank 0's barrier fails quickly (well inside the 30 s timeout)."""
    group = D.group_name()
    D.set_timeout(30.0)
    x = _data(rank, torch.float32)
    out = torch.zeros_like(x)
    barrier_kernel(x, out, group, world)       # both ranks: windows created, one barrier passed
    if rank == 1:
        os._exit(3)
    time.sleep(0.5)
    t0 = time.monotonic()
    try:
        barrier_kernel(x, out, group, world)
        return "no error", 0.0
    except Exception as e:
        return str(e), time.monotonic() - t0
