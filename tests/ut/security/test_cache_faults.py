"""The cache degrades, never fails: a read-only cache serves hits and misses build elsewhere, lock trouble means
building without the lock, damaged sidecars are rebuilt, paths never read as options, interrupted builds leave no
temporary file, and a missing compiler or a full disk is an error naming the kernel and what to do. Each case runs
in a child process (with a timeout).

A read-only directory does not stop root (CAP_DAC_OVERRIDE): when the tests run as root, the child runs under
`setpriv` without the capabilities that bypass file modes, as an unprivileged user would."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from _security_child import PRELUDE, run

KERNEL = textwrap.dedent('''
    @pypto.frontend.jit
    def k(x: V, out: V):
        out[:] = x * 3.0 + 1.0
    x = torch.arange(8, dtype=torch.float32); out = torch.zeros(8)
    k(x, out)
    ok = bool(torch.equal(out, x * 3.0 + 1.0))
''')
OTHER = textwrap.dedent('''
    @pypto.frontend.jit
    def k_other(x: V, out: V):
        out[:] = x - 5.0
    out2 = torch.zeros(8)
    k_other(x, out2)
    ok_other = bool(torch.equal(out2, x - 5.0))
''')
_CAPS = "dac_override,dac_read_search,fowner"


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    if not Path("/usr/bin/setpriv").exists():
        pytest.fail("running as root without setpriv: cannot make a read-only directory binding (install util-linux)")
    drop = ",".join(f"-{c}" for c in _CAPS.split(","))
    return ["/usr/bin/setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"]


def _files(d: Path) -> dict:
    """Names and sizes (a hit may touch a library's mtime: the cache's last-use record)."""
    return {str(p.relative_to(d)): p.lstat().st_size for p in d.rglob("*")}


def _make_read_only(d: Path):
    for p in [*d.rglob("*"), d]:
        if p.is_symlink():
            continue
        mode = stat.S_IMODE(p.stat().st_mode)
        p.chmod(mode & ~0o222)


def _restore_writable(d: Path):
    for p in [d, *d.rglob("*")]:
        if not p.is_symlink():
            p.chmod(stat.S_IMODE(p.stat().st_mode) | 0o200)


def _temps(d: Path) -> list[str]:
    return sorted(str(p) for p in d.rglob("*.tmp"))


def test_read_only_cache_serves_hits_and_builds_misses_in_the_fallback(tmp_path):
    d = tmp_path / "shared"
    env = {"PYPTO_TORCH_READER_WAIT": "1"}
    r = run(KERNEL + 'print(json.dumps({"ok": ok}))', d, env=env)   # another process populates it
    assert r["ok"]
    before = _files(d)
    _make_read_only(d)
    try:
        r = _run_prefixed(_unprivileged(), KERNEL + OTHER + textwrap.dedent('''
            import pypto.compiler.cache as c
            print(json.dumps({"ok": ok, "ok_other": ok_other}))
        '''), d, env)
    finally:
        _restore_writable(d)
    assert r["ok"] and r["ok_other"], r
    assert "PermissionError" not in r["stderr"]
    assert r["stderr"].count("cannot take new entries") == 1, r["stderr"]
    assert _files(d) == before, "the read-only cache was written"


def test_lock_that_is_a_directory_or_read_only_builds_anyway(tmp_path):
    d = tmp_path / "c"
    r = _run_prefixed(_unprivileged(), KERNEL + textwrap.dedent('''
        import shutil
        from pathlib import Path
        from pypto.compiler import toolchain
        libs = sorted(Path(os.environ["PYPTO_CACHE_DIR"]).glob("??/*.so"))
        lib = libs[0]
        results = {}
        for case in ("directory", "read_only"):
            lock = Path(str(lib)[:-3] + ".lock")
            for p in (lib, Path(str(lib) + ".sha256")):
                p.unlink()
            if lock.exists() and not lock.is_dir():
                lock.unlink()
            if case == "directory":
                lock.mkdir()
                (lock / "inside").write_text("")
            else:
                if lock.is_dir():
                    shutil.rmtree(lock)
                lock.write_text("")
                lock.chmod(0o400)
            @pypto.frontend.jit
            def k(x: V, out: V):          # the same source: the same cache key, a new in-memory table
                out[:] = x * 3.0 + 1.0
            out.zero_()
            k(x, out)
            results[case] = bool(torch.equal(out, x * 3.0 + 1.0)) and lib.exists()
        print(json.dumps(results))
    '''), d, {"PYPTO_TORCH_FAST_READER": "0"}, timeout=300)
    assert r == {**r, "directory": True, "read_only": True}, r
    assert r["stderr"].count("building without the cross-process lock") == 1, r["stderr"]
    assert _temps(d) == []


def test_sidecar_that_is_a_directory_is_rebuilt(tmp_path):
    d = tmp_path / "c"
    r = run(KERNEL + textwrap.dedent('''
        from pathlib import Path
        lib = sorted(Path(os.environ["PYPTO_CACHE_DIR"]).glob("??/*.so"))[0]
        sha = Path(str(lib) + ".sha256")
        sha.unlink()
        sha.mkdir()
        (sha / "junk").write_text("x")
        @pypto.frontend.jit
        def k(x: V, out: V):
            out[:] = x * 3.0 + 1.0
        out.zero_()
        k(x, out)
        print(json.dumps({"ok": bool(torch.equal(out, x * 3.0 + 1.0)), "sidecar_is_file": sha.is_file()}))
    '''), d, env={"PYPTO_TORCH_FAST_READER": "0"})
    assert r["ok"] and r["sidecar_is_file"], r


def test_cache_dir_starting_with_a_dash_is_never_an_option(tmp_path):
    r = _run_prefixed([], KERNEL + 'print(json.dumps({"ok": ok}))', "-cache", {"PYPTO_TORCH_READER_WAIT": "1"},
                      cwd=tmp_path)
    assert r["ok"], r
    assert any((tmp_path / "-cache").glob("??/*.so")) and any((tmp_path / "-cache" / "torch_reader").glob("*.so"))


def _wrapper(tmp_path: Path, mark: Path, match: str) -> Path:
    """A PYPTO_CXX that is g++, except for a build whose arguments contain `match`: it records its pid and hangs."""
    w = tmp_path / "slow-cxx"
    w.write_text(textwrap.dedent(f'''\
        #!/bin/sh
        case "$*" in
          *{match}*) echo $$ > {mark}; exec sleep 120 ;;
        esac
        exec g++ "$@"
    '''))
    w.chmod(0o755)
    return w


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def test_interrupted_foreground_build_leaves_no_temporary_file(tmp_path):
    d, mark = tmp_path / "c", tmp_path / "pid"
    env = dict(os.environ, PYPTO_CACHE_DIR=str(d), PYPTO_CXX=str(_wrapper(tmp_path, mark, ".cpp")),
               PYPTO_TORCH_FAST_READER="0")
    # SIGINT raises KeyboardInterrupt in the child as Ctrl-C does, even when this run inherited an ignored SIGINT
    # (a background job of a shell without job control: Python then installs no handler); SIGUSR1 makes it print
    # every thread's stack, what a child that outlives its SIGINT was doing
    stacks = ("import faulthandler, signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "faulthandler.register(signal.SIGUSR1, all_threads=True)\n")
    p = subprocess.Popen([sys.executable, "-c", stacks + PRELUDE + textwrap.dedent(KERNEL)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not mark.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), "the compiler never started"
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGUSR1)
            time.sleep(2)
            p.kill()
            _, err = p.communicate()
            raise AssertionError("the interrupted process did not exit within 60 s; its threads:\n" + err[-8000:])
    finally:
        p.kill()
    assert "KeyboardInterrupt" in err, err[-2000:]
    assert _temps(d) == [], "an interrupted build left temporary files"
    assert not _alive(int(mark.read_text())), "the compiler outlived the interrupted build"


def test_exit_during_the_background_reader_build_leaves_no_temporary_file(tmp_path):
    d, mark = tmp_path / "c", tmp_path / "pid"
    r = run(KERNEL + textwrap.dedent('''
        from pypto.compiler import torch_reader
        import time
        deadline = time.monotonic() + 60
        while not os.path.exists(os.environ["MARK"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        print(json.dumps({"ok": ok, "status": torch_reader._state.get("status")}))
    '''), d, env={"PYPTO_CXX": str(_wrapper(tmp_path, mark, "torch_reader.cpp")), "MARK": str(mark),
                 "PYPTO_TORCH_READER_WAIT": "0"})
    assert r["ok"] and r["status"] == "building", r
    assert _temps(d) == [], "the background build left temporary files"
    assert not _alive(int(mark.read_text())), "the reader's compiler outlived its process"


def test_missing_compiler_names_the_kernel_and_what_to_do(tmp_path):
    r = run('''
        @pypto.frontend.jit
        def k(x: V, out: V):
            out[:] = x + 1.0
        x = torch.ones(4); out = torch.full((4,), 7.0)
        try:
            k(x, out)
            msg = None
        except pypto.CompileError as e:
            msg = str(e)
        print(json.dumps({"msg": msg, "untouched": bool((out == 7).all())}))
    ''', tmp_path / "c", env={"PYPTO_CXX": str(tmp_path / "no-such-compiler")})
    assert r["msg"] and "kernel 'k'" in r["msg"] and "no-such-compiler" in r["msg"], r
    assert "No such file or directory" in r["msg"] and "set PYPTO_CXX" in r["msg"] and r["untouched"]


def test_full_disk_names_the_kernel_and_leaves_nothing_behind(tmp_path):
    """ENOSPC at our own write (monkeypatched), then a real file-size limit (RLIMIT_FSIZE) while the compiler
    writes the library."""
    r = run('''
        import errno, resource
        from pathlib import Path
        from pypto.compiler import cache
        results = {}

        class Full:
            def __init__(self, f): self.f = f
            def __enter__(self): return self
            def __exit__(self, *a): self.f.close()
            def write(self, data): raise OSError(errno.ENOSPC, "No space left on device")
        real_fdopen = os.fdopen
        cache.os.fdopen = lambda fd, *a, **k: Full(real_fdopen(fd, *a, **k))
        @pypto.frontend.jit
        def k(x: V, out: V):
            out[:] = x + 1.0
        x = torch.ones(4); out = torch.full((4,), 7.0)
        try:
            k(x, out)
        except pypto.CompileError as e:
            results["enospc"] = str(e)
        cache.os.fdopen = real_fdopen

        resource.setrlimit(resource.RLIMIT_FSIZE, (12 << 10, 12 << 10))  # the .cpp fits, the library does not
        @pypto.frontend.jit
        def k2(x: V, out: V):
            out[:] = x * 2.0 + 3.0
        try:
            k2(x, out)
        except pypto.CompileError as e:
            results["fsize"] = str(e)
        results["untouched"] = bool((out == 7).all())
        results["libraries"] = [str(p) for p in Path(os.environ["PYPTO_CACHE_DIR"]).glob("??/*.so")]
        print(json.dumps(results))
    ''', tmp_path / "c", env={"PYPTO_TORCH_FAST_READER": "0"})
    assert "kernel 'k'" in r["enospc"] and "No space left on device" in r["enospc"], r
    assert "free some space" in r["enospc"]
    assert "kernel 'k2'" in r["fsize"] and "file-size limit is full" in r["fsize"], r["fsize"]
    assert r["untouched"] and r["libraries"] == []
    assert _temps(tmp_path / "c") == []


def _run_prefixed(prefix: list, body: str, cache_dir, env: dict, timeout: float = 240, cwd=None) -> dict:
    """_security_child.run with a command prefix (setpriv) and a working directory."""
    e = dict(os.environ, PYPTO_CACHE_DIR=str(cache_dir), **env)
    e.pop("PYPTO_CACHE_MAX_SIZE", None)
    code = PRELUDE + textwrap.dedent(body)
    try:
        r = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, env=e,
                           timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the child hung (> {timeout} s)") from None
    assert r.returncode == 0, f"child exited {r.returncode}:\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["stderr"] = r.stderr
    return out
