"""The content-addressed disk cache across processes: a second process with the same PYPTO_CACHE_DIR runs the
kernel without invoking the C++ compiler; a corrupt cached library is rebuilt, never loaded."""

import hashlib
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent('''
    import json, subprocess, sys

    compiles = []
    _real_run = subprocess.run

    def _recording_run(cmd, *args, **kwargs):
        # kernel compiles only: the one-off torch reader build (compiler/torch_reader.py) is not a kernel
        if (isinstance(cmd, (list, tuple)) and "-shared" in [str(c) for c in cmd]
                and not any(str(c).endswith("torch_reader.cpp") for c in cmd)):
            compiles.append([str(c) for c in cmd])
        return _real_run(cmd, *args, **kwargs)

    subprocess.run = _recording_run

    import torch
    import pypto

    @pypto.frontend.jit
    def disk_axpy(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), b: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
                  out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), alpha=2.0):
        out[:] = a * alpha + b

    a = torch.arange(16, dtype=torch.float32) - 3.0
    b = torch.linspace(-1.0, 1.0, 16)
    out = torch.full((16,), -12345.0)
    disk_axpy(a, b, out)
    ok = bool(torch.allclose(out, a * 2.0 + b, rtol=0, atol=1e-6))
    out2 = torch.full((16,), -12345.0)
    disk_axpy(a, b, out2)
    ok = ok and bool(torch.equal(out, out2))
    key, info, loaded, seconds = disk_axpy._specializations()[0]
    result = info["result"]   # result.library: the cache entry; `loaded`: the name it was loaded under
    print(json.dumps({"ok": ok, "compiles": len(compiles), "cached": bool(getattr(result, "cached", False)),
                      "library": result.library, "build_compile_seconds": result.compile_seconds,
                      "cache_info": disk_axpy.cache_info()}))
''')


@pytest.fixture
def cache(tmp_path):
    d = tmp_path / "pypto-cache"
    d.mkdir()
    script = tmp_path / "child_kernel.py"
    script.write_text(CHILD)
    return d, script


def run_child(cache_dir: pathlib.Path, script: pathlib.Path) -> dict:
    env = dict(os.environ)
    env["PYPTO_CACHE_DIR"] = str(cache_dir)
    env.pop("ASCEND_HOME_PATH", None)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                       cwd=str(script.parent))
    assert r.returncode == 0, f"child failed:\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def tree(d: pathlib.Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


def libraries(d: pathlib.Path) -> list[pathlib.Path]:
    """Kernel libraries in the cache (the torch reader, built once per torch install, lives in torch_reader/)."""
    return sorted(p for p in d.rglob("*.so") if p.is_file() and p.parent.name != "torch_reader")


def test_first_process_compiles_into_the_cache_dir(cache):
    d, script = cache
    r = run_child(d, script)
    assert r["ok"]
    assert r["compiles"] == 1 and r["cached"] is False
    assert pathlib.Path(r["library"]).resolve().is_relative_to(d.resolve())
    assert len(libraries(d)) == 1
    assert r["cache_info"]["misses"] == 1 and r["cache_info"]["hits"] == 1


def test_second_process_does_not_invoke_the_compiler(cache):
    d, script = cache
    first = run_child(d, script)
    files = tree(d)
    second = run_child(d, script)
    assert second["ok"]
    assert second["compiles"] == 0, "the C++ compiler ran although the library was in the disk cache"
    assert second["cached"] is True
    assert second["build_compile_seconds"] == 0.0
    assert second["library"] == first["library"]
    assert tree(d) == files, "a cache hit wrote to the cache directory"


def _corrupt(so: pathlib.Path):
    data = bytearray(so.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 256] = bytes(256)
    data[:4] = b"\x00\x00\x00\x00"   # not even an ELF file any more
    so.write_bytes(bytes(data))


def test_corrupted_library_is_rebuilt_not_loaded(cache):
    d, script = cache
    run_child(d, script)
    (so,) = libraries(d)
    _corrupt(so)
    corrupted = so.read_bytes()
    r = run_child(d, script)
    assert r["ok"]
    assert r["compiles"] == 1 and r["cached"] is False
    assert pathlib.Path(r["library"]).read_bytes() != corrupted
    # the rebuilt entry is good again: a further process uses it without compiling
    r3 = run_child(d, script)
    assert r3["ok"] and r3["compiles"] == 0 and r3["cached"] is True


def test_truncated_library_is_rebuilt(cache):
    d, script = cache
    run_child(d, script)
    (so,) = libraries(d)
    so.write_bytes(so.read_bytes()[:100])
    r = run_child(d, script)
    assert r["ok"] and r["compiles"] == 1 and r["cached"] is False


def test_library_without_its_checksum_is_rebuilt(cache):
    d, script = cache
    run_child(d, script)
    sums = [p for p in d.rglob("*") if p.is_file() and "sha256" in p.name]
    assert sums, "the cache stores no checksum next to the library"
    for p in sums:
        p.unlink()
    r = run_child(d, script)
    assert r["ok"] and r["compiles"] == 1 and r["cached"] is False


def test_no_temporary_files_left_behind(cache):
    d, script = cache
    run_child(d, script)
    run_child(d, script)
    leftovers = [p.name for p in d.rglob("*") if p.is_file() and (".tmp" in p.name or p.name.startswith("tmp"))]
    assert leftovers == []
