"""Symmetric windows: one shared-memory segment per rank of a group, mapped by every rank (libpypto_shmem).

`ensure(group, digest, nbytes, kernel)` is collective over the group (every rank builds the same kernel at the
same point of an SPMD program): each rank creates its own segment under an unguessable name
(`/pypto.<uid>.<pid>.<random>.<rank>`, mode 0600), the names, the allocation digests and the pids are exchanged
with torch.distributed, every rank checks that all digests agree (a rank that allocates different shmem
tensors gets an error, never corrupt data), maps every peer's segment, and, once all ranks have mapped all
segments, unlinks its own name: from then on nothing is left in /dev/shm, whatever happens to the processes.
A segment left by a job that died between create and unlink is reclaimed by the next `ensure` (its creator's
pid is in its name). The registry entry (key `group|digest`) is what a generated kernel looks up.
"""
from __future__ import annotations

import ctypes
import os
import secrets
import threading
from pathlib import Path

from ..errors import DistributedError
from ..native import library_dir
from .groups import _dist, group_of

SHM_DIR = Path("/dev/shm")
DEFAULT_TIMEOUT_S = float(os.environ.get("PYPTO_SHMEM_TIMEOUT", "60"))
MAX_PES = 64

_lock = threading.Lock()
_lib = None
_windows: dict = {}          # key -> (bases, nbytes)


def _load():
    global _lib
    if _lib is None:
        path = library_dir() / "libpypto_shmem.so"
        if not path.is_file():
            raise DistributedError(f"pypto.distributed: {path} is missing (reinstall pypto)")
        lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        vp, i64, i32, cp = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p
        for fn, args in (("pypto_shmem_create", [cp, i64, ctypes.POINTER(vp), cp, ctypes.c_int]),
                         ("pypto_shmem_open", [cp, i64, ctypes.POINTER(vp), cp, ctypes.c_int]),
                         ("pypto_shmem_unlink", [cp]), ("pypto_shmem_unmap", [vp, i64]),
                         ("pypto_shmem_register", [cp, cp, i32, i32, i64, ctypes.POINTER(vp),
                                                   ctypes.POINTER(i32)]),
                         ("pypto_shmem_unregister", [cp]), ("pypto_shmem_lookup", [cp]),
                         ("pypto_shmem_set_timeout_ns", [i64]), ("pypto_shmem_timeout_ns", [])):
            getattr(lib, fn).argtypes = args
        lib.pypto_shmem_timeout_ns.restype = i64
        lib.pypto_shmem_lookup.restype = vp
        lib.pypto_shmem_set_timeout_ns.restype = None
        lib.pypto_shmem_set_timeout_ns(int(DEFAULT_TIMEOUT_S * 1e9))
        _lib = lib
    return _lib


def set_timeout(seconds: float) -> None:
    """How long shmem_wait_until / shmem_barrier_all wait before failing (default 60 s, or the
    PYPTO_SHMEM_TIMEOUT environment variable); read at every wait, so no kernel is rebuilt."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0 < seconds <= 86400:
        raise ValueError(f"pypto.distributed.set_timeout: seconds must be a number in (0, 86400], got {seconds!r}")
    _load().pypto_shmem_set_timeout_ns(int(seconds * 1e9))


def get_timeout() -> float:
    return _load().pypto_shmem_timeout_ns() / 1e9


def _prefix() -> str:
    return f"pypto.{os.getuid()}."


def leftover_windows() -> list:
    """Names of this user's pypto segments in /dev/shm (none, after every ensure() has returned)."""
    try:
        return sorted(p.name for p in SHM_DIR.iterdir() if p.name.startswith(_prefix()))
    except OSError:
        return []


def reclaim_stale() -> list:
    """Unlink segments whose creating process no longer exists (a job killed between create and unlink)."""
    gone = []
    for name in leftover_windows():
        try:
            pid = int(name.split(".")[2])
            os.kill(pid, 0)
        except ProcessLookupError:
            _load().pypto_shmem_unlink(f"/{name}".encode())
            gone.append(name)
        except (ValueError, IndexError, PermissionError):
            continue
    return gone


def key_of(group: str, digest: str) -> str:
    return f"{group}|{digest}"


def ensure(group: str, digest: str, nbytes: int, kernel: str) -> str:
    """Create (collectively) or reuse the window of `group` for the allocation `digest`; returns its key."""
    key = key_of(group, digest)
    with _lock:
        if key in _windows:
            return key
    lib = _load()
    dist = _dist()
    pg, ranks = group_of(group, f"kernel '{kernel}'")
    if len(ranks) > MAX_PES:
        raise DistributedError(f"kernel '{kernel}': group {group!r} has {len(ranks)} ranks; at most {MAX_PES}")
    reclaim_stale()
    me = ranks.index(dist.get_rank())
    name = f"/{_prefix()}{os.getpid()}.{secrets.token_hex(16)}.{me}"
    err = ctypes.create_string_buffer(512)
    base = ctypes.c_void_p()
    status = ""
    if lib.pypto_shmem_create(name.encode(), nbytes, ctypes.byref(base), err, 512) != 0:
        status = err.value.decode(errors="replace")
    infos = [None] * len(ranks)
    dist.all_gather_object(infos, (digest, name, os.getpid(), nbytes, status), group=pg)
    bases = [None] * len(ranks)
    bases[me] = base.value
    try:
        problem = _check_peers(infos, kernel, group, me)
        if not problem:
            problem = _map_peers(lib, infos, bases, me, nbytes)
        oks = [None] * len(ranks)
        dist.all_gather_object(oks, problem, group=pg)  # every rank has mapped every segment (or failed)
    finally:
        if not status:
            lib.pypto_shmem_unlink(name.encode())
    bad = [(r, p) for r, p in enumerate(oks) if p]
    if bad:
        _unmap(lib, bases, nbytes)
        raise DistributedError("; ".join(f"rank {r}: {p}" for r, p in bad))
    arr = (ctypes.c_void_p * len(ranks))(*bases)
    pids = (ctypes.c_int32 * len(ranks))(*[i[2] for i in infos])
    rc = lib.pypto_shmem_register(key.encode(), group.encode(), me, len(ranks), nbytes, arr, pids)
    if rc != 0:
        _unmap(lib, bases, nbytes)
        raise DistributedError(f"kernel '{kernel}': cannot register the window of group {group!r} (code {rc})")
    with _lock:
        _windows[key] = (bases, nbytes)
    return key


def _check_peers(infos, kernel, group, me) -> str:
    failed = [f"rank {r}: {i[4]}" for r, i in enumerate(infos) if i[4]]
    if failed:
        return "; ".join(failed)
    digests = [i[0] for i in infos]
    if len(set(digests)) != 1:
        mine = digests[me]
        differ = [r for r, d in enumerate(digests) if d != mine]
        return (f"kernel '{kernel}': the ranks of group {group!r} allocate different shmem tensors (allocation "
                f"digest {mine[:12]} here, different on ranks {differ}); every rank must create the same shmem "
                f"tensors (group, n_pes, dtype, shape) in the same order")
    if len({i[3] for i in infos}) != 1:
        return f"kernel '{kernel}': window sizes differ across ranks: {[i[3] for i in infos]}"
    return ""


def _map_peers(lib, infos, bases, me, nbytes) -> str:
    err = ctypes.create_string_buffer(512)
    for r, info in enumerate(infos):
        if r == me:
            continue
        p = ctypes.c_void_p()
        if lib.pypto_shmem_open(info[1].encode(), nbytes, ctypes.byref(p), err, 512) != 0:
            return err.value.decode(errors="replace")
        bases[r] = p.value
    return ""


def _unmap(lib, bases, nbytes):
    for b in bases:
        if b:
            lib.pypto_shmem_unmap(ctypes.c_void_p(b), nbytes)


def release(group=None) -> int:
    """Unmap this process's windows (of `group`, or all); kernels that use them must be rebuilt... they fail
    with a clear error instead. Returns how many windows were released."""
    lib = _load() if _windows else None
    n = 0
    with _lock:
        for key in [k for k in _windows if group is None or k.startswith(f"{group}|")]:
            bases, nbytes = _windows.pop(key)
            lib.pypto_shmem_unregister(key.encode())
            _unmap(lib, bases, nbytes)
            n += 1
    return n


__all__ = ["ensure", "key_of", "release", "set_timeout", "get_timeout", "leftover_windows", "reclaim_stale",
           "library_dir"]
