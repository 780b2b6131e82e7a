"""The error a kernel cannot be made into (or run as) a torch op with."""
from ..errors import PyptoError


class TorchOpError(PyptoError, TypeError):
    """A kernel's signature has no torch op schema, an as_torch_op argument is wrong, or a specialization writes
    a tensor its op does not declare (the message names kernel, parameter, expected and got)."""
