"""Group names: a torch.distributed process group <-> the name string a multi-rank kernel receives.

The name is the same on every rank of the group (it is built from torch.distributed's own group name and the
group's global ranks) and is registered in this process so that the pipeline can find the group again when a
kernel that names it is built. pypto adds no transport: every collective here is torch.distributed's.
"""
from __future__ import annotations

import socket
import threading

from ..errors import DistributedError

_lock = threading.Lock()
_groups: dict = {}           # name -> (process group or None for the default group, global ranks)


def _dist():
    try:
        import torch.distributed as dist
    except ImportError as e:  # pragma: no cover - torch is a test/runtime dependency of this layer only
        raise DistributedError("pypto.distributed needs torch.distributed (pip install torch)") from e
    if not dist.is_available() or not dist.is_initialized():
        raise DistributedError("pypto.distributed: torch.distributed is not initialized; call "
                               "torch.distributed.init_process_group('gloo', ...) in every rank first")
    return dist


def group_name(pg=None) -> str:
    """The name of torch.distributed group `pg` (None: the default group) for a kernel's group parameter.
    Collective over the group's ranks (every rank of `pg` must call it). A group whose ranks are not all on this
    host is refused: its windows live in this host's shared memory."""
    dist = _dist()
    ranks = tuple(dist.get_process_group_ranks(pg if pg is not None else dist.group.WORLD))
    if dist.get_rank() not in ranks:
        raise DistributedError(f"pypto.distributed.group_name: this process (global rank {dist.get_rank()}) is "
                               f"not a member of the group of ranks {list(ranks)}")
    tag = getattr(pg if pg is not None else dist.group.WORLD, "group_name", "") or "world"
    name = f"pypto:{tag}:{'-'.join(map(str, ranks))}"
    hosts = [None] * len(ranks)
    dist.all_gather_object(hosts, socket.gethostname(), group=pg)
    if len(set(hosts)) != 1:
        where = ", ".join(f"rank {r} on {h!r}" for r, h in zip(ranks, hosts))
        raise DistributedError(f"pypto.distributed.group_name: group {name!r} spans several hosts ({where}); "
                               f"pypto's shmem windows are shared memory of one host, so every rank of a group "
                               f"must run on the same host")
    with _lock:
        _groups[name] = (pg, ranks)
    return name


def group_of(name, what: str = "kernel"):
    """(process group, global ranks) registered for `name` by group_name() in this process."""
    with _lock:
        g = _groups.get(name)
    if g is None:
        known = ", ".join(repr(n) for n in sorted(_groups)) or "none yet"
        raise DistributedError(f"{what}: {name!r} is not a group name of this process; get one with "
                               f"pypto.distributed.group_name(pg) on every rank of the group (known: {known})")
    return g


def group_ranks(name) -> tuple:
    return group_of(name)[1]


__all__ = ["group_name", "group_of", "group_ranks"]
