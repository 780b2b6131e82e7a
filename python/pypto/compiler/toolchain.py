"""build(prepared, request): trace -> C++ -> shared library, through a content-addressed disk cache.

Cache key = sha256 of (generated source, compiler identity (`g++ --version` first line), flags, CPU identity
(model name + flags: the code is built with -march=native), the kernel headers' contents, ABI version,
pypto version). Layout: $PYPTO_CACHE_DIR (default ~/.cache/pypto)/<key[:2]>/<key>.{cpp,so,so.sha256}.
Writes go to a temp file in the same directory and are moved into place with os.replace; the .so's sha256
is stored next to it and verified before a cached library is returned (a corrupt or mismatching entry is
rebuilt, never returned). An flock on <key>.lock makes concurrent builders of the same key (threads or
processes) wait for one compiler run; the others then find the finished library.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError

CXX = os.environ.get("PYPTO_CXX", "g++")
# PYPTO_MARCH picks the target ISA (default: this CPU). Valgrind, for one, cannot run AVX-512 code: the
# benchmarks' instruction counts use PYPTO_MARCH=x86-64-v3. The flags are part of the cache key.
FLAGS = ("-O3", f"-march={os.environ.get('PYPTO_MARCH', 'native')}", "-mprefer-vector-width=512", "-std=c++17", "-shared", "-fPIC", "-pthread", "-ffp-contract=off",
         "-fno-math-errno", "-fvisibility=hidden")


@dataclass
class BuildResult:
    library: str            # path of the .so
    source_path: str        # path of the saved .cpp
    source: str
    ir_text: str
    written: tuple          # tensor ABI indices the kernel writes
    compile_seconds: float  # 0.0 on a cache hit
    cached: bool
    key: str = ""


# ---- identities (computed once per process) ----------------------------------------------------------------
_lock = threading.Lock()
_memo: dict = {}


def include_dir() -> Path:
    """Directory holding pypto/kernel_abi.h and pypto/kernel_rt.h (installed package first, then repo)."""
    try:
        import pypto

        p = Path(pypto.__file__).resolve().parent / "include"
        if (p / "pypto" / "kernel_abi.h").is_file():
            return p
    except Exception:  # pragma: no cover - pypto without __file__ (namespace package)
        pass
    return Path(__file__).resolve().parents[3] / "include"


def _once(name, fn):
    with _lock:
        if name not in _memo:
            _memo[name] = fn()
        return _memo[name]


def compiler_identity() -> str:
    def get():
        try:
            r = subprocess.run([CXX, "--version"], capture_output=True, text=True, timeout=60)
            return (r.stdout.splitlines() or ["unknown"])[0].strip()
        except (OSError, subprocess.SubprocessError) as e:
            raise CompileError(f"cannot run the C++ compiler '{CXX}': {e}") from None

    return _once(("cxx", CXX), get)


def cpu_identity() -> str:
    def get():
        model, flags = "", ""
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    k, _, v = line.partition(":")
                    k = k.strip()
                    if k == "model name" and not model:
                        model = v.strip()
                    elif k in ("flags", "Features") and not flags:
                        flags = " ".join(sorted(v.split()))
                    if model and flags:
                        break
        except OSError:
            import platform

            model = platform.processor() or platform.machine()
        return f"{model}|{flags}"

    return _once("cpu", get)


def abi_version() -> int:
    def get():
        text = (include_dir() / "pypto" / "kernel_abi.h").read_text()
        m = re.search(r"#define\s+PYPTO_KERNEL_ABI_VERSION\s+(\d+)", text)
        return int(m.group(1)) if m else 0

    return _once(("abi", str(include_dir())), get)


def headers_digest() -> str:
    def get():
        h = hashlib.sha256()
        for name in ("kernel_abi.h", "kernel_rt.h", "kernel_par.h", "kernel_gemm.h"):
            h.update((include_dir() / "pypto" / name).read_bytes())
        return h.hexdigest()

    return _once(("hdr", str(include_dir())), get)


def pypto_version() -> str:
    try:
        import pypto

        return str(getattr(pypto, "__version__", "0+unknown"))
    except Exception:  # pragma: no cover
        return "0+unknown"


def cache_dir() -> Path:
    d = os.environ.get("PYPTO_CACHE_DIR")
    return Path(d) if d else Path.home() / ".cache" / "pypto"


def cache_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (source, compiler_identity(), " ".join(FLAGS), cpu_identity(), headers_digest(),
                 str(abi_version()), pypto_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


# ---- options access (ResolvedOptions object or plain dicts) -----------------------------------------------------
def _opt(options, group: str, key: str, default):
    if not options:
        return default
    g = getattr(options, group, None)
    if g is None and isinstance(options, dict):
        g = options.get(group) or options.get(group + "_options")
    if g is None:
        return default
    try:
        return g.get(key, default)
    except AttributeError:
        return default


# ---- files ---------------------------------------------------------------------------------------------------
def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _atomic_write(path: Path, data: bytes):
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


def _valid(so: Path, sha: Path) -> bool:
    try:
        want = sha.read_text().strip()
        return bool(want) and _sha256_file(so) == want
    except OSError:
        return False


class _FileLock:
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


def compile_source(source: str, options=None, kernel_name: str = "kernel") -> tuple[str, str, float, bool, str]:
    """Compile (or find in the cache) `source`. Returns (library, source_path, seconds, cached, key)."""
    key = cache_key(source)
    d = cache_dir() / key[:2]
    d.mkdir(parents=True, exist_ok=True)
    so, sha, cpp = d / f"{key}.so", d / f"{key}.so.sha256", d / f"{key}.cpp"
    if _valid(so, sha):
        return str(so), str(cpp), 0.0, True, key
    with _FileLock(d / f"{key}.lock"):
        if _valid(so, sha):       # another thread/process built it while we waited
            return str(so), str(cpp), 0.0, True, key
        _atomic_write(cpp, source.encode())
        fd, tmp_so = tempfile.mkstemp(dir=d, prefix=f"{key}.", suffix=".so.tmp")
        os.close(fd)
        cmd = [CXX, *FLAGS, "-I", str(include_dir()), "-o", tmp_so, str(cpp)]
        timeout = _opt(options, "host", "compile_timeout", 600) or 600
        t0 = time.perf_counter()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.unlink(tmp_so)
            raise CompileError(f"kernel '{kernel_name}': the C++ compiler did not finish within {timeout} s "
                               f"(source: {cpp})") from None
        except OSError as e:
            os.unlink(tmp_so)
            raise CompileError(f"kernel '{kernel_name}': cannot run the C++ compiler '{CXX}': {e}") from None
        seconds = time.perf_counter() - t0
        if r.returncode != 0:
            try:
                os.unlink(tmp_so)
            except OSError:
                pass
            raise CompileError(f"kernel '{kernel_name}': C++ compilation failed (source saved at {cpp}):\n"
                               f"{r.stderr.strip()}")
        _atomic_write(sha, (_sha256_file(Path(tmp_so)) + "\n").encode())
        os.replace(tmp_so, so)
    return str(so), str(cpp), seconds, False, key


def build(prepared, request) -> BuildResult:
    """Trace `prepared` for `request`, generate C++, compile it (or reuse the cached library)."""
    from ..codegen import generate
    from ..ir import trace

    kernel_ir = trace(prepared, request)
    ir_text = str(kernel_ir)
    source = generate(kernel_ir)  # debug dumps: JITKernel._dump (one file pair per specialization)
    lib, src_path, seconds, cached, key = compile_source(source, request.options, request.kernel_name)
    return BuildResult(library=lib, source_path=src_path, source=source, ir_text=ir_text,
                       written=tuple(kernel_ir.written), compile_seconds=seconds, cached=cached, key=key)


__all__ = ["BuildResult", "build", "compile_source", "include_dir", "cache_dir", "cache_key",
           "compiler_identity", "cpu_identity", "abi_version", "FLAGS"]
