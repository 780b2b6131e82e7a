"""`pypto.error`: the reference's module of exception classes; the same classes as pypto.errors (one set of types).

    try:
        kernel(x, out)
    except pypto.error.FeError as e:      # also: except ValueError / except pypto.KernelTraceError
        print(hex(e.err_code), e)

Layer 0 with errors: imports nothing else from pypto.
"""
from .errors import (ERR_UNKNOWN, BackendUnavailableError, CompileError, FeError, KernelDefinitionError,
                     KernelRuntimeError, KernelTraceError, OptionError, ParserError, PassError, PyptoError,
                     PyptoGeneralError, PyptoRtError, RenderedParserError, UnsupportedFeatureError, VerifyError,
                     err_code_of)
from .errors import catch_and_wrap_error as _catch_and_wrap_error

__all__ = ["PyptoError", "PyptoGeneralError", "ParserError", "RenderedParserError", "FeError", "PyptoRtError",
           "PassError", "VerifyError", "KernelDefinitionError", "OptionError", "KernelTraceError",
           "UnsupportedFeatureError", "CompileError", "BackendUnavailableError", "KernelRuntimeError",
           "err_code_of", "ERR_UNKNOWN", "_catch_and_wrap_error"]
