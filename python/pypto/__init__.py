"""pypto: a JIT kernel frontend for tile-level tensor kernels.

    @pypto.frontend.jit
    def k(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32)):
        out[:] = pypto.exp(a)

Python decorates and parses a kernel once; calls go through the native core (pypto._core); a miss traces the
kernel, generates C++, compiles it (disk-cached) and the core loads it. Kernels run on an exact CPU simulator.
"""
from ._version import __version__

from .native import core as _core  # pypto._core, or the profiling build (PYPTO_PROFILE=1)

from . import errors
from . import error  # the reference's module name for the same exception classes
from .errors import (BackendUnavailableError, CaptureError, CompileError, DistributedError, FeError,
                     KernelDefinitionError, KernelRuntimeError, KernelTraceError, OptionError, ParserError, PyptoError, PyptoGeneralError,
                     UnsupportedFeatureError, VerifyError)
from .frontend import (DYN, DYNAMIC, STATIC, CompileStage, RunMode, Scalar, Tensor, TileOpFormat, dynamic,
                       options)
from .frontend import jit
from .vocab.modes import CompStage
from .vocab.option_api import (get_codegen_options, get_debug_options, get_host_options, get_options,
                               get_pass_options, get_runtime_options, get_verify_options, reset_options,
                               set_codegen_options, set_debug_options, set_host_options, set_options,
                               set_pass_options, set_runtime_options, set_verify_options)
from .vocab.dtypes import (DT_BF16, DT_BOOL, DT_BOTTOM, DT_DOUBLE, DT_FP4_E1M2, DT_FP4_E1M2X2, DT_FP4_E2M1,
                           DT_FP4_E2M1X2, DT_FP8, DT_FP8E4M3, DT_FP8E5M2, DT_FP8E8M0, DT_FP16, DT_FP32, DT_FP64,
                           DT_HF4, DT_HF8, DT_INT4, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_UINT16,
                           DT_UINT32, DT_UINT64, DataType)
from .vocab.dtypes import bytes_of
from . import frontend
from . import export  # pypto.export([kernels], dir, examples=...): AOT bundles for the C++ runtime
from . import torch_op  # kernel.as_torch_op(): the kernel as a torch.library custom op (torch.compile, export)
from . import capture  # with pypto.capture() as g: ... g.replay(): record the launches of a step, replay natively
from .language import *  # noqa: F401,F403  the kernel language: ops, loop, tiling
from .verify import set_verify_golden_data
# the reference namespace's enums, typed scalars, symbolic scalars, sub-functions, hints and experimental ops
from .vocab.enums import (CachePolicy, CastMode, LogBaseType, OpType, OutType, PrecisionType, ReLuType, ReduceMode,
                          SaturationMode, ScatterMode, TopKAlgo, TransMode)
from .vocab.element import Element
element = Element  # the reference's lowercase alias
from .vocab.pass_config import (PassConfigKey, PassConfigs, get_pass_config, get_pass_configs,
                                get_pass_default_config, platform, set_pass_config, set_pass_default_config)
from .ir.sym import Sym as SymbolicScalar
from .ir.sym import Sym as symbolic_scalar  # the reference's alias (`pypto.symbolic_scalar(2)`)
from .language import experimental
import sys as _sys
_sys.modules[__name__ + ".experimental"] = experimental  # `import pypto.experimental` gives it, as in the reference
from . import pypto_impl, runtime  # the reference's native and device-runtime modules by name
from .errors import InternalError
from .logger import (LogLevel, check, get_log_level, internal_check, log_debug, log_error, log_event, log_fatal,
                     log_info, log_warn, raise_error, set_log_level)
from .language.config_api import (ConfigScope, ConvTile, CubeTile, get_current_scope, get_global_config,
                                  get_options_tree, get_print_options, set_global_config, set_print_options)
from .language.reference_ops import ConvParams, copysign, greater, mrgsort, sort32
from .frontend.function import Function, get_current_function, get_last_function
from .vocab.enums import AtomicRMWMode, SatStatus
from .vocab.annotations import StatusType
from . import distributed  # pypto.distributed: groups, windows and (installed by the language) the shmem ops
from .language.hints import (TileL0Info, TileL1Info, get_conv_tile_shapes, pass_verify_print, pass_verify_save,
                             set_conv_tile_shapes, set_matrix_size, set_semantic_label)
from .frontend.function import function_scope as function
from .frontend.from_torch import from_torch
