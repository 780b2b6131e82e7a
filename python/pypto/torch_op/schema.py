"""A kernel's parameter table as a torch op schema string: tensors, compile-time constants, runtime scalars.

Tensor parameters become `Tensor` (`Tensor(a!)` when written); constants become schema scalars typed from their
Python annotation or, failing that, their default (`int`, `float`, `bool`, `str`, lists of them, `?` when None is
allowed); `pypto.Scalar[dt]` parameters become `float`, `SymInt` (so a traced int stays symbolic) or `bool`.
Keyword-only kernel parameters stay keyword-only. Anything else has no schema type: TorchOpError at registration.
"""
from __future__ import annotations

import collections.abc
import inspect
import math
import types
import typing
from dataclasses import dataclass

from ..vocab.dtypes import DataType
from ..vocab.params import CONSTEXPR, SCALAR, TENSOR, Param
from .errors import TorchOpError

# Names torch's functionalization (auto_functionalized and its mode handlers) passes alongside the op's arguments
# as keywords: an argument of that name collides with them, so the schema spells it with a trailing underscore.
RESERVED = frozenset({"mode", "ctx", "_mutable_op", "_only_clone_these_tensors", "_only_clone_these_bases",
                      "_all_bases", "_op_schema"})
_ELEMENT = {bool: "bool", int: "int", float: "float", str: "str"}
_LIST_ORIGINS = (list, tuple, collections.abc.Sequence)


@dataclass
class OpArg:
    """One kernel parameter as the op sees it."""
    param: Param
    schema_type: str = "Tensor"   # the schema's type, without alias annotation
    mutable: bool = False         # a written tensor the op takes as an argument: Tensor(a!)
    returned: bool = False        # a written tensor the op allocates and returns (not an op argument)
    as_tuple: bool = False        # a list constant the kernel expects as a tuple (its default or annotation)
    schema_name: str = ""         # the name in the schema: the parameter's, unless RESERVED

    @property
    def name(self) -> str:
        return self.param.name


def raw_annotations(fn) -> dict[str, object]:
    """Parameter annotations as written; string annotations resolved when they can be (else dropped)."""
    out = {}
    for name, p in inspect.signature(fn).parameters.items():
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, dict(fn.__globals__))  # noqa: S307 - the user's own annotation, as typing does
            except Exception:
                ann = inspect.Parameter.empty
        out[name] = ann
    return out


def _from_annotation(ann) -> tuple[str, bool] | None:
    """(schema type, as_tuple) for a constant's Python annotation, or None when it names no schema type."""
    optional = False
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(ann) if a is not type(None)]
        optional = len(members) < len(typing.get_args(ann))
        if len(members) != 1:
            return None
        ann, origin = members[0], typing.get_origin(members[0])
    suffix = "?" if optional else ""
    if ann in _ELEMENT:
        return _ELEMENT[ann] + suffix, False
    if origin in _LIST_ORIGINS or ann in (list, tuple):
        elems = [a for a in typing.get_args(ann) if a is not Ellipsis]
        if elems and all(e is elems[0] for e in elems) and elems[0] in _ELEMENT:
            return _ELEMENT[elems[0]] + "[]" + suffix, origin is tuple
    return None


def _from_default(v) -> tuple[str, bool] | None:
    if type(v) in _ELEMENT:
        return _ELEMENT[type(v)], False
    if type(v) in (list, tuple) and v and all(type(e) is type(v[0]) for e in v) and type(v[0]) in _ELEMENT:
        return _ELEMENT[type(v[0])] + "[]", type(v) is tuple
    return None


def _render_default(kernel: str, p: Param, v) -> str:
    """The default as schema text (the schema parser reads Python-like literals)."""
    if v is None:
        return "None"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_render_default(kernel, p, e) for e in v) + "]"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        if not math.isfinite(v):
            raise TorchOpError(f"kernel '{kernel}': constant '{p.name}': a torch op schema cannot hold the "
                               f"default {v!r}; give a finite default or none")
        return repr(v)
    if isinstance(v, str):
        if any(c in v for c in "\"'\\\n"):
            raise TorchOpError(f"kernel '{kernel}': constant '{p.name}': a torch op schema cannot hold the string "
                               f"default {v!r} (quotes, backslashes or newlines)")
        return f'"{v}"'
    return str(v)


def constant_arg(kernel: str, p: Param, ann) -> OpArg:
    """A compile-time constant as a schema scalar; TorchOpError when it has none."""
    typed = _from_annotation(ann) if ann is not inspect.Parameter.empty else None
    if typed is None and p.has_default:
        typed = _from_default(p.default)   # None for a None default: its type is unknown without an annotation
    if typed is None:
        got = (f"annotation {ann!r}" if ann is not inspect.Parameter.empty else
               f"default {p.default!r} of type {type(p.default).__name__}" if p.has_default else
               "no annotation and no default")
        raise TorchOpError(
            f"kernel '{kernel}': constant '{p.name}' has no torch op schema type: expected an int, float, bool, str "
            f"or a list/tuple of one of them (from its annotation, e.g. `{p.name}: int`, or its default), got "
            f"{got}; pass it through a closure or a global instead, or make it one of those types")
    schema_type, as_tuple = typed
    if p.has_default and p.default is None and not schema_type.endswith("?"):
        schema_type += "?"
    return OpArg(p, schema_type, as_tuple=as_tuple)


def scalar_arg(p: Param) -> OpArg:
    dt = p.annotation.dtype
    schema_type = "float" if dt.is_float else "bool" if dt is DataType.DT_BOOL else "SymInt"
    return OpArg(p, schema_type)


def op_args(kernel: str, params: list[Param], annotations: dict, written: set[str],
            returned: list[str]) -> list[OpArg]:
    """Every kernel parameter as an OpArg (returned tensors included, flagged)."""
    out = []
    for p in params:
        if p.kind == TENSOR:
            out.append(OpArg(p, mutable=p.name in written and p.name not in returned,
                             returned=p.name in returned))
        elif p.kind == SCALAR:
            out.append(scalar_arg(p))
        elif p.kind == CONSTEXPR:
            out.append(constant_arg(kernel, p, annotations.get(p.name, inspect.Parameter.empty)))
    taken = {p.name for p in params}
    for a in out:
        a.schema_name = a.name
        while a.schema_name in RESERVED or (a.schema_name != a.name and a.schema_name in taken):
            a.schema_name += "_"
    return out


def schema_string(kernel: str, args: list[OpArg]) -> str:
    """`(Tensor a, Tensor(a!) out, float alpha=1.0, *, int tile=32) -> ()` for the op's arguments."""
    parts, aliases, star = [], iter("abcdefghijklmnopqrstuvwxyz"), False
    for a in args:
        if a.returned:
            continue
        if a.param.keyword_only and not star:
            parts.append("*")
            star = True
        text = a.schema_type
        if a.mutable:
            try:
                text = f"Tensor({next(aliases)}!)"
            except StopIteration:
                raise TorchOpError(f"kernel '{kernel}': more than 26 written tensors; a torch op schema cannot "
                                   f"name them") from None
        text += f" {a.schema_name}"
        if a.param.has_default:
            text += "=" + _render_default(kernel, a.param, a.param.default)
        parts.append(text)
    n_out = sum(1 for a in args if a.returned)
    ret = "()" if n_out == 0 else "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
    return f"({', '.join(parts)}) -> {ret}"
