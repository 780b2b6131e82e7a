"""pypto.frontend: the decorator and the parameter annotations (parse once, at decoration)."""
from .annotations import DYN, DYNAMIC, STATIC, DynamicDim, Scalar, Tensor, TileOpFormat, dynamic
from .jit import jit
from .option_schema import CompileStage, RunMode, options

__all__ = ["jit", "dynamic", "Tensor", "Scalar", "STATIC", "DYNAMIC", "DYN", "DynamicDim", "TileOpFormat",
           "RunMode", "CompileStage", "options"]
