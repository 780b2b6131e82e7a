"""pypto.compiler — layer 5: the miss pipeline and what it needs to produce a loadable library.

`pipeline.miss(prepared, request, ...)` is the whole miss the native core asks for: `pipeline.build` traces a
prepared kernel for one specialization (ir), generates C++ (codegen) and compiles it (`toolchain`) through the
disk cache (`cache`); then the load, the dump (`dumps`) and the build log (`buildlog`). `torch_reader` builds the
fast torch.Tensor reader the native core loads. May import: errors, native (torch_reader only), vocab,
distributed (the shared-memory windows a multi-rank kernel needs), ir, codegen. Never verify, frontend, export,
bench.
"""
from .pipeline import BuildResult, StageResult, build, build_until
from .toolchain import (FLAGS, abi_version, cache_key, compile_source, compiler_identity, cpu_identity,
                        include_dir)
from .cache import cache_dir

__all__ = ["BuildResult", "StageResult", "build", "build_until", "compile_source", "include_dir", "cache_dir",
           "cache_key", "compiler_identity", "cpu_identity", "abi_version", "FLAGS"]
