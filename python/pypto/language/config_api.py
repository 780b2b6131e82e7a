"""The reference's configuration names that are not option groups: print options, global config entries, tiling
records (`CubeTile`, `ConvTile`) and its configuration scopes.

`set_print_options` and `set/get_global_config` keep their values readable back (no printing or global entry
changes what the simulator computes). The reference's scope tree (`ConfigScope`, `get_current_scope`,
`get_options_tree`) belongs to its C++ configuration store: each raises UnsupportedFeatureError; `pypto.options(...)`
and the `get_*_options()` functions are the supported way to read and scope options here.
"""
from __future__ import annotations

import threading
from typing import Any

from ..errors import FeError, not_supported
from .hints import TileL0Info, TileL1Info

_print_options = {"edgeitems": 3, "precision": 4, "threshold": 10, "linewidth": 10}
_global_config: dict[str, Any] = {}
_lock = threading.Lock()


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FeError(ValueError(f"set_print_options: {name} must be an int >= 0, got {value!r}"))
    return value


def set_print_options(*, edgeitems: int = 3, precision: int = 4, threshold: int = 10, linewidth: int = 10) -> None:
    """Tensor print options (recorded; `get_print_options()` reads them back)."""
    new = {k: _count(k, v) for k, v in (("edgeitems", edgeitems), ("precision", precision),
                                         ("threshold", threshold), ("linewidth", linewidth))}
    _print_options.update(new)


def get_print_options() -> dict:
    return dict(_print_options)


def set_global_config(key: str, value) -> None:
    """Record a global configuration entry (`"simulation.accuracy_level"`, ...): readable back, no effect here."""
    if not isinstance(key, str) or not key:
        raise FeError(TypeError(f"set_global_config: key must be a non-empty str, got {key!r}"))
    with _lock:
        _global_config[key] = value


def get_global_config(key: str):
    """The value set with set_global_config; a key never set is a KeyError naming it."""
    with _lock:
        if key not in _global_config:
            raise KeyError(f"get_global_config: no global config {key!r} was set (set: {sorted(_global_config)})")
        return _global_config[key]


def _pair(name: str, v, sizes=(2,)) -> list:
    if not isinstance(v, (list, tuple)) or len(v) not in sizes or any(
            isinstance(x, bool) or not isinstance(x, int) or x <= 0 for x in v):
        want = " or ".join(str(s) for s in sizes)
        raise FeError(ValueError(f"CubeTile: {name} must be a list of {want} ints > 0, got {v!r}"))
    return list(v)


class CubeTile:
    """A matmul tiling record: m, k, n as [L0, L1] sizes (k may have a third entry; two means k[2] = k[1])."""

    def __init__(self, m, k, n, enable_split_k: bool = False):
        self.m, self.n = _pair("m", m), _pair("n", n)
        k = _pair("k", k, (2, 3))
        self.k = k if len(k) == 3 else k + [k[1]]
        if not isinstance(enable_split_k, bool):
            raise FeError(TypeError(f"CubeTile: enable_split_k must be a bool, got {enable_split_k!r}"))
        self.enable_split_k = enable_split_k

    def __repr__(self):
        return f"CubeTile(m={self.m}, k={self.k}, n={self.n}, enable_split_k={self.enable_split_k})"

    def __eq__(self, other):
        return isinstance(other, CubeTile) and repr(self) == repr(other)

    __hash__ = None


class ConvTile:
    """A convolution tiling record: an L1 tiling (`pypto.TileL1Info`), an L0 tiling (`pypto.TileL0Info`) and whether
    the L0 tiling is set."""

    def __init__(self, tile_l1_info, tile_l0_info, set_l0_tile: bool = False):
        if not isinstance(tile_l1_info, TileL1Info) or not isinstance(tile_l0_info, TileL0Info):
            raise FeError(TypeError(f"ConvTile: expected (pypto.TileL1Info, pypto.TileL0Info), got "
                                    f"({type(tile_l1_info).__name__}, {type(tile_l0_info).__name__})"))
        if not isinstance(set_l0_tile, bool):
            raise FeError(TypeError(f"ConvTile: set_l0_tile must be a bool, got {set_l0_tile!r}"))
        self.tile_l1_info, self.tile_l0_info, self.set_l0_tile = tile_l1_info, tile_l0_info, set_l0_tile

    def __repr__(self):
        return f"ConvTile({self.tile_l1_info!r}, {self.tile_l0_info!r}, set_l0_tile={self.set_l0_tile})"


class ConfigScope:
    """The reference's C++ configuration scope object: not supported yet (use pypto.options(...))."""

    def __init__(self, *args, **kwargs):
        raise not_supported("pypto.ConfigScope (the reference's configuration scope tree)",
                            "use pypto.options(...) and pypto.get_*_options()")


def get_current_scope():
    raise not_supported("pypto.get_current_scope (the reference's configuration scope tree)",
                        "use pypto.get_*_options() inside pypto.options(...)")


def get_options_tree():
    raise not_supported("pypto.get_options_tree (the reference's configuration scope tree)",
                        "use pypto.get_*_options()")


__all__ = ["set_print_options", "get_print_options", "set_global_config", "get_global_config", "CubeTile",
           "ConvTile", "ConfigScope", "get_current_scope", "get_options_tree"]
