"""Kernel options: the six option groups of `@pypto.frontend.jit`, their validation, and `pypto.options` scopes.

Each group (host, runtime, codegen, pass, verify, debug) is a declarative table of `OptionSpec`s: name, kind,
range or choices, default. `validate_options` checks a kernel's option dicts against the tables once, at
decoration, merges them over the active `pypto.options` scope, fills defaults and returns a frozen
`ResolvedOptions` whose `digest()` is part of every specialization key.

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
import math
import numbers
import os
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..errors import OptionError

__all__ = [
    "RunMode", "CompileStage", "CompStage", "OptionSpec", "SCHEMAS", "GROUP_NAMES",
    "ResolvedOptions", "validate_options", "options", "current_scope", "detect_cann", "parse_size",
]

INT32_MAX = 2147483647


_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
               "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
               "TIB": 1 << 40}


def parse_size(text: str) -> int:
    """'500M', '2G', '1048576' -> bytes (binary units). Here, not in the cache, so that an option can use it."""
    t = str(text).strip().upper()
    num = t.rstrip("BKMGTI")
    unit = t[len(num):]
    try:
        if num and unit in _SIZE_UNITS and math.isfinite(float(num)) and float(num) >= 0:
            return int(float(num) * _SIZE_UNITS[unit])
    except ValueError:
        pass
    raise ValueError(f"not a size: {text!r} (examples: 500M, 2G, 1048576)")


class RunMode(enum.IntEnum):
    """Where a kernel runs. NPU needs the CANN toolkit; SIM compiles to native CPU code."""
    NPU = 0
    SIM = 1

    def __repr__(self) -> str:
        return f"pypto.RunMode.{self.name}"

    __str__ = __repr__


class CompileStage(enum.IntEnum):
    """`host_options["compile_stage"]`: stop compiling after this stage (anything but ALL_COMPLETE: no launch)."""
    ALL_COMPLETE = 0
    TENSOR_GRAPH = 1
    TILE_GRAPH = 2
    EXECUTE_GRAPH = 3
    CODEGEN_INSTRUCTION = 4
    CODEGEN_BINARY = 5

    def __repr__(self) -> str:
        return f"pypto.CompileStage.{self.name}"

    __str__ = __repr__


CompStage = CompileStage  # the reference's name


def detect_cann() -> str | None:
    """The CANN home (`$ASCEND_HOME_PATH`) if it is set and the directory exists, else None."""
    home = os.environ.get("ASCEND_HOME_PATH")
    return home if home and os.path.isdir(home) else None


def _default_threads() -> int:
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(64, n))


def _default_run_mode() -> RunMode:
    # Decided at validation time, like the reference: the environment variable alone decides.
    return RunMode.NPU if os.environ.get("ASCEND_HOME_PATH") else RunMode.SIM


# ---------------------------------------------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------------------------------------------

class _Invalid(Exception):
    """Raised by a checker; turned into an OptionError that names the kernel, group and option."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind        # "type" or "range"
        self.detail = detail


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


class _AutoInt(int):
    """An int chosen automatically (e.g. launch_sched_aicpu_num <= 0 -> 7); equal to and keyed as that int."""
    __slots__ = ()


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class OptionSpec:
    """One option: its kind decides the accepted types; lo/hi (inclusive), choices or extra narrow the values."""
    name: str
    kind: str                              # int, bool, enum, str, path, choice, str_list, dict, tol, scope
    default: Any = None                    # a value, or a zero-argument callable for defaults decided late
    lo: int | None = None
    hi: int | None = None
    choices: tuple = ()
    extra: tuple = ()                      # ints accepted outside [lo, hi] (e.g. -1 = "off")
    enum_type: type | None = None
    auto: Any = None                       # int kind: out-of-range value normalised to this ("auto")
    accept_bool: bool = False              # int kind: also accept True/False as 1/0
    doc: str = ""

    @property
    def expected(self) -> str:
        k = self.kind
        if k == "int":
            return "int" + (" or bool" if self.accept_bool else "")
        if k == "bool":
            return "bool (or 0/1)"
        if k == "enum":
            return f"{self.enum_type.__name__} (or its int value)"
        if k in ("str", "choice"):
            return "str"
        if k == "path":
            return "str or os.PathLike"
        if k == "str_list":
            return "list[str]"
        if k == "dict":
            return "dict"
        if k == "tol":
            return "[rtol, atol]: a list of 2 non-negative floats"
        if k == "scope":
            return "int or (int, bool, bool)"
        if k == "size":
            return "int (bytes) or a size str such as '500M'"
        raise AssertionError(k)

    @property
    def range_text(self) -> str:
        if self.kind == "int":
            base = f"{self.lo}..{self.hi}"
            return " or ".join([str(e) for e in self.extra] + [base]) + " (inclusive)"
        if self.kind == "enum":
            return ", ".join(f"{m!r}={int(m)}" for m in self.enum_type)
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "scope":
            return f"scope_id -1..{INT32_MAX}"
        return ""

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default

    # Each checker returns the normalised value or raises _Invalid.
    def check(self, value: Any) -> Any:
        return getattr(self, "_check_" + self.kind)(value)

    def _type_error(self, value: Any) -> _Invalid:
        return _Invalid("type", f"expected {self.expected}, got {_describe(value)}")

    def _range_error(self, value: Any) -> _Invalid:
        return _Invalid("range", f"value {value!r} is out of range; expected {self.range_text}")

    def _check_int(self, value):
        if isinstance(value, bool) and self.accept_bool:
            value = int(value)
        if not _is_int(value):
            raise self._type_error(value)
        v = int(value)
        if v in self.extra or self.lo <= v <= self.hi:
            return v
        if self.auto is not None:
            return _AutoInt(self.auto)
        raise self._range_error(value)

    def _check_size(self, value):
        if isinstance(value, str):
            try:
                return parse_size(value)
            except ValueError as e:
                raise _Invalid("range", f"value {value!r} is out of range; {e}") from None
        if not _is_int(value):
            raise self._type_error(value)
        if int(value) < 0:
            raise _Invalid("range", f"value {value!r} is out of range; expected >= 0 bytes")
        return int(value)

    def _check_bool(self, value):
        if isinstance(value, bool):
            return value
        if _is_int(value):
            if int(value) in (0, 1):
                return bool(int(value))
            raise _Invalid("range", f"value {value!r} is out of range; expected True/False or 0/1")
        raise self._type_error(value)

    def _check_enum(self, value):
        et = self.enum_type
        if isinstance(value, et):
            return value
        if isinstance(value, enum.Enum) or not _is_int(value):   # a foreign enum member is a type error
            raise self._type_error(value)
        try:
            return et(int(value))
        except ValueError:
            raise self._range_error(value) from None

    def _check_str(self, value):
        if not isinstance(value, str):
            raise self._type_error(value)
        return str(value)

    def _check_path(self, value):
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str):
            raise self._type_error(value)
        return str(value)

    def _check_choice(self, value):
        v = self._check_str(value)
        if v not in self.choices:
            raise self._range_error(value)
        return v

    def _check_str_list(self, value):
        if not isinstance(value, (list, tuple)):
            raise self._type_error(value)
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise _Invalid("type", f"expected {self.expected}, got {_describe(value)}: "
                                       f"item {i} is {_describe(item)}")
            if item not in out:        # duplicates are harmless; keep the first
                out.append(str(item))
        return tuple(out)

    def _check_dict(self, value):
        if not isinstance(value, dict):
            raise self._type_error(value)
        for k, v in value.items():
            if not (isinstance(k, str) or _is_int(k)):
                raise _Invalid("type", f"expected dict with int or str keys, got key {_describe(k)}")
            if not _is_int(v) and not (self.name == "cube_l1_reuse_setting" and _is_l1_pair(v)):
                want = "int or (count, side)" if self.name == "cube_l1_reuse_setting" else "int"
                raise _Invalid("type", f"expected dict values of type {want}, got {_describe(v)} for key {k!r}")
        return types.MappingProxyType({k: (tuple(v) if isinstance(v, list) else v) for k, v in value.items()})

    def _check_tol(self, value):
        if not isinstance(value, (list, tuple)) or len(value) != 2 \
                or not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in value):
            raise self._type_error(value)
        rtol, atol = float(value[0]), float(value[1])
        if not (math.isfinite(rtol) and math.isfinite(atol) and rtol >= 0 and atol >= 0):
            raise _Invalid("range", f"value {value!r} is out of range; expected finite rtol >= 0 and atol >= 0")
        return (rtol + 0.0, atol + 0.0)    # + 0.0 turns -0.0 into 0.0: the same tolerance, the same key

    def _check_scope(self, value):
        # an int is (scope_id, False, False): (scope_id, allow_parallel_merge, allow_cross_scope_merge)
        t = (value, False, False) if _is_int(value) else value
        if not (isinstance(t, (list, tuple)) and len(t) == 3 and _is_int(t[0])
                and isinstance(t[1], bool) and isinstance(t[2], bool)):
            raise self._type_error(value)
        sid = int(t[0])
        if not -1 <= sid <= INT32_MAX:
            raise self._range_error(value)
        if sid == -1 and (t[1] or t[2]):
            raise _Invalid("range", f"value {value!r} is out of range; with scope_id -1 both flags must be False")
        return (sid, t[1], t[2])


def _is_l1_pair(v) -> bool:
    return (isinstance(v, (list, tuple)) and len(v) == 2 and _is_int(v[0])
            and isinstance(v[1], str) and v[1].lower() in ("auto", "left", "right"))


def _schema(*specs: OptionSpec) -> Mapping[str, OptionSpec]:
    return types.MappingProxyType({s.name: s for s in specs})


_HOST = _schema(
    OptionSpec("compile_stage", "enum", CompileStage.ALL_COMPLETE, enum_type=CompileStage,
               doc="stop after this stage; anything but ALL_COMPLETE compiles without launching"),
    OptionSpec("compile_timeout", "int", 600, 0, INT32_MAX, doc="s; warn when a compile takes longer (0: never)"),
    OptionSpec("compile_timeout_stage", "int", 0, 0, INT32_MAX, doc="s; per-stage warning (0: never)"),
    OptionSpec("compile_monitor_enable", "int", 0, 0, 2, accept_bool=True,
               doc="0 off, 1 monitor, 2 monitor with pass details"),
    OptionSpec("compile_monitor_print_interval", "int", 60, 0, INT32_MAX, doc="s between progress lines"),
    OptionSpec("cache_max_size", "size", 0,
               doc="bytes or '500M': after this kernel writes a new cache entry, least-recently-used entries go "
                   "until the cache holds at most this; 0: PYPTO_CACHE_MAX_SIZE if set, else unbounded"),
)

_RUNTIME = _schema(
    OptionSpec("run_mode", "enum", _default_run_mode, enum_type=RunMode,
               doc="NPU if ASCEND_HOME_PATH is set, else SIM (native CPU code)"),
    OptionSpec("device_sched_mode", "int", 0, 0, 3, doc="recorded; no effect on CPU"),
    OptionSpec("stitch_function_max_num", "int", 128, 1, 1024, doc="recorded"),
    OptionSpec("max_workspace_kb", "int", 0, 0, INT32_MAX, doc="workspace cap when > 0"),
    OptionSpec("valid_shape_optimize", "int", 0, 0, 1, doc="static main body + dynamic tail"),
    OptionSpec("ready_on_host_tensors", "str_list", (), doc="parameter names whose data is ready on the host"),
    OptionSpec("device_sched_parallelism", "int", _default_threads, 1, 64,
               doc="threads for kernels (tiles, matmul) and pypto.loop(parallel=True); default: the cores this "
                   "process may run on; 1 runs serially"),
    OptionSpec("launch_sched_aicpu_num", "int", 7, 1, 7, auto=7, doc="<= 0 or > 7: auto (7)"),
    OptionSpec("launch_early_mode", "int", 0, 0, 2, doc="recorded"),
)

_CODEGEN = _schema(
    OptionSpec("support_dynamic_aligned", "bool", False),
    OptionSpec("enable_pmu_trace", "bool", False),
    OptionSpec("soc_version", "str", "", doc="recorded (NPU target name)"),
    OptionSpec("vf_options", "str", "", doc="recorded (extra NPU vector-fusion compiler flags)"),
)

_PASS = _schema(
    OptionSpec("vec_nbuffer_setting", "dict", types.MappingProxyType({})),
    OptionSpec("cube_l1_reuse_setting", "dict", types.MappingProxyType({})),
    OptionSpec("cube_nbuffer_setting", "dict", types.MappingProxyType({"DEFAULT": 1})),
    OptionSpec("sg_set_scope", "scope", (-1, False, False)),
    OptionSpec("auto_mix_partition", "int", 0, 0, 1),
    OptionSpec("sg_set_ooo_scope", "int", -1, 1, 100000, extra=(-1,)),
    OptionSpec("ooo_sched_mode", "choice", "", choices=("", "GAPMIN", "HLF")),
    OptionSpec("sg_set_tunevf_mode", "int", 0, 0, 2),
    OptionSpec("enable_slice", "bool", False),
)

_VERIFY = _schema(
    OptionSpec("enable_pass_verify", "bool", False, doc="check each stage against pypto.set_verify_golden_data"),
    OptionSpec("pass_verify_save_tensor", "bool", False),
    OptionSpec("pass_verify_save_tensor_dir", "path", ""),
    OptionSpec("pass_verify_pass_filter", "str_list", ()),
    OptionSpec("pass_verify_error_tol", "tol", (1e-3, 1e-3), doc="[rtol, atol]"),
)

_DEBUG = _schema(
    OptionSpec("compile_debug_mode", "int", 0, 0, 2, doc="> 0: dump IR and generated C++ (see dump_dir)"),
    OptionSpec("runtime_debug_mode", "int", 0, 0, 4, doc="4: out-of-bounds checks of global memory accesses"),
    OptionSpec("dump_pass_graph", "str_list", ()),
    OptionSpec("dump_dir", "path", "", doc="where IR and C++ go when compile_debug_mode > 0 ('' = pypto's choice)"),
)

# Keyword name of each group -> its schema. Order is the order of ResolvedOptions' fields.
SCHEMAS: Mapping[str, Mapping[str, OptionSpec]] = types.MappingProxyType({
    "host_options": _HOST, "runtime_options": _RUNTIME, "codegen_options": _CODEGEN,
    "pass_options": _PASS, "verify_options": _VERIFY, "debug_options": _DEBUG,
})
GROUP_NAMES: tuple[str, ...] = tuple(SCHEMAS)
_SHORT = {g: g[: -len("_options")] for g in GROUP_NAMES}          # "pass_options" -> "pass"


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
        raise OptionError(f"{where}: {group} must be a dict or None, got {_describe(given)}")
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
        except _Invalid as e:
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
    raise TypeError(f"no canonical form for {_describe(v)}")


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
            attr = "pass_" if g == "pass_options" else _SHORT[g]
            set_(self, attr, types.MappingProxyType(dict(groups[g])))
        set_(self, "auto", frozenset(auto))
        text = _DIGEST_VERSION + ";" + ";".join(
            f"{_SHORT[g]}:{_canon(self[g])}" for g in GROUP_NAMES)
        set_(self, "_digest", hashlib.sha256(text.encode()).hexdigest())

    def __setattr__(self, name, value):
        raise AttributeError("ResolvedOptions is immutable")

    def __delattr__(self, name):
        raise AttributeError("ResolvedOptions is immutable")

    def __getitem__(self, group: str) -> Mapping[str, Any]:
        """By group name: "runtime" or "runtime_options"."""
        short = group[: -len("_options")] if group.endswith("_options") else group
        if short not in _SHORT.values():
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
        groups[g][key] = _AutoInt(groups[g][key])
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
            raise TypeError(f"pypto.options(...) decorates a function, got {_describe(func)}")

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
        auto += [f"{_SHORT[g]}.{k}" for k, v in values.items() if isinstance(v, _AutoInt)]
        resolved[g] = values
    return ResolvedOptions(resolved, auto)
