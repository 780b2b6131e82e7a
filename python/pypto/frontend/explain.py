"""`kernel.explain(*args, **kwargs)`: would this call hit, and if not, why.

The native core binds, checks and keys the arguments exactly as a call would (`_probe`), without launching.
For a miss, the new key is compared with every existing specialization's key component by component; the
nearest one (fewest differing components) is reported, each difference named: a tensor's dtype/rank, a STATIC
dim, a constant, or a guarded global.
"""
from __future__ import annotations

import inspect
import struct

from ..vocab.annotations import STATIC
from ..vocab.dtypes import DataType
from ..vocab.params import CONSTEXPR, TENSOR


def _layout(front, meta: tuple) -> list[str]:
    """Labels of the key words, in the order the core packs them (core/binder.cpp: bind_tensors)."""
    labels = []
    for p in front.params:
        if p.kind != TENSOR:
            continue
        ann = p.annotation
        ndim = len(meta[p.kind_index][1])
        if ann.dtype is None or ann.shape is None or ann.ellipsis:
            labels.append(f"dtype/rank of tensor '{p.name}'")
        annotated = 0 if ann.shape is None else len(ann.shape)
        for d in range(annotated):
            if ann.shape[d] is STATIC:
                labels.append(f"dim {d} of tensor '{p.name}' (STATIC)")
        for d in range(annotated, ndim):
            labels.append(f"dim {d} of tensor '{p.name}' (STATIC)")
    for p in front.params:
        if p.kind == CONSTEXPR:
            labels.append(f"constant '{p.name}'")
    if front.guards:
        labels.append("guarded globals/closure variables")
    return labels


def bind_arguments(front, args, kwargs) -> dict:
    """The call's arguments by parameter name, defaults filled in (Python's own binding rules)."""
    sig = inspect.signature(front.fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def explain(front, native, args, kwargs) -> str:
    hit, key, meta = native._probe(*args, **kwargs)
    if hit:
        return f"kernel '{front.name}': hit (an existing specialization serves this call)"
    words = struct.unpack(f"<{len(key) // 8}Q", key)
    specs = native._specializations()
    if not specs:
        return f"kernel '{front.name}': miss (no specialization compiled yet)"
    by_name = bind_arguments(front, args, kwargs)
    labels = _layout(front, meta)
    best = None
    for skey, info, _lib, _secs in specs:
        sw = struct.unpack(f"<{len(skey) // 8}Q", skey)
        if len(sw) != len(words):
            diff = ["the number of key components (a tensor's rank differs)"]
        else:
            diff = [labels[i] if i < len(labels) else f"component {i}" for i in range(len(sw)) if sw[i] != words[i]]
        if best is None or len(diff) < len(best[0]):
            best = (diff, info)
    diff, info = best
    details = []
    for d in diff:
        if d.startswith("constant '"):
            name = d.split("'")[1]
            old = info["request"].constants.get(name) if info else None
            details.append(f"{d}: compiled for {old!r}, called with {by_name.get(name)!r}")
        elif d.startswith("guarded"):
            changed = [f"{owner}.{gname}" for g in front.guards
                       for (owner, gname), old in (info["guards"].items() if info else ())
                       if (owner, gname) == (g.owner, g.name) and g.current() is not old.get()]
            details.append(f"{d}: changed {', '.join(changed) or '(a guarded value)'}")
        elif d.startswith("dim ") or d.startswith("dtype/rank"):
            pname = d.split("'")[1]
            t = next(p for p in front.params if p.name == pname)
            dtype_code, shape = meta[t.kind_index]
            old = next((t for t in info["request"].tensors if t.param == pname), None) if info else None
            was = f"{old.dtype.short}{[x if isinstance(x, int) else '?' for x in old.dims]}" if old else "?"
            details.append(f"{d}: compiled for {was}, called with {DataType(dtype_code).short}{list(shape)}")
        else:
            details.append(d)
    return (f"kernel '{front.name}': miss; nearest of {len(specs)} specialization(s) differs in: "
            + "; ".join(details))


def _call_form(front, args: tuple) -> tuple[tuple, dict]:
    """The bound arguments (one per parameter) as a call would pass them: keyword-only ones by keyword."""
    pos, kw = [], {}
    for p, a in zip(front.params, args):
        if p.keyword_only:
            kw[p.name] = a
        else:
            pos.append(a)
    return tuple(pos), kw


def miss_reason(front, native, args: tuple) -> str:
    """Why the bound arguments `args` missed, for the build log (compiler/buildlog.py): the explain text."""
    if native is None:
        return "first call"
    try:
        pos, kw = _call_form(front, args)
        text = explain(front, native, pos, kw)
    except Exception as e:  # the log line must never turn a successful build into a failure
        return f"(reason unavailable: {type(e).__name__}: {e})"
    prefix = f"kernel '{front.name}': "
    return text[len(prefix):] if text.startswith(prefix) else text


def tensor_shapes(front, meta: tuple) -> str:
    """'name: shape' per tensor argument, as the core read them (the build log's DEBUG line)."""
    return ", ".join(f"{p.name}: {meta[p.kind_index][1]}" for p in front.params if p.kind == TENSOR)
