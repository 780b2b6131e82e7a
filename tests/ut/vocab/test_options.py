"""Option schemas, validation, defaults, digest and `pypto.options` scopes (python/pypto/frontend/options.py)."""
from __future__ import annotations

import os
import pathlib
import pickle
import threading

import numpy as np
import pytest

from pypto.errors import OptionError
from pypto.vocab import options as O
from pypto.vocab.options import (
    GROUP_NAMES, SCHEMAS, CompileStage, CompStage, ResolvedOptions, RunMode, current_scope, detect_cann,
    options, validate_options,
)

I32 = 2147483647
PARAMS = ["a", "b", "out"]


def resolve(**groups) -> ResolvedOptions:
    return validate_options("kern", PARAMS, scope=None, **groups)


def get(opts: ResolvedOptions, group: str, key: str):
    return opts[group][key]


def err(**groups) -> str:
    with pytest.raises(OptionError) as ei:
        resolve(**groups)
    return str(ei.value)


@pytest.fixture(autouse=True)
def _no_cann(monkeypatch):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)


# ---------------------------------------------------------------------------------------------------------------
# The schema table: every option has a default, and the table matches what the tests below cover
# ---------------------------------------------------------------------------------------------------------------

# (group, key, default, lo, hi) for every plain int option.
INT_OPTIONS = [
    ("host_options", "compile_timeout", 600, 0, I32),
    ("host_options", "compile_timeout_stage", 0, 0, I32),
    ("host_options", "compile_monitor_enable", 0, 0, 2),
    ("host_options", "compile_monitor_print_interval", 60, 0, I32),
    ("runtime_options", "device_sched_mode", 0, 0, 3),
    ("runtime_options", "stitch_function_max_num", 128, 1, 1024),
    ("runtime_options", "max_workspace_kb", 0, 0, I32),
    ("runtime_options", "valid_shape_optimize", 0, 0, 1),
    ("runtime_options", "device_sched_parallelism", 1, 1, 8),     # the reference's range and default
    ("runtime_options", "sim_threads", max(1, min(64, len(os.sched_getaffinity(0)))), 1, 64),
    ("runtime_options", "launch_early_mode", 0, 0, 2),
    ("pass_options", "auto_mix_partition", 0, 0, 1),
    ("pass_options", "sg_set_tunevf_mode", 0, 0, 2),
    ("debug_options", "compile_debug_mode", 0, 0, 2),
    ("debug_options", "runtime_debug_mode", 0, 0, 4),
]
BOOL_OPTIONS = [
    ("codegen_options", "support_dynamic_aligned"),
    ("codegen_options", "enable_pmu_trace"),
    ("pass_options", "enable_slice"),
    ("verify_options", "enable_pass_verify"),
    ("verify_options", "pass_verify_save_tensor"),
]
STR_LIST_OPTIONS = [
    ("verify_options", "pass_verify_pass_filter"),
    ("debug_options", "dump_pass_graph"),
]
STR_OPTIONS = [
    ("codegen_options", "soc_version"),
    ("codegen_options", "vf_options"),
]
PATH_OPTIONS = [
    ("verify_options", "pass_verify_save_tensor_dir"),
    ("debug_options", "dump_dir"),
]
DICT_OPTIONS = [
    ("pass_options", "vec_nbuffer_setting", {}),
    ("pass_options", "cube_l1_reuse_setting", {}),
    ("pass_options", "cube_nbuffer_setting", {"DEFAULT": 1}),
]
SPECIAL = {
    ("host_options", "compile_stage"), ("runtime_options", "run_mode"),
    ("runtime_options", "ready_on_host_tensors"), ("runtime_options", "launch_sched_aicpu_num"),
    ("pass_options", "sg_set_scope"), ("pass_options", "sg_set_ooo_scope"), ("pass_options", "ooo_sched_mode"),
    ("verify_options", "pass_verify_error_tol"), ("host_options", "cache_max_size"),  # tests/ut/ux/test_cache_option.py
}


def test_schema_is_fully_covered_by_these_tests():
    covered = ({(g, k) for g, k, *_ in INT_OPTIONS} | set(BOOL_OPTIONS) | set(STR_LIST_OPTIONS)
               | set(STR_OPTIONS) | set(PATH_OPTIONS) | {(g, k) for g, k, _ in DICT_OPTIONS} | SPECIAL)
    in_schema = {(g, k) for g in GROUP_NAMES for k in SCHEMAS[g]}
    assert covered == in_schema


def test_api_md_options_are_all_present():
    required = {
        "host_options": {"compile_stage", "compile_timeout", "compile_monitor_enable",
                         "compile_monitor_print_interval"},
        "runtime_options": {"run_mode", "device_sched_mode", "stitch_function_max_num", "max_workspace_kb",
                            "valid_shape_optimize", "ready_on_host_tensors", "device_sched_parallelism",
                            "launch_sched_aicpu_num", "launch_early_mode"},
        "codegen_options": {"support_dynamic_aligned", "enable_pmu_trace"},
        "pass_options": {"vec_nbuffer_setting", "cube_l1_reuse_setting", "cube_nbuffer_setting", "sg_set_scope",
                         "auto_mix_partition", "sg_set_ooo_scope", "ooo_sched_mode", "sg_set_tunevf_mode",
                         "enable_slice"},
        "verify_options": {"enable_pass_verify", "pass_verify_save_tensor", "pass_verify_save_tensor_dir",
                           "pass_verify_pass_filter", "pass_verify_error_tol"},
        "debug_options": {"compile_debug_mode", "runtime_debug_mode", "dump_pass_graph", "dump_dir"},
    }
    assert set(GROUP_NAMES) == set(required)
    for g, keys in required.items():
        assert keys <= set(SCHEMAS[g]), g


def test_all_defaults():
    o = resolve()
    assert dict(o.host) == {"compile_stage": CompileStage.ALL_COMPLETE, "compile_timeout": 600,
                            "compile_timeout_stage": 0, "compile_monitor_enable": 0,
                            "compile_monitor_print_interval": 60, "cache_max_size": 0}
    assert dict(o.runtime) == {"run_mode": RunMode.SIM, "device_sched_mode": 0, "stitch_function_max_num": 128,
                               "max_workspace_kb": 0, "valid_shape_optimize": 0, "ready_on_host_tensors": (),
                               "device_sched_parallelism": 1,
                               "sim_threads": max(1, min(64, len(os.sched_getaffinity(0)))),
                               "launch_sched_aicpu_num": 7,
                               "launch_early_mode": 0}
    assert dict(o.codegen) == {"support_dynamic_aligned": False, "enable_pmu_trace": False, "soc_version": "",
                               "vf_options": ""}
    assert o.pass_["sg_set_scope"] == (-1, False, False)
    assert o.pass_["sg_set_ooo_scope"] == -1 and o.pass_["ooo_sched_mode"] == ""
    assert dict(o.pass_["cube_nbuffer_setting"]) == {"DEFAULT": 1}
    assert o.verify["pass_verify_error_tol"] == (1e-3, 1e-3)
    assert o.verify["pass_verify_pass_filter"] == ()
    assert dict(o.debug) == {"compile_debug_mode": 0, "runtime_debug_mode": 0, "dump_pass_graph": (),
                             "dump_dir": ""}
    assert o.auto == frozenset()


# ---------------------------------------------------------------------------------------------------------------
# Int options: default, a valid value, both bounds, one past each bound, wrong types
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("group,key,default,lo,hi", INT_OPTIONS)
def test_int_option(group, key, default, lo, hi):
    assert get(resolve(), group, key) == default
    for v in {lo, hi, (lo + hi) // 2}:
        assert get(resolve(**{group: {key: v}}), group, key) == v
    for bad in (lo - 1, hi + 1):
        msg = err(**{group: {key: bad}})
        assert "'kern'" in msg and group in msg and repr(key) in msg
        assert f"value {bad}" in msg and f"{lo}..{hi}" in msg


@pytest.mark.parametrize("group,key,default,lo,hi", INT_OPTIONS)
@pytest.mark.parametrize("bad", ["1", 1.0, None, [1]])
def test_int_option_wrong_type(group, key, default, lo, hi, bad):
    msg = err(**{group: {key: bad}})
    assert repr(key) in msg and "expected int" in msg
    assert f"got {bad!r} ({type(bad).__name__})" in msg


@pytest.mark.parametrize("group,key,default,lo,hi",
                         [t for t in INT_OPTIONS if t[1] != "compile_monitor_enable"])
def test_int_option_rejects_bool(group, key, default, lo, hi):
    msg = err(**{group: {key: True}})
    assert "expected int" in msg and "got True (bool)" in msg


def test_compile_monitor_enable_accepts_bool_as_reference_examples_do():
    o = resolve(host_options={"compile_monitor_enable": True})
    assert o.host["compile_monitor_enable"] == 1 and type(o.host["compile_monitor_enable"]) is int
    assert resolve(host_options={"compile_monitor_enable": False}).host["compile_monitor_enable"] == 0


def test_int_options_accept_numpy_ints_and_intenum_members():
    o = resolve(runtime_options={"device_sched_mode": np.int64(2), "stitch_function_max_num": RunMode.SIM})
    assert o.runtime["device_sched_mode"] == 2 and type(o.runtime["device_sched_mode"]) is int
    assert o.runtime["stitch_function_max_num"] == 1 and type(o.runtime["stitch_function_max_num"]) is int
    assert o.digest() == resolve(runtime_options={"device_sched_mode": 2, "stitch_function_max_num": 1}).digest()


# ---------------------------------------------------------------------------------------------------------------
# launch_sched_aicpu_num: <= 0 or > 7 means "auto" (7)
# ---------------------------------------------------------------------------------------------------------------

def test_launch_sched_aicpu_num():
    assert resolve().runtime["launch_sched_aicpu_num"] == 7
    for v in (1, 3, 7):
        o = resolve(runtime_options={"launch_sched_aicpu_num": v})
        assert o.runtime["launch_sched_aicpu_num"] == v and o.auto == frozenset()
    for v in (0, -1, 8, 1000):
        o = resolve(runtime_options={"launch_sched_aicpu_num": v})
        assert o.runtime["launch_sched_aicpu_num"] == 7
        assert o.auto == {"runtime.launch_sched_aicpu_num"}
        # Auto 7 behaves like 7: same key.
        assert o.digest() == resolve(runtime_options={"launch_sched_aicpu_num": 7}).digest()
    assert "expected int" in err(runtime_options={"launch_sched_aicpu_num": "7"})
    assert "got True (bool)" in err(runtime_options={"launch_sched_aicpu_num": True})


# ---------------------------------------------------------------------------------------------------------------
# Bool options: bool, or exactly 0/1
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("group,key", BOOL_OPTIONS)
def test_bool_option(group, key):
    assert get(resolve(), group, key) is False
    assert get(resolve(**{group: {key: True}}), group, key) is True
    assert get(resolve(**{group: {key: 1}}), group, key) is True
    assert get(resolve(**{group: {key: 0}}), group, key) is False
    assert resolve(**{group: {key: 1}}).digest() == resolve(**{group: {key: True}}).digest()
    for bad in (2, -1):
        msg = err(**{group: {key: bad}})
        assert repr(key) in msg and f"value {bad}" in msg and "0/1" in msg
    for bad in ("True", 1.0, None):
        msg = err(**{group: {key: bad}})
        assert repr(key) in msg and "expected bool" in msg and f"got {bad!r} ({type(bad).__name__})" in msg


# ---------------------------------------------------------------------------------------------------------------
# Enum options
# ---------------------------------------------------------------------------------------------------------------

def test_run_mode_values():
    for v, want in ((RunMode.NPU, RunMode.NPU), (RunMode.SIM, RunMode.SIM), (0, RunMode.NPU), (1, RunMode.SIM)):
        got = resolve(runtime_options={"run_mode": v}).runtime["run_mode"]
        assert got is want
    for bad in (-1, 2):
        msg = err(runtime_options={"run_mode": bad})
        assert "'run_mode'" in msg and f"value {bad}" in msg and "RunMode.NPU=0" in msg and "RunMode.SIM=1" in msg
    for bad in ("SIM", 1.0, True, CompileStage.TENSOR_GRAPH):
        msg = err(runtime_options={"run_mode": bad})
        assert "'run_mode'" in msg and "expected RunMode" in msg and f"({type(bad).__name__})" in msg


def test_run_mode_default_follows_ascend_home_path(monkeypatch, tmp_path):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    assert resolve().runtime["run_mode"] is RunMode.SIM
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    assert resolve().runtime["run_mode"] is RunMode.NPU
    # decided at validation time, and an explicit value wins
    assert resolve(runtime_options={"run_mode": RunMode.SIM}).runtime["run_mode"] is RunMode.SIM
    monkeypatch.setenv("ASCEND_HOME_PATH", "")
    assert resolve().runtime["run_mode"] is RunMode.SIM


def test_detect_cann(monkeypatch, tmp_path):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    assert detect_cann() is None
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "missing"))
    assert detect_cann() is None
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    assert detect_cann() == str(tmp_path)


def test_compile_stage():
    assert CompStage is CompileStage
    assert [m.name for m in CompileStage] == ["ALL_COMPLETE", "TENSOR_GRAPH", "TILE_GRAPH", "EXECUTE_GRAPH",
                                              "CODEGEN_INSTRUCTION", "CODEGEN_BINARY"]
    assert resolve(host_options={"compile_stage": CompileStage.TILE_GRAPH}).host["compile_stage"] \
        is CompileStage.TILE_GRAPH
    assert resolve(host_options={"compile_stage": 0}).host["compile_stage"] is CompileStage.ALL_COMPLETE
    assert resolve(host_options={"compile_stage": 5}).host["compile_stage"] is CompileStage.CODEGEN_BINARY
    for bad in (-1, 6):
        msg = err(host_options={"compile_stage": bad})
        assert "'compile_stage'" in msg and f"value {bad}" in msg and "CODEGEN_BINARY=5" in msg
    msg = err(host_options={"compile_stage": "TILE_GRAPH"})
    assert "expected CompileStage" in msg and "got 'TILE_GRAPH' (str)" in msg
    msg = err(host_options={"compile_stage": RunMode.SIM})
    assert "expected CompileStage" in msg and "(RunMode)" in msg


# ---------------------------------------------------------------------------------------------------------------
# str / path / choice options
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("group,key", STR_OPTIONS)
def test_str_option(group, key):
    assert get(resolve(), group, key) == ""
    assert get(resolve(**{group: {key: "Ascend910B"}}), group, key) == "Ascend910B"
    msg = err(**{group: {key: 3}})
    assert repr(key) in msg and "expected str" in msg and "got 3 (int)" in msg


@pytest.mark.parametrize("group,key", PATH_OPTIONS)
def test_path_option(group, key, tmp_path):
    assert get(resolve(), group, key) == ""
    assert get(resolve(**{group: {key: "/tmp/x"}}), group, key) == "/tmp/x"
    assert get(resolve(**{group: {key: tmp_path}}), group, key) == str(tmp_path)
    assert isinstance(get(resolve(**{group: {key: pathlib.Path("d")}}), group, key), str)
    msg = err(**{group: {key: 1}})
    assert repr(key) in msg and "expected str or os.PathLike" in msg and "got 1 (int)" in msg


def test_ooo_sched_mode():
    for v in ("", "GAPMIN", "HLF"):
        assert resolve(pass_options={"ooo_sched_mode": v}).pass_["ooo_sched_mode"] == v
    msg = err(pass_options={"ooo_sched_mode": "gapmin"})
    assert "'ooo_sched_mode'" in msg and "value 'gapmin'" in msg and "'', 'GAPMIN', 'HLF'" in msg
    msg = err(pass_options={"ooo_sched_mode": 1})
    assert "expected str" in msg and "got 1 (int)" in msg


# ---------------------------------------------------------------------------------------------------------------
# list / dict / tuple-valued options
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("group,key", STR_LIST_OPTIONS)
def test_str_list_option(group, key):
    assert get(resolve(), group, key) == ()
    assert get(resolve(**{group: {key: ["PassA", "PassB"]}}), group, key) == ("PassA", "PassB")
    assert get(resolve(**{group: {key: ("PassA",)}}), group, key) == ("PassA",)
    assert get(resolve(**{group: {key: ["A", "A"]}}), group, key) == ("A",)
    msg = err(**{group: {key: "PassA"}})
    assert repr(key) in msg and "expected list[str]" in msg and "got 'PassA' (str)" in msg
    msg = err(**{group: {key: ["A", 1]}})
    assert "expected list[str]" in msg and "item 1 is 1 (int)" in msg


@pytest.mark.parametrize("group,key,default", DICT_OPTIONS)
def test_dict_option(group, key, default):
    assert dict(get(resolve(), group, key)) == default
    value = {"DEFAULT": 4, "func8_0": 1, -1: 2}
    got = get(resolve(**{group: {key: value}}), group, key)
    assert dict(got) == value
    with pytest.raises(TypeError):
        got["DEFAULT"] = 5                      # read-only
    value["DEFAULT"] = 99                       # the caller's dict is not aliased
    assert get(resolve(**{group: {key: {"DEFAULT": 4}}}), group, key)["DEFAULT"] == 4
    for bad in ([("DEFAULT", 1)], "DEFAULT", 4):
        msg = err(**{group: {key: bad}})
        assert repr(key) in msg and "expected dict" in msg and f"got {bad!r} ({type(bad).__name__})" in msg
    msg = err(**{group: {key: {"DEFAULT": "4"}}})
    assert "expected dict values" in msg and "'4' (str)" in msg
    msg = err(**{group: {key: {1.5: 4}}})
    assert "keys" in msg and "1.5 (float)" in msg


def test_cube_l1_reuse_setting_accepts_count_side_pairs():
    o = resolve(pass_options={"cube_l1_reuse_setting": {"DEFAULT": 4, "func8_0": (1, "left"), "MM1": [2, "right"]}})
    assert dict(o.pass_["cube_l1_reuse_setting"]) == {"DEFAULT": 4, "func8_0": (1, "left"), "MM1": (2, "right")}
    assert "int or (count, side)" in err(pass_options={"cube_l1_reuse_setting": {"x": (1, "up")}})
    assert "expected dict values of type int" in err(pass_options={"vec_nbuffer_setting": {"x": (1, "left")}})


def test_sg_set_scope():
    assert resolve(pass_options={"sg_set_scope": 3}).pass_["sg_set_scope"] == (3, False, False)
    assert resolve(pass_options={"sg_set_scope": (3, True, False)}).pass_["sg_set_scope"] == (3, True, False)
    assert resolve(pass_options={"sg_set_scope": [I32, False, True]}).pass_["sg_set_scope"] == (I32, False, True)
    assert resolve(pass_options={"sg_set_scope": -1}).pass_["sg_set_scope"] == (-1, False, False)
    for bad in (-2, I32 + 1, (-2, False, False)):
        msg = err(pass_options={"sg_set_scope": bad})
        assert "'sg_set_scope'" in msg and f"value {bad!r}" in msg and f"-1..{I32}" in msg
    assert "both flags must be False" in err(pass_options={"sg_set_scope": (-1, True, False)})
    for bad in ((1, True), (1, "True", True), "1", True, 1.0):
        msg = err(pass_options={"sg_set_scope": bad})
        assert "expected int or (int, bool, bool)" in msg and f"got {bad!r}" in msg


def test_sg_set_ooo_scope():
    for v in (-1, 1, 100000):
        assert resolve(pass_options={"sg_set_ooo_scope": v}).pass_["sg_set_ooo_scope"] == v
    for bad in (0, -2, 100001):
        msg = err(pass_options={"sg_set_ooo_scope": bad})
        assert "'sg_set_ooo_scope'" in msg and f"value {bad}" in msg and "-1 or 1..100000" in msg
    assert "expected int" in err(pass_options={"sg_set_ooo_scope": "1"})


def test_pass_verify_error_tol():
    assert resolve().verify["pass_verify_error_tol"] == (1e-3, 1e-3)
    o = resolve(verify_options={"pass_verify_error_tol": [1e-2, 0]})
    assert o.verify["pass_verify_error_tol"] == (1e-2, 0.0)
    assert all(type(x) is float for x in o.verify["pass_verify_error_tol"])
    assert resolve(verify_options={"pass_verify_error_tol": (0.0, 0.0)}).verify["pass_verify_error_tol"] == (0, 0)
    for bad in ([-1e-9, 0.1], [0.1, -1], [float("nan"), 0.1], [0.1, float("inf")]):
        msg = err(verify_options={"pass_verify_error_tol": bad})
        assert "'pass_verify_error_tol'" in msg and "out of range" in msg and "rtol >= 0" in msg
    for bad in (1e-3, [1e-3], [1e-3, 1e-3, 1e-3], ["0.1", 0.1], [True, 0.1]):
        msg = err(verify_options={"pass_verify_error_tol": bad})
        assert "expected [rtol, atol]" in msg and f"got {bad!r} ({type(bad).__name__})" in msg


def test_ready_on_host_tensors():
    o = resolve(runtime_options={"ready_on_host_tensors": ["a", "b"]})
    assert o.runtime["ready_on_host_tensors"] == ("a", "b")
    msg = err(runtime_options={"ready_on_host_tensors": ["a", "nope"]})
    assert "'kern'" in msg and "'nope' is not a parameter" in msg and "a, b, out" in msg
    msg = err(runtime_options={"ready_on_host_tensors": "a"})
    assert "expected list[str]" in msg and "got 'a' (str)" in msg


# ---------------------------------------------------------------------------------------------------------------
# Unknown keys, bad groups
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("group", GROUP_NAMES)
def test_unknown_key_lists_valid_keys_sorted(group):
    msg = err(**{group: {"no_such_option": 1}})
    assert "'kern'" in msg and group in msg and "'no_such_option'" in msg
    assert "valid keys: " + ", ".join(sorted(SCHEMAS[group])) in msg


def test_unknown_key_suggests_close_match():
    msg = err(runtime_options={"run_mod": 1})
    assert "did you mean 'run_mode'" in msg


def test_non_str_key_is_unknown():
    assert "unknown runtime_options key 1" in err(runtime_options={1: 1})


@pytest.mark.parametrize("bad", [[("run_mode", 1)], "run_mode", 1, True])
def test_non_dict_group(bad):
    msg = err(runtime_options=bad)
    assert "'kern'" in msg and "runtime_options must be a dict or None" in msg
    assert f"got {bad!r} ({type(bad).__name__})" in msg


def test_unknown_group():
    with pytest.raises(OptionError, match="unknown option group 'runtime'.*runtime_options"):
        validate_options("kern", PARAMS, runtime={"run_mode": 1})


def test_none_groups_mean_defaults():
    assert resolve(**{g: None for g in GROUP_NAMES}) == resolve()
    assert resolve(**{g: {} for g in GROUP_NAMES}).digest() == resolve().digest()


def test_option_error_is_a_value_error():
    with pytest.raises(ValueError):
        resolve(runtime_options={"device_sched_mode": 9})


# ---------------------------------------------------------------------------------------------------------------
# ResolvedOptions
# ---------------------------------------------------------------------------------------------------------------

def test_resolved_is_frozen_and_accessible():
    o = resolve(runtime_options={"device_sched_mode": 2})
    assert o.runtime["device_sched_mode"] == 2
    assert o["runtime"] is o.runtime and o["runtime_options"] is o.runtime and o["pass"] is o.pass_
    with pytest.raises(KeyError):
        o["nope"]
    with pytest.raises(AttributeError):
        o.runtime = {}
    with pytest.raises(AttributeError):
        o.other = 1
    with pytest.raises(TypeError):
        o.runtime["device_sched_mode"] = 3
    with pytest.raises(AttributeError):
        del o.host


def test_as_dict_is_plain_and_detached():
    o = resolve(verify_options={"pass_verify_error_tol": [0.5, 0.25]},
                pass_options={"vec_nbuffer_setting": {"DEFAULT": 2}})
    d = o.as_dict()
    assert set(d) == set(GROUP_NAMES)
    assert d["verify_options"]["pass_verify_error_tol"] == [0.5, 0.25]
    assert d["pass_options"]["vec_nbuffer_setting"] == {"DEFAULT": 2}
    assert type(d["pass_options"]["vec_nbuffer_setting"]) is dict
    assert d["pass_options"]["sg_set_scope"] == [-1, False, False]
    # as_dict round-trips through validation to the same options
    assert resolve(**d) == o
    d["runtime_options"]["device_sched_mode"] = 3
    d["pass_options"]["vec_nbuffer_setting"]["DEFAULT"] = 5
    assert o.runtime["device_sched_mode"] == 0 and o.pass_["vec_nbuffer_setting"]["DEFAULT"] == 2


def test_pickle_round_trip():
    o = resolve(runtime_options={"launch_sched_aicpu_num": 0}, pass_options={"cube_l1_reuse_setting": {"x": (1, "left")}})
    o2 = pickle.loads(pickle.dumps(o))
    assert o2 == o and o2.digest() == o.digest() and o2.auto == o.auto
    assert o2.pass_["cube_l1_reuse_setting"]["x"] == (1, "left")


def test_repr_shows_non_defaults():
    r = repr(resolve(runtime_options={"device_sched_mode": 2}))
    assert "device_sched_mode" in r and "stitch_function_max_num" not in r and "digest=" in r


# ---------------------------------------------------------------------------------------------------------------
# Digest
# ---------------------------------------------------------------------------------------------------------------

def test_digest_is_stable_hex():
    d = resolve().digest()
    assert len(d) == 64 and int(d, 16) >= 0
    assert resolve().digest() == d
    assert resolve(runtime_options={"device_sched_mode": 0}).digest() == d      # explicit default == default
    # key order does not matter
    a = resolve(runtime_options={"device_sched_mode": 1, "launch_early_mode": 2},
                pass_options={"vec_nbuffer_setting": {"a": 1, "b": 2}})
    b = resolve(runtime_options={"launch_early_mode": 2, "device_sched_mode": 1},
                pass_options={"vec_nbuffer_setting": {"b": 2, "a": 1}})
    assert a.digest() == b.digest() and a == b and hash(a) == hash(b)


# One changed, valid value per option; each must change the digest.
CHANGED = (
    [(g, k, lo if d != lo else hi) for g, k, d, lo, hi in INT_OPTIONS]
    + [(g, k, True) for g, k in BOOL_OPTIONS]
    + [(g, k, ["x"]) for g, k in STR_LIST_OPTIONS]
    + [(g, k, "x") for g, k in STR_OPTIONS + PATH_OPTIONS]
    + [(g, k, {"DEFAULT": 2}) for g, k, _ in DICT_OPTIONS]
    + [("host_options", "compile_stage", CompileStage.TILE_GRAPH),
       ("runtime_options", "run_mode", RunMode.NPU),
       ("runtime_options", "ready_on_host_tensors", ["a"]),
       ("runtime_options", "launch_sched_aicpu_num", 3),
       ("pass_options", "sg_set_scope", 1),
       ("pass_options", "sg_set_ooo_scope", 5),
       ("pass_options", "ooo_sched_mode", "HLF"),
       ("verify_options", "pass_verify_error_tol", [1e-3, 2e-3]),
       ("host_options", "cache_max_size", "500M")]
)


def test_changed_table_covers_every_option():
    assert {(g, k) for g, k, _ in CHANGED} == {(g, k) for g in GROUP_NAMES for k in SCHEMAS[g]}


@pytest.mark.parametrize("group,key,value", CHANGED)
def test_any_changed_value_changes_digest(group, key, value):
    base = resolve()
    changed = resolve(**{group: {key: value}})
    assert changed[group][key] != base[group][key]
    assert changed.digest() != base.digest()
    assert changed != base


def test_digest_distinguishes_close_values():
    digests = {
        resolve(verify_options={"pass_verify_error_tol": [1e-3, t]}).digest()
        for t in (1e-3, 1e-3 + 1e-20, 1e-3 + 1e-18, 0.0, -0.0, 1.0)
    }
    assert len(digests) == 4            # 1e-3 + 1e-20 == 1e-3 in float64; -0.0 == 0.0 for a tolerance
    assert resolve(pass_options={"vec_nbuffer_setting": {1: 2}}).digest() != \
        resolve(pass_options={"vec_nbuffer_setting": {"1": 2}}).digest()
    assert resolve(pass_options={"sg_set_scope": (1, True, False)}).digest() != \
        resolve(pass_options={"sg_set_scope": (1, False, True)}).digest()


# ---------------------------------------------------------------------------------------------------------------
# pypto.options scopes
# ---------------------------------------------------------------------------------------------------------------

def kernel_opts(**groups) -> ResolvedOptions:
    """As the decorator does: validate against the current scope."""
    return validate_options("kern", PARAMS, **groups)


def test_scope_sets_defaults_and_decorator_overrides_key_by_key():
    with options(runtime_options={"device_sched_mode": 2, "launch_early_mode": 1},
                 debug_options={"compile_debug_mode": 1}):
        o = kernel_opts(runtime_options={"device_sched_mode": 3})
        assert o.runtime["device_sched_mode"] == 3          # decorator wins
        assert o.runtime["launch_early_mode"] == 1          # scope fills the rest
        assert o.debug["compile_debug_mode"] == 1
        assert o.runtime["stitch_function_max_num"] == 128  # default
    o = kernel_opts(runtime_options={"device_sched_mode": 3})
    assert o.runtime["launch_early_mode"] == 0 and o.debug["compile_debug_mode"] == 0
    assert current_scope()["runtime_options"] == {}


def test_scope_is_ignored_with_scope_none():
    with options(runtime_options={"device_sched_mode": 2}):
        assert validate_options("kern", PARAMS, scope=None).runtime["device_sched_mode"] == 0
        explicit = {"runtime_options": {"device_sched_mode": 1}}
        assert validate_options("kern", PARAMS, scope=explicit).runtime["device_sched_mode"] == 1


def test_scope_validates_at_creation():
    with pytest.raises(OptionError) as ei:
        options(runtime_options={"nope": 1})
    assert "pypto.options" in str(ei.value) and "'nope'" in str(ei.value) and "valid keys: device_sched_mode" \
        in str(ei.value)
    with pytest.raises(OptionError, match=r"'device_sched_mode'.*value 9.*0\.\.3"):
        options(runtime_options={"device_sched_mode": 9})
    with pytest.raises(OptionError, match="runtime_options must be a dict"):
        options(runtime_options=[1])
    with pytest.raises(OptionError, match="unknown option group 'name'"):
        options(name="x")


def test_scope_values_are_normalised():
    s = options(runtime_options={"run_mode": 1, "launch_sched_aicpu_num": 0},
                verify_options={"enable_pass_verify": 1})
    assert s.groups["runtime_options"]["run_mode"] is RunMode.SIM
    assert s.groups["verify_options"]["enable_pass_verify"] is True
    with s:
        o = kernel_opts()
    assert o.runtime["launch_sched_aicpu_num"] == 7 and o.auto == {"runtime.launch_sched_aicpu_num"}
    with s:
        o = kernel_opts(runtime_options={"launch_sched_aicpu_num": 4})
    assert o.runtime["launch_sched_aicpu_num"] == 4 and o.auto == frozenset()


def test_nested_scopes_merge_inner_wins():
    with options(runtime_options={"device_sched_mode": 1, "launch_early_mode": 1}) as outer:
        assert isinstance(outer, options)
        with options(runtime_options={"device_sched_mode": 2}, host_options={"compile_timeout": 5}):
            o = kernel_opts()
            assert o.runtime["device_sched_mode"] == 2
            assert o.runtime["launch_early_mode"] == 1
            assert o.host["compile_timeout"] == 5
        o = kernel_opts()
        assert o.runtime["device_sched_mode"] == 1 and o.host["compile_timeout"] == 600
    assert kernel_opts().runtime["device_sched_mode"] == 0


def test_dict_option_in_scope_is_replaced_not_merged():
    with options(pass_options={"vec_nbuffer_setting": {"DEFAULT": 2, "a": 1}}):
        with options(pass_options={"vec_nbuffer_setting": {"DEFAULT": 4}}):
            assert dict(kernel_opts().pass_["vec_nbuffer_setting"]) == {"DEFAULT": 4}
        assert dict(kernel_opts(pass_options={"vec_nbuffer_setting": {}}).pass_["vec_nbuffer_setting"]) == {}


def test_scope_exits_on_exception_and_reuse():
    s = options(runtime_options={"device_sched_mode": 2})
    with pytest.raises(RuntimeError):
        with s:
            raise RuntimeError("boom")
    assert kernel_opts().runtime["device_sched_mode"] == 0
    with s:
        with s:                                     # re-entrant
            assert kernel_opts().runtime["device_sched_mode"] == 2
        assert kernel_opts().runtime["device_sched_mode"] == 2
    assert kernel_opts().runtime["device_sched_mode"] == 0


def test_current_scope_identity_tracks_changes():
    before = current_scope()
    assert current_scope() is before
    with options(runtime_options={"device_sched_mode": 2}):
        inside = current_scope()
        assert inside is not before and current_scope() is inside
        assert inside["runtime_options"]["device_sched_mode"] == 2
        with pytest.raises(TypeError):
            inside["runtime_options"]["device_sched_mode"] = 3
    assert current_scope() is before


def test_options_as_function_decorator():
    @options(runtime_options={"device_sched_mode": 2})
    def build(x, *, y=1):
        """doc"""
        return kernel_opts().runtime["device_sched_mode"], x, y

    assert build.__name__ == "build" and build.__doc__ == "doc"
    assert build(5, y=6) == (2, 5, 6)
    assert kernel_opts().runtime["device_sched_mode"] == 0
    with pytest.raises(TypeError):
        options(runtime_options={})(42)


def test_scope_ready_on_host_tensors_filtered_per_kernel():
    with options(runtime_options={"ready_on_host_tensors": ["a", "x"]}):
        assert kernel_opts().runtime["ready_on_host_tensors"] == ("a",)
        assert validate_options("k2", ["x"]).runtime["ready_on_host_tensors"] == ("x",)
        # the decorator's own list must name real parameters
        with pytest.raises(OptionError, match="'x' is not a parameter"):
            kernel_opts(runtime_options={"ready_on_host_tensors": ["x"]})


def test_scopes_are_thread_local():
    results = {}
    entered = threading.Event()
    release = threading.Event()

    def worker():
        with options(runtime_options={"device_sched_mode": 3}):
            entered.set()
            release.wait(5)
            results["worker"] = kernel_opts().runtime["device_sched_mode"]
        results["worker_after"] = kernel_opts().runtime["device_sched_mode"]

    def other():
        results["other"] = kernel_opts().runtime["device_sched_mode"]

    with options(runtime_options={"device_sched_mode": 1}):
        t = threading.Thread(target=worker)
        t.start()
        assert entered.wait(5)
        assert kernel_opts().runtime["device_sched_mode"] == 1   # not the worker's scope
        t2 = threading.Thread(target=other)                      # a fresh thread sees no scope
        t2.start()
        t2.join()
        release.set()
        t.join()
        assert kernel_opts().runtime["device_sched_mode"] == 1
    assert results == {"worker": 3, "worker_after": 0, "other": 0}


def test_same_scope_object_used_from_two_threads():
    s = options(runtime_options={"device_sched_mode": 2})
    barrier = threading.Barrier(2)
    seen = []

    def worker():
        with s:
            barrier.wait(5)
            seen.append(kernel_opts().runtime["device_sched_mode"])
            barrier.wait(5)
        seen.append(kernel_opts().runtime["device_sched_mode"])

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == [0, 0, 2, 2]


def test_module_public_names():
    for name in O.__all__:
        assert hasattr(O, name)
    assert int(RunMode.NPU) == 0 and int(RunMode.SIM) == 1
    assert repr(RunMode.SIM) == "pypto.RunMode.SIM"


def test_sim_threads_default_comes_from_its_environment_variable(monkeypatch):
    """The CPU simulator's threads are their own option (runtime_options["sim_threads"], PYPTO_SIM_THREADS); the
    reference's device_sched_parallelism keeps its own range and default and does not change them."""
    monkeypatch.setenv("PYPTO_SIM_THREADS", "3")
    o = resolve(runtime_options={"device_sched_parallelism": 8})
    assert o.runtime["sim_threads"] == 3 and o.runtime["device_sched_parallelism"] == 8
    assert resolve(runtime_options={"sim_threads": 5}).runtime["sim_threads"] == 5   # the option wins
    for bad in ("0", "65", "four"):
        monkeypatch.setenv("PYPTO_SIM_THREADS", bad)
        with pytest.raises(OptionError) as e:
            resolve()
        assert "PYPTO_SIM_THREADS" in str(e.value) and repr(bad) in str(e.value) and "1..64" in str(e.value)
