"""`pypto.runtime`: the reference's device runtime module by name, for programs that manage the device themselves.

The simulator needs no device: `_device_init` / `_device_fini` have nothing to open or close, and every kernel call
has finished when it returns, so `_device_synchronize` has nothing to wait for. Running a graph from host data
(`_device_run_once_data_from_host`, the reference's launcher below `@jit`) is not supported yet: call the kernel.
"""
from __future__ import annotations

from .errors import not_supported


def _device_init() -> None:
    """Nothing to open: the simulator runs on the host."""


def _device_fini() -> None:
    """Nothing to close."""


def _device_synchronize() -> None:
    """Nothing to wait for: a kernel call returns when the kernel has finished."""


def _device_run_once_data_from_host(*args, **kwargs):
    raise not_supported("pypto.runtime._device_run_once_data_from_host (the reference's graph launcher)",
                        "call the @pypto.frontend.jit kernel instead")


__all__ = ["_device_init", "_device_fini", "_device_synchronize", "_device_run_once_data_from_host"]
