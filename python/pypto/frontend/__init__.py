"""pypto.frontend — layer 7: the decorator. Parse once, at decoration; then the native core owns every call.

`jit` validates options, reads the parameter table, rewrites the body's control flow (`rewrite`), collects the
globals to guard (`guards`) and creates the native kernel; on a miss it runs `compiler.pipeline`. `explain` and
`verified` (verify_options) live here too. May import: errors, native (the extension), vocab, ir, language,
codegen, compiler, verify. Never export or bench (the export layer installs `kernel.export` itself).
The annotations are re-exported here because the reference pypto spells them `pypto.frontend.dynamic`, ...
"""
from ..vocab.annotations import DYN, DYNAMIC, STATIC, DynamicDim, Scalar, Tensor, TileOpFormat, dynamic
from .jit import jit
from .function import function
from ..vocab.options import CompileStage, RunMode, options

__all__ = ["jit", "function", "dynamic", "Tensor", "Scalar", "STATIC", "DYNAMIC", "DYN", "DynamicDim", "TileOpFormat",
           "RunMode", "CompileStage", "options"]
