"""The C++ runtime's bundle loader facing hostile bundles: deep nesting, FIFOs, links out of the bundle, ill-typed
fields, oversized files — each a LoadError naming the problem, never a crash, a hang or a load of an outside file.
Every load runs in a child (the embedding tests' C++ binary, `load` mode) with a timeout. Also: the runtime refuses
a partially overlapping output with the Python path's message (tests/cpp/hostile_runtime.cpp)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "ut"))
from embed._bundle import _stamp, build_dir_root, build_test_binary, export_test_bundle, pypto_dirs  # noqa: E402
from embed import _kernels as K  # noqa: E402


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile_bundle")
    export_test_bundle(d)
    return d


@pytest.fixture(scope="module")
def loader():
    return build_test_binary()


def _load(binary, *dirs, timeout=60) -> list[dict]:
    try:
        r = subprocess.run([str(binary), "load", *map(str, dirs)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"Bundle::open hung (> {timeout} s) on {dirs}") from None
    assert r.returncode == 0, f"the loader died ({r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}"
    return [json.loads(line) for line in r.stdout.splitlines()]


def _copy(src, tmp_path, name) -> Path:
    d = tmp_path / name
    shutil.copytree(src, d, symlinks=True)
    return d


def _edit(d: Path, fn):
    m = json.loads((d / "manifest.json").read_text())
    fn(m)
    (d / "manifest.json").write_text(json.dumps(m))


def _refused(r: dict, *parts):
    assert r["code"] == "LoadError" and r["kernels"] == [], r
    for p in parts:
        assert p in r["message"], (p, r["message"])


def _deep_tuple(depth: int) -> str:
    return '{"type":"tuple","items":[' * depth + '{"type":"int","value":1}' + "]}" * depth


def test_deeply_nested_constants_are_a_load_error_not_a_stack_overflow(bundle, loader, tmp_path):
    cases = []
    for where in ("constant", "default"):
        d = _copy(bundle, tmp_path, where)
        m = json.loads((d / "manifest.json").read_text())
        if where == "constant":
            m["kernels"][0]["specializations"][0]["constants"]["alpha"] = "@DEEP@"
        else:
            m["kernels"][0]["params"][3]["default"] = "@DEEP@"
        (d / "manifest.json").write_text(json.dumps(m).replace('"@DEEP@"', _deep_tuple(50_000)))
        cases.append(d)
    d = _copy(bundle, tmp_path, "deep_array")  # plain arrays, in a field the runtime does not even read
    m = json.loads((d / "manifest.json").read_text())
    m["extra"] = "@DEEP@"
    (d / "manifest.json").write_text(json.dumps(m).replace('"@DEEP@"', "[" * 50_000 + "]" * 50_000))
    cases.append(d)
    for r in _load(loader, *cases):
        _refused(r, "malformed bundle manifest", "nest more than 64 deep")


def test_fifo_manifest_or_library_never_blocks(bundle, loader, tmp_path):
    d1 = _copy(bundle, tmp_path, "fifo_manifest")
    (d1 / "manifest.json").unlink()
    os.mkfifo(d1 / "manifest.json")
    d2 = _copy(bundle, tmp_path, "fifo_library")
    lib = sorted((d2 / "lib").glob("axpy-*.so"))[0]
    lib.unlink()
    os.mkfifo(lib)
    r1, r2 = _load(loader, d1, d2, timeout=30)
    _refused(r1, "manifest.json", "is a FIFO, not a regular file")
    _refused(r2, "kernel 'axpy'", lib.name, "is a FIFO, not a regular file")


def test_links_out_of_the_bundle_are_never_loaded(bundle, loader, tmp_path):
    """The sha256 matches (the outside file is a copy of the real library), but the runtime loads only files inside
    the bundle: a linked library and a linked lib/ directory are refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    d1 = _copy(bundle, tmp_path, "linked_library")
    lib = sorted((d1 / "lib").glob("axpy-*.so"))[0]
    shutil.copy(lib, outside / lib.name)
    lib.unlink()
    lib.symlink_to(outside / lib.name)
    d2 = _copy(bundle, tmp_path, "linked_lib_dir")
    shutil.copytree(d2 / "lib", outside / "lib")
    shutil.rmtree(d2 / "lib")
    (d2 / "lib").symlink_to(outside / "lib")
    d3 = _copy(bundle, tmp_path, "linked_manifest")
    shutil.copy(d3 / "manifest.json", outside / "manifest.json")
    (d3 / "manifest.json").unlink()
    (d3 / "manifest.json").symlink_to(outside / "manifest.json")
    r1, r2, r3 = _load(loader, d1, d2, d3)
    _refused(r1, "kernel 'axpy'", lib.name, "symbolic link", "must lie inside it")
    _refused(r2, "symbolic link", "its component 'lib'")
    _refused(r3, "manifest.json", "symbolic link")


def test_paths_that_leave_the_bundle_are_refused(bundle, loader, tmp_path):
    cases = {}
    for name, path in (("dotdot", "lib/../lib/x.so"), ("absolute", "/etc/passwd"), ("empty_component", "lib//x.so"),
                       ("dot", "./lib/x.so"), ("nul", "lib/x\u0000.so")):
        d = _copy(bundle, tmp_path, name)
        _edit(d, lambda m, p=path: m["kernels"][0]["specializations"][0].update(library=p))
        cases[d] = name
    for r in _load(loader, *cases):
        _refused(r, "kernel 'scaled_add'", "must be relative to the bundle directory")


def test_ill_typed_fields_are_refused(bundle, loader, tmp_path):
    cases = {
        "format_version_float": (lambda m: m.update(format_version=1.9),
                                 ["format_version: expected an integer, got 1.9"]),
        "format_version_wraps": (lambda m: m.update(format_version=2**32 + 1),
                                 ["has format version 4294967297, this runtime reads version 1"]),
        "abi_negative": (lambda m: m.update(kernel_abi_version=-1), ["kernel ABI -1"]),
        "kernels_object": (lambda m: m.update(kernels={"a": m["kernels"][0]}),
                           ["kernels: expected a list"]),
        "params_object": (lambda m: m["kernels"][0].update(params={"x": 1}),
                          ["kernels[0].params: expected a list"]),
        "keyword_only_int": (lambda m: m["kernels"][0]["params"][0].update(keyword_only=1),
                             ["kernels[0].params[0].keyword_only: expected true or false, got 1"]),
        "dims_object": (lambda m: m["kernels"][0]["params"][0].update(dims={}),
                        ["kernels[0].params[0].dims: expected a list"]),
        "items_object": (lambda m: m["kernels"][3]["specializations"][0]["constants"].update(
            shift={"type": "tuple", "items": {"a": {"type": "int", "value": 1}}}), ["items: expected a list"]),
        "sha_not_hex": (lambda m: m["kernels"][0]["specializations"][0].update(sha256="zz"),
                        ["sha256: expected 64 lower-case hex digits"]),
        "written_mask_beyond": (lambda m: m["kernels"][0]["specializations"][0].update(written_mask=1 << 7),
                                ["written_mask 128 names tensors the kernel does not have"]),
        "shape_bool": (lambda m: m["kernels"][0]["specializations"][0]["tensors"][0].update(shape=[True, 4]),
                       ["shape[0]: expected an integer, null or a name"]),
        "not_an_object": (lambda m: (m.clear(), m.update(format="pypto-bundle", format_version=1,
                                                          pypto_version=[], kernel_abi_version=1)),
                          ["pypto_version: expected a string"]),
    }
    dirs = []
    for name, (fn, _) in cases.items():
        d = _copy(bundle, tmp_path, name)
        _edit(d, fn)
        dirs.append(d)
    d = _copy(bundle, tmp_path, "top_level_list")
    (d / "manifest.json").write_text("[1, 2, 3]")
    dirs.append(d)
    results = _load(loader, *dirs)
    for (name, (_, parts)), r in zip(cases.items(), results):
        _refused(r, *parts)
    _refused(results[-1], "is not a pypto bundle manifest")


def test_oversized_and_odd_manifests(bundle, loader, tmp_path):
    d1 = _copy(bundle, tmp_path, "huge")
    with open(d1 / "manifest.json", "r+b") as f:       # a sparse 65 MiB file: refused before it is read
        f.truncate(65 << 20)
    d2 = _copy(bundle, tmp_path, "directory")
    (d2 / "manifest.json").unlink()
    (d2 / "manifest.json").mkdir()
    d3 = _copy(bundle, tmp_path, "devnull")
    (d3 / "manifest.json").unlink()
    (d3 / "manifest.json").symlink_to("/dev/zero")
    d4 = _copy(bundle, tmp_path, "lib_is_dir")
    lib = sorted((d4 / "lib").glob("act-*.so"))[0]
    lib.unlink()
    lib.mkdir()
    r1, r2, r3, r4 = _load(loader, d1, d2, d3, d4)
    _refused(r1, "more than the limit of 67108864")
    _refused(r2, "is a directory, not a regular file")
    _refused(r3, "symbolic link")
    _refused(r4, "kernel 'act'", "is a directory, not a regular file")


def test_the_intact_bundle_still_loads(bundle, loader):
    (r,) = _load(loader, bundle)
    assert r["code"] == "OK" and r["kernels"] == ["scaled_add", "rows_exp", "axpy", "act"], r


# ---- partial overlap from C++ ----------------------------------------------------------------------------------
def _overlap_binary() -> Path:
    dirs = pypto_dirs()
    src = ROOT / "tests" / "cpp" / "hostile_runtime.cpp"
    lib = dirs["lib"] / "libpypto_runtime.so"
    # keyed by the library's path too: the binary's rpath names it, and another venv's copy may be gone since
    stamp = _stamp(src, dirs["include"] / "pypto" / "runtime.h", lib)
    exe = build_dir_root() / f"hostile_runtime-{stamp}"
    if not exe.exists():
        tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
        r = subprocess.run([os.environ.get("CXX", "g++"), "-std=c++17", "-O1", "-Wall", "-o", str(tmp), str(src),
                            "-I", str(dirs["include"]), "-L", str(dirs["lib"]), "-lpypto_runtime",
                            f"-Wl,-rpath,{dirs['lib']}"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        os.replace(tmp, exe)
    return exe


def test_runtime_refuses_partial_overlap_with_the_python_message(bundle):
    r = subprocess.run([str(_overlap_binary()), str(bundle)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    got = {c["case"]: c for c in map(json.loads, r.stdout.splitlines())}
    buf = torch.arange(20, dtype=torch.float32)
    try:
        K.scaled_add(buf[:16].view(4, 4), torch.zeros(4, 4), buf[4:].view(4, 4))
        raise AssertionError("Python accepted a partially overlapping output")
    except ValueError as e:
        python_message = str(e)
    assert "parameter 'out'" in python_message and "partially overlaps" in python_message and "'a'" in python_message
    assert got["partial"]["code"] == "ValueError" and got["partial"]["message"] == python_message, got["partial"]
    assert got["partial"]["untouched"], "the runtime wrote the output after refusing the call"
    assert got["shifted_input"]["code"] == "ValueError" and "parameter 'b'" in got["shifted_input"]["message"]
    assert got["in_place"]["code"] == "OK" and got["in_place"]["correct"], got["in_place"]
    assert got["separate"]["code"] == "OK" and got["separate"]["correct"], got["separate"]
    assert got["dynamic"]["code"] == "ValueError" and "partially overlaps" in got["dynamic"]["message"]
