"""The scenario sets: pypto's cache-hit call as one thing varies at a time.

Each set is a list of rows measured in the same interleaved rounds as everything else; its first row is the base
its ratios refer to. Building a set compiles (or loads from the disk cache) each kernel once, checks its result
against torch, and leaves the kernel's table in the state the set is about.

    tensors          1 / 4 / 8 / 16 tensor arguments (`out[:] = x0`; two int constants each)
    constants        0 / 2 / 8 compile-time constants passed by keyword (body `out[:] = a + b + c`)
    scalars          0 / 1 / 4 runtime scalars (pypto.Scalar[DT_FP32], positional)
    specializations  1 / 100 / 10,000 entries in the kernel's table (100 with --quick), filled with
                     kernel.compile over Tag(int) constants; every row calls with the same Tag
    globals          0 / 20 module globals read by the body, each guarded by identity per call
    dims             a fixed size (16), STATIC (keyed), DYNAMIC (runtime value, not keyed), named (DYNAMIC, and
                     every dim of that name must agree)
    inputs           what a hit costs per input kind, against torch tensors on a STATIC (keyed) kernel: numpy
                     arrays (their C struct), `__dlpack__`-only producers (the capsule protocol: a Python call per
                     argument, the documented slow path), torch tensors on the same kernel with a DYNAMIC or a
                     named dim
    capture          a 32-launch step of tiny kernels: 32 Python calls vs one `g.replay()` (capture_step.py)
"""
from __future__ import annotations

import time

from .timing import Row

SETS = ("tensors", "constants", "scalars", "specializations", "globals", "dims", "inputs", "capture")
SPECIALIZATIONS_FULL = (1, 100, 10_000)
SPECIALIZATIONS_QUICK = (1, 100)


def _check(kernel, args: tuple, expect, out, kw: dict) -> None:
    import torch

    out[...] = 0
    kernel(*args, **kw)
    if not torch.allclose(torch.as_tensor(out), expect, rtol=1e-6, atol=1e-6):
        raise RuntimeError(f"pypto.bench: kernel {kernel!r} computed a wrong result; refusing to time it")


def _names(n: int) -> list[str]:
    return [f"x{i}" for i in range(n)]


def tensors_rows(quick: bool) -> list[Row]:
    from . import kernels as K

    rows = []
    for n, k in ((1, K.tensors_1), (4, K.tensors_4), (8, K.tensors_8), (16, K.tensors_16)):
        ts = K.make_tensors(n, seed=n)
        out = ts[-1]
        _check(k, ts, ts[0] if n > 1 else out.clone(), out, dict(m=2, n=3))
        names = _names(n - 1) + ["out"]
        rows.append(Row(f"{n} tensor arg{'s' if n > 1 else ''}", "tensors", f"k({', '.join(names)}, m=2, n=3)",
                        dict(k=k, **dict(zip(names, ts))), x=n))
    return rows


def constants_rows(quick: bool) -> list[Row]:
    from . import kernels as K

    a, b, c, out = K.make_tensors(4)
    rows = []
    for n, k in ((0, K.consts_0), (2, K.consts_2), (8, K.consts_8)):
        kw = {f"k{i}": i for i in range(n)}
        _check(k, (a, b, c, out), a + b + c, out, kw)
        call = ", ".join(["a", "b", "c", "out"] + [f"k{i}={i}" for i in range(n)])
        rows.append(Row(f"{n} constants", "constants", f"k({call})", dict(k=k, a=a, b=b, c=c, out=out), x=n))
    return rows


def scalars_rows(quick: bool) -> list[Row]:
    from . import kernels as K

    a, out = K.make_tensors(2)
    rows = []
    for n, k, expect in ((0, K.scalars_0, a), (1, K.scalars_1, a * 0.5), (4, K.scalars_4, a * 0.5 + 0.75)):
        svals = [0.5, 0.25, 0.25, 0.25][:n]
        _check(k, (a, out, *svals), expect, out, {})
        call = ", ".join(["a", "out"] + [repr(v) for v in svals])
        rows.append(Row(f"{n} runtime scalars", "scalars", f"k({call})", dict(k=k, a=a, out=out), x=n))
    return rows


def specializations_rows(quick: bool) -> list[Row]:
    from . import kernels as K

    a, b, c, out = K.make_tensors(4)
    tag0 = K.Tag(0)
    rows = []
    for n in (SPECIALIZATIONS_QUICK if quick else SPECIALIZATIONS_FULL):
        k = K.spec_kernel()
        _check(k, (a, b, c, out), a + b + c, out, dict(m=tag0, n=3))
        t0 = time.perf_counter()
        for i in range(1, n):
            k.compile(a, b, c, out, m=K.Tag(i), n=3)
        fill = time.perf_counter() - t0
        got = k.cache_info()["specializations"]
        if got != n:
            raise RuntimeError(f"pypto.bench: wanted {n} specializations, the table holds {got}")
        rows.append(Row(f"{n} specialization{'s' if n > 1 else ''}", "specializations",
                        "k(a, b, c, out, m=tag, n=3)", dict(k=k, a=a, b=b, c=c, out=out, tag=tag0), x=n,
                        extra={"fill_seconds": fill}))
    return rows


def globals_rows(quick: bool) -> list[Row]:
    from . import kernels as K

    a, b, c, out = K.make_tensors(4)
    rows = []
    for n, k in ((0, K.globals_0), (20, K.globals_20)):
        _check(k, (a, b, c, out), a, out, dict(m=2, n=3))
        guards = len(getattr(k, "guards", ()) or ())
        rows.append(Row(f"{n} guarded globals", "globals", "k(a, b, c, out, m=2, n=3)",
                        dict(k=k, a=a, b=b, c=c, out=out), x=n, extra={"guards": guards}))
    return rows


def dims_rows(quick: bool) -> list[Row]:
    from . import kernels as K

    a, b, c, out = K.make_tensors(4)
    rows = []
    for label, k in (("fixed dim [16]", K.dims_fixed), ("STATIC dim", K.main_k), ("DYNAMIC dim", K.dims_dynamic),
                     ("named dim", K.dims_named)):
        _check(k, (a, b, c, out), a + b + c, out, dict(m=2, n=3))
        rows.append(Row(label, "dims", "k(a, b, c, out, m=2, n=3)", dict(k=k, a=a, b=b, c=c, out=out), x=label))
    return rows


def inputs_rows(quick: bool) -> list[Row]:
    from . import kernels as K

    a, b, c, out = K.make_tensors(4)
    _check(K.main_k, (a, b, c, out), a + b + c, out, dict(m=2, n=3))
    an, bn, cn, outn = (t.numpy().copy() for t in (a, b, c, out))
    _check(K.main_k, (an, bn, cn, outn), a + b + c, outn, dict(m=2, n=3))
    from ..testing import DLPackOnly

    ad, bd, cd, outd = (DLPackOnly(t.clone()) for t in (a, b, c, out))
    _check(K.main_k, (ad, bd, cd, outd), a + b + c, outd.t, dict(m=2, n=3))
    for k in (K.dims_dynamic, K.dims_named):
        _check(k, (a, b, c, out), a + b + c, out, dict(m=2, n=3))
    stmt = "k(a, b, c, out, m=2, n=3)"
    torch_args = dict(a=a, b=b, c=c, out=out)
    return [Row("torch tensors", "inputs", stmt, dict(k=K.main_k, **torch_args), x="torch"),
            Row("numpy arrays", "inputs", stmt, dict(k=K.main_k, a=an, b=bn, c=cn, out=outn), x="numpy"),
            Row("__dlpack__-only objects", "inputs", stmt, dict(k=K.main_k, a=ad, b=bd, c=cd, out=outd),
                x="__dlpack__"),
            Row("torch, DYNAMIC dim", "inputs", stmt, dict(k=K.dims_dynamic, **torch_args), x="DYNAMIC"),
            Row("torch, named dim", "inputs", stmt, dict(k=K.dims_named, **torch_args), x="named")]


BUILDERS = {"tensors": tensors_rows, "constants": constants_rows, "scalars": scalars_rows,
            "specializations": specializations_rows, "globals": globals_rows, "dims": dims_rows,
            "inputs": inputs_rows, "capture": lambda quick: _capture_rows(quick)}


def _capture_rows(quick: bool) -> list[Row]:
    from .capture_step import capture_rows

    return capture_rows(quick)
