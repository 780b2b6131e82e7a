"""The miss pipeline, top-down: one specialization of a prepared kernel -> IR -> C++ -> a loaded shared library.

`miss` is the whole of what the native core's miss asks for (src/python/jit_slow.cpp): (1) the fast torch reader,
once per process; (2) trace, generate and compile (`build`, through the disk cache), or stop after
`host_options.compile_stage` (`build_until`); (3) verify and load the library, building it once more if it was
removed or corrupted since it was checked; (4) the debug dump; (5) the build log; (6) a `MissResult`, which the
core reads by attribute name. `build` and `build_until` are the one trace -> generate -> compile (`pypto.testing`
builds through `build` too; verify interprets the IR `build` traced, `BuildResult.kernel_ir`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..codegen import generate
from ..distributed import windows
from ..errors import CompileError
from ..ir import trace
from ..vocab.modes import CompileStage
from ..vocab.speckey import spec_key
from . import cache
from .buildlog import log_build
from .dumps import write_dump
from .toolchain import compile_source
from .torch_reader import ensure_installed


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
    seconds: dict | None = None  # {stage: seconds}: trace, codegen, compile (or load) — for the build log
    spec_key: str = ""      # the key the library carries (pypto_spec_key: vocab/speckey.py)
    kernel_ir: object = None     # the traced IR (ir.nodes.Kernel): verify interprets it instead of tracing again


@dataclass
class StageResult:
    """What a build stopped at `host_options.compile_stage` produced (nothing is launched)."""
    stage: str
    ir_text: str
    source: str | None = None        # CODEGEN_INSTRUCTION and later
    library: str | None = None       # CODEGEN_BINARY
    written: tuple = ()


@dataclass(frozen=True)
class MissResult:
    """What a miss hands back to the native core; src/python/jit_slow.cpp reads these attributes by name."""
    library: str | None     # the verified library to dlopen; None: stopped at host_options.compile_stage
    written_mask: int       # bit i: the kernel writes tensor i (the core's overlap check)
    compile_seconds: float  # accounted once: a waiter on the same build gets 0.0
    spec_key: str           # the key the library must carry (pypto_spec_key)
    info: dict | None       # kept by the specialization: {"request", "result", "guards"} (explain, verify, export)
    stage: StageResult | None = None


def build(prepared, request, *, fuse: bool = True) -> BuildResult:
    """Trace `prepared` for `request`, generate C++ (fuse=False: one loop nest per op, the reference the fused code
    is tested against), compile it (or reuse the cached library)."""
    t0 = time.perf_counter()
    kernel_ir = trace(prepared, request)
    ir_text = str(kernel_ir)
    t1 = time.perf_counter()
    key_text = spec_key(request)
    source = generate(kernel_ir, fuse=fuse, spec_key=key_text)
    t2 = time.perf_counter()
    lib, src_path, seconds, cached, key = compile_source(source, request.options, request.kernel_name)
    if kernel_ir.shmem is not None:   # collective over each group: every rank builds the same kernel here
        for group, digest, nbytes in kernel_ir.shmem.layout():
            windows.ensure(group, digest, nbytes, request.kernel_name)
    split = {"trace": t1 - t0, "codegen": t2 - t1, "load" if cached else "g++": time.perf_counter() - t2}
    return BuildResult(library=lib, source_path=src_path, source=source, ir_text=ir_text,
                       written=tuple(kernel_ir.written), compile_seconds=seconds, cached=cached, key=key,
                       seconds=split, spec_key=key_text, kernel_ir=kernel_ir)


def build_until(prepared, request, stage) -> StageResult:
    """Trace (TENSOR_GRAPH / TILE_GRAPH / EXECUTE_GRAPH: the traced, tiled IR), then generate C++
    (CODEGEN_INSTRUCTION), then compile it (CODEGEN_BINARY) — stopping after `stage`."""
    stage = CompileStage(stage)
    kernel_ir = trace(prepared, request)
    res = StageResult(stage.name, str(kernel_ir), written=tuple(kernel_ir.written))
    if stage >= CompileStage.CODEGEN_INSTRUCTION:
        res.source = generate(kernel_ir, spec_key=spec_key(request))
    if stage >= CompileStage.CODEGEN_BINARY:
        res.library = compile_source(res.source, request.options, request.kernel_name)[0]
    return res


def miss(prepared, request, *, guards: dict, reason: Callable[[], str] | None = None,
         shapes: Callable[[], str] | None = None) -> MissResult:
    """Build, verify and load the specialization `request` describes. `guards`: the guarded values it was keyed
    with (kept for explain); `reason` / `shapes`: the build log's texts, asked for only when the log is on."""
    t_reader = time.perf_counter()
    ensure_installed()  # (1) once per process: the fast torch.Tensor reader for the calls that follow
    t_reader = time.perf_counter() - t_reader
    options = request.options
    stage = options.host["compile_stage"]
    if stage != CompileStage.ALL_COMPLETE:  # (2) trace / C++ / .so, as asked; nothing is launched
        stopped = build_until(prepared, request, stage)
        _dump(request, stopped)
        return MissResult(None, 0, 0.0, "", None, stopped)
    t0 = time.perf_counter()
    result, loaded = _build_and_load(prepared, request)  # (2) + (3)
    seconds = result.compile_seconds if result.compile_seconds else time.perf_counter() - t0
    _dump(request, result)  # (4)
    log_build(request.kernel_name, result, t_reader, reason, shapes)  # (5) no cost when the log is off
    written = 0
    for i in result.written:
        written |= 1 << i
    info = {"request": request, "result": result, "guards": guards}
    # (6) the core checks that the library it loads carries this key (pypto_spec_key, vocab/speckey.py)
    return MissResult(loaded, written, float(seconds), result.spec_key, info)


def _build_and_load(prepared, request) -> tuple[BuildResult, str]:
    """Build, then verify and load the library from the descriptor that was hashed (compiler/cache.py): the path
    returned names the already-loaded library for the core's dlopen. A library removed or corrupted between the
    build and the load is built once more."""
    try:
        for _ in range(2):
            result = build(prepared, request)
            loaded = cache.load_entry(Path(result.library), Path(result.library + ".sha256"))
            if loaded is not None:
                return result, loaded
    except OverflowError as e:   # ir/sym_expr.py cpp_int_literal refuses to emit an int that would wrap
        raise ValueError(f"kernel '{request.kernel_name}': {e}{_out_of_range(request.constants)}") from None
    raise CompileError(f"kernel '{request.kernel_name}': the cached library '{result.library}' fails verification "
                       f"right after it was built (is another process rewriting the cache?)")


def _dump(request, result) -> None:
    dbg = request.options.debug
    if dbg.get("compile_debug_mode"):
        write_dump(request.kernel_name, result, dbg.get("dump_dir"))  # warns, never raises (compiler/dumps.py)


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _out_of_range(constants: dict) -> str:
    """Which constant parameters hold ints outside int64 (the likely source of an overflow), for the message."""
    def big(v):
        if isinstance(v, (tuple, list)):
            return any(big(x) for x in v)
        return isinstance(v, int) and not isinstance(v, bool) and not _INT64[0] <= v <= _INT64[1]

    names = [f"'{k}' = {v!r}" for k, v in constants.items() if big(v)]
    return f" (from parameter {', '.join(names)}; expected -2**63 <= value < 2**63, or pass a float)" if names else ""


__all__ = ["BuildResult", "MissResult", "StageResult", "build", "build_until", "miss"]
