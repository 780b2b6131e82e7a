"""pypto: a JIT kernel frontend for tile-level tensor kernels.

    @pypto.frontend.jit
    def k(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32)):
        out[:] = pypto.exp(a)

Python decorates and parses a kernel once; calls go through the native core (pypto._core); a miss traces the
kernel, generates C++, compiles it (disk-cached) and the core loads it. Kernels run on an exact CPU simulator.
"""
from ._version import __version__

import os as _os

if _os.environ.get("PYPTO_PROFILE", "0") not in ("", "0"):
    # The build with the hit path's per-stage counters compiled in (pypto.bench --breakdown); the default build
    # has none, so they cost nothing when off.
    import importlib as _importlib
    import sys as _sys

    _core = _sys.modules[__name__ + "._core"] = _importlib.import_module(__name__ + "._core_prof")
del _os

from . import errors
from .errors import (BackendUnavailableError, CompileError, KernelDefinitionError, KernelRuntimeError,
                     KernelTraceError, OptionError, PyptoError)
from .frontend import (DYN, DYNAMIC, STATIC, CompileStage, RunMode, Scalar, Tensor, TileOpFormat, dynamic,
                       options)
from .frontend import jit
from .vocab.dtypes import (DT_BF16, DT_BOOL, DT_FP16, DT_FP32, DT_FP64, DT_INT8, DT_INT16, DT_INT32,
                              DT_INT64, DT_UINT8, DataType)
from . import frontend
from . import export  # pypto.export([kernels], dir, examples=...): AOT bundles for the C++ runtime
from . import torch_op  # kernel.as_torch_op(): the kernel as a torch.library custom op (torch.compile, export)
from .language import *  # noqa: F401,F403  the kernel language: ops, loop, tiling
from .verify import set_verify_golden_data

