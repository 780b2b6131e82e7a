"""The C++ toolchain: compiler, flags and identities, the cache key, and `compile_source` (through the cache).

Cache key = sha256 of (generated source, compiler identity (`g++ --version` first line), flags, CPU identity
(model name + flags: the code is built with -march=native), the kernel headers' contents, ABI version,
pypto version). Entries are written and checked by `cache.py`.
"""
from __future__ import annotations

import atexit
import contextlib
import errno
import hashlib
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

from .._version import __version__
from ..errors import CompileError
from . import cache
from .cache import cache_dir

CXX = os.environ.get("PYPTO_CXX", "g++")
# PYPTO_KERNEL_ISA picks the vector ISA generated kernels are built for: `native` (everything this CPU has, AVX-512
# included), `avx2` (this CPU without AVX-512: what an AVX2 + FMA machine runs, testable on an AVX-512 one) or
# `sse4` (no AVX at all). PYPTO_MARCH replaces the -march base (default: this CPU); valgrind, for one, cannot run
# AVX-512 code: the benchmarks' instruction counts use PYPTO_MARCH=x86-64-v3. Both are part of the cache key (the
# flags are), and so is the CPU's identity (model and feature flags).
KERNEL_ISAS = {"native": (), "avx2": ("-mno-avx512f",), "sse4": ("-mno-avx",)}


def kernel_isa() -> str:
    """The ISA named by PYPTO_KERNEL_ISA (default native); an unknown name is an error naming the valid ones."""
    isa = os.environ.get("PYPTO_KERNEL_ISA", "native").strip().lower() or "native"
    if isa not in KERNEL_ISAS:
        raise CompileError(f"PYPTO_KERNEL_ISA={isa!r} is not a kernel ISA; expected one of "
                           f"{', '.join(KERNEL_ISAS)}")
    return isa


def flags_for(isa: str) -> tuple:
    """The compiler flags of a kernel built for `isa` (a KERNEL_ISAS name).

    -fno-tree-loop-distribute-patterns: g++ must not turn a loop of the generated code into a memset/memcpy call
    (a call per exp block, which the vectorizer then cannot see through; on AVX2 it did so for the exp block copy).
    -fno-trapping-math: no op may trap (kernels never unmask FP exceptions), so g++ may if-convert and vectorize
    selects that evaluate both sides; every rounding is unchanged (-ffp-contract=off, no -ffast-math)."""
    return ("-O3", f"-march={os.environ.get('PYPTO_MARCH', 'native')}", *KERNEL_ISAS[isa],
            "-mprefer-vector-width=512", "-std=c++17", "-shared", "-fPIC", "-pthread", "-ffp-contract=off",
            "-fno-math-errno", "-fno-trapping-math", "-fno-tree-loop-distribute-patterns", "-fvisibility=hidden")


def _default_isa() -> str:
    try:
        return kernel_isa()
    except CompileError:
        return "native"     # compile_source raises the message before anything is built


FLAGS = flags_for(_default_isa())


# ---- identities (computed once per process) ----------------------------------------------------------------
_lock = threading.Lock()
_memo: dict = {}


def _reset_after_fork():
    global _lock
    _lock = threading.Lock()     # a parent thread may have held it at fork; the child has no such thread


os.register_at_fork(after_in_child=_reset_after_fork)


def include_dir() -> Path:
    """Directory holding pypto/kernel_abi.h and pypto/kernel_rt.h (installed package first, then repo)."""
    package = Path(__file__).resolve().parents[1]
    p = package / "include"
    if (p / "pypto" / "kernel_abi.h").is_file():
        return p
    return package.parents[1] / "include"


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
            raise CompileError(f"cannot run the C++ compiler '{CXX}' ({getattr(e, 'strerror', None) or e}); install "
                               f"g++ or set PYPTO_CXX to a C++17 compiler") from None

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


def target_features() -> str:
    """The vector features the kernel flags target, as g++ defines them (`avx512f avx2 fma ...`): what the
    benchmark records as the ISA. Empty when the compiler cannot say."""
    def get():
        march = [f for f in FLAGS if f.startswith(("-march", "-mno-"))]
        try:
            r = subprocess.run([CXX, *march, "-dM", "-E", "-x", "c++", os.devnull], capture_output=True, text=True,
                               timeout=60)
        except (OSError, subprocess.SubprocessError):
            return ""
        names = {"__SSE4_2__": "sse4.2", "__AVX__": "avx", "__AVX2__": "avx2", "__FMA__": "fma",
                 "__F16C__": "f16c", "__AVX512F__": "avx512f", "__AVX512BW__": "avx512bw",
                 "__AVX512BF16__": "avx512bf16", "__AVX512FP16__": "avx512fp16"}
        defined = {ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("#define ")}
        return " ".join(v for k, v in names.items() if k in defined)

    return _once(("features", CXX, FLAGS), get)


def abi_version() -> int:
    def get():
        text = (include_dir() / "pypto" / "kernel_abi.h").read_text()
        m = re.search(r"#define\s+PYPTO_KERNEL_ABI_VERSION\s+(\d+)", text)
        return int(m.group(1)) if m else 0

    return _once(("abi", str(include_dir())), get)


def headers_digest() -> str:
    def get():
        h = hashlib.sha256()
        for name in ("kernel_abi.h", "kernel_rt.h", "kernel_vmath.h", "kernel_par.h", "kernel_gemm.h",
                     "kernel_quant.h", "kernel_shmem.h", "kernel_shmem_ring.h", "kernel_hifloat8.h"):
            h.update((include_dir() / "pypto" / name).read_bytes())
        return h.hexdigest()

    return _once(("hdr", str(include_dir())), get)


def cache_key(source: str) -> str:
    h = hashlib.sha256()
    for part in (source, compiler_identity(), " ".join(FLAGS), cpu_identity(), headers_digest(),
                 str(abi_version()), __version__):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


# ---- options access (a ResolvedOptions, or none) --------------------------------------------------------------
def _opt(options, group: str, key: str, default):
    """One option of a ResolvedOptions (`group`: "host", ...); `default` when no options are given (a plain compile
    of source text: tests, the torch reader)."""
    return default if options is None else options[group].get(key, default)


def compile_timeout(options) -> float:
    """host_options compile_timeout in seconds (600 when unset or 0): the bound of every wait on a build."""
    return float(_opt(options, "host", "compile_timeout", 600) or 600)


def compile_source(source: str, options=None, kernel_name: str = "kernel") -> tuple[str, str, float, bool, str]:
    """Compile (or find in the cache) `source`. Returns (library, source_path, seconds, cached, key).

    The library is verified against its sha256 here and again, from the descriptor that is loaded, by
    `cache.load_entry`. Concurrent builders of one key (threads or processes) wait on the key's lock, at most
    `host_options.compile_timeout` seconds. A cache that cannot take the entry (read-only) serves what it has and
    the build goes to the private fallback directory (cache.py)."""
    what = f"kernel '{kernel_name}'"
    try:
        kernel_isa()
        key = cache_key(source)
    except CompileError as e:     # the compiler cannot even say its version
        raise CompileError(f"{what}: {e}") from None
    d = cache.subdir(key[:2])
    so, sha, cpp = d / f"{key}.so", d / f"{key}.so.sha256", d / f"{key}.cpp"
    if cache.valid_library(so, sha):
        return str(so), str(cpp), 0.0, True, key
    built = cache.writable_subdir(d)
    if built != d:
        d = built
        so, sha, cpp = d / f"{key}.so", d / f"{key}.so.sha256", d / f"{key}.cpp"
        if cache.valid_library(so, sha):
            return str(so), str(cpp), 0.0, True, key
    timeout = compile_timeout(options)
    with cache.FileLock(d / f"{key}.lock", timeout, what):
        if cache.valid_library(so, sha):       # another thread/process built it while we waited
            return str(so), str(cpp), 0.0, True, key
        with disk_errors(what, cpp):
            cache.atomic_write(cpp, source.encode())
        t0 = time.perf_counter()
        libs = link_flags(source)
        run_compiler(lambda out: [CXX, *FLAGS, "-I", tool_path(include_dir()), "-o", out, tool_path(cpp), *libs], so, sha,
                     timeout, what, f"(source saved at {cpp})")
        seconds = time.perf_counter() - t0
    cache.enforce_max_size(keep=key, limit=_opt(options, "host", "cache_max_size", 0))
    return str(so), str(cpp), seconds, False, key


def link_flags(source: str) -> list:
    """Libraries a kernel links: multi-rank kernels (kernel_shmem.h) link libpypto_shmem, the one window registry
    of the process (its directory is fixed by the installed package, so the source still decides the build)."""
    if "#include <pypto/kernel_shmem.h>" not in source:
        return []
    # (the linked library's path is not in the cache key: it is the installed package's, fixed per install)
    from ..native import library_dir  # here, not at the top: compiling source text needs no native core

    lib = tool_path(library_dir())
    return ["-L", lib, f"-Wl,-rpath,{lib}", "-lpypto_shmem"]


def tool_path(p) -> str:
    """A path as a tool's argument: absolute, so that no file name can be read as an option ('-cache/...')."""
    return os.path.abspath(os.fspath(p))


_DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


@contextlib.contextmanager
def disk_errors(what: str, path):
    """An OSError while writing a cache file becomes a CompileError naming the kernel, the file and what to do."""
    try:
        yield
    except OSError as e:
        if e.errno in _DISK_FULL:
            raise CompileError(f"{what}: cannot write '{path}': {e.strerror} (the disk, a quota or the file-size "
                               f"limit is full); free some space, or set PYPTO_CACHE_DIR to a directory on a file "
                               f"system with room") from None
        raise CompileError(f"{what}: cannot write '{path}': {e.strerror}; check the permissions of the cache "
                           f"directory or set PYPTO_CACHE_DIR to a writable one") from None


def _compiler_failure(what: str, cmd0: str, r, where: str) -> CompileError:
    """The message of a failed compile; a full disk or file-size limit is named as such, with what to do."""
    err = (r.stderr or "").strip()
    full = r.returncode == -signal.SIGXFSZ or any(
        t in err for t in ("No space left on device", "File too large", "Disk quota exceeded", "SIGXFSZ",
                                       "File size limit exceeded"))
    if full:
        return CompileError(f"{what}: the C++ compiler '{cmd0}' could not write its output {where}: the disk, a quota "
                            f"or the file-size limit is full; free some space, or set PYPTO_CACHE_DIR to a directory "
                            f"on a file system with room:\n{err[-2000:]}")
    if r.returncode < 0:
        return CompileError(f"{what}: the C++ compiler '{cmd0}' was killed by signal {-r.returncode} {where}")
    return CompileError(f"{what}: C++ compilation failed {where}:\n{err[-4000:]}")


# Temporary outputs of compilers still running when the process exits (the background torch-reader build runs in a
# daemon thread that exit would freeze mid-build): the exit handler stops the compiler and removes its output.
_running: dict = {}                 # tmp path -> Popen
_running_lock = threading.Lock()


@atexit.register
def _stop_running_builds():
    with _running_lock:
        items = list(_running.items())
    for tmp, proc in items:
        try:
            proc.kill()
            proc.wait(timeout=10)
        except (OSError, subprocess.SubprocessError):
            pass
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _run_tool(argv: list, tmp: str, timeout: float) -> subprocess.CompletedProcess:
    """Run the compiler. On the main thread subprocess.run kills it on any exception (KeyboardInterrupt included)
    and the build's `finally` removes its output before the process can exit; on another thread (the background
    torch-reader build) exit does not wait for the build, so the compiler is registered for the exit handler."""
    if threading.current_thread() is threading.main_thread():
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        with _running_lock:
            _running[tmp] = proc
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:       # a timeout, or KeyboardInterrupt: the compiler must not outlive the build
            proc.kill()
            proc.wait()
            raise
        finally:
            with _running_lock:
                _running.pop(tmp, None)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def run_compiler(command, so: Path, sha: Path, timeout: float, what: str, where: str = "") -> None:
    """Run `command(tmp_output)` and install its output as `so` with its sha256 beside it — only when the compiler
    exited 0 *and* wrote a shared library (a compiler that "succeeds" without output never leaves an entry). The
    temporary output is removed on every exit: an error, KeyboardInterrupt, or the process exiting meanwhile."""
    cache.remove_stale_temps(so)
    with disk_errors(what, so.parent):
        fd, tmp = cache.temp_beside(so)
    os.close(fd)
    try:
        argv = command(tool_path(tmp))
        try:
            r = _run_tool(argv, tmp, timeout)
        except subprocess.TimeoutExpired:
            raise CompileError(f"{what}: the C++ compiler did not finish within {timeout:g} s {where}") from None
        except OSError as e:
            raise CompileError(f"{what}: cannot run the C++ compiler '{argv[0]}' ({e.strerror}); install g++ or "
                               f"set PYPTO_CXX to a C++17 compiler") from None
        if r.returncode != 0:
            raise _compiler_failure(what, argv[0], r, where)
        out = cache.open_output(Path(tmp))
        if out is None:
            raise CompileError(f"{what}: the C++ compiler exited 0 but its output '{tmp}' is not a file of this user")
        try:
            if os.pread(out, 4, 0) != b"\x7fELF":
                raise CompileError(f"{what}: the C++ compiler '{argv[0]}' exited 0 without writing a shared library "
                                   f"{where}")
            digest = cache.sha256_fd(out)
        finally:
            os.close(out)
        with disk_errors(what, sha):
            cache.atomic_write(sha, (digest + "\n").encode())
            cache.install_file(tmp, so)
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


__all__ = ["compile_source", "run_compiler", "tool_path", "disk_errors", "include_dir", "cache_dir", "cache_key",
           "compiler_identity", "cpu_identity", "abi_version", "FLAGS", "KERNEL_ISAS", "kernel_isa", "flags_for",
           "target_features"]
