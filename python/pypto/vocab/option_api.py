"""The reference's process-wide option API: `pypto.set_<group>_options(...)`, `get_<group>_options()`,
`reset_options()`.

Values set here are validated like decorator options and apply to kernels decorated afterwards, below any
`pypto.options` scope and the kernel's own dicts (precedence: decorator > scope > global > default). A kernel's
options are fixed when it is decorated (they are part of its key), so a later `set_*_options` never changes a
kernel that already exists: the isolation between kernels the reference promises.
"""
from __future__ import annotations

import enum
from typing import Any

from . import options as _o

__all__ = ["set_host_options", "set_runtime_options", "set_codegen_options", "set_pass_options",
           "set_verify_options", "set_debug_options", "get_host_options", "get_runtime_options",
           "get_codegen_options", "get_pass_options", "get_verify_options", "get_debug_options", "reset_options",
           "set_options", "get_options"]


def _set(group: str, values: dict[str, Any]) -> None:
    # the reference passes CompStage members by value; ours is an IntEnum, either form validates
    given = {k: v for k, v in values.items() if v is not None}
    checked = _o._check_group(f"pypto.set_{_o.SHORT_NAMES[group]}_options", group, given)
    _o._GLOBAL[group].update(checked)


def _get(group: str) -> dict[str, Any]:
    """Defaults, then global values, then this thread's `pypto.options` scope; plain lists and ints back."""
    values = {k: spec.default_value() for k, spec in _o.SCHEMAS[group].items()}
    values.update(_o._GLOBAL[group])
    values.update(_o.current_scope().get(group, {}))
    return {k: _o._plain(v) if not isinstance(v, enum.Enum) else v for k, v in values.items()}


def set_options(**groups: Any) -> None:
    """`pypto.set_options(runtime_options={...}, pass_options={...})`: several groups at once."""
    _o._check_group_names("pypto.set_options", groups)
    for g, v in groups.items():
        if v is not None:
            _set(g, dict(v))


def get_options() -> dict[str, dict[str, Any]]:
    return {g: _get(g) for g in _o.GROUP_NAMES}


def reset_options() -> None:
    """Forget every value set with `set_*_options` (scopes and decorator dicts are not affected)."""
    for g in _o.GROUP_NAMES:
        _o._GLOBAL[g].clear()


def _pair(group: str):
    def setter(options: dict | None = None, **kw: Any) -> None:
        _set(group, {**(options or {}), **kw})

    def getter() -> dict[str, Any]:
        return _get(group)

    short = _o.SHORT_NAMES[group]
    setter.__name__, getter.__name__ = f"set_{short}_options", f"get_{short}_options"
    setter.__doc__ = (f"`pypto.set_{short}_options(key=value, ...)` (or a dict): process-wide {group} for kernels "
                      f"decorated afterwards; validated like `@jit({group}=...)`.")
    getter.__doc__ = f"The {group} a kernel decorated now would get from defaults, globals and the current scope."
    return setter, getter


set_host_options, get_host_options = _pair("host_options")
set_runtime_options, get_runtime_options = _pair("runtime_options")
set_codegen_options, get_codegen_options = _pair("codegen_options")
set_pass_options, get_pass_options = _pair("pass_options")
set_verify_options, get_verify_options = _pair("verify_options")
set_debug_options, get_debug_options = _pair("debug_options")
