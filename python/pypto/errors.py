"""pypto's exception types. Each subclasses the builtin a user would catch (TypeError/ValueError/RuntimeError).

The bottom of the package (layer 0): imports nothing from pypto; every layer may import it.
"""


class PyptoError(Exception):
    """Base class of pypto's own errors."""


class KernelDefinitionError(PyptoError, TypeError):
    """The decorated function or its decorator options are not a valid kernel (raised at decoration)."""


class OptionError(PyptoError, ValueError):
    """An option key, type or value is invalid."""


class KernelTraceError(PyptoError, ValueError):
    """The kernel body uses the language wrongly (raised while tracing, on the first call of a specialization)."""


class CompileError(PyptoError, RuntimeError):
    """The generated C++ failed to compile."""


class BackendUnavailableError(PyptoError, RuntimeError):
    """The requested run mode needs hardware or a toolkit that is not present (e.g. NPU without CANN)."""


class KernelRuntimeError(PyptoError, RuntimeError):
    """A compiled kernel reported an error while running (e.g. an out-of-bounds access in debug mode)."""
