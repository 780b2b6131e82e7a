"""Kernels whose shmem tensors are created once per execution (inside a pypto.loop, or once per launch) and rely
on each execution's memory being fresh and zero (ADD puts with no clear), as the reference's
test_multi_comm_groups does; run by subgroup_session (kernels.py) against torch.distributed goldens."""
from __future__ import annotations

import torch
import torch.distributed as dist

import pypto
import pypto.distributed as D

TILE = 4


def _allreduce_tile(tile, sh, world, me, valid):
    """ADD `tile` into every rank's copy of the fresh `sh`, count it in, wait for all, read the sum back."""
    pypto.set_vec_tile_shapes(TILE, tile.shape[1])
    for pe in range(world):
        put = D.shmem_put(tile, [0, 0], sh, pe, put_op=pypto.AtomicType.ADD)
        D.shmem_signal(sh, pe, 1, [TILE, tile.shape[1]], [0, 0], target_pe=pe, sig_op=pypto.AtomicType.ADD,
                       pred=[put])
    done = D.shmem_wait_until(sh, me, world, [TILE, tile.shape[1]], [0, 0], clear_signal=True)
    return D.shmem_get(sh, me, [TILE, tile.shape[1]], [0, 0], valid_shape=[valid, tile.shape[1]], pred=[done])


@pypto.frontend.jit
def cascade_kernel(x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_INT32),
                   out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_INT32), groups, worlds):
    """Per tile of TILE rows: all-reduce over groups[0], then over groups[1]; both shmem tensors are created in
    the loop body (one fresh, zeroed pair per iteration) and never cleared."""
    rows, cols = x.shape[0], x.shape[1]
    for i in pypto.loop((rows + TILE - 1) // TILE, name="CASCADE", idx_name="i"):
        first = D.create_shmem_tensor(groups[0], worlds[0], pypto.DT_INT32, [TILE, cols])
        second = D.create_shmem_tensor(groups[1], worlds[1], pypto.DT_INT32, [TILE, cols])
        valid = (rows - i * TILE).min(TILE)
        tile = pypto.view(x, [TILE, cols], [i * TILE, 0], valid_shape=[valid, cols])
        mid = _allreduce_tile(tile, first, worlds[0], D.my_symbolic_pe(groups[0]), valid)
        out[i * pypto.symbolic_scalar(TILE):] = _allreduce_tile(mid, second, worlds[1],
                                                               D.my_symbolic_pe(groups[1]), valid)


@pypto.frontend.jit
def fresh_allreduce_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world):
    """A one-shot ADD all-reduce with no shmem_clear_data: correct on every call only because each launch's
    create gives zeroed memory."""
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    sh = D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    me = D.my_symbolic_pe(group)
    for pe in range(world):
        put = D.shmem_put(x, [0, 0], sh, pe, put_op=pypto.AtomicType.ADD)
        D.shmem_signal(sh, pe, 1, [rows, cols], [0, 0], target_pe=pe, sig_op=pypto.AtomicType.ADD, pred=[put])
    done = D.shmem_wait_until(sh, me, world, [rows, cols], [0, 0], clear_signal=True)
    out[:] = D.shmem_get(sh, me, pred=[done])


def ring_checks(rank, world, splits):
    """{name: (got, golden)}: the cascade over two sub-group splits on 22 rows (6 iterations, more than a ring
    holds, so slots are zeroed and reused within a call), twice; and the per-launch fresh all-reduce, 6 calls."""
    groups, sizes, pgs = [], [], []
    for split in splits:
        mine = next(r for r in split if rank in r)
        pgs.append([dist.new_group(r) for r in split][split.index(mine)])
        groups.append(D.group_name(pgs[-1]))
        sizes.append(len(mine))
    out = {}
    for call in range(2):
        g = torch.Generator().manual_seed(77 * call + rank)
        x = torch.randint(-1000, 1000, (22, 32), generator=g, dtype=torch.int32)
        got = torch.full_like(x, -7)
        cascade_kernel(x, got, groups, sizes)
        gold = x.clone()
        dist.all_reduce(gold, group=pgs[0])
        dist.all_reduce(gold, group=pgs[1])
        out[f"cascade #{call}"] = (got, gold)
    whole = D.group_name()
    for call in range(6):
        x = torch.full((8, 16), rank + 10 * call, dtype=torch.int32)
        got = torch.zeros_like(x)
        fresh_allreduce_kernel(x, got, whole, world)
        gold = x.clone()
        dist.all_reduce(gold)
        out[f"fresh #{call}"] = (got, gold)
    return out


@pypto.frontend.jit
def ring_mismatch_kernel(x: pypto.Tensor(), out: pypto.Tensor(), group, world, iters):
    """A create executed `iters` times, `iters` differing across ranks (not SPMD): the rank that runs ahead must
    fail when it would reuse a slot a peer never moved past, never corrupt it."""
    rows, cols = x.shape
    pypto.set_vec_tile_shapes(rows, cols)
    for _ in pypto.loop(iters):
        D.create_shmem_tensor(group, world, x.dtype, [rows, cols])
    out[:] = x


def ring_mismatch_check(rank, world, x):
    """(kind, message, outputs untouched) on rank 0, which runs 6 executions while rank 1 runs 2; None on the
    others (they finish)."""
    keep = torch.full_like(x, -5.0)
    try:
        ring_mismatch_kernel(x, keep, D.group_name(), world, 6 if rank == 0 else 2)
        return None if rank else "no error"
    except Exception as e:
        return type(e).__name__, str(e), bool((keep == -5.0).all())
