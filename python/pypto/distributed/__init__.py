"""pypto.distributed — layer 1b: ranks, groups and symmetric shared-memory windows for multi-rank kernels.

A rank is an OS process and a group is a `torch.distributed` process group (gloo on CPU): `group_name(pg)` turns
a group into the name string kernels receive (as the reference's kernels receive an HCCL communicator name).
`windows` maps the symmetric windows through libpypto_shmem. The kernel-language ops of the reference
(`create_shmem_tensor`, `shmem_put`, ...) are installed into this namespace by the language layer
(`pypto/language/distributed.py`), which owns tracing; this layer imports only `pypto.errors` and `pypto.vocab`.
"""
from .groups import group_name, group_of, group_ranks
from .windows import get_timeout, leftover_windows, release, set_timeout

__all__ = ["group_name", "group_of", "group_ranks", "set_timeout", "get_timeout", "release", "leftover_windows"]
