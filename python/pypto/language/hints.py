"""The reference's hints for its NPU passes: semantic labels, the matmul's original sizes, conv tile shapes and the
pass-verify dumps. Each validates its arguments as the reference documents and keeps the value readable back; none
changes what the simulator computes (docs/compat.md).
"""
from __future__ import annotations

import dataclasses
import threading

from ..ir import sym as S
from ..ir.builder import active
from ..ir.nodes import Value
from ._helpers import describe

__all__ = ["set_semantic_label", "get_semantic_label", "set_matrix_size", "get_matrix_size", "TileL1Info",
           "TileL0Info", "set_conv_tile_shapes", "get_conv_tile_shapes", "pass_verify_print", "pass_verify_save",
           "set_cache_policy", "get_cache_policy"]

_state = threading.local()      # values set outside a kernel, or last set by a traced kernel (this thread)


def _fail(op: str, msg: str, exc=ValueError):
    b = active()
    return b.error(op, msg) if b is not None else exc(f"pypto.{op}: {msg}")


def _set(name: str, value) -> None:
    b = active()
    if b is not None:
        setattr(b, "hint_" + name, value)
    setattr(_state, name, value)


def _get(name: str, default=None):
    b = active()
    if b is not None and hasattr(b, "hint_" + name):
        return getattr(b, "hint_" + name)
    return getattr(_state, name, default)


def set_semantic_label(label) -> None:
    """Names the code that follows (up to the next label) for the NPU toolkit. Any string."""
    if not isinstance(label, str):
        raise _fail("set_semantic_label", f"label must be a str, got {describe(label)}", TypeError)
    _set("semantic_label", label)


def get_semantic_label():
    """The label last set (in this kernel's trace, or in this thread); None if none."""
    return _get("semantic_label")


def set_matrix_size(size) -> None:
    """The original [m, k, n] of a matmul whose NZ operands were reshaped (the NPU needs them). Three ints > 0
    (static or symbolic). The simulator multiplies the operands as given."""
    op = "set_matrix_size"
    if not isinstance(size, (list, tuple)) or len(size) != 3:
        raise _fail(op, f"size must be a list of 3 ints [m, k, n], got {describe(size)}", TypeError)
    out = []
    for d in size:
        d = S.concrete_int(d)
        if isinstance(d, bool) or not (isinstance(d, int) or (S.is_sym(d) and d.kind == S.INT)):
            raise _fail(op, f"size must be a list of 3 ints [m, k, n], got {list(size)!r}", TypeError)
        if isinstance(d, int) and d <= 0:
            raise _fail(op, f"sizes must be > 0, got {list(size)!r}")
        out.append(d)
    _set("matrix_size", out)


def get_matrix_size():
    """[m, k, n] last given to set_matrix_size, or None."""
    v = _get("matrix_size")
    return None if v is None else list(v)


@dataclasses.dataclass(frozen=True)
class TileL1Info:
    """Conv tile sizes at L1 (the reference's pypto_impl.TileL1Info)."""
    tileHin: int = 1        # noqa: N815 (the reference's field names)
    tileHout: int = 1       # noqa: N815
    tileWin: int = 1        # noqa: N815
    tileWout: int = 16      # noqa: N815
    tileCinFmap: int = 16   # noqa: N815
    tileCinWeight: int = 16  # noqa: N815
    tileN: int = 16         # noqa: N815
    tileBatch: int = 1      # noqa: N815

    def __post_init__(self):
        _concrete_fields(self)


@dataclasses.dataclass(frozen=True)
class TileL0Info:
    """Conv tile sizes at L0 (the reference's pypto_impl.TileL0Info)."""
    tileH: int = 1          # noqa: N815
    tileW: int = 16         # noqa: N815
    tileK: int = 16         # noqa: N815
    tileN: int = 16         # noqa: N815

    def __post_init__(self):
        _concrete_fields(self)


def _concrete_fields(info) -> None:
    """A concrete SymbolicScalar size (`tileN=pypto.symbolic_scalar(32)`) is kept as its int, as the reference
    reads it."""
    for f in dataclasses.fields(info):
        object.__setattr__(info, f.name, S.concrete_int(getattr(info, f.name)))


def _check_fields(op, info, cls):
    """Every size an int >= 1 (a symbol without a value is refused: the tile sizes are fixed at compile time)."""
    if not isinstance(info, cls):
        raise _fail(op, f"expected a pypto.{cls.__name__}, got {describe(info)}", TypeError)
    for f in dataclasses.fields(info):
        v = getattr(info, f.name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise _fail(op, f"{cls.__name__}.{f.name} must be an int >= 1, got {v!r}")


def set_conv_tile_shapes(tile_l1_info, tile_l0_info=None) -> None:
    """Conv tile sizes (a hint: this pypto has no conv op). Checked as the reference documents where the
    operands are not needed: every size >= 1, tileBatch == 1, tileWout and L1 tileN multiples of 16; with L0
    info, tileW and tileN multiples of 16, tileH divides tileHout, tileW divides tileWout, L0 tileN <= L1 tileN.
    Without L0 info the L0 switch is off (get_conv_tile_shapes reports False) and a default TileL0Info is kept."""
    op = "set_conv_tile_shapes"
    _check_fields(op, tile_l1_info, TileL1Info)
    l1 = tile_l1_info
    if l1.tileBatch != 1:
        raise _fail(op, f"TileL1Info.tileBatch must be 1, got {l1.tileBatch}")
    for name in ("tileWout", "tileN"):
        if getattr(l1, name) % 16:
            raise _fail(op, f"TileL1Info.{name} must be a multiple of 16, got {getattr(l1, name)}")
    enabled = tile_l0_info is not None
    l0 = tile_l0_info if enabled else TileL0Info()
    if enabled:
        _check_fields(op, l0, TileL0Info)
        for name in ("tileW", "tileN"):
            if getattr(l0, name) % 16:
                raise _fail(op, f"TileL0Info.{name} must be a multiple of 16, got {getattr(l0, name)}")
        if l0.tileH > l1.tileHout or l1.tileHout % l0.tileH:
            raise _fail(op, f"TileL0Info.tileH ({l0.tileH}) must divide TileL1Info.tileHout ({l1.tileHout})")
        if l0.tileW > l1.tileWout or l1.tileWout % l0.tileW:
            raise _fail(op, f"TileL0Info.tileW ({l0.tileW}) must divide TileL1Info.tileWout ({l1.tileWout})")
        if l0.tileN > l1.tileN:
            raise _fail(op, f"TileL0Info.tileN ({l0.tileN}) must be <= TileL1Info.tileN ({l1.tileN})")
    _set("conv_tiles", (l1, l0, enabled))


def get_conv_tile_shapes():
    """(TileL1Info, TileL0Info, L0 switch) last set; defaults and False if none."""
    return _get("conv_tiles", (TileL1Info(), TileL0Info(), False))


def _check_cond(op, cond):
    if cond is None or not (isinstance(cond, int) or S.is_sym(cond)):     # a bool is 0/1 (a static comparison)
        raise _fail(op, f"cond must be an int or a symbolic scalar (None is not allowed), got {describe(cond)}",
                    TypeError)


def _kernel(op):
    b = active()
    if b is None:
        raise ValueError(f"pypto.{op}: only inside a kernel (@pypto.frontend.jit)")
    return b


def pass_verify_print(*values, cond=1) -> None:
    """The reference prints tensors/scalars while its pass verifier runs (enable_pass_verify). Arguments are
    checked (cond: an int or a symbolic scalar); this pypto has no pass verifier, so nothing is printed."""
    op = "pass_verify_print"
    _kernel(op)
    _check_cond(op, cond)
    for v in values:
        if isinstance(v, Value):
            active().use(v, op)


def pass_verify_save(tensor, fname, cond=1, **kwargs) -> None:
    """The reference saves a tensor to {fname}.data/.csv while its pass verifier runs. Arguments are checked
    (a kernel tensor; fname a str, int or symbolic scalar; cond; keyword values ints or symbolic scalars); this
    pypto has no pass verifier, so nothing is written."""
    op = "pass_verify_save"
    b = _kernel(op)
    if not isinstance(tensor, Value):
        raise b.error(op, f"tensor must be a pypto tensor, got {describe(tensor)}")
    b.use(tensor, op)
    if isinstance(fname, bool) or not isinstance(fname, (str, int)) and not S.is_sym(fname):
        raise b.error(op, f"fname must be a str, an int or a symbolic scalar, got {describe(fname)}")
    _check_cond(op, cond)
    for k, v in kwargs.items():
        if isinstance(v, bool) or not isinstance(v, int) and not S.is_sym(v):
            raise b.error(op, f"{k} must be an int or a symbolic scalar, got {describe(v)}")


def set_cache_policy(t, policy, value) -> None:
    """`t.set_cache_policy(pypto.CachePolicy..., bool)`: how the NPU caches the tensor's data (its storage). Kept
    for get_cache_policy for the rest of the trace; no effect on the simulator."""
    from ..vocab.enums import CachePolicy
    op = "set_cache_policy"
    b = _kernel(op)
    if not isinstance(policy, CachePolicy):
        raise b.error(op, f"policy must be a pypto.CachePolicy, got {describe(policy)}")
    if not isinstance(value, bool):
        raise b.error(op, f"value must be a bool, got {describe(value)}")
    if not hasattr(b, "cache_policies"):
        b.cache_policies = {}
    b.cache_policies[(t.storage.sid, policy)] = value


def get_cache_policy(t, policy) -> bool:
    """The value set for `policy` on the tensor's storage (False if never set)."""
    from ..vocab.enums import CachePolicy
    op = "get_cache_policy"
    b = _kernel(op)
    if not isinstance(policy, CachePolicy):
        raise b.error(op, f"policy must be a pypto.CachePolicy, got {describe(policy)}")
    return getattr(b, "cache_policies", {}).get((t.storage.sid, policy), False)
