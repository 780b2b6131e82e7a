"""The miss pipeline: trace a prepared kernel for one specialization -> IR -> C++ -> shared library.

`build` runs every stage (through the disk cache); `build_until` stops after `host_options.compile_stage`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..codegen import generate
from ..distributed import windows
from ..ir import trace
from ..vocab.options import CompileStage
from ..vocab.speckey import spec_key
from .toolchain import compile_source


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


def build(prepared, request) -> BuildResult:
    """Trace `prepared` for `request`, generate C++, compile it (or reuse the cached library)."""
    t0 = time.perf_counter()
    kernel_ir = trace(prepared, request)
    ir_text = str(kernel_ir)
    t1 = time.perf_counter()
    key_text = spec_key(request)
    source = generate(kernel_ir, spec_key=key_text)  # debug dumps: JITKernel._dump (one file pair per specialization)
    t2 = time.perf_counter()
    lib, src_path, seconds, cached, key = compile_source(source, request.options, request.kernel_name)
    if kernel_ir.shmem is not None:   # collective over each group: every rank builds the same kernel here
        for group, digest, nbytes in kernel_ir.shmem.layout():
            windows.ensure(group, digest, nbytes, request.kernel_name)
    split = {"trace": t1 - t0, "codegen": t2 - t1, "load" if cached else "g++": time.perf_counter() - t2}
    return BuildResult(library=lib, source_path=src_path, source=source, ir_text=ir_text,
                       written=tuple(kernel_ir.written), compile_seconds=seconds, cached=cached, key=key,
                       seconds=split, spec_key=key_text)




# ---- host_options.compile_stage: stop after a stage-------------------------------------------------------

@dataclass
class StageResult:
    """What a build stopped at `host_options.compile_stage` produced (nothing is launched)."""
    stage: str
    ir_text: str
    source: str | None = None        # CODEGEN_INSTRUCTION and later
    library: str | None = None       # CODEGEN_BINARY
    written: tuple = ()


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


