"""The C++ runtime against bundles exported from Python: unit tests (tests/cpp/test_runtime.cpp), load errors,
and the same outputs / the same error messages as the Python call for the same arguments."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess

import numpy as np
import pytest
import torch

import pypto
from pypto.compiler import toolchain
from pypto.export import encode_value

from . import _kernels as K

GROUPS = {"calls": 11, "errors": 10, "threads": 1}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_cpp_unit(group, bundle_dir, test_binary):
    r = subprocess.run([str(test_binary), "unit", str(bundle_dir), group], capture_output=True, text=True,
                       timeout=300)
    lines = r.stdout.splitlines()
    failed = [l for l in lines if l.startswith("FAIL")]
    passed = [l for l in lines if l.startswith("PASS")]
    assert not failed, "\n".join(failed) + r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(passed) == GROUPS[group], r.stdout


# ---- load errors ------------------------------------------------------------------------------------------
def _load(test_binary, *dirs) -> list[dict]:
    r = subprocess.run([str(test_binary), "load", *map(str, dirs)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [json.loads(l) for l in r.stdout.splitlines()]


def _copy(bundle_dir, tmp_path, name):
    d = tmp_path / name
    shutil.copytree(bundle_dir, d)
    return d


def _edit_manifest(d, fn):
    m = json.loads((d / "manifest.json").read_text())
    fn(m)
    (d / "manifest.json").write_text(json.dumps(m))


def test_load_ok_and_load_errors(bundle_dir, tmp_path, test_binary):
    cases = {}

    d = _copy(bundle_dir, tmp_path, "missing_lib")
    lib = sorted((d / "lib").glob("axpy-*.so"))[0]
    lib.unlink()
    cases[d] = ["kernel 'axpy'", f"library '{d}/lib/{lib.name}' is missing"]

    d = _copy(bundle_dir, tmp_path, "tampered_lib")
    lib = sorted((d / "lib").glob("rows_exp-*.so"))[0]
    data = bytearray(lib.read_bytes())
    data[len(data) // 2] ^= 0xFF
    lib.write_bytes(bytes(data))
    cases[d] = ["kernel 'rows_exp'", "does not match the manifest (sha256", "refusing to load it"]

    d = _copy(bundle_dir, tmp_path, "malformed")
    (d / "manifest.json").write_text((bundle_dir / "manifest.json").read_text()[:200])
    cases[d] = ["malformed bundle manifest", "parse error"]

    d = _copy(bundle_dir, tmp_path, "abi")
    _edit_manifest(d, lambda m: m.update(kernel_abi_version=999))
    cases[d] = [f"was built for kernel ABI 999, this runtime implements ABI {toolchain.abi_version()}"]

    d = _copy(bundle_dir, tmp_path, "version")
    _edit_manifest(d, lambda m: m.update(pypto_version="0.0.1"))
    cases[d] = [f"was exported by pypto 0.0.1, this runtime is pypto {pypto.__version__}"]

    d = _copy(bundle_dir, tmp_path, "format_version")
    _edit_manifest(d, lambda m: m.update(format_version=2))
    cases[d] = ["has format version 2, this runtime reads version 1"]

    d = _copy(bundle_dir, tmp_path, "not_a_bundle")
    _edit_manifest(d, lambda m: m.pop("format"))
    cases[d] = ["is not a pypto bundle manifest"]

    d = _copy(bundle_dir, tmp_path, "missing_field")
    _edit_manifest(d, lambda m: m["kernels"][0].pop("params"))
    cases[d] = ["malformed bundle manifest", "params"]

    d = _copy(bundle_dir, tmp_path, "bad_key")
    _edit_manifest(d, lambda m: m["kernels"][0]["specializations"][0].update(tensor_key=[1, 2, 3, 4, 5, 6]))
    cases[d] = ["kernel 'scaled_add'", "tensor_key does not match its tensor shapes"]

    d = _copy(bundle_dir, tmp_path, "fixed_dim_changed")  # act: [8, STATIC] -> [9, STATIC]; the library is for 8
    _edit_manifest(d, lambda m: m["kernels"][3]["params"][0]["dims"][0].update(value=9))
    cases[d] = ["kernel 'act'", "tensors (x: float32[8, 4], out: float32[8, 4]) do not satisfy the parameter table",
                "dimension 0 must be 9"]

    d = _copy(bundle_dir, tmp_path, "fixed_dim_wraps")  # a value that would wrap to a negative int64
    _edit_manifest(d, lambda m: m["kernels"][1]["params"][0]["dims"][1].update(value=2**63 + 5))
    cases[d] = ["kernel 'rows_exp': parameter 'x': fixed dimension: expected an integer, got 9223372036854775813"]

    d = _copy(bundle_dir, tmp_path, "float_for_int")
    _edit_manifest(d, lambda m: m["kernels"][0]["specializations"][0]["constants"].update(
        tile={"type": "int", "value": 32.5}))
    cases[d] = ["int constant: expected an integer, got 32.5"]

    d = _copy(bundle_dir, tmp_path, "bad_value")
    _edit_manifest(d, lambda m: m["kernels"][0]["specializations"][0]["constants"].update(alpha={"type": "complex"}))
    cases[d] = ["unknown constant type 'complex'"]

    d = _copy(bundle_dir, tmp_path, "escaping_path")
    _edit_manifest(d, lambda m: m["kernels"][0]["specializations"][0].update(library="../x.so"))
    cases[d] = ["must be relative to the bundle directory"]

    d = _copy(bundle_dir, tmp_path, "not_a_library")
    lib = sorted((d / "lib").glob("act-*.so"))[0]
    lib.write_bytes(b"not an ELF file")
    import hashlib

    sha = hashlib.sha256(b"not an ELF file").hexdigest()

    def fix(m):
        for k in m["kernels"]:
            for s in k["specializations"]:
                if s["library"] == f"lib/{lib.name}":
                    s["sha256"] = sha
    _edit_manifest(d, fix)
    cases[d] = ["kernel 'act'", "cannot load kernel library"]

    cases[tmp_path / "does_not_exist"] = ["cannot open bundle manifest", "no such file"]

    results = _load(test_binary, bundle_dir, *cases)
    assert results[0]["code"] == "OK", results[0]
    assert results[0]["kernels"] == ["scaled_add", "rows_exp", "axpy", "act"]
    for (d, parts), r in zip(cases.items(), results[1:]):
        assert r["code"] == "LoadError", (d.name, r)
        for p in parts:
            assert p in r["message"], (d.name, p, r["message"])
        assert r["kernels"] == []


def test_a_library_paired_with_the_wrong_key_is_a_load_error(bundle_dir, tmp_path, test_binary):
    """Each library carries the key it was compiled for (pypto_spec_key): a manifest that pairs it with another
    specialization's key (two entries' libraries swapped, their sha256s along) is refused at load, naming the entry,
    never launched on the wrong layout (a 4x4 call running the 8x8 library). The loader runs in a child (the test
    binary), so a crash would fail the test."""
    d = _copy(bundle_dir, tmp_path, "swapped")

    def swap(m):
        specs = m["kernels"][0]["specializations"]  # scaled_add: #0 is float32[4, 4], #2 float32[8, 8] tile=16
        assert specs[0]["tensors"] != specs[2]["tensors"]
        for f in ("library", "sha256"):
            specs[0][f], specs[2][f] = specs[2][f], specs[0][f]
    _edit_manifest(d, swap)

    d2 = _copy(bundle_dir, tmp_path, "cross_kernel")  # act's library for rows_exp's entry

    def cross(m):
        a, b = m["kernels"][1]["specializations"][0], m["kernels"][3]["specializations"][0]
        for f in ("library", "sha256"):
            a[f] = b[f]
    _edit_manifest(d2, cross)

    ok, swapped, crossed = _load(test_binary, bundle_dir, d, d2)
    assert ok["code"] == "OK" and ok["kernels"] == ["scaled_add", "rows_exp", "axpy", "act"], ok
    for r, parts in ((swapped, ["kernel 'scaled_add'", "specialization #0 (a: float32[4, 4]",
                                "was compiled for a different specialization (a: float32[8, 8]",
                                "tile=16", "the manifest pairs it with the wrong key; refusing to load it"]),
                     (crossed, ["kernel 'rows_exp'", "specialization #0 (x: float32[DYNAMIC, 64]",
                                "was compiled for a different specialization (x: float32[8, 4]"])):
        assert r["code"] == "LoadError" and r["kernels"] == [], r
        for p in parts:
            assert p in r["message"], (p, r["message"])


# ---- the same call from Python and from C++ --------------------------------------------------------------------
_DT = {torch.float32: 8, torch.int32: 3, torch.float64: 9, torch.int64: 4}


def _case(tmp_path, kernel, args, kwargs, name):
    """Write `args`/`kwargs` for the C++ case runner; returns (case path, tensor files in argument order)."""
    files = []

    def enc(a):
        if isinstance(a, torch.Tensor):
            f = tmp_path / f"{name}_t{len(files)}.bin"
            files.append(f)
            base = a
            # the raw storage of the argument (a view's strides are passed as they are)
            if a.is_contiguous():
                f.write_bytes(a.numpy().tobytes())
                d = {"file": str(f), "dtype": _DT[a.dtype], "shape": list(a.shape)}
            else:
                store = base.as_strided((base.untyped_storage().nbytes() // base.element_size(),), (1,), 0)
                f.write_bytes(store.numpy().tobytes())
                d = {"file": str(f), "dtype": _DT[a.dtype], "shape": list(a.shape), "strides": list(a.stride())}
            return {"tensor": d}
        return encode_value(a, "case")

    c = {"kernel": kernel.__name__, "args": [enc(a) for a in args], "kwargs": {k: enc(v) for k, v in kwargs.items()}}
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(c))
    return p, files


def _run_case(test_binary, bundle_dir, case):
    r = subprocess.run([str(test_binary), "case", str(bundle_dir), str(case)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def _gen(seed, *shape):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


SAME_OUTPUT = [
    ("scaled_add_default", K.scaled_add, lambda: ((_gen(1, 4, 4), _gen(2, 4, 4), torch.zeros(4, 4)), {})),
    ("scaled_add_alpha", K.scaled_add, lambda: ((_gen(3, 4, 4), _gen(4, 4, 4), torch.zeros(4, 4)), {"alpha": 2.0})),
    ("scaled_add_8x8", K.scaled_add,
     lambda: ((_gen(5, 8, 8), _gen(6, 8, 8), torch.zeros(8, 8), 2.0), {"tile": 16})),
    ("rows_exp_1", K.rows_exp, lambda: ((_gen(7, 1, 64), torch.zeros(1, 64)), {})),
    ("rows_exp_37", K.rows_exp, lambda: ((_gen(8, 37, 64), torch.zeros(37, 64)), {})),
    ("axpy_9", K.axpy, lambda: ((_gen(9, 9), _gen(10, 9), torch.zeros(9)), {"s": 0.3})),
    ("act_relu", K.act, lambda: ((_gen(11, 8, 4), torch.zeros(8, 4)), {})),
    ("act_sigmoid", K.act, lambda: ((_gen(12, 8, 4), torch.zeros(8, 4), "sigmoid"), {"shift": (2, 3)})),
]


@pytest.mark.parametrize("name,kernel,make", SAME_OUTPUT, ids=[c[0] for c in SAME_OUTPUT])
def test_same_outputs_as_python(name, kernel, make, bundle_dir, test_binary, tmp_path):
    args, kwargs = make()
    case, files = _case(tmp_path, kernel, args, kwargs, name)
    kernel(*args, **kwargs)  # the Python call
    r = _run_case(test_binary, bundle_dir, case)
    assert r["code"] == "OK", r
    tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
    assert len(tensors) == len(files)
    changed = 0
    for t, f in zip(tensors, files):
        got = (f.parent / (f.name + ".out")).read_bytes()
        assert got == t.numpy().tobytes(), f"{name}: C++ output for {f.name} differs from the Python call"
        changed += got != f.read_bytes()
    assert changed >= 1  # the output was written (it started as zeros)


SAME_ERROR = [
    ("dtype", K.scaled_add, lambda: ((torch.zeros(4, 4), torch.zeros(4, 4, dtype=torch.int32), torch.zeros(4, 4)), {}),
     TypeError),
    ("rank", K.scaled_add, lambda: ((torch.zeros(4, 4, 1), torch.zeros(4, 4), torch.zeros(4, 4)), {}), ValueError),
    ("fixed_dim", K.act, lambda: ((torch.zeros(7, 4), torch.zeros(7, 4)), {}), ValueError),
    ("named_dim", K.axpy, lambda: ((torch.zeros(5), torch.zeros(6), torch.zeros(5), 1.0), {}), ValueError),
    ("non_contiguous", K.scaled_add, lambda: ((torch.zeros(4, 4).t(), torch.zeros(4, 4), torch.zeros(4, 4)), {}),
     ValueError),
    ("missing", K.scaled_add, lambda: ((torch.zeros(4, 4), torch.zeros(4, 4)), {}), TypeError),
    ("too_many", K.act, lambda: ((torch.zeros(8, 4), torch.zeros(8, 4), "relu", (0, 1)), {}), TypeError),
    ("unexpected_kw", K.scaled_add, lambda: ((torch.zeros(4, 4),) * 3, {"beta": 1.0}), TypeError),
    ("multiple", K.scaled_add, lambda: ((torch.zeros(4, 4),) * 3, {"a": torch.zeros(4, 4)}), TypeError),
    ("scalar_str", K.axpy, lambda: ((torch.zeros(5),) * 3, {"s": "x"}), TypeError),
]


@pytest.mark.parametrize("name,kernel,make,exc", SAME_ERROR, ids=[c[0] for c in SAME_ERROR])
def test_same_errors_as_python(name, kernel, make, exc, bundle_dir, test_binary, tmp_path):
    args, kwargs = make()
    with pytest.raises(exc) as ei:
        kernel(*args, **kwargs)
    py_msg = str(ei.value)
    case, files = _case(tmp_path, kernel, args, kwargs, name)
    r = _run_case(test_binary, bundle_dir, case)
    assert r["code"] == exc.__name__, r
    if name == "scalar_str":  # Python names its own type ('str'), C++ the Arg kind: same text here
        assert r["message"] == py_msg
    assert r["message"] == py_msg
    for f in files:  # nothing written
        assert (f.parent / (f.name + ".out")).read_bytes() == f.read_bytes()


def test_npu_kernel_reports_backend_unavailable(bundle_dir, tmp_path, test_binary, monkeypatch):
    """A kernel exported with run_mode NPU loads, and every call is refused with the Python path's reason."""
    d = _copy(bundle_dir, tmp_path, "npu")
    _edit_manifest(d, lambda m: m["kernels"][0].update(run_mode="NPU"))
    args = (torch.zeros(4, 4),) * 3
    case, files = _case(tmp_path, K.scaled_add, args, {}, "npu")
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    r = _run_case(test_binary, d, case)
    assert r["code"] == "BackendUnavailableError", r
    assert r["message"].startswith("kernel 'scaled_add': run_mode NPU needs the Ascend CANN toolkit, but "
                                   "ASCEND_HOME_PATH is not set"), r
    for f in files:
        assert (f.parent / (f.name + ".out")).read_bytes() == f.read_bytes()
