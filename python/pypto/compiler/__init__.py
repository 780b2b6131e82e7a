"""C++ compilation of traced kernels with a content-addressed disk cache.

`build(prepared, request) -> BuildResult` is the entry point the JIT calls on a specialization miss.
"""
from .toolchain import (FLAGS, BuildResult, abi_version, build, cache_dir, cache_key, compile_source,
                    compiler_identity, cpu_identity, include_dir)

__all__ = ["BuildResult", "build", "compile_source", "include_dir", "cache_dir", "cache_key",
           "compiler_identity", "cpu_identity", "abi_version", "FLAGS"]
