"""Every shmem op on 2 and 4 ranks against torch.distributed goldens (all_gather, all_reduce), ADD under
contention, sub-groups, out-of-range ranks; and no shared-memory window is left behind."""
from __future__ import annotations

import pytest
import torch

from pypto.distributed import leftover_windows

from .kernels import contention_session, ops_session, subgroup_session
from .ranks import run_ranks

TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2, torch.int32: 0}


def _close(got, gold, name):
    dtype = gold.dtype
    tol = TOL[dtype]
    if tol == 0:
        assert torch.equal(got, gold), name
    else:   # float ADD: the sum's rounding depends on arrival order (docs/distributed.md)
        torch.testing.assert_close(got.double(), gold.double(), rtol=tol, atol=tol, msg=name)


@pytest.mark.parametrize("world", [2, 4])
def test_ops_against_torch_distributed(world):
    results = run_ranks(ops_session, world)
    for rank, out in enumerate(results):
        for name, v in out.items():
            if name.startswith("bad_pe"):
                continue
            got, gold = v
            assert got.dtype == gold.dtype
            if name.startswith("allgather") or name in ("neighbour", "flags"):
                assert torch.equal(got, gold), f"rank {rank}: {name}"   # SET puts and gets are exact
            else:
                _close(got, gold, f"rank {rank}: {name}")
        kind, msg, untouched = out["bad_pe_const"]
        assert kind == "KernelTraceError" and untouched
        assert "kernel 'bad_const_pe_kernel': shmem_put: " in msg
        assert f"dst_pe {world + 3} is out of range for a group of {world} ranks (expected 0 to {world - 1})" in msg
        kind, msg, untouched = out["bad_pe"]
        assert kind == "KernelRuntimeError" and untouched, msg
        assert f"kernel 'bad_pe_kernel': shmem_put: dst_pe {rank + world + 3} is out of range" in msg
        assert f"of {world} ranks (expected 0 to {world - 1})" in msg
    assert leftover_windows() == []


def test_atomic_add_contention():
    for got, expected in run_ranks(contention_session, 4):
        assert torch.equal(got, torch.full_like(got, expected))
    assert leftover_windows() == []


def test_sub_groups_and_fresh_shmem_per_execution():
    """Sub-groups; and shmem tensors created in a loop body (or once per launch) get fresh, zeroed memory at each
    execution: ADD all-reduces that never clear, cascaded over two sub-group splits (ring_kernels.py)."""
    results = run_ranks(subgroup_session, 4)
    names = [r[0] for r in results]
    assert names[0] == names[1] and names[2] == names[3] and names[0] != names[2]
    for rank, (_, (got, gold), (whole, gold_all), rings) in enumerate(results):
        assert torch.equal(got, gold)
        assert torch.equal(whole, gold_all)
        assert sorted(rings) == ["cascade #0", "cascade #1"] + [f"fresh #{c}" for c in range(6)]
        for name, (got, gold) in rings.items():
            assert torch.equal(got, gold), f"rank {rank}: {name}"
    assert leftover_windows() == []
