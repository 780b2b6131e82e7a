"""Value keys for constants that are neither scalars, strings, enums nor tuples: dataclass configs and other objects.

The native constant interner (`src/python/const_interner.cpp`) calls `key(obj)` on the slow path only, for an
object it cannot encode itself. A key is made of values the interner encodes (None, bool, int, float, str, enums,
tuples, lists, and further objects, for which it calls back here), never of an object's address: two equal configs
share one specialization, and a config changed in place gets a new one on its next call.

`key(obj)` returns `(tag, key, mutable)`: tag 'd' for a dataclass instance (key: its fields in field order) or 'r'
for any other object (key: what `__reduce_ex__` says rebuilds it: its arguments and its state); `mutable` says the
object may change in place while keeping its identity, so the caller must derive the key again on every call
(a frozen dataclass and a pickled-by-name global are not mutable; a plain object or a non-frozen dataclass is).
"""
from __future__ import annotations

import dataclasses
import types
from typing import Any


def key(obj: Any) -> tuple[str, Any, bool]:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))
        frozen = bool(getattr(type(obj), "__dataclass_params__").frozen)
        return "d", fields, not frozen
    if isinstance(obj, type):
        return "r", _named(obj, "class"), False
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return "r", _named(obj, "function"), False
    if isinstance(obj, (dict, set, frozenset)):
        return "r", _canon(obj), not isinstance(obj, frozenset)
    try:
        rv = obj.__reduce_ex__(4)
    except Exception as e:  # noqa: BLE001 - any failure means: no value key
        raise TypeError(f"an object of type '{type(obj).__qualname__}' has no value key: it can be neither "
                        f"compared by its fields (not a dataclass) nor rebuilt by pickle ({e})") from None
    if isinstance(rv, str):  # a module-level singleton pickled by name (torch.float16, ...)
        return "r", ("<global>", rv), False
    args = rv[1] if len(rv) > 1 else ()
    state = rv[2] if len(rv) > 2 else None
    items = tuple(rv[3]) if len(rv) > 3 and rv[3] is not None else ()
    dict_items = tuple(rv[4]) if len(rv) > 4 and rv[4] is not None else ()
    return "r", (_canon(args), _canon(state), _canon(items), _canon(dict_items)), True


def _named(obj: Any, what: str) -> tuple[str, str, str]:
    """Classes and functions by where they are defined; a local one has no stable name, so it has no key."""
    qualname = getattr(obj, "__qualname__", getattr(obj, "__name__", ""))
    module = getattr(obj, "__module__", "") or ""
    if "<locals>" in qualname or "<lambda>" in qualname or not qualname:
        raise TypeError(f"the {what} {qualname or obj!r} is a lambda or is defined inside a function, so it has no "
                        f"stable name to be keyed by; define it at module level with def")
    return (f"<{what}>", module, qualname)


def _canon(v: Any) -> Any:
    """Containers the interner does not encode become tuples in a fixed order; the rest is left to the interner."""
    if isinstance(v, type):
        return _named(v, "class")
    if type(v) is tuple:
        return tuple(_canon(x) for x in v)
    if isinstance(v, dict):
        return ("<dict>",) + tuple(sorted(((_canon(k), _canon(x)) for k, x in v.items()), key=lambda kv: repr(kv[0])))
    if isinstance(v, (set, frozenset)):
        return ("<set>",) + tuple(sorted((_canon(x) for x in v), key=repr))
    return v
