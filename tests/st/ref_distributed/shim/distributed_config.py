"""Test-only stand-in for the reference tests' `distributed_config` helper (same names and behaviour, our code):
ranks join a gloo group on 127.0.0.1 instead of HCCL, tensors live on the CPU (torch_npu shim), and the
"HCCL communicator name" a kernel receives is pypto.distributed.group_name of the torch.distributed group."""
from __future__ import annotations

import functools
import inspect
import multiprocessing as mp
import os
import traceback

import torch_npu  # noqa: F401  (the shim: installs the npu -> cpu mapping in every rank)
import torch.distributed as dist

import pypto


def distributed_error_handler(func):
    sig = inspect.signature(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        try:
            return func(*args, **kwargs)
        except Exception as e:
            q = bound.arguments.get("error_queue")
            if q is not None:
                q.put((bound.arguments.get("logical_rank_id"), str(e), traceback.format_exc()))
            raise

    return wrapper


def collect_process_errors(processes, error_queue) -> None:
    failed = [i for i, p in enumerate(processes) if p.exitcode != 0]
    if not failed:
        return
    errors = []
    while error_queue is not None and not error_queue.empty():
        try:
            rank, msg, trace = error_queue.get_nowait()
        except Exception:
            break
        errors.append(f"Process {rank} failed: {msg}\n{trace}")
    text = "\n\n".join(errors) or (f"Processes {failed} failed with exit codes "
                                   f"{[processes[i].exitcode for i in failed]}")
    raise AssertionError(f"Test failed:\n{text}")


class DistributedConfig:
    def __init__(self, world_size: int = 0, master_ip: str = "127.0.0.1"):
        self.master_ip = master_ip
        self.world_size = world_size
        self.physical_device_ids = list(range(world_size))
        self.logical_ranks = list(range(world_size))
        self.master_port = int(os.environ.get("PYPTO_SHIM_PORT", "0")) or _free_port()

    def init_hccl_comm(self, logical_rank_id: int, group_info=None) -> list:
        import datetime
        dist.init_process_group("gloo", rank=logical_rank_id, world_size=self.world_size,
                                init_method=f"tcp://{self.master_ip}:{self.master_port}",
                                timeout=datetime.timedelta(seconds=120))
        pypto.distributed.set_timeout(float(os.environ.get("PYPTO_SHIM_WAIT_S", "60")))
        if group_info is None:
            group_info = {"global": self.logical_ranks}
        names = []
        for _, ranks in group_info.items():
            pg = dist.new_group(ranks=ranks)
            if logical_rank_id in ranks:
                names.append(pypto.distributed.group_name(pg))
        return names

    @staticmethod
    def new_group_and_get_name(logical_rank_id: int, group_ranks: list):
        pg = dist.new_group(ranks=group_ranks)
        return pypto.distributed.group_name(pg) if logical_rank_id in group_ranks else None

    def get_physical_device_id(self, logical_rank_id: int) -> int:
        if logical_rank_id >= len(self.physical_device_ids):
            raise ValueError(f"Logical rank {logical_rank_id} out of range. Available physical devices: "
                             f"{self.physical_device_ids}")
        return self.physical_device_ids[logical_rank_id]


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


__all__ = ["DistributedConfig", "collect_process_errors", "distributed_error_handler", "mp"]
