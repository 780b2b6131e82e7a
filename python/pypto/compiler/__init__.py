"""pypto.compiler — layer 5: the miss pipeline and what it needs to produce a loadable library.

`pipeline.build(prepared, request)` traces a prepared kernel for one specialization (ir), generates C++
(codegen) and compiles it (`toolchain`) through the disk cache (`cache`); `torch_reader` builds the fast
torch.Tensor reader the native core loads. May import: errors, vocab, ir, codegen, and the native `_core`
(torch_reader only). Never verify, frontend, export, bench.
"""
from .pipeline import BuildResult, StageResult, build, build_until
from .toolchain import (FLAGS, abi_version, cache_key, compile_source, compiler_identity, cpu_identity,
                        include_dir)
from .cache import cache_dir

__all__ = ["BuildResult", "StageResult", "build", "build_until", "compile_source", "include_dir", "cache_dir",
           "cache_key", "compiler_identity", "cpu_identity", "abi_version", "FLAGS"]
