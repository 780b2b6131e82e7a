"""pypto's exception types: the reference's names (`PyptoError`, `FeError`, `ParserError`, ...) and ours.

Our own classes (`KernelTraceError`, `OptionError`, ...) subclass both a reference class and the builtin a user would
catch (TypeError/ValueError/RuntimeError), so `except pypto.error.FeError`, `except pypto.KernelTraceError` and
`except ValueError` all catch the same error. Every class carries the reference's error code in `err_code`
(0xF00000 | 1 type, 2 value, 3 runtime, 4 name, 5 not implemented, 6 key, 8 index; 0xF00000 unknown).
`pypto.error` is the reference's module name for these (python/pypto/error.py re-exports them).

The bottom of the package (layer 0): imports nothing from pypto; every layer may import it.
"""
from __future__ import annotations

_CODE_BASE = 0xF00000
ERR_UNKNOWN = _CODE_BASE
_CODE_OF_BUILTIN = (           # most specific first: the first base class that matches gives the code
    (NotImplementedError, 5), (KeyError, 6), (IndexError, 8), (NameError, 4), (TypeError, 1), (ValueError, 2),
    (RuntimeError, 3),
)


def err_code_of(exc_or_type) -> int:
    """The reference's error code for an exception (or exception class): derived from its builtin base."""
    t = exc_or_type if isinstance(exc_or_type, type) else type(exc_or_type)
    for base, code in _CODE_OF_BUILTIN:
        if issubclass(t, base):
            return _CODE_BASE | code
    return ERR_UNKNOWN


def _with_code(code: int, msg) -> str:
    """The reference's message form: 'ErrCode: F00002, ValueError: text' (no second prefix)."""
    if isinstance(msg, BaseException):
        text = str(msg)
        return text if "ErrCode" in text else f"ErrCode: {code:X}, {type(msg).__name__}: {text}"
    text = str(msg)
    return text if "ErrCode" in text else f"ErrCode: {code:X}, {text}"


class PyptoError(Exception):
    """Base class of every pypto error.

    As in the reference, `PyptoError(err_code, msg)` builds a message 'ErrCode: <code>, <msg>'. The classes pypto
    raises itself keep their plain message (it names kernel, parameter, expected and got) and carry the code in
    `err_code` only.
    """

    err_code: int = ERR_UNKNOWN
    node = None

    def __init__(self, *args):
        if len(args) == 2 and isinstance(args[0], int) and not isinstance(args[0], bool):
            self.err_code = args[0]
            super().__init__(_with_code(args[0], args[1]))
        else:
            super().__init__(*args)
            self.err_code = err_code_of(self) if type(self).err_code == ERR_UNKNOWN else type(self).err_code


class PyptoGeneralError(PyptoError):
    """A reference error whose code follows from the wrapped exception: `PyptoGeneralError(ValueError("x"))`
    -> 'ErrCode: F00002, ValueError: x'; a plain string gets the unknown code."""

    _reference_format = True    # False on the classes pypto raises itself: their messages stay plain

    def __init__(self, msg="", *rest):
        if rest or not self._reference_format:
            super().__init__(msg, *rest)
        else:
            code = err_code_of(msg) if isinstance(msg, BaseException) else ERR_UNKNOWN
            super().__init__(code, msg)


class ParserError(PyptoError):
    """An error while reading a kernel's source; `node` is the AST node it points at (None when unknown)."""

    def __init__(self, node=None, msg=""):
        if isinstance(node, str) and msg == "":     # ParserError("text"): message only
            node, msg = None, node
        code = err_code_of(msg) if isinstance(msg, BaseException) else ERR_UNKNOWN
        super().__init__(code, msg)
        self.node = node


class RenderedParserError(ParserError):
    """A ParserError whose message already shows the source location."""


class FeError(PyptoGeneralError):
    """A frontend error: the kernel, its signature, its options or its body are wrong."""


class PyptoRtError(PyptoGeneralError):
    """A runtime error: building, loading or running a kernel failed."""


class PassError(PyptoGeneralError):
    """An error in pass configuration (pass_options)."""


class VerifyError(PyptoGeneralError):
    """Pass verification (verify_options) found a mismatch or could not run."""


# ---- the classes pypto raises (each also a builtin, and a reference class) ----------------------------------

class KernelDefinitionError(FeError, TypeError):
    """The decorated function or its decorator options are not a valid kernel (raised at decoration)."""

    _reference_format = False


class OptionError(FeError, ValueError):
    """An option key, type or value is invalid."""

    _reference_format = False


class KernelTraceError(FeError, ValueError):
    """The kernel body uses the language wrongly (raised while tracing, on the first call of a specialization)."""

    _reference_format = False


class KernelSyntaxError(KernelTraceError, ParserError):
    """A statement a kernel may not contain (a `return` of a value): a KernelTraceError and the reference's
    ParserError, with our plain message."""

    def __init__(self, msg: str):
        Exception.__init__(self, msg)
        self.err_code = err_code_of(self)


class ArgumentTypeError(FeError, TypeError):
    """A kernel call's argument of the wrong kind or dtype, a missing or unexpected argument (raised by the core)."""
    _reference_format = False


class ArgumentValueError(FeError, ValueError):
    """A kernel call's argument of the wrong rank, size or layout (raised by the core)."""
    _reference_format = False


class InternalError(PyptoError, RuntimeError):
    """An internal invariant failed (`pypto.internal_check`): a bug to report, not a usage error."""


class UnsupportedFeatureError(FeError, NotImplementedError):
    """A reference feature this package does not support yet; the message names it."""

    _reference_format = False


class KernelSignatureError(UnsupportedFeatureError, ParserError):
    """A kernel signature that packs arguments (`*args`, `**kwargs`). As in the reference, decorating such a kernel
    succeeds and every call raises this (its parser reads the signature at the call): an UnsupportedFeatureError
    (NotImplementedError) and the reference's ParserError, whose message starts with the reference's code
    'ErrCode: F00005' (not implemented), as its error contract promises for this case."""

    def __init__(self, msg: str):
        code = _CODE_BASE | 5
        Exception.__init__(self, _with_code(code, msg))
        self.err_code = code
        self.node = None


class CompileError(PyptoRtError, RuntimeError):
    """The generated C++ failed to compile."""

    _reference_format = False


class BackendUnavailableError(PyptoRtError, RuntimeError):
    """The requested run mode needs hardware or a toolkit that is not present (e.g. NPU without CANN)."""

    _reference_format = False


class KernelRuntimeError(PyptoRtError, RuntimeError):
    """A compiled kernel reported an error while running (e.g. an out-of-bounds access in debug mode)."""

    _reference_format = False


class DistributedError(PyptoRtError, RuntimeError):
    """A multi-rank setup failed: a group that spans hosts, ranks that allocate different shmem tensors, a
    shared-memory window that cannot be created or mapped (pypto.distributed)."""

    _reference_format = False


class CaptureError(PyptoRtError, RuntimeError):
    """`pypto.capture()` misuse: a replay whose captured tensors, guards or scalar slots no longer hold, a torch op
    refused inside the captured region, a nested capture."""

    _reference_format = False


def not_supported(feature: str, hint: str = "") -> UnsupportedFeatureError:
    """The error for a reference feature that is missing here: names it and says 'not supported yet'."""
    return UnsupportedFeatureError(f"{feature} is not supported yet by this pypto" + (f"; {hint}" if hint else ""))


def catch_and_wrap_error(operation: str):
    """Decorator (the reference's `pypto.error._catch_and_wrap_error`): an exception escaping the function becomes a
    PyptoGeneralError 'Failed to <operation> '<name>'' carrying the original message and its code (an 'ErrCode'
    already in the message is kept, never doubled); a PyptoError passes through unchanged."""
    import functools
    import re

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except PyptoError:
                raise
            except Exception as e:
                name = getattr(args[0], "__name__", fn.__name__) if args else fn.__name__
                text = str(e)
                found = re.search(r"ErrCode: ([0-9A-Fa-f]+)", text)
                code = int(found.group(1), 16) if found else err_code_of(e)
                detail = text if found else f"{type(e).__name__}: {text}"
                raise PyptoGeneralError(code, f"Failed to {operation} '{name}'. {detail}") from e
        return wrapper
    return decorate
