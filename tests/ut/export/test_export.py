"""pypto.export / kernel.export / python -m pypto.export: the bundle's manifest, libraries and errors; and the
C++ example (examples/cpp) built with CMake against the installed package."""

import hashlib
import json
import math
import struct
import subprocess
import sys

import pytest
import torch

import pypto
from pypto.export import ExportError, encode_value

from embed import _kernels as K  # the embedding tests' kernels and bundle: the C++ runtime loads the same bundle
from embed._bundle import REPO, build_dir_root, pypto_dirs


def _manifest(d) -> dict:
    return json.loads((d / "manifest.json").read_text())


def test_manifest_contents(bundle_dir):
    m = _manifest(bundle_dir)
    from pypto.compiler import toolchain

    assert m["format"] == "pypto-bundle" and m["format_version"] == 1
    assert m["pypto_version"] == pypto.__version__
    assert m["kernel_abi_version"] == toolchain.abi_version() == 3
    assert m["compiler"]["identity"] == toolchain.compiler_identity()
    assert m["compiler"]["flags"] == list(toolchain.FLAGS)
    k = {x["name"]: x for x in m["kernels"]}
    assert list(k) == ["scaled_add", "rows_exp", "axpy", "act"]
    sa = k["scaled_add"]
    assert [p["name"] for p in sa["params"]] == ["a", "b", "out", "alpha", "tile"]
    assert sa["params"][0] == {"name": "a", "kind": "tensor", "keyword_only": False, "dtype": "float32",
                               "any_shape": False, "ellipsis": False, "format": 0,
                               "dims": [{"kind": "STATIC"}, {"kind": "STATIC"}]}
    assert sa["params"][3]["default"] == {"type": "float", "bits": "0x3ff0000000000000", "repr": "1.0"}
    consts = [(s["constants"]["alpha"]["repr"], s["constants"]["tile"]["value"], s["tensors"][0]["shape"])
              for s in sa["specializations"]]
    assert consts == [("1.0", 32, [4, 4]), ("2.0", 32, [4, 4]), ("2.0", 16, [8, 8])]
    assert [s["tensor_key"] for s in sa["specializations"]] == [[4, 4, 4, 4, 4, 4], [4, 4, 4, 4, 4, 4],
                                                                [8, 8, 8, 8, 8, 8]]
    assert all(s["written_mask"] == 0b100 for s in sa["specializations"])
    re_ = k["rows_exp"]
    assert re_["params"][0]["dims"] == [{"kind": "DYNAMIC"}, {"kind": "FIXED", "value": 64}]
    assert re_["specializations"][0]["tensors"][0]["shape"] == [None, 64]
    ax = k["axpy"]
    assert ax["dim_names"] == ["N"] and ax["params"][0]["dims"] == [{"kind": "NAMED", "name": "N"}]
    assert ax["params"][3] == {"name": "s", "kind": "scalar", "keyword_only": False, "dtype": "float32"}
    act = k["act"]
    assert act["params"][3]["keyword_only"] is True
    assert act["specializations"][1]["constants"] == {
        "mode": {"type": "str", "value": "sigmoid"},
        "shift": {"type": "tuple", "items": [{"type": "int", "value": 2}, {"type": "int", "value": 3}]}}
    assert any(g["name"] == "pypto" for g in act["guards"])  # guarded globals, frozen at export
    libs = set()
    for kern in m["kernels"]:
        for s in kern["specializations"]:
            f = bundle_dir / s["library"]
            assert hashlib.sha256(f.read_bytes()).hexdigest() == s["sha256"]
            libs.add(f.name)
    assert libs == {f.name for f in (bundle_dir / "lib").iterdir()}


def test_encode_value_is_typed_and_exact():
    assert encode_value(True, "x") == {"type": "bool", "value": True}
    assert encode_value(1, "x") == {"type": "int", "value": 1}
    assert encode_value(-0.0, "x")["bits"] == "0x8000000000000000"
    assert encode_value(0.0, "x")["bits"] == "0x0000000000000000"
    nan = encode_value(math.nan, "x")
    assert struct.unpack("<d", struct.pack("<Q", int(nan["bits"], 16)))[0] != 0
    assert encode_value(pypto.DT_FP32, "x") == {"type": "enum", "name": "DataType.DT_FP32", "value": 8}
    assert encode_value([1, (None, "a")], "x") == {"type": "list", "items": [
        {"type": "int", "value": 1}, {"type": "tuple", "items": [{"type": "none"}, {"type": "str", "value": "a"}]}]}
    with pytest.raises(ExportError, match=r"k: constant <object .*> of type object cannot be recorded"):
        encode_value(object(), "k")
    with pytest.raises(ExportError, match="does not fit in 64 bits"):
        encode_value(1 << 64, "k")


def test_kernel_export_method_and_existing_specializations(tmp_path):
    a, b, out = torch.randn(4, 4), torch.randn(4, 4), torch.zeros(4, 4)
    p = K.scaled_add.export(tmp_path / "one", (a, b, out))  # reached through the native object's fallback
    m = _manifest(tmp_path / "one")
    assert p == tmp_path / "one" / "manifest.json"
    assert [k["name"] for k in m["kernels"]] == ["scaled_add"]
    assert len(m["kernels"][0]["specializations"]) == 1
    # no examples: whatever the kernel has compiled so far
    K.scaled_add(a, b, out, alpha=2.0)
    K.scaled_add.export(tmp_path / "all")
    have = {(s["constants"]["alpha"]["repr"], tuple(s["tensors"][0]["shape"]))
            for s in _manifest(tmp_path / "all")["kernels"][0]["specializations"]}
    assert {("1.0", (4, 4)), ("2.0", (4, 4))} <= have
    # re-exporting into the same directory replaces the libraries of the earlier export
    K.rows_exp.export(tmp_path / "one", (torch.zeros(2, 64),) * 2)
    m = _manifest(tmp_path / "one")
    assert [k["name"] for k in m["kernels"]] == ["rows_exp"]
    assert [f.name.split("-")[0] for f in (tmp_path / "one" / "lib").iterdir()] == ["rows_exp"]


def test_export_errors(tmp_path):
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def with_obj(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), c=None):
        out[:] = x + 1.0

    class Odd(int):
        pass

    x = torch.zeros(4)
    with pytest.raises(ExportError, match="kernel 'with_obj': parameter 'c': constant 3 is of int subclass Odd"):
        with_obj.export(tmp_path / "e1", (x, x, Odd(3)))
    with pytest.raises(ValueError, match="kernel 'with_obj': parameter 'x': dimension 0 must be 4"):
        with_obj.export(tmp_path / "e2", (torch.zeros(5), x))
    with pytest.raises(ExportError, match=r"kernel 'with_obj': parameter 'x': dimension 0 of the example spec .* is symbolic, but "
                                          r"the parameter's dimension is not DYNAMIC"):
        with_obj.export(tmp_path / "e3", (pypto.Tensor([pypto.STATIC], pypto.DT_FP32), x))
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def never_called(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = x + 1.0

    with pytest.raises(ExportError, match="kernel 'never_called': no specializations to export; pass examples"):
        never_called.export(tmp_path / "e4")
    with pytest.raises(ExportError, match=r"examples for unknown kernel\(s\) \['nope'\]"):
        pypto.export([with_obj], tmp_path / "e5", examples={"nope": []})
    with pytest.raises(ExportError, match="expected a @pypto.frontend.jit kernel"):
        pypto.export([len], tmp_path / "e6")


def test_cli(tmp_path):
    out = tmp_path / "cli"
    r = subprocess.run(
        [sys.executable, "-m", "pypto.export", "tests.ut.embed._kernels:scaled_add", "tests.ut.embed._kernels:axpy",
         "--out", str(out), "--example", "scaled_add=((T(4, 4),) * 3, {'alpha': 2.0})",
         "--example", "axpy=(T(7), T(7), T(7), 1.5)"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out / "manifest.json")
    m = _manifest(out)
    assert [k["name"] for k in m["kernels"]] == ["scaled_add", "axpy"]
    assert m["kernels"][0]["specializations"][0]["constants"]["alpha"]["repr"] == "2.0"



def test_cli_errors(tmp_path, capsys, monkeypatch):
    from pypto.export.__main__ import main

    monkeypatch.chdir(REPO)

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def cli_never_called(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = x + 1.0

    K.cli_never_called = cli_never_called  # reachable as MODULE:cli_never_called
    try:
        assert main([f"{K.__name__}:cli_never_called", "--out", str(tmp_path / "x")]) == 1
        assert "kernel 'cli_never_called': no specializations to export" in capsys.readouterr().err
        with pytest.raises(SystemExit, match="with several kernels write --example KERNEL=EXPR"):
            main([f"{K.__name__}:scaled_add", f"{K.__name__}:axpy", "--out",
                  str(tmp_path / "y"), "--example", "(T(4, 4),) * 3"])
        with pytest.raises(SystemExit, match="expected MODULE:NAME"):
            main(["scaled_add", "--out", str(tmp_path / "z")])
    finally:
        del K.cli_never_called


def test_cmake_dir_query():
    d = pypto_dirs()
    assert (d["cmake"] / "pyptoConfig.cmake").is_file()
    assert (d["include"] / "pypto" / "runtime.h").is_file()
    assert (d["lib"] / "libpypto_runtime.so").is_file()


def test_cpp_example_with_cmake(tmp_path):
    """examples/cpp: export the bundle, configure + build with CMake against the installed package, run it."""
    import importlib.util

    bundle = tmp_path / "bundle"
    spec = importlib.util.spec_from_file_location("pypto_example_export_bundle",
                                                  REPO / "examples" / "cpp" / "export_bundle.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(str(bundle))  # what `python examples/cpp/export_bundle.py DIR` runs
    d = pypto_dirs()
    src = REPO / "examples" / "cpp"
    # the binary's rpath names the installed library's folder: another install (same bytes) needs its own build
    stamp = hashlib.sha256((src / "serving.cpp").read_bytes() + (src / "CMakeLists.txt").read_bytes() +
                           (d["lib"] / "libpypto_runtime.so").read_bytes() + str(d["lib"]).encode()).hexdigest()[:16]
    build = build_dir_root() / f"serving-{stamp}"
    import fcntl
    import os

    with open(build_dir_root() / "serving.lock", "w") as lock:  # xdist workers share the build directory
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (build / "serving").exists():
            for cmd in (["cmake", "-S", str(src), "-B", str(build), f"-Dpypto_DIR={d['cmake']}",
                         "-DCMAKE_BUILD_TYPE=Release"], ["cmake", "--build", str(build)]):
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(build / "serving"), str(bundle), "4", "150"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 threads x 150 requests: 1200 kernel calls" in r.stdout and "0 mismatches, 0 failed calls" in r.stdout
    assert "a wrong call reports: ValueError: kernel 'rows_exp': parameter 'x': dimension 1 must be 64" in r.stdout
    assert r.stdout.strip().endswith("OK")
