"""The fast torch.Tensor reader: compiled once against the installed torch's headers, cached on disk.

torch's DLPack exchange API costs ~500 instructions per tensor on a call (it acquires the GIL through pybind11
and builds DLPack metadata); reading TensorImpl through torch's inline accessors costs ~60. The reader is a tiny
C++ file (src/python/torch_reader/torch_reader.cpp) compiled here with the installed torch's include directory,
then validated by the core against the exchange API on probe tensors before it is used. Any failure leaves the
exchange API in place (and says why once, as a warning). Set PYPTO_TORCH_FAST_READER=0 to disable it.

The first build in a cache directory (~1 s of g++) runs in a background thread, so that it never delays a call: the
exchange API serves the calls until the reader is installed (under the GIL, between calls). A reader already in
the cache is installed at once (a few ms). PYPTO_TORCH_READER_WAIT=1 (or `ensure_installed(wait=True)`) builds it
in the foreground instead: for measurements that must see the fast reader from the first hit.
"""
from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import threading
import warnings
from pathlib import Path

from ..native import core as _core
from . import cache
from .toolchain import CXX, compiler_identity, include_dir, run_compiler

_lock = threading.Lock()
_state: dict = {}


def _reset_after_fork():
    global _lock
    _lock = threading.Lock()     # a thread of the parent may have held it while installing
    if _state.get("status") == "building":  # the building thread does not exist in the child: build again there
        _state.clear()


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
            torch.ones(1, 4).expand(3, 4)] + [
                torch.zeros(2, 3, dtype=getattr(torch, n)) for n in
                ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn_x2")
                if isinstance(getattr(torch, n, None), torch.dtype)]


def _entry(torch):
    """(source, flags, .so path, .sha256 path) of the reader for this torch, compiler and Python."""
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
    return src, flags, d / f"{name}.so", d / f"{name}.so.sha256"


def build(torch) -> str:
    """Build (or find in the cache) the reader for this torch and load it; returns the path the core loads.
    Like a kernel library, it is verified against its sha256 and loaded from the descriptor that was hashed."""
    src, flags, so, sha = _entry(torch)
    loaded = cache.load_entry(so, sha)
    if loaded is not None:
        return loaded
    with cache.FileLock(so.with_suffix(".lock"), 600, "the torch reader"):
        if not cache.valid_library(so, sha):
            run_compiler(lambda out: [CXX, str(src), "-o", out, *flags], so, sha, 600, "the torch reader")
    loaded = cache.load_entry(so, sha)
    if loaded is None:
        raise RuntimeError(f"the torch reader '{so}' failed verification right after it was built")
    return loaded


def _unavailable(why: str) -> str:
    warnings.warn(f"pypto: using torch's DLPack exchange API for tensor reads ({why})", RuntimeWarning, stacklevel=4)
    _state["status"] = why
    return why


def _install(torch) -> str:
    try:
        why = _core.install_torch_reader(build(torch), torch.Tensor, _probes(torch))
    except Exception as e:  # a missing compiler or headers must never break a kernel call
        why = f"{type(e).__name__}: {e}"
    if why:
        warnings.warn(f"pypto: using torch's DLPack exchange API for tensor reads ({why})", RuntimeWarning,
                      stacklevel=3)
    _state["status"] = why
    return why


def ensure_installed(wait: bool | None = None) -> str:
    """Install the fast reader once per process (when torch is in use). Returns '' once installed, "building" while
    a background build runs, or why it is not used. wait: build in the foreground (default: PYPTO_TORCH_READER_WAIT)."""
    if "torch" not in sys.modules:
        return "not requested"
    torch = sys.modules["torch"]
    _core.set_torch_tensor_type(torch.Tensor)  # autograd rules for writes, with or without the reader
    if os.environ.get("PYPTO_TORCH_FAST_READER", "1") == "0":
        return "not requested"
    if wait is None:
        wait = os.environ.get("PYPTO_TORCH_READER_WAIT", "0") not in ("", "0")
    with _lock:
        status = _state.get("status")
        if status is None:
            try:
                _, _, so, sha = _entry(torch)
            except Exception as e:   # no compiler, no headers: the exchange API serves; never breaks a call
                return _unavailable(f"{type(e).__name__}: {e}")
            if wait or cache.valid_library(so, sha):
                return _install(torch)   # built already (or asked to wait): load and validate it now
            thread = threading.Thread(target=_install, args=(torch,), name="pypto-torch-reader", daemon=True)
            _state.update(status="building", thread=thread)
            thread.start()
            return "building"
        thread = _state.get("thread")
    if wait and status == "building" and thread is not None:
        thread.join()
        return _state["status"]
    return status
