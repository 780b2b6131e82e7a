"""Constants keep their value, sourceless kernels are guarded, a forked child never hangs, the cache CLI and cap."""
import os
import subprocess
import sys

from _security_child import run


def test_out_of_range_int_constant_is_an_error_naming_the_parameter(tmp_path):
    r = run('''
        @pypto.frontend.jit
        def k(x: V, out: V, c=1):
            out[:] = x * c
        x = torch.ones(4); out = torch.full((4,), 7.0)
        try:
            k(x, out, c=2**64 + 3)
            msg = None
        except ValueError as e:
            msg = str(e)
        print(json.dumps({"msg": msg, "untouched": bool(torch.equal(out, torch.full((4,), 7.0)))}))
    ''', tmp_path / "cache")
    assert r["msg"] and "kernel 'k'" in r["msg"] and "parameter 'c'" in r["msg"] and str(2**64 + 3) in r["msg"]
    assert r["untouched"]


def test_writable_zero_d_array_constant_is_refused(tmp_path):
    r = run('''
        @pypto.frontend.jit
        def k(x: V, out: V, c=1.0):
            out[:] = x * c
        x = torch.ones(4); out = torch.zeros(4)
        try:
            k(x, out, c=np.array(2.0))
            msg = None
        except TypeError as e:
            msg = str(e)
        k(x, out, c=np.float64(2.0))
        print(json.dumps({"msg": msg, "ok": bool(torch.equal(out, x * 2.0))}))
    ''', tmp_path / "cache")
    # the core refuses any tensor-like object as a constant (a 0-d array is one), before Python sees it
    assert r["msg"] and "parameter 'c'" in r["msg"] and "compile-time constant" in r["msg"] and r["ok"]


def test_kernel_without_source_is_guarded(tmp_path):
    r = run('''
        g = {"pypto": pypto, "V": V, "SCALE": 2.0}
        exec("@pypto.frontend.jit\\ndef k(x: V, out: V):\\n    out[:] = x * SCALE\\n", g)
        x = torch.ones(4); out = torch.zeros(4)
        g["k"](x, out); first = out.clone()
        g["SCALE"] = 3.0
        g["k"](x, out)
        print(json.dumps({"first": first.tolist(), "second": out.tolist()}))
    ''', tmp_path / "cache")
    assert r["first"] == [2.0] * 4 and r["second"] == [3.0] * 4


def test_fork_while_another_thread_compiles_does_not_hang(tmp_path):
    r = run('''
        import threading, time
        @pypto.frontend.jit
        def k(x: V, out: V):
            out[:] = x * 5.0 - 1.0
        x = torch.arange(8, dtype=torch.float32)
        t = threading.Thread(target=k, args=(x, torch.zeros(8)))
        t.start()
        time.sleep(0.3)                    # the thread is inside its build (the in-flight entry exists)
        pid = os.fork()
        if pid == 0:
            out = torch.zeros(8)
            k(x, out)
            os._exit(0 if torch.equal(out, x * 5.0 - 1.0) else 3)
        _, status = os.waitpid(pid, 0)
        t.join()
        print(json.dumps({"status": status}))
    ''', tmp_path / "cache", timeout=200)
    assert r["status"] == 0


def _cli(cache_dir, *args, env=None):
    e = dict(os.environ, PYPTO_CACHE_DIR=str(cache_dir), **(env or {}))
    return subprocess.run([sys.executable, "-m", "pypto", "cache", *args], capture_output=True, text=True, env=e,
                          timeout=120)


def test_cache_cli_and_size_cap(tmp_path):
    d = tmp_path / "cache"
    run('''
        for i in range(3):
            @pypto.frontend.jit
            def k(x: V, out: V, c=0.0):
                out[:] = x + c
            k(torch.ones(4), torch.zeros(4), c=float(i))
        print(json.dumps({}))
    ''', d, env={"PYPTO_TORCH_FAST_READER": "0"})
    info = _cli(d, "info")
    assert info.returncode == 0 and "entries: 3" in info.stdout, info.stdout + info.stderr
    listing = _cli(d, "list")
    assert len(listing.stdout.strip().splitlines()) == 3 and " k" in listing.stdout
    assert _cli(d, "prune").returncode != 0                          # needs a bound: a clear usage error
    assert "removed 0 entries" in _cli(d, "prune", "--older-than", "30d").stdout
    assert "removed 3 entries" in _cli(d, "prune", "--max-size", "1").stdout
    assert "entries: 0" in _cli(d, "info").stdout
    # the cap applies on every new entry: at most one entry of this size survives
    run('''
        for i in range(3):
            @pypto.frontend.jit
            def k(x: V, out: V, c=0.0):
                out[:] = x - c
            out = torch.zeros(4); k(torch.ones(4), out, c=float(i))
            assert torch.equal(out, torch.ones(4) - float(i))
        print(json.dumps({}))
    ''', d, env={"PYPTO_TORCH_FAST_READER": "0", "PYPTO_CACHE_MAX_SIZE": "1"})
    assert "entries: 1" in _cli(d, "info").stdout
    assert "removed 1 entries" in _cli(d, "clear").stdout and "entries: 0" in _cli(d, "info").stdout
