"""The pypto kernel language: the operations a kernel body calls (`pypto.add`, `pypto.loop`, ...).

Every op checks shapes and dtypes while the kernel is traced and raises KernelTraceError naming the kernel,
the op, what was expected and what it got. Tensors inside a kernel also support the Python operators
(`+ - * / // % ** @`, comparisons -> masks), slicing (`x[a:b, :]`), slice writes (`out[a:b, :] = e`) and
`out.move(e)`.

Layer 3 of the package: may import errors, vocab and ir (it installs the tensor operators on the IR's Value,
`tensor_methods.py`); never codegen, compiler, verify, frontend, export or bench.
"""
from . import activations, control, creation, elementwise, indexing, reduce, shape_ops, struct_ops, tensor_methods
from .activations import prelu
from . import quant_ops
from .control import (ceildiv, cond, get_cube_tile_shapes, get_vec_tile_shapes, is_loop_begin, is_loop_end, loop,
                      loop_unroll, max, min, set_cube_tile_shapes, set_vec_tile_shapes)
from .elementwise import (abs, add, cast, ceil, clamp, clip, clone, div, eq, erfc, exp, floor, floor_divide, ge, gt,
                          le, log, logical_not, lt, maximum, minimum, mul, ne, neg, pow, relu, remainder, round, trunc,
                          rsqrt, sigmoid, sqrt, sub, tanh, where)
from .indexing import (gather, index_add, index_add_, index_add__ub, index_add_ub, index_put_, index_select, scatter,
                       scatter_, scatter_update, topk)
from .reduce import amax, amin, cumprod, cumsum, matmul, mean, prod, rms_norm, softmax, sum
from .elementwise import (acos, acosh, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_left_shift, bitwise_not,
                          bitwise_or, bitwise_right_shift, bitwise_xor, cbrt, cos, cosh, erf, exp2, expm1,
                          floor_div, fmod, gcd, hypot, isfinite, isnan, log1p, log2, log10, logical_and, lrelu,
                          reciprocal, sign, signbit, sin, sinh, tan)
from .creation import arange, full, one_hot, ones, tensor, zeros
from .shape_ops import assemble, concat, expand_clone, permute, reshape, squeeze, transpose, unsqueeze, view
from .struct_ops import (argmax, argmin, argsort, atomic_add, axpy_, deinterleave, fillpad, gathermask, interleave,
                         pad, tril, triu, var)
from .control import ceil_div
from .conv import conv
from . import distributed  # installs the multi-rank ops into pypto.distributed
from .distributed import AtomicType
from .random import normal, uniform
from .quant_ops import (ROUND_DOWN, ROUND_UP, DequantScaleRoundingMode, dequantize, expand_exp_dif, pack, quant_mx,
                        quantize, scaled_mm, unpack)

__all__ = [
    "AtomicType",
    # control flow and tiling
    "loop", "loop_unroll", "cond", "is_loop_begin", "is_loop_end", "min", "max", "ceildiv", "set_vec_tile_shapes",
    "set_cube_tile_shapes", "get_vec_tile_shapes", "get_cube_tile_shapes",
    # elementwise
    "add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "minimum", "exp", "log", "sqrt",
    "rsqrt", "tanh", "sigmoid", "erfc", "relu", "abs", "neg", "round", "trunc", "floor", "ceil", "logical_not", "clip",
    "clamp", "cast", "eq", "ne", "lt", "le", "gt", "ge", "where", "clone",
    "floor_div", "erf", "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "reciprocal", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "hypot", "fmod", "sign", "signbit",
    "isnan", "isfinite", "gcd", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "logical_and", "lrelu", "prelu",
    # reductions, matmul
    "sum", "amax", "amin", "prod", "mean", "softmax", "rms_norm", "cumsum", "matmul",
    # views, writes, shapes, local tensors
    "view", "assemble", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand_clone", "full",
    "tensor", "zeros", "concat", "arange", "one_hot",
    # data-dependent indexing
    "gather", "scatter", "scatter_update", "topk",
    # structural / index ops of the reference (struct_ops.py, indexing.py)
    "argmax", "argmin", "argsort", "cumprod", "tril", "triu", "var", "ones", "pad", "fillpad", "gathermask",
    "interleave", "deinterleave", "axpy_", "atomic_add", "index_select", "index_add", "index_add_", "index_add_ub",
    "index_add__ub", "index_put_", "scatter_",
    # quantization (quant_ops.py)
    "quantize", "dequantize", "quant_mx", "scaled_mm", "pack", "unpack", "expand_exp_dif",
    "DequantScaleRoundingMode", "ROUND_UP", "ROUND_DOWN",
    # convolution, random numbers, ceil_div (conv.py, random.py, control.py)
    "conv", "uniform", "normal", "ceil_div",
]

tensor_methods.install()  # kernel tensors get their operators and methods
tensor_methods.register_tensor_class()  # isinstance(kernel tensor, pypto.Tensor) is True
control.install_scalar_methods()  # symbolic scalars get abs()
