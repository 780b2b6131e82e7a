"""The fast torch.Tensor reader: compiled once against the installed torch's headers, cached on disk.

torch's DLPack exchange API costs ~500 instructions per tensor on a call (it acquires the GIL through pybind11
and builds DLPack metadata); reading TensorImpl through torch's inline accessors costs ~30. The reader is a tiny
C++ file (src/python/torch_reader/torch_reader.cpp) compiled here with the installed torch's include directory,
then validated by the core against the exchange API on probe tensors before it is used. Any failure leaves the
exchange API in place (and says why once, as a warning). Set PYPTO_TORCH_FAST_READER=0 to disable it.
"""
from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import threading
import warnings
from pathlib import Path

from .. import _core
from . import cache
from .toolchain import CXX, compiler_identity, include_dir, run_compiler

_lock = threading.Lock()
_state: dict = {}


def _reset_after_fork():
    global _lock
    _lock = threading.Lock()     # a thread of the parent may have held it while installing


os.register_at_fork(after_in_child=_reset_after_fork)


def _source() -> Path:
    here = Path(__file__).resolve().parent.parent
    for p in (here / "_sources" / "torch_reader.cpp",
              here.parents[1] / "src" / "python" / "torch_reader" / "torch_reader.cpp"):
        if p.exists():
            return p
    raise FileNotFoundError("torch_reader.cpp is not shipped with this pypto installation")


def _probes(torch):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    return [base, base[1:, 2:], base.t(), base[:, 1], torch.zeros((), dtype=torch.float64),
            torch.zeros(0, 3), torch.ones(5, dtype=torch.float16), torch.ones(2, 3, dtype=torch.bfloat16),
            torch.arange(7, dtype=torch.int64)[2:], torch.zeros(3, dtype=torch.bool),
            torch.zeros(2, 2, dtype=torch.int8), torch.zeros(2, dtype=torch.uint8),
            torch.nn.Parameter(torch.ones(3, 2)), torch.ones(3, requires_grad=True), base[1:2], base[:, 2:3],
            torch.ones(1, 4).expand(3, 4)]


def build(torch) -> str:
    """Build (or find in the cache) the reader for this torch and load it; returns the path the core loads.
    Like a kernel library, it is verified against its sha256 and loaded from the descriptor that was hashed."""
    src = _source()
    tdir = Path(torch.__file__).resolve().parent
    flags = ["-O2", "-std=c++17", "-shared", "-fPIC", "-w", f"-I{tdir / 'include'}", f"-I{include_dir()}",
             f"-I{sysconfig.get_paths()['include']}", f"-L{tdir / 'lib'}", "-lc10", f"-Wl,-rpath,{tdir / 'lib'}"]
    h = hashlib.sha256()
    for part in (src.read_bytes(), torch.__version__.encode(), str(tdir).encode(), compiler_identity().encode(),
                 " ".join(flags).encode(), sys.version.encode()):
        h.update(part)
        h.update(b"\0")
    name = h.hexdigest()[:32]
    d = cache.subdir("torch_reader")
    so, sha = d / f"{name}.so", d / f"{name}.so.sha256"
    loaded = cache.load_entry(so, sha)
    if loaded is not None:
        return loaded
    with cache.FileLock(d / f"{name}.lock", 600, "the torch reader"):
        if not cache.valid_library(so, sha):
            run_compiler(lambda out: [CXX, str(src), "-o", out, *flags], so, sha, 600, "the torch reader")
    loaded = cache.load_entry(so, sha)
    if loaded is None:
        raise RuntimeError(f"the torch reader '{so}' failed verification right after it was built")
    return loaded


def ensure_installed() -> str:
    """Install the fast reader once per process (when torch is in use). Returns '' or why not."""
    if "torch" not in sys.modules:
        return "not requested"
    _core.set_torch_tensor_type(sys.modules["torch"].Tensor)  # autograd rules for writes, with or without the reader
    if os.environ.get("PYPTO_TORCH_FAST_READER", "1") == "0":
        return "not requested"
    with _lock:
        if "status" in _state:
            return _state["status"]
        torch = sys.modules["torch"]
        try:
            why = _core.install_torch_reader(build(torch), torch.Tensor, _probes(torch))
        except Exception as e:  # a missing compiler or headers must never break a kernel call
            why = f"{type(e).__name__}: {e}"
        if why:
            warnings.warn(f"pypto: using torch's DLPack exchange API for tensor reads ({why})", RuntimeWarning,
                          stacklevel=2)
        _state["status"] = why
        return why
