"""The kernel cache on disk: where it is, how entries are written (atomically) and checked before use.

Layout: $PYPTO_CACHE_DIR (default ~/.cache/pypto)/<key[:2]>/<key>.{cpp,so,so.sha256,lock}; the key is
`toolchain.cache_key` (content-addressed). A library is used only when its bytes match the sha256 stored beside
it; an flock on <key>.lock makes concurrent builders of one key wait for a single compiler run.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    d = os.environ.get("PYPTO_CACHE_DIR")
    return Path(d) if d else Path.home() / ".cache" / "pypto"



# ---- entries ---------------------------------------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic_write(path: Path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def valid_library(so: Path, sha: Path) -> bool:
    try:
        want = sha.read_text().strip()
        return bool(want) and sha256_file(so) == want
    except OSError:
        return False


class FileLock:
    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        return False



__all__ = ["cache_dir", "sha256_file", "atomic_write", "valid_library", "FileLock"]
