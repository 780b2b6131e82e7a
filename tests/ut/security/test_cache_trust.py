"""The cache is private, verified and race-free: untrusted directories, planted links, lock waits, bad compilers."""
import fcntl
import os
import textwrap

from _security_child import run

KERNEL = textwrap.dedent('''
    @pypto.frontend.jit
    def k(x: V, out: V):
        out[:] = x * 3.0 + 1.0
    x = torch.arange(8, dtype=torch.float32); out = torch.zeros(8)
    k(x, out)
    ok = bool(torch.equal(out, x * 3.0 + 1.0))
''')


def test_group_writable_cache_dir_degrades_to_a_private_one(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    r = run(KERNEL + 'print(json.dumps({"ok": ok}))', d)
    assert r["ok"]
    assert r["stderr"].count("not using the kernel cache directory") == 1 and "writable by group" in r["stderr"]
    assert not any(d.rglob("*.so")), "a library was written into the untrusted directory"


def test_uncreatable_cache_dir_degrades_and_kernels_still_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run(KERNEL + 'print(json.dumps({"ok": ok}))', blocker / "cache")
    assert r["ok"] and "cannot be created" in r["stderr"]


def test_symlinked_cache_dir_is_not_used(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    r = run(KERNEL + 'print(json.dumps({"ok": ok}))', tmp_path / "link")
    assert r["ok"] and "symbolic link" in r["stderr"] and not any(real.rglob("*.so"))


def test_symlinked_lock_never_creates_its_target(tmp_path):
    from pypto.compiler import cache

    d = tmp_path / "c"
    d.mkdir()
    target = tmp_path / "victim"
    (d / "x.lock").symlink_to(target)
    with cache.FileLock(d / "x.lock", 5):
        pass
    assert not target.exists() and not (d / "x.lock").is_symlink()


def test_lock_wait_is_bounded_and_a_dead_holders_file_never_blocks(tmp_path):
    from pypto.compiler import cache
    from pypto.errors import CompileError

    lock = tmp_path / "k.lock"
    lock.write_text("")                      # a stale lock file: its process is gone, no flock held
    with cache.FileLock(lock, 1):
        pass
    fd = os.open(lock, os.O_RDWR)
    pid = os.fork()
    if pid == 0:                             # another process holds the lock
        fcntl.flock(fd, fcntl.LOCK_EX)
        import time
        time.sleep(30)
        os._exit(0)
    try:
        import time
        time.sleep(0.3)
        t0 = time.monotonic()
        try:
            with cache.FileLock(lock, 1, "kernel 'k'"):
                raise AssertionError("took a lock another process holds")
        except CompileError as e:
            assert "kernel 'k'" in str(e) and "waited 1 s" in str(e)
        assert time.monotonic() - t0 < 5
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def test_compiler_that_succeeds_without_output_leaves_no_entry(tmp_path):
    r = run('''
        try:
            @pypto.frontend.jit
            def k(x: V, out: V):
                out[:] = x + 2.0
            x = torch.arange(4, dtype=torch.float32); out = torch.zeros(4)
            k(x, out)
            msg = None
        except pypto.CompileError as e:
            msg = str(e)
        print(json.dumps({"msg": msg, "untouched": bool(torch.equal(out, torch.zeros(4)))}))
    ''', tmp_path / "cache", env={"PYPTO_CXX": "true", "PYPTO_TORCH_FAST_READER": "0"})
    assert r["msg"] and "without writing a shared library" in r["msg"] and "kernel 'k'" in r["msg"]
    assert r["untouched"]
    assert not list((tmp_path / "cache").rglob("*.so")) and not list((tmp_path / "cache").rglob("*.sha256"))
    r2 = run(KERNEL + 'print(json.dumps({"ok": ok}))', tmp_path / "cache")   # the real compiler: a good entry
    assert r2["ok"]


def test_truncated_torch_reader_is_rebuilt_not_loaded(tmp_path):
    body = KERNEL + '''
from pypto.compiler import torch_reader
print(json.dumps({"ok": ok, "why": torch_reader._state.get("status")}))
'''
    first = run(body, tmp_path / "cache")
    assert first["ok"] and first["why"] == ""
    (so,) = (tmp_path / "cache" / "torch_reader").glob("*.so")
    so.write_bytes(so.read_bytes()[:200])
    second = run(body, tmp_path / "cache")
    assert second["ok"] and second["why"] == ""
    assert so.read_bytes()[:4] == b"\x7fELF" and so.stat().st_size > 200


def test_loaded_bytes_are_the_verified_bytes(tmp_path):
    """Two libraries loaded one after another (the same descriptor number reused) each run their own code, and a
    library replaced on disk after it was loaded does not change what runs."""
    r = run('''
        @pypto.frontend.jit
        def k1(x: V, out: V):
            out[:] = x + 1.0
        @pypto.frontend.jit
        def k2(x: V, out: V):
            out[:] = x + 2.0
        x = torch.arange(4, dtype=torch.float32); o1 = torch.zeros(4); o2 = torch.zeros(4)
        k1(x, o1); k2(x, o2)
        print(json.dumps({"ok": bool(torch.equal(o1, x + 1.0)) and bool(torch.equal(o2, x + 2.0))}))
    ''', tmp_path / "cache")
    assert r["ok"]
