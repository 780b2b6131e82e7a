"""The reference's NPU pass configuration (`pypto.set_pass_config`, `get_pass_config(s)`,
`set_pass_default_config`, `get_pass_default_config`) and `pypto.platform`.

This pypto has no NPU passes: values are validated as the reference does (a PassConfigKey member, bool values,
str names; errors are PassError wrapping the builtin type, as there) and kept process-wide so they read back; they
change nothing the simulator computes.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ..errors import PassError
from .enums import PassConfigKey

__all__ = ["PassConfigs", "PassConfigKey", "set_pass_config", "get_pass_config", "get_pass_configs",
           "set_pass_default_config", "get_pass_default_config", "platform"]

_lock = threading.Lock()
_DEFAULTS: dict[PassConfigKey, bool] = {}
_CONFIGS: dict[tuple[str, str, PassConfigKey], bool] = {}


@dataclass(frozen=True)
class PassConfigs:
    """All configuration of one pass (read-only), as the reference's PassConfigs."""
    printGraph: bool = False        # noqa: N815 (the reference's attribute names)
    dumpGraph: bool = False         # noqa: N815
    dumpPassTimeCost: bool = False  # noqa: N815
    preCheck: bool = False          # noqa: N815
    postCheck: bool = False         # noqa: N815
    disablePass: bool = False       # noqa: N815
    healthCheck: bool = False       # noqa: N815


def _check(key, value, what: str) -> None:
    if not isinstance(value, bool):
        raise PassError(TypeError(f"Expected boolean type for {what}, but received {type(value).__name__}"))
    if not isinstance(key, PassConfigKey):
        raise PassError(ValueError(f"key must be a member of PassConfigKey, got {key!r}"))


def _check_names(strategy, identifier) -> None:
    for name, v in (("strategy", strategy), ("identifier", identifier)):
        if not isinstance(v, str):
            raise PassError(TypeError(f"{name} must be a str, got {type(v).__name__}"))


def set_pass_default_config(key: PassConfigKey, value: bool) -> None:
    """The default of `key` for every pass."""
    _check(key, value, "value")
    with _lock:
        _DEFAULTS[key] = value


def get_pass_default_config(key: PassConfigKey, default_value: bool) -> bool:
    """The default of `key` set with set_pass_default_config, else `default_value`."""
    _check(key, default_value, "default_value")
    with _lock:
        return _DEFAULTS.get(key, default_value)


def set_pass_config(strategy: str, identifier: str, key: PassConfigKey, value: bool) -> None:
    """`key` of pass `identifier` in `strategy` (e.g. "PVC2_OOO", "ExpandFunction")."""
    _check_names(strategy, identifier)
    _check(key, value, "value")
    with _lock:
        _CONFIGS[(strategy, identifier, key)] = value


def get_pass_config(strategy: str, identifier: str, key: PassConfigKey, default_value: bool) -> bool:
    """The value set for (strategy, identifier, key); else the key's default (set_pass_default_config); else
    `default_value`."""
    _check_names(strategy, identifier)
    _check(key, default_value, "default_value")
    with _lock:
        return _CONFIGS.get((strategy, identifier, key), _DEFAULTS.get(key, default_value))


def get_pass_configs(strategy: str, identifier: str) -> PassConfigs:
    """Every configuration of one pass; dumpGraph follows KEY_DUMP_GRAPH, the others are False (not settable)."""
    _check_names(strategy, identifier)
    return PassConfigs(dumpGraph=get_pass_config(strategy, identifier, PassConfigKey.KEY_DUMP_GRAPH, False))


_NPU_ARCHS = ("1001", "2201", "3003", "3113", "3510")   # the reference's NPUArch values
_DEFAULT_NPU_ARCH = "DAV_2201"


class _Platform:
    """`pypto.platform.npuarch`: the NPU architecture the reference compiles for, as its platform reports it.
    With no NPU and no CANN toolkit found the reference uses its default simulation platform (A2A3, an Ascend 910B
    whose NpuArch is 2201), so it reads "DAV_2201"; so does this pypto, which runs kernels on the CPU simulator
    and compiles nothing for an NPU (nothing here reads the value: a program branching on it takes the branch it
    takes on the reference's simulator). Setting it follows the reference's rule: "DAV_<n>" or "<n>" for a known
    architecture (1001, 2201, 3003, 3113, 3510) reads back as "DAV_<n>", any other text as "DAV_2201"."""

    def __init__(self):
        self._arch = _DEFAULT_NPU_ARCH

    @property
    def npuarch(self) -> str:
        return self._arch

    @npuarch.setter
    def npuarch(self, value) -> None:
        if not isinstance(value, str):
            raise TypeError(f"pypto.platform.npuarch must be a str, got {type(value).__name__} {value!r}")
        n = value[4:] if value.startswith("DAV_") else value
        self._arch = f"DAV_{n}" if n in _NPU_ARCHS else _DEFAULT_NPU_ARCH


platform = _Platform()
