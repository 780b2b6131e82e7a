"""The kernel cache on disk: a private directory, entries verified and loaded from one open file, bounded locks.

Layout: $PYPTO_CACHE_DIR (default ~/.cache/pypto)/<key[:2]>/<key>.{cpp,so,so.sha256,lock}; the key is
`toolchain.cache_key` (content-addressed). The torch reader lives in torch_reader/ with the same file kinds.

Trust comes from ownership, not from the hash (docs/security.md): whoever can write the directory can write both a
library and its sha256. So the directory must belong to this user and not be writable by group or others (as ssh
requires of ~/.ssh); files must be regular files of this user, never reached through a symlink. A directory that
fails these checks, or cannot be created, is replaced for this process by a private temporary one (one warning).
The sha256 catches corruption (a truncated write, a full disk); a library is loaded from the very descriptor whose
bytes were hashed (`load_verified`), so nothing can swap the file between the check and the load.
"""
from __future__ import annotations

import atexit
import ctypes
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time
import warnings
from pathlib import Path

from ..errors import CompileError
from ..vocab.modes import parse_size

_EUID = os.geteuid()
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


class CacheWarning(RuntimeWarning):
    """The configured cache directory cannot be trusted or used; a private one is used instead."""


# ---- the directory ---------------------------------------------------------------------------------------------
_state_lock = threading.Lock()
_roots: dict = {}                   # configured path -> the directory used for it (itself, or a private one);
                                    # ("fallback", path) -> the private directory taking its new entries
_private: dict = {}                 # pid -> private directories made by this process (removed at exit)


def configured_dir() -> Path:
    """$PYPTO_CACHE_DIR (`~` expanded, made absolute: a relative '-cache' must never reach a tool as an option),
    default ~/.cache/pypto."""
    d = os.environ.get("PYPTO_CACHE_DIR")
    return Path(os.path.abspath(os.path.expanduser(d))) if d else Path.home() / ".cache" / "pypto"


def untrusted_reason(path: Path) -> str:
    """Why `path` cannot be a cache directory ('' when it can): it must be a real directory (not a symlink) owned
    by this user and writable by nobody else."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot inspect it ({e.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != _EUID:
        return f"it is owned by uid {st.st_uid}, not by this user (uid {_EUID})"
    if st.st_mode & 0o022:
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return ""


def _make_private(prefix: str, parent: Path | None = None) -> Path:
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))   # mode 0700, owned by us, a fresh name
    _private.setdefault(os.getpid(), []).append(d)
    return d


@atexit.register
def _remove_private():
    for d in _private.get(os.getpid(), []):     # a forked child never removes its parent's directories
        shutil.rmtree(d, ignore_errors=True)


def cache_dir() -> Path:
    """The cache directory this process uses: the configured one when it is trustworthy, else a private one."""
    want = configured_dir()
    key = str(want)
    with _state_lock:
        got = _roots.get(key)
        if got is not None:
            return got
        why = ""
        try:
            want.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as e:
            why = f"it cannot be created ({e.strerror})"
        why = why or untrusted_reason(want)
        if why:
            got = _make_private("pypto-cache-")
            warnings.warn(f"pypto: not using the kernel cache directory '{want}': {why}; kernels are cached in the "
                          f"private directory '{got}' for this process only (see docs/security.md)", CacheWarning,
                          stacklevel=3)
        else:
            got = want
        _roots[key] = got
        return got


_warned: set = set()                # (what, path) of the degradations this process already warned about


def warn_once(what: str, path, message: str):
    """One CacheWarning per (kind of trouble, path) and process."""
    with _state_lock:
        if (what, str(path)) in _warned:
            return
        _warned.add((what, str(path)))
    warnings.warn(message, CacheWarning, stacklevel=4)


def fallback_dir(reason: str) -> Path:
    """The private directory (0700, removed at exit) that takes the entries this process cannot write into the
    cache directory (a read-only shared cache, a damaged entry that cannot be replaced). Warns once."""
    root = cache_dir()
    with _state_lock:
        got = _roots.get(("fallback", str(root)))
        if got is None:
            got = _roots[("fallback", str(root))] = _make_private("pypto-cache-")
    warn_once("fallback", root, f"pypto: the kernel cache directory '{root}' cannot take new entries ({reason}); "
              f"kernels it lacks are built in the private directory '{got}' for this process only (entries already in "
              f"'{root}' are still used; see docs/security.md)")
    return got


def writable(d: Path) -> bool:
    """Whether this process can create files in `d` (tried, not guessed from mode bits: root, ACLs, read-only
    mounts)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=f".probe.{os.getpid()}.", suffix=".tmp")
    except OSError:
        return False
    os.close(fd)
    _remove(Path(tmp))
    return True


def subdir(name: str, root: Path | None = None) -> Path:
    """A trusted subdirectory of the cache (created 0700). Raises CompileError when it exists but is not ours.
    When it cannot be created (a read-only cache), the fallback directory's one is returned."""
    root = root or cache_dir()
    d = root / name
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        if root == cache_dir():
            return subdir(name, fallback_dir(f"cannot create '{d}': {e.strerror}"))
        raise CompileError(f"cannot create the cache directory '{d}': {e.strerror}") from None
    why = untrusted_reason(d)
    if why:
        raise CompileError(f"the cache directory '{d}' is not trusted: {why} (see docs/security.md)")
    return d


def writable_subdir(d: Path) -> Path:
    """`d` (a cache subdirectory) when new entries can be written there, else the fallback directory's one."""
    if writable(d):
        return d
    return subdir(d.name, fallback_dir(f"'{d}' is not writable"))


# ---- files -----------------------------------------------------------------------------------------------------
def open_trusted(path: Path) -> int | None:
    """A read-only descriptor of `path` when it is a regular file of this user that nobody else can write, reached
    without following a symlink; None otherwise (missing, foreign, a link: never used)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_uid == _EUID and not st.st_mode & 0o022:
        return fd
    os.close(fd)
    return None


def open_output(path: Path) -> int | None:
    """Like `open_trusted` for a file this process just had written (a compiler's output): its mode is made 0600
    first, so that a permissive umask does not make a fresh library untrusted."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_uid == _EUID:
        os.fchmod(fd, 0o600)
        return fd
    os.close(fd)
    return None


def sha256_fd(fd: int) -> str:
    h = hashlib.sha256()
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return h.hexdigest()
        h.update(chunk)
        offset += len(chunk)


def sha256_file(path: Path) -> str:
    fd = os.open(path, _OPEN_FLAGS)
    try:
        return sha256_fd(fd)
    finally:
        os.close(fd)


def read_trusted(path: Path, limit: int = 4096) -> bytes | None:
    fd = open_trusted(path)
    if fd is None:
        return None
    try:
        return os.pread(fd, limit, 0)
    finally:
        os.close(fd)


def temp_beside(path: Path) -> tuple[int, str]:
    """A fresh 0600 file beside `path` (mkstemp: O_EXCL, never a planted file), named `<name>.<pid>.<random>.tmp` so
    that one left by a process that died before cleaning up is recognized and removed (`remove_stale_temps`)."""
    return tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.{os.getpid()}.", suffix=".tmp")


def remove_stale_temps(path: Path):
    """Remove the temporary files beside `path` left by processes that no longer exist (killed mid-write)."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for n in names:
        if not (n.startswith(path.name + ".") and n.endswith(".tmp")):
            continue
        pid = n[len(path.name) + 1:].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue                    # its writer is alive
        except ProcessLookupError:
            pass
        except OSError:
            continue
        _remove(path.parent / n)


def clear_target(path: Path):
    """Make room for a file at `path`: a directory in its place (a damaged entry) is removed, never followed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)


def install_file(tmp: str, path: Path):
    """Rename the finished `tmp` to `path`, replacing whatever is there (a directory included)."""
    try:
        os.replace(tmp, path)
    except IsADirectoryError:
        clear_target(path)
        os.replace(tmp, path)


def atomic_write(path: Path, data: bytes):
    """Write `data` to a fresh 0600 file beside `path` (`temp_beside`), then rename it over `path`."""
    fd, tmp = temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        install_file(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def verified_fd(so: Path, sha: Path) -> int | None:
    """A descriptor of `so` whose bytes match the sha256 in `sha` (both trusted files), or None."""
    want = read_trusted(sha)
    if not want or not want.strip():
        return None
    fd = open_trusted(so)
    if fd is None:
        return None
    if sha256_fd(fd) != want.decode("ascii", "replace").strip():
        os.close(fd)
        return None
    return fd


def valid_library(so: Path, sha: Path) -> bool:
    fd = verified_fd(so, sha)
    if fd is None:
        return False
    os.close(fd)
    return True


# ---- loading the bytes that were verified ----------------------------------------------------------------------
_loaded: dict[str, object] = {}     # sha256 -> ctypes handle: keeps the loaded name alive for the native loader
_links: dict = {}                   # pid -> this process's private directory of load links


def load_verified(fd: int, digest: str) -> str:
    """Load the library open at `fd` (whose bytes hash to `digest`) and return a path under which the native
    loader finds it already loaded. Closes `fd`.

    The native core dlopens the path string it is given. dlopen of `/proc/self/fd/N` would load exactly these
    bytes, but glibc matches an already-loaded object by its path string first, and N is reused once closed, so a
    second library would get the first one's handle. So the library is loaded here through a link named by its
    sha256 in a private (0700, per-process) directory: the name is unique per content, the link points at this
    process's descriptor, and the core's dlopen of that name returns the handle loaded here."""
    try:
        root = cache_dir()
        with _state_lock:
            if digest in _loaded:
                return _loaded[digest][0]
            links = _links.get(os.getpid())
            if links is None:  # inside the cache directory, so the loaded path names the cache it came from
                try:
                    links = _make_private(".load-", root)
                except OSError:     # a read-only cache: the links go to a private directory elsewhere
                    links = _make_private("pypto-load-")
                _links[os.getpid()] = links
            link = links / f"{digest}.so"
            try:
                os.unlink(link)
            except FileNotFoundError:
                pass
            os.symlink(f"/proc/self/fd/{fd}", link)
            try:
                handle = ctypes.CDLL(str(link), mode=os.RTLD_NOW | os.RTLD_LOCAL)
            except OSError as e:
                raise CompileError(f"cannot load the kernel library (sha256 {digest[:16]}): {e}") from None
            finally:
                os.unlink(link)
            _loaded[digest] = (str(link), handle)
            return str(link)
    finally:
        os.close(fd)


def load_entry(so: Path, sha: Path) -> str | None:
    """Verify the entry and load it (see `load_verified`); None when it is missing or fails verification."""
    fd = verified_fd(so, sha)
    if fd is None:
        return None
    try:
        os.utime(fd)            # the last use, for least-recently-used eviction
    except OSError:
        pass
    return load_verified(fd, sha256_fd(fd))


# ---- locks -----------------------------------------------------------------------------------------------------
def _remove(path: Path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class LockUnavailable(CompileError):
    """The lock file cannot be opened (a read-only directory, a directory in its place): build without it."""


def open_lock(path: Path) -> int:
    """A descriptor for flock on `path`: our own regular file, created without following a symlink. A planted
    symlink or a foreign file in its place is removed (the directory is ours) and never used. A lock file that is
    read-only is opened read-only (flock needs no write access). Raises LockUnavailable when no lock can be had."""
    for _ in range(4):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
        except OSError as e:
            if e.errno == errno.ELOOP:          # a symlink: O_NOFOLLOW refused to follow (or create) its target
                _remove(path)
                continue
            fd = -1
            if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                try:
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
                except OSError:
                    fd = -1
            if fd < 0:
                raise LockUnavailable(f"cannot open the cache lock '{path}': {e.strerror}") from None
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_uid == _EUID and st.st_nlink == 1:
            return fd
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise LockUnavailable(f"cannot use the cache lock '{path}': it is a directory")
        _remove(path)
    raise CompileError(f"cannot create the cache lock '{path}': it keeps being replaced")


class FileLock:
    """An exclusive flock on `path`, waited for at most `timeout` seconds. flock locks die with their process, so
    a lock file left by a dead process never blocks; a live holder past the timeout is a clear error. A lock that
    cannot be had at all (LockUnavailable) means building without it, with one CacheWarning: entries are written
    atomically and verified on load, so two unlocked builders cost a second build, never a wrong library."""

    def __init__(self, path: Path, timeout: float = 600.0, what: str = "a kernel"):
        self.path, self.timeout, self.what = path, timeout, what
        self.fd = -1

    def __enter__(self):
        try:
            self.fd = open_lock(self.path)
        except LockUnavailable as e:
            warn_once("lock", self.path, f"pypto: {self.what}: {e}; building without the cross-process lock "
                                         f"(see docs/security.md)")
            self.fd = -1
            return self
        deadline = time.monotonic() + self.timeout
        pause = 0.005
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                pass
            if time.monotonic() >= deadline:
                os.close(self.fd)
                raise CompileError(f"{self.what}: waited {self.timeout:g} s (host_options compile_timeout) for "
                                   f"another process building the same library to release '{self.path}'")
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def __exit__(self, *exc):
        if self.fd >= 0:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
        return False


def try_lock(path: Path) -> int | None:
    """A descriptor holding the exclusive lock on `path`, or None when someone holds it or it cannot be had
    (never waits)."""
    try:
        fd = open_lock(path)
    except CompileError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def _reset_after_fork():
    """A forked child inherits the parent's locks' state but not its threads: start clean."""
    global _state_lock
    _state_lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_after_fork)


# ---- size cap and administration (python -m pypto cache ...) ---------------------------------------------------
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """'30d', '12h', '90m', '3600' (seconds) -> seconds."""
    t = str(text).strip().lower()
    unit = t[-1:] if t[-1:] in _AGE_UNITS else "s"
    num = t[:-1] if t[-1:] in _AGE_UNITS else t
    try:
        return float(num) * _AGE_UNITS[unit]
    except ValueError:
        raise ValueError(f"not an age: {text!r} (examples: 30d, 12h, 90m, 3600)") from None


def max_size() -> int | None:
    """The size cap from PYPTO_CACHE_MAX_SIZE (None: unbounded)."""
    v = os.environ.get("PYPTO_CACHE_MAX_SIZE", "").strip()
    return parse_size(v) if v else None


def entries(root: Path | None = None) -> list[dict]:
    """The kernel entries under `root`: key, files, total size, last use (the library's mtime), kernel name."""
    root = root or cache_dir()
    out = []
    for sub in sorted(root.iterdir()) if root.is_dir() else ():
        if len(sub.name) != 2 or sub.name.startswith(".") or untrusted_reason(sub):
            continue
        groups: dict[str, list[Path]] = {}
        for f in sub.iterdir():
            key = f.name.split(".", 1)[0]
            if len(key) == 64:
                groups.setdefault(key, []).append(f)
        for key, files in groups.items():
            size, used = 0, 0.0
            for f in files:
                try:
                    st = os.lstat(f)
                except FileNotFoundError:
                    continue
                size += st.st_size
                if f.name == key + ".so":
                    used = st.st_mtime
            head = read_trusted(sub / f"{key}.cpp", 200) or b""
            first = head.split(b"\n", 1)[0].decode("ascii", "replace")
            name = first.split(": ", 1)[1] if first.startswith("// pypto generated kernel: ") else "?"
            out.append({"key": key, "dir": sub, "files": files, "size": size, "last_used": used or None,
                        "kernel": name})
    return out


def remove_entry(entry: dict) -> bool:
    """Delete one entry's files under its key's lock (False when a process holds it: building or loading). A
    process that already opened the library keeps its descriptor's bytes; it never reads a half-deleted entry."""
    lock = entry["dir"] / f"{entry['key']}.lock"
    fd = try_lock(lock)
    if fd is None:
        return False
    try:
        for f in entry["files"]:
            if f != lock:
                _remove(f)
        _remove(lock)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    return True


def prune(max_bytes: int | None = None, older_than: float | None = None, keep: str = "",
          root: Path | None = None) -> tuple[int, int]:
    """Remove entries unused for `older_than` seconds, then least-recently-used ones until the cache holds at most
    `max_bytes`; never the entry `keep`, never an entry whose lock is held. Returns (entries removed, bytes freed)."""
    items = sorted(entries(root), key=lambda e: e["last_used"] or 0.0)
    total = sum(e["size"] for e in items)
    now = time.time()
    removed = freed = 0
    for e in items:
        if e["key"] == keep:
            continue
        stale = older_than is not None and (e["last_used"] or 0.0) < now - older_than
        over = max_bytes is not None and total > max_bytes
        if not (stale or over):
            continue
        if remove_entry(e):
            removed += 1
            freed += e["size"]
            total -= e["size"]
    return removed, freed


def enforce_max_size(keep: str = "", limit: int | None = None):
    """Apply the size cap after a new entry is written: `limit` (host_options cache_max_size) when > 0, else
    PYPTO_CACHE_MAX_SIZE; the newest entry `keep` always stays."""
    limit = limit if limit else max_size()
    if limit:
        prune(max_bytes=limit, keep=keep)


def clear(root: Path | None = None) -> tuple[int, int]:
    """Remove every kernel entry that no process holds, and the torch reader builds."""
    root = root or cache_dir()
    n, freed = 0, 0
    for e in entries(root):
        if remove_entry(e):
            n += 1
            freed += e["size"]
    reader = root / "torch_reader"
    if reader.is_dir() and not untrusted_reason(reader):
        for f in reader.iterdir():
            if f.suffix != ".lock":
                freed += os.lstat(f).st_size
                _remove(f)
    return n, freed


__all__ = ["CacheWarning", "cache_dir", "configured_dir", "untrusted_reason", "subdir", "writable_subdir",
           "fallback_dir", "writable", "warn_once", "temp_beside", "remove_stale_temps", "install_file",
           "LockUnavailable", "open_trusted",
           "sha256_fd", "sha256_file", "read_trusted", "atomic_write", "verified_fd", "valid_library",
           "load_verified", "load_entry", "open_lock", "FileLock", "try_lock", "parse_size", "parse_age",
           "max_size", "entries", "remove_entry", "prune", "enforce_max_size", "clear"]
