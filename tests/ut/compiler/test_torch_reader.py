"""The fast torch.Tensor reader (compiled against the installed torch, validated against the DLPack API)."""
import os
import subprocess
import sys
import textwrap

import torch

import pypto
from pypto.compiler import torch_reader


@pypto.frontend.jit
def _axpy(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
          y: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
          out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), alpha=2.0):
    out[:] = x * alpha + y


def test_reader_installs_and_results_match_torch():
    x, y, out = torch.randn(3, 5), torch.randn(3, 5), torch.zeros(3, 5)
    _axpy(x, y, out)
    assert torch_reader.ensure_installed() == ""  # built, validated and in use in this process
    for _ in range(3):
        x, y = torch.randn(3, 5), torch.randn(3, 5)
        _axpy(x, y, out)
        torch.testing.assert_close(out, x * 2.0 + y)


def test_views_parameters_and_grad_tensors_read_correctly():
    base = torch.randn(6, 10)
    x = base[2:5, 3:8].contiguous()           # a contiguous copy
    y = torch.nn.Parameter(torch.randn(3, 5))  # a Tensor subclass with requires_grad
    out_storage = torch.zeros(4, 5)
    out = out_storage[1:]                      # contiguous view with a storage offset
    _axpy(x, y, out)
    torch.testing.assert_close(out, x * 2.0 + y.detach())
    assert torch.count_nonzero(out_storage[0]) == 0  # nothing written before the view


def test_fallback_still_rejects_non_contiguous():
    x = torch.randn(5, 3).t()  # non-contiguous: the fast reader hands it to the exchange API and the binder
    out = torch.zeros(3, 5)
    before = out.clone()
    try:
        _axpy(x, torch.randn(3, 5), out)
    except ValueError as e:
        assert "contiguous" in str(e) and "'x'" in str(e)
    else:
        raise AssertionError("non-contiguous input accepted")
    assert torch.equal(out, before)


def test_disabled_by_environment_gives_same_results(tmp_path):
    code = textwrap.dedent("""
        import torch, pypto
        from pypto.compiler import torch_reader
        @pypto.frontend.jit
        def k(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
            out[:] = a * 3.0
        a = torch.arange(4, dtype=torch.float32); o = torch.zeros(4)
        k(a, o)
        assert torch.equal(o, a * 3.0), o
        print(torch_reader.ensure_installed())
    """)
    env = dict(os.environ, PYPTO_TORCH_FAST_READER="0", PYPTO_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "not requested"


def test_first_build_runs_in_the_background_and_calls_do_not_wait(tmp_path):
    """An empty cache: the first call returns after the kernel's own build, computed through the exchange API; the
    reader is built meanwhile and installed between calls (then used: its status is '')."""
    script = textwrap.dedent("""
        import time, torch, pypto
        from pypto.compiler import torch_reader
        V = pypto.Tensor([64], pypto.DT_FP32)
        @pypto.frontend.jit
        def k(a: V, out: V):
            out[:] = a * 3.0
        a, out = torch.randn(64), torch.zeros(64)
        k(a, out)
        assert torch_reader.ensure_installed() == "building", torch_reader.ensure_installed()
        assert torch.equal(out, a * 3.0)
        for _ in range(3):                      # calls while it builds: correct, through the exchange API
            a = torch.randn(64); k(a, out); assert torch.equal(out, a * 3.0)
        assert torch_reader.ensure_installed(wait=True) == ""
        a = torch.randn(64); k(a, out); assert torch.equal(out, a * 3.0)
        print("OK")
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_TORCH_READER_WAIT"}
    env["PYPTO_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, (r.stdout, r.stderr[-3000:])
    # a second process finds it in the cache and installs it at once, before its first launch
    script2 = script.replace('== "building", torch_reader.ensure_installed()', '== ""')
    r = subprocess.run([sys.executable, "-c", script2], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and "OK" in r.stdout, (r.stdout, r.stderr[-3000:])
