"""The option tables: each group of `@pypto.frontend.jit` options (host, runtime, codegen, pass, verify, debug) as a
declarative table of `OptionSpec`s (name, kind, range or choices, default, doc), and how one value is checked.

`options.py` resolves a kernel's dicts against these tables; `modes.py` holds the enums and defaults they name.
"""
from __future__ import annotations

import enum
import math
import numbers
import os
import types
from dataclasses import dataclass
from typing import Any, Mapping

from .modes import INT32_MAX, CompileStage, RunMode, default_run_mode, default_threads, parse_size

class Invalid(Exception):
    """Raised by a checker; turned into an OptionError that names the kernel, group and option."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind        # "type" or "range"
        self.detail = detail


def describe_value(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


class AutoInt(int):
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

    # Each checker returns the normalised value or raises Invalid.
    def check(self, value: Any) -> Any:
        return getattr(self, "_check_" + self.kind)(value)

    def _type_error(self, value: Any) -> Invalid:
        return Invalid("type", f"expected {self.expected}, got {describe_value(value)}")

    def _range_error(self, value: Any) -> Invalid:
        return Invalid("range", f"value {value!r} is out of range; expected {self.range_text}")

    def _check_int(self, value):
        if isinstance(value, bool) and self.accept_bool:
            value = int(value)
        if not _is_int(value):
            raise self._type_error(value)
        v = int(value)
        if v in self.extra or self.lo <= v <= self.hi:
            return v
        if self.auto is not None:
            return AutoInt(self.auto)
        raise self._range_error(value)

    def _check_size(self, value):
        if isinstance(value, str):
            try:
                return parse_size(value)
            except ValueError as e:
                raise Invalid("range", f"value {value!r} is out of range; {e}") from None
        if not _is_int(value):
            raise self._type_error(value)
        if int(value) < 0:
            raise Invalid("range", f"value {value!r} is out of range; expected >= 0 bytes")
        return int(value)

    def _check_bool(self, value):
        if isinstance(value, bool):
            return value
        if _is_int(value):
            if int(value) in (0, 1):
                return bool(int(value))
            raise Invalid("range", f"value {value!r} is out of range; expected True/False or 0/1")
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
                raise Invalid("type", f"expected {self.expected}, got {describe_value(value)}: "
                                       f"item {i} is {describe_value(item)}")
            if item not in out:        # duplicates are harmless; keep the first
                out.append(str(item))
        return tuple(out)

    def _check_dict(self, value):
        if not isinstance(value, dict):
            raise self._type_error(value)
        for k, v in value.items():
            if not (isinstance(k, str) or _is_int(k)):
                raise Invalid("type", f"expected dict with int or str keys, got key {describe_value(k)}")
            if not _is_int(v) and not (self.name == "cube_l1_reuse_setting" and _is_l1_pair(v)):
                want = "int or (count, side)" if self.name == "cube_l1_reuse_setting" else "int"
                raise Invalid("type", f"expected dict values of type {want}, got {describe_value(v)} for key {k!r}")
        return types.MappingProxyType({k: (tuple(v) if isinstance(v, list) else v) for k, v in value.items()})

    def _check_tol(self, value):
        if not isinstance(value, (list, tuple)) or len(value) != 2 \
                or not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in value):
            raise self._type_error(value)
        rtol, atol = float(value[0]), float(value[1])
        if not (math.isfinite(rtol) and math.isfinite(atol) and rtol >= 0 and atol >= 0):
            raise Invalid("range", f"value {value!r} is out of range; expected finite rtol >= 0 and atol >= 0")
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
            raise Invalid("range", f"value {value!r} is out of range; with scope_id -1 both flags must be False")
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
    OptionSpec("run_mode", "enum", default_run_mode, enum_type=RunMode,
               doc="NPU if ASCEND_HOME_PATH is set, else SIM (native CPU code)"),
    OptionSpec("device_sched_mode", "int", 0, 0, 3, doc="recorded; no effect on CPU"),
    OptionSpec("stitch_function_max_num", "int", 128, 1, 1024, doc="recorded"),
    OptionSpec("max_workspace_kb", "int", 0, 0, INT32_MAX, doc="workspace cap when > 0"),
    OptionSpec("valid_shape_optimize", "int", 0, 0, 1, doc="static main body + dynamic tail"),
    OptionSpec("ready_on_host_tensors", "str_list", (), doc="parameter names whose data is ready on the host"),
    OptionSpec("device_sched_parallelism", "int", 1, 1, 8,
               doc="the reference's parallel degree of pypto.loop(parallel=True) on the NPU; recorded on the CPU "
                   "simulator, whose threads are sim_threads"),
    OptionSpec("sim_threads", "int", default_threads, 1, 64,
               doc="threads of the CPU simulator (tiles, matmul, pypto.loop(parallel=True)); default: "
                   "$PYPTO_SIM_THREADS, else the cores this process may run on; 1 runs serially"),
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
SHORT_NAMES = {g: g[: -len("_options")] for g in GROUP_NAMES}          # "pass_options" -> "pass"


__all__ = ["GROUP_NAMES", "SCHEMAS", "SHORT_NAMES", "AutoInt", "Invalid", "OptionSpec", "describe_value"]
