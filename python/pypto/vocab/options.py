"""Kernel options resolved: `validate_options`, `ResolvedOptions` and the `pypto.options` scopes.

Each group (host, runtime, codegen, pass, verify, debug) is a declarative table of `OptionSpec`s
(`option_tables.py`; the enums and defaults they name are `modes.py`). `validate_options` checks a kernel's option
dicts against the tables once, at decoration, merges them over the active `pypto.options` scope, fills defaults and
returns a frozen `ResolvedOptions` (equal when every value is: `digest()` is a canonical hash of them all).

Value rules (the contract the tests pin down):
- int options accept `int` and integer-like values (numpy ints, IntEnum members), never `bool`; ranges are
  inclusive. The one exception is `host_options["compile_monitor_enable"]`, which the reference's examples set
  to `True`: a bool there means 0/1.
- bool options accept `bool` and the ints 0 and 1 (normalised to bool); any other int is rejected.
- enum options (`run_mode`, `compile_stage`) accept a member of their enum or its integer value, normalised to
  the member; a member of another enum is rejected.
- list options (`list[str]`, the `[rtol, atol]` pair) accept a list or tuple and are stored as tuples, so a
  resolved object is immutable; `ResolvedOptions.as_dict()` gives lists back. dict options must be dicts and are
  stored read-only.
- str options accept `str`; path-valued ones also accept `os.PathLike`.
- size options (`host_options["cache_max_size"]`) accept an int of bytes >= 0 or a size text ('500M', '2G'),
  stored as an int of bytes.
- `launch_sched_aicpu_num` <= 0 or > 7 means "auto": stored as 7 and listed in `ResolvedOptions.auto`; it keys
  like an explicit 7.
"""
from __future__ import annotations

import difflib
import enum
import functools
import hashlib
import numbers
import threading
import types
from typing import Any, Callable, Iterable, Mapping

from ..errors import OptionError
from .modes import CompileStage, CompStage, RunMode, detect_cann, parse_size
from .option_tables import GROUP_NAMES, SCHEMAS, SHORT_NAMES, AutoInt, Invalid, OptionSpec, describe_value

__all__ = [
    "RunMode", "CompileStage", "CompStage", "OptionSpec", "SCHEMAS", "GROUP_NAMES",
    "ResolvedOptions", "validate_options", "options", "current_scope", "detect_cann", "parse_size",
    "verify_fixed", "with_current_verify",
]

# ---------------------------------------------------------------------------------------------------------------
# Checking one group
# ---------------------------------------------------------------------------------------------------------------

def _check_group_names(where: str, groups: Mapping[str, Any]) -> None:
    for g in groups:
        if g not in SCHEMAS:
            raise OptionError(f"{where}: unknown option group {g!r}; valid groups: {', '.join(GROUP_NAMES)}")


def _check_group(where: str, group: str, given: Any) -> dict[str, Any]:
    """Validate one user dict (no defaults filled). Returns {key: normalised value}."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise OptionError(f"{where}: {group} must be a dict or None, got {describe_value(given)}")
    schema = SCHEMAS[group]
    out: dict[str, Any] = {}
    for key, value in given.items():
        spec = schema.get(key) if isinstance(key, str) else None
        if spec is None:
            valid = sorted(schema)
            hint = difflib.get_close_matches(key, valid, n=1) if isinstance(key, str) else []
            msg = f"{where}: unknown {group} key {key!r}"
            if hint:
                msg += f" (did you mean {hint[0]!r}?)"
            raise OptionError(msg + f"; valid keys: {', '.join(valid)}")
        try:
            out[key] = spec.check(value)
        except Invalid as e:
            raise OptionError(f"{where}: {group}[{key!r}]: {e.detail}") from None
    return out


# ---------------------------------------------------------------------------------------------------------------
# The resolved result
# ---------------------------------------------------------------------------------------------------------------

def _canon(v: Any) -> str:
    """A canonical, type-tagged text for a normalised option value (stable across runs and processes)."""
    if isinstance(v, enum.Enum):
        return f"E{type(v).__name__}.{v.name}={v.value!r}"
    if isinstance(v, bool):
        return "b1" if v else "b0"
    if isinstance(v, numbers.Integral):
        return f"i{int(v)}"
    if isinstance(v, float):
        return "f" + v.hex()
    if isinstance(v, str):
        return "s" + repr(v)
    if isinstance(v, (tuple, list)):
        return "[" + ",".join(_canon(x) for x in v) + "]"
    if isinstance(v, Mapping):
        items = sorted((_canon(k), _canon(x)) for k, x in v.items())
        return "{" + ",".join(f"{k}:{x}" for k, x in items) + "}"
    if v is None:
        return "N"
    raise TypeError(f"no canonical form for {describe_value(v)}")


def _plain(v: Any) -> Any:
    """Resolved (immutable) value -> plain Python value for as_dict(): tuples -> lists, proxies -> dicts."""
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, tuple) and not isinstance(v, enum.Enum):
        return [_plain(x) for x in v]
    return v


_DIGEST_VERSION = "pypto-options-1"


class ResolvedOptions:
    """All six groups with defaults filled, immutable. `opts.runtime["run_mode"]`, `opts["pass"]`, `opts.pass_`.

    `auto` holds "group.key" of options given a value that was replaced by an automatic one
    (`launch_sched_aicpu_num` <= 0 or > 7 -> 7); it is recorded, not part of the digest.
    """

    __slots__ = ("host", "runtime", "codegen", "pass_", "verify", "debug", "auto", "_digest")

    def __init__(self, groups: Mapping[str, Mapping[str, Any]], auto: Iterable[str] = ()):
        set_ = object.__setattr__
        for g in GROUP_NAMES:
            attr = "pass_" if g == "pass_options" else SHORT_NAMES[g]
            set_(self, attr, types.MappingProxyType(dict(groups[g])))
        set_(self, "auto", frozenset(auto))
        text = _DIGEST_VERSION + ";" + ";".join(
            f"{SHORT_NAMES[g]}:{_canon(self[g])}" for g in GROUP_NAMES)
        set_(self, "_digest", hashlib.sha256(text.encode()).hexdigest())

    def __setattr__(self, name, value):
        raise AttributeError("ResolvedOptions is immutable")

    def __delattr__(self, name):
        raise AttributeError("ResolvedOptions is immutable")

    def __getitem__(self, group: str) -> Mapping[str, Any]:
        """By group name: "runtime" or "runtime_options"."""
        short = group[: -len("_options")] if group.endswith("_options") else group
        if short not in SHORT_NAMES.values():
            raise KeyError(group)
        return getattr(self, "pass_" if short == "pass" else short)

    def digest(self) -> str:
        """sha256 hex of a canonical, type-tagged text of every option value (a component of the cache key)."""
        return self._digest

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """{"runtime_options": {...}, ...} with plain lists and dicts (safe to mutate)."""
        return {g: _plain(self[g]) for g in GROUP_NAMES}

    def __eq__(self, other):
        return isinstance(other, ResolvedOptions) and other._digest == self._digest

    def __hash__(self):
        return hash(self._digest)

    def __reduce__(self):
        return (_rebuild, (self.as_dict(), tuple(sorted(self.auto))))

    def __repr__(self) -> str:
        changed = []
        for g in GROUP_NAMES:
            schema = SCHEMAS[g]
            diff = {k: _plain(v) for k, v in self[g].items() if _canon(v) != _canon(schema[k].default_value())}
            if diff:
                changed.append(f"{g}={diff!r}")
        return f"ResolvedOptions({', '.join(changed)}; digest={self._digest[:12]})"


def _rebuild(plain: Mapping[str, Mapping[str, Any]], auto: tuple) -> ResolvedOptions:
    """Unpickle: re-normalise the plain values (lists -> tuples, dicts -> read-only) and re-mark auto values."""
    groups = {g: _check_group("ResolvedOptions", g, plain[g]) for g in GROUP_NAMES}
    for name in auto:
        short, key = name.split(".", 1)
        g = short + "_options"
        groups[g][key] = AutoInt(groups[g][key])
    return ResolvedOptions(groups, auto)


# ---------------------------------------------------------------------------------------------------------------
# Scopes: `with pypto.options(...)` / `@pypto.options(...)`
# ---------------------------------------------------------------------------------------------------------------

_EMPTY_SCOPE: Mapping[str, Mapping[str, Any]] = types.MappingProxyType(
    {g: types.MappingProxyType({}) for g in GROUP_NAMES})
_tls = threading.local()
# Process-wide values set by pypto.set_<group>_options (vocab/option_api.py): below scopes and decorators.
_GLOBAL: dict[str, dict[str, Any]] = {g: {} for g in GROUP_NAMES}


def _stack() -> list:
    s = getattr(_tls, "stack", None)
    if s is None:
        s = _tls.stack = []
    return s


def current_scope() -> Mapping[str, Mapping[str, Any]]:
    """The merged option values of this thread's active `pypto.options` scopes (validated, no defaults).

    The returned object is the same object for as long as the scope stack is unchanged, so `is` tells whether
    the scope changed since it was last read.
    """
    s = _stack()
    return s[-1] if s else _EMPTY_SCOPE


def _merge(outer: Mapping[str, Mapping[str, Any]], inner: Mapping[str, Mapping[str, Any]]):
    return types.MappingProxyType(
        {g: types.MappingProxyType({**outer[g], **inner.get(g, {})}) for g in GROUP_NAMES})


class options:
    """`pypto.options(runtime_options={...}, ...)`: option defaults for kernels decorated or compiled inside it.

    Use as `with pypto.options(...):` or as `@pypto.options(...)` on a function (each call runs inside the
    scope). Values are validated when the scope is created; a kernel's own decorator dicts override the scope
    key by key; nested scopes merge, the inner one winning. Scopes are per thread.
    """

    __slots__ = ("_groups", "_tokens")

    def __init__(self, **groups: Any):
        where = "pypto.options"
        _check_group_names(where, groups)
        self._groups = types.MappingProxyType(
            {g: types.MappingProxyType(_check_group(where, g, v)) for g, v in groups.items()})
        self._tokens = threading.local()

    @property
    def groups(self) -> Mapping[str, Mapping[str, Any]]:
        """The validated values this scope sets (only the keys it was given)."""
        return self._groups

    def __enter__(self) -> "options":
        s = _stack()
        merged = _merge(current_scope(), self._groups)
        s.append(merged)
        toks = getattr(self._tokens, "list", None)
        if toks is None:
            toks = self._tokens.list = []
        toks.append(len(s))
        return self

    def __exit__(self, *exc) -> None:
        depth = self._tokens.list.pop()
        del _stack()[depth - 1:]          # also drops scopes a failing body left open above this one

    def __call__(self, func: Callable) -> Callable:
        if not callable(func):
            raise TypeError(f"pypto.options(...) decorates a function, got {describe_value(func)}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper

    def __repr__(self) -> str:
        return "pypto.options(" + ", ".join(f"{g}={dict(v)!r}" for g, v in self._groups.items()) + ")"


# ---------------------------------------------------------------------------------------------------------------
# Validation entry point
# ---------------------------------------------------------------------------------------------------------------

_CURRENT = object()


def validate_options(kernel_name: str, param_names: Iterable[str], *, scope: Any = _CURRENT,
                     **groups: Any) -> ResolvedOptions:
    """Check a kernel's option dicts, merge them over the scope, fill defaults; raise OptionError on any fault.

    `groups`: host_options=..., runtime_options=..., each None or a dict. `scope`: the scope values to merge
    under them (default: this thread's current `pypto.options` scope; None: no scope).

    `ready_on_host_tensors` names must be parameters of the kernel. Names that come from a scope and are not
    parameters of this kernel are dropped (a scope spans kernels with different parameters); names given in
    the kernel's own runtime_options must exist.
    """
    where = f"kernel {kernel_name!r}"
    _check_group_names(where, groups)
    params = list(param_names)
    if scope is _CURRENT:
        scope = current_scope()
    elif scope is None:
        scope = _EMPTY_SCOPE
    resolved: dict[str, dict[str, Any]] = {}
    auto: list[str] = []
    for g in GROUP_NAMES:
        given = groups.get(g)
        own = _check_group(where, g, given)
        inherited = dict(scope.get(g, {}))
        if g == "runtime_options":
            for name in own.get("ready_on_host_tensors", ()):
                if name not in params:
                    raise OptionError(
                        f"{where}: runtime_options['ready_on_host_tensors']: {name!r} is not a parameter of the "
                        f"kernel; parameters: {', '.join(params) or '(none)'}")
            if "ready_on_host_tensors" in inherited:
                inherited["ready_on_host_tensors"] = tuple(
                    n for n in inherited["ready_on_host_tensors"] if n in params)
        values = {k: spec.default_value() for k, spec in SCHEMAS[g].items()}
        values.update(_GLOBAL[g])           # precedence: decorator > scope > global > default
        values.update(inherited)
        values.update(own)
        auto += [f"{SHORT_NAMES[g]}.{k}" for k, v in values.items() if isinstance(v, AutoInt)]
        resolved[g] = values
    return ResolvedOptions(resolved, auto)


# ---------------------------------------------------------------------------------------------------------------
# Verify options read when a call verifies
# ---------------------------------------------------------------------------------------------------------------

def verify_fixed(kernel_name: str, given: Any, scope: Any = _CURRENT) -> Mapping[str, Any]:
    """The verify options a kernel fixes itself: its decorator's `verify_options` over the `pypto.options` scope
    it was decorated in (validated). The global values (`set_verify_options`) below them are read again when a
    call verifies (`with_current_verify`)."""
    if scope is _CURRENT:
        scope = current_scope()
    own = _check_group(f"kernel {kernel_name!r}", "verify_options", given)
    return types.MappingProxyType({**dict(scope.get("verify_options", {})), **own})


def with_current_verify(resolved: ResolvedOptions, fixed: Mapping[str, Any]) -> ResolvedOptions:
    """`resolved` with its verify group read again from the global values as they are now, under the kernel's
    `fixed` ones: the reference reads the global verify options when it compiles (at the call), so a
    `set_verify_options(pass_verify_error_tol=...)` after decoration applies to the next call that verifies.
    `enable_pass_verify` stays as decorated (it decides the object `@jit` returned). Read on the verify path only
    (a verified call runs Python anyway); `resolved` itself is returned when nothing changed."""
    values = {k: spec.default_value() for k, spec in SCHEMAS["verify_options"].items()}
    values.update(_GLOBAL["verify_options"])
    values.update(fixed)
    values["enable_pass_verify"] = resolved.verify["enable_pass_verify"]
    if all(_canon(v) == _canon(resolved.verify[k]) for k, v in values.items()):
        return resolved
    groups = {g: resolved[g] for g in GROUP_NAMES}
    groups["verify_options"] = values
    return ResolvedOptions(groups, resolved.auto)
