"""Multi-rank failures end in errors, never hangs: a deadlock times out on every rank with a message naming kernel,
rank, group, slot, expected and last-seen value; a rank that dies makes the others fail well inside the timeout;
ranks that allocate differently, unknown groups, wrong n_pes and groups across hosts are refused; stale windows of
dead jobs are reclaimed and no test leaves a window in /dev/shm."""
from __future__ import annotations

import ctypes
import subprocess
import sys

from pypto.distributed import leftover_windows, windows

from .kernels import failure_session, killed_session
from .ranks import run_ranks


def test_deadlock_digest_groups_and_hosts():
    results = run_ranks(failure_session, 2)
    for rank, out in enumerate(results):
        kind, msg, seconds, untouched = out["deadlock"]
        assert kind == "KernelRuntimeError" and untouched
        assert 0.9 <= seconds < 10, seconds
        assert msg.startswith("kernel 'deadlock_kernel': shmem_wait_until on rank ")
        assert f"on rank {rank} of group 'pypto:" in msg
        assert "timed out after 1.000 s" in msg
        assert "signal slot 0 (from pe " + str(rank) + "): expected == 1, last seen 0" in msg
        if rank == 0:   # 6 executions of a create against the peer's 2: the 6th would reuse a slot in use
            kind, msg, untouched = out["ring"]
            assert kind == "KernelRuntimeError" and untouched
            assert msg.startswith("kernel 'ring_mismatch_kernel': create_shmem_tensor (reusing a ring slot")
            assert "timed out after 1.000 s" in msg
            assert "waiting for rank 1 to enter execution 2 of shmem tensor #0" in msg
            assert "expected >= 3, last seen 2; every rank must execute each create_shmem_tensor the same" in msg
        else:
            assert out["ring"] is None
        kind, msg = out["digest"]
        assert kind == "DistributedError"
        assert "kernel 'sized_kernel'" in msg and "allocate different shmem tensors" in msg
        kind, msg = out["unknown_group"]
        assert kind == "KernelTraceError" and "'pypto:not-a-group' is not a group name of this process" in msg
        assert "kernel 'sized_kernel'" in msg
        kind, msg = out["n_pes"]
        assert kind == "KernelTraceError" and "n_pes must be the size of group" in msg and "got 3" in msg
        kind, msg = out["hosts"]
        assert kind == "DistributedError" and "spans several hosts" in msg and "'elsewhere'" in msg
    assert leftover_windows() == []


def test_killed_rank_fails_the_others_quickly():
    results = run_ranks(killed_session, 2, allow_exit=(1,))
    msg, seconds = results[0]
    assert "kernel 'barrier_kernel': shmem_barrier_all on rank 0 of group" in msg
    assert "rank 1 (pid " in msg and "exited" in msg
    assert seconds < 15.0, seconds         # the timeout is 30 s: the dead peer was noticed (loose: loaded CI)
    assert leftover_windows() == []


def test_stale_window_of_a_dead_job_is_reclaimed():
    # a process that exits at once gives a pid that no longer exists
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(p.stdout)
    name = f"/{windows._prefix()}{dead}.{'ab' * 16}.0"
    lib = windows._load()
    base = ctypes.c_void_p()
    err = ctypes.create_string_buffer(256)
    assert lib.pypto_shmem_create(name.encode(), 4096, ctypes.byref(base), err, 256) == 0, err.value
    lib.pypto_shmem_unmap(base, 4096)
    assert name[1:] in leftover_windows()
    assert name[1:] in windows.reclaim_stale()
    assert leftover_windows() == []


def test_foreign_mode_window_is_refused():
    """A peer's segment must be ours and private: one opened up to the group is not mapped."""
    import os
    name = f"/{windows._prefix()}{os.getpid()}.{'cd' * 16}.9"
    lib = windows._load()
    base = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    assert lib.pypto_shmem_create(name.encode(), 4096, ctypes.byref(base), err, 512) == 0
    try:
        os.chmod(f"/dev/shm{name}", 0o660)
        other = ctypes.c_void_p()
        assert lib.pypto_shmem_open(name.encode(), 4096, ctypes.byref(other), err, 512) != 0
        assert b"is not ours" in err.value and b"mode 660" in err.value
        os.chmod(f"/dev/shm{name}", 0o600)
        assert lib.pypto_shmem_open(name.encode(), 8192, ctypes.byref(other), err, 512) != 0
        assert b"8192 bytes" in err.value
    finally:
        lib.pypto_shmem_unmap(base, 4096)
        lib.pypto_shmem_unlink(name.encode())
    assert leftover_windows() == []
