"""The peers: the same call (`out = a + b + c` on four fp32[16] tensors, constants m=2, n=3) through other systems.

Each builder returns rows, or raises PeerMissing when its package is not installed (reported as "not installed",
never faked). Every peer that does the work has its result checked against torch before it is timed.

    pypto hit                the kernel under test, a cache hit
    C vectorcall no-op       pypto._core.noop(a, b, c, out, m=2, n=3): the floor of any native callable
    python no-op             def f(a, b, c, out, m=2, n=3): pass
    torch eager              torch.add(a, b, out=out).add_(c) (the same work, two ops) and torch.add(a, b, out=out)
    numba njit               @njit on numpy arrays, keyword and positional calls
    torch.compile            torch.compile(f) with f: out.copy_(a + b + c) (inductor, CPU)
    jax.jit                  jit(a + b + c) on jax arrays (immutable: returns the result), then
                             .block_until_ready() (jax dispatches asynchronously; every other row returns done)
    warp                     wp.launch(kernel, dim=16, inputs=[a, b, c, out]) on CPU warp arrays, and the recorded
                             launch (wp.launch(..., record_cmd=True) once, then cmd.launch())
    reference dispatcher     the reference pypto design in pure Python: inspect.signature(fn).bind(...) +
                             apply_defaults() + a key tuple + a dict lookup per call; its launch is the C no-op, so
                             the row is a lower bound of that design's hit
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import sys

from .timing import Row

MAIN_STMT = "k(a, b, c, out, m=2, n=3)"


class PeerMissing(Exception):
    """The peer's package is not installed (or cannot run here); the message says which and why."""


def _import(name: str):
    try:
        return importlib.import_module(name)
    except Exception as e:  # ImportError, or a broken install that fails on import
        raise PeerMissing(f"not installed ({name}: {type(e).__name__}: {e})") from None


def _expect_ok(got, want, peer: str) -> None:
    import numpy as np

    if not np.allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6):
        raise RuntimeError(f"pypto.bench: peer {peer} computed a wrong result; refusing to time it")


def _tensors():
    from . import kernels as K

    return K.make_tensors(4)


def pypto_rows():
    from . import kernels as K

    a, b, c, out = _tensors()
    K.main_k(a, b, c, out, m=2, n=3)
    _expect_ok(out, a + b + c, "pypto")
    return [Row("pypto hit", "peers", MAIN_STMT, dict(k=K.main_k, a=a, b=b, c=c, out=out))]


def floor_rows():
    from ..native import core as _core

    a, b, c, out = _tensors()

    def python_noop(a, b, c, out, m=2, n=3):
        pass

    return [Row("C vectorcall no-op", "peers", MAIN_STMT, dict(k=_core.noop, a=a, b=b, c=c, out=out),
                note="floor: METH_FASTCALL|METH_KEYWORDS returning None", floor=True),
            Row("python no-op", "peers", MAIN_STMT, dict(k=python_noop, a=a, b=b, c=c, out=out),
                note="floor: def f(a, b, c, out, m=2, n=3): pass", floor=True)]


def torch_rows():
    torch = _import("torch")
    a, b, c, out = _tensors()
    torch.add(a, b, out=out).add_(c)
    _expect_ok(out, a + b + c, "torch eager")
    return [Row("torch eager add(out=).add_()", "peers", "add(a, b, out=out).add_(c)",
                dict(add=torch.add, a=a, b=b, c=c, out=out), note="the same work, two ops"),
            Row("torch.add(a, b, out=out)", "peers", "add(a, b, out=out)", dict(add=torch.add, a=a, b=b, out=out),
                note="one op")]


def numba_rows():
    numba = _import("numba")
    a, b, c, out = (t.numpy().copy() for t in _tensors())

    @numba.njit(cache=False)
    def nb_add(a, b, c, out, m=2, n=3):
        out[:] = a + b + c

    nb_add(a, b, c, out, 2, 3)
    nb_add(a, b, c, out, m=2, n=3)
    _expect_ok(out, a + b + c, "numba")
    args = dict(k=nb_add, a=a, b=b, c=c, out=out)
    return [Row("numba njit (keywords)", "peers", MAIN_STMT, args, note=f"numba {numba.__version__}"),
            Row("numba njit (positional)", "peers", "k(a, b, c, out, 2, 3)", dict(args),
                note=f"numba {numba.__version__}")]


def torch_compile_rows():
    torch = _import("torch")
    a, b, c, out = _tensors()

    def f(a, b, c, out, m=2, n=3):
        out.copy_(a + b + c)

    try:
        cf = torch.compile(f)
        cf(a, b, c, out, m=2, n=3)
    except Exception as e:  # inductor needs a working C++ toolchain
        raise PeerMissing(f"cannot run here (torch.compile: {type(e).__name__}: {str(e)[:200]})") from None
    _expect_ok(out, a + b + c, "torch.compile")
    return [Row("torch.compile", "peers", MAIN_STMT, dict(k=cf, a=a, b=b, c=c, out=out),
                note=f"inductor, torch {torch.__version__}")]


def jax_rows():
    jax = _import("jax")
    import jax.numpy as jnp

    a, b, c, _ = (jnp.asarray(t.numpy()) for t in _tensors())

    @jax.jit
    def f(a, b, c):
        return a + b + c

    _expect_ok(f(a, b, c).block_until_ready(), a + b + c, "jax")
    # block_until_ready: every other row returns with its work done; jax dispatches asynchronously, and a loop
    # of unblocked calls would leave work running on jax's threads while the next row is timed
    return [Row("jax.jit + block_until_ready", "peers", "k(a, b, c).block_until_ready()", dict(k=f, a=a, b=b, c=c),
                note=f"jax {jax.__version__}, {jax.default_backend()}; returns a new array")]


@contextlib.contextmanager
def _silenced():
    """stdout and stderr to /dev/null, at the file-descriptor level (native code prints too)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def warp_rows():
    with _silenced():
        wp = _import("warp")
    wp.config.quiet = True
    try:  # warp prints a banner, a CUDA warning and a line per module load
        with _silenced():
            wp.init()
            ta, tb, tc, tout = _tensors()
            a, b, c, out = (wp.array(t.numpy(), dtype=wp.float32, device="cpu") for t in (ta, tb, tc, tout))
            from ._warp_kernel import add3

            wp.launch(add3, dim=16, inputs=[a, b, c, out], device="cpu")
            wp.synchronize()
    except Exception as e:  # warp's CPU path needs its bundled compiler
        raise PeerMissing(f"cannot run here (warp: {type(e).__name__}: {str(e)[:200]})") from None
    _expect_ok(out.numpy(), ta + tb + tc, "warp")
    cmd = wp.launch(add3, dim=16, inputs=[a, b, c, out], device="cpu", record_cmd=True)
    note = f"warp {wp.config.version}, cpu"
    return [Row("warp wp.launch", "peers", "launch(kern, dim=16, inputs=[a, b, c, out], device='cpu')",
                dict(launch=wp.launch, kern=add3, a=a, b=b, c=c, out=out), note=note),
            Row("warp recorded launch", "peers", "cmd.launch()", dict(cmd=cmd), note=note + ", record_cmd=True")]


class ReferenceDispatcher:
    """The reference pypto design's per-call work, in pure Python: bind the signature, apply defaults, build a key
    tuple (shape + dtype per tensor, value per constant), look it up in a dict, launch."""

    def __init__(self, fn, launch):
        self.sig = inspect.signature(fn)
        self.table = {}
        self.launch = launch

    def __call__(self, *args, **kwargs):
        bound = self.sig.bind(*args, **kwargs)
        bound.apply_defaults()
        key = tuple((tuple(v.shape), v.dtype) if hasattr(v, "shape") else (type(v), v)
                    for v in bound.arguments.values())
        entry = self.table.get(key)
        if entry is None:
            entry = self.table[key] = self.launch  # the "compile": the C no-op stands in for the kernel
        return entry(*bound.arguments.values())


def reference_rows():
    from ..native import core as _core

    a, b, c, out = _tensors()

    def k(a, b, c, out, m=2, n=3):
        pass

    ref = ReferenceDispatcher(k, _core.noop)
    ref(a, b, c, out, m=2, n=3)
    return [Row("reference dispatcher (Python)", "peers", MAIN_STMT, dict(k=ref, a=a, b=b, c=c, out=out),
                note="signature.bind + apply_defaults + key tuple + dict lookup; launch = C no-op (lower bound)")]


# name -> builder; the order is the table's order
PEERS = {"pypto": pypto_rows, "floors": floor_rows, "torch": torch_rows, "numba": numba_rows,
         "torch.compile": torch_compile_rows, "jax": jax_rows, "warp": warp_rows, "reference": reference_rows}
# what each peer needs installed (the optional extra `peers` in pyproject.toml)
PEER_PACKAGES = {"torch": "torch", "numba": "numba", "torch.compile": "torch", "jax": "jax", "warp": "warp-lang"}


def build_peers(names) -> tuple[list[Row], dict[str, str]]:
    """Rows of the named peers, and name -> 'not installed (...)' for the missing ones."""
    rows, missing = [], {}
    for name in names:
        if name not in PEERS:
            missing[name] = f"not installed (no peer named {name!r}; known: {', '.join(PEERS)})"
            continue
        try:
            rows += PEERS[name]()
        except PeerMissing as e:
            missing[name] = str(e)
    return rows, missing
