"""The compiler layer: disk cache (hits, other processes, corruption), errors, include dir, ctypes launch."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import pypto
from pypto.compiler import build, cache_key, compile_source, compiler_identity, include_dir
from pypto.testing import DevKernel, simple_request
from pypto.verify import launch
from pypto.errors import CompileError, KernelRuntimeError
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params

F32 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(d))
    return d


def k_add(a: F32, b: F32, out: F32, alpha=1.0):
    out[:] = a * alpha + b


def _build(fn, *args, **kw):
    params = build_params(fn.__name__, fn)
    req, tv, sv = simple_request(fn.__name__, params, args, kw)
    return build(prepare(fn, fn.__name__), req), tv, sv


def test_build_then_cache_hit(cache):
    a, b, out = torch.randn(5, 7), torch.randn(5, 7), torch.zeros(5, 7)
    r1, tv, sv = _build(k_add, a, b, out, alpha=0.5)
    assert not r1.cached and r1.compile_seconds > 0
    assert Path(r1.library).is_file() and Path(r1.source_path).read_text() == r1.source
    assert r1.written == (2,)
    assert str(cache) in r1.library
    launch(r1.library, tv, sv)
    assert torch.equal(out, a * 0.5 + b)
    r2, _, _ = _build(k_add, a, b, out, alpha=0.5)
    assert r2.cached and r2.compile_seconds == 0.0 and r2.library == r1.library
    r3, _, _ = _build(k_add, a, b, out, alpha=0.25)
    assert not r3.cached and r3.library != r1.library


def test_second_process_does_not_compile(cache):
    a = torch.zeros(3, 3)
    r1, _, _ = _build(k_add, a, a, a)
    script = textwrap.dedent(f"""
        import sys, torch
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import pypto.compiler.toolchain as B
        def boom(*a, **k):
            raise AssertionError("compiler ran")
        B.subprocess.run = boom        # compiler_identity is the only other subprocess use: pre-seed it
        B._memo[("cxx", B.CXX)] = {compiler_identity()!r}
        from test_cache import _build
        r, _, _ = _build(__import__("test_cache").k_add, torch.zeros(3, 3), torch.zeros(3, 3), torch.zeros(3, 3))
        assert r.cached and r.library == {r1.library!r}, r
        print("OK")
    """)
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0 and "OK" in p.stdout, p.stderr


def test_corrupt_entry_is_rebuilt(cache):
    a = torch.zeros(2, 2)
    r1, _, _ = _build(k_add, a, a, a)
    Path(r1.library).write_bytes(b"garbage")
    r2, tv, sv = _build(k_add, a, a, a)
    assert not r2.cached and r2.library == r1.library
    launch(r2.library, tv, sv)               # loads and runs: the rebuilt library is valid
    sha = Path(r1.library + ".sha256")
    sha.write_text("0" * 64)
    r3, _, _ = _build(k_add, a, a, a)
    assert not r3.cached


def test_compile_error_has_stderr_and_source_path(cache):
    with pytest.raises(CompileError) as ei:
        compile_source("this is not C++;\n", kernel_name="broken")
    msg = str(ei.value)
    assert "broken" in msg and "error" in msg
    path = msg.split("source saved at ")[1].split(")")[0]
    assert Path(path).read_text() == "this is not C++;\n"


def test_cache_key_depends_on_source_only_through_content():
    assert cache_key("a") == cache_key("a")
    assert cache_key("a") != cache_key("b")


def test_kernel_isa_is_part_of_the_cache_key(monkeypatch):
    """PYPTO_KERNEL_ISA's flags are in the key: the avx2 and sse4 builds of one source never share an entry with
    the native one (or each other)."""
    from pypto.compiler import toolchain as T

    keys = set()
    for isa in T.KERNEL_ISAS:
        monkeypatch.setattr(T, "FLAGS", T.flags_for(isa))
        keys.add(cache_key("same source"))
    assert len(keys) == len(T.KERNEL_ISAS)
    assert "-mno-avx512f" in T.flags_for("avx2") and "-mno-avx" in T.flags_for("sse4")


def test_unknown_kernel_isa_is_an_error_naming_the_kernel_and_the_choices(cache, monkeypatch):
    monkeypatch.setenv("PYPTO_KERNEL_ISA", "avx9000")
    with pytest.raises(CompileError) as ei:
        compile_source("int x;\n", kernel_name="k_isa")
    msg = str(ei.value)
    assert "k_isa" in msg and "'avx9000'" in msg and "native, avx2, sse4" in msg
    assert not cache.exists() or not any(cache.rglob("*.so"))     # nothing was built


def test_include_dir_has_headers():
    d = include_dir()
    assert (d / "pypto" / "kernel_abi.h").is_file() and (d / "pypto" / "kernel_rt.h").is_file()


def test_runtime_check_reports_error(cache):
    def k_sym(x: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32)):
        out[:] = x[0:3, :]       # needs x to have exactly 3 rows... checked when the kernel runs

    k = DevKernel(k_sym)
    x, out = torch.randn(3, 4), torch.zeros(3, 4)
    k(x, out)
    assert torch.equal(out, x)
    with pytest.raises(KernelRuntimeError, match="k_sym"):
        k(torch.randn(2, 4), torch.zeros(2, 4))


def test_simple_kernel_compiles_quickly(cache):
    import time
    a = torch.zeros(8, 8)
    t0 = time.perf_counter()
    r, _, _ = _build(k_add, a, a, a, alpha=3.0)
    assert r.compile_seconds < 2.0        # target is ~0.3 s; generous for loaded CI machines
    assert time.perf_counter() - t0 < 5.0
