"""Trace-time rules of the shmem ops that need no spawned ranks (they are refused before the group is looked up)."""
from __future__ import annotations

import pytest
import torch

import pypto
import pypto.distributed as D


@pypto.frontend.jit
def parallel_shmem_kernel(x: pypto.Tensor([4, 8], pypto.DT_FP32), out: pypto.Tensor([4, 8], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(1, 8)
    for i in pypto.loop(4, parallel=True):
        D.create_shmem_tensor("pypto:any-group", 2, pypto.DT_FP32, [1, 8])
        out[i:i + 1, :] = x[i:i + 1, :]


def test_shmem_ops_in_a_parallel_loop_are_refused_at_trace_time():
    x = torch.ones(4, 8)
    out = torch.full((4, 8), -3.0)
    with pytest.raises(pypto.KernelTraceError) as e:
        parallel_shmem_kernel(x, out)
    msg = str(e.value)
    assert "kernel 'parallel_shmem_kernel'" in msg and "create_shmem_tensor" in msg
    assert "not supported inside pypto.loop(parallel=True)" in msg
    assert bool((out == -3.0).all())
