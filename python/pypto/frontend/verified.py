"""The kernel object `jit(verify_options={"enable_pass_verify": True})` returns: verify, then launch."""
from __future__ import annotations

import functools

from ..verify import verify
from ..vocab.options import with_current_verify
from .explain import bind_arguments


class VerifiedKernel:
    """What `@pypto.frontend.jit(verify_options={"enable_pass_verify": True})` returns: every call first builds
    the specialization without launching, runs `verify` on copies of the arguments (raising on a mismatch,
    with the outputs untouched), then launches the kernel. The verify options are read at each such call: the
    global ones (`set_verify_options`) as they are then, under the decorator's and scope's. Everything else (cache_info, explain, compile, ...)
    is the native kernel's."""

    def __init__(self, front, native):
        self._front = front
        self._native = native
        functools.update_wrapper(self, front.fn, updated=())

    def __call__(self, *args, **kwargs):
        native, front = self._native, self._front
        native.compile(*args, **kwargs)
        hit, key, _meta = native._probe(*args, **kwargs)
        if hit:
            info = next((i for k, i, _l, _s in native._specializations() if (k or b"") == (key or b"")), None)
            if info is not None:
                front.last_verify = None
                # the global verify options as they are now (the reference reads them when it compiles, at the call)
                opts = with_current_verify(front.options, front.verify_fixed)
                front.last_verify = verify(info["result"].kernel_ir, info["request"], info["result"].library,
                                           bind_arguments(front, args, kwargs), opts,
                                           int(front.options.runtime["sim_threads"]),
                                           int(front.options.debug["runtime_debug_mode"]))
        return native(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._native, name)

    def __repr__(self):
        return f"<pypto verified kernel '{self._front.name}'>"
