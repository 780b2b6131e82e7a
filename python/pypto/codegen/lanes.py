"""The fixed lane order of reductions, emitted identically by the fused and the unfused generators.

A float reduction over n elements (the reduced dims flattened row-major) keeps L partial results: element j goes
to lane j % L in order, then pypto_rt::fold_<fn><L> folds the lanes pairwise. L is 64 for float and 32 for
double on every machine, so the bits never depend on the SIMD width, the tiling or the thread count. The order is
what lets g++ vectorize the loop without -ffast-math (each lane is its own sequential chain); 64 lanes are four
independent 512-bit chains (eight 256-bit ones), enough to hide the add / max latency. Integer reductions are
exact in any order: one sequential accumulator.
"""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT
from .templates import REDUCE_INIT, REDUCE_STEP, ctype


def lanes_of(ct) -> int:
    ct = DT(ct)
    if ct == DT.DT_FP32:
        return 64
    if ct == DT.DT_FP64:
        return 32
    return 1


def emit_reduce(em, fn: str, ct, extents: list, load, store, each_block=None):
    """Emit the reduction of `load(index vars)` over loops of `extents` (C++ expressions, row-major) and call
    `store(result expression)` (the compute type ct) once, after the loops. `each_block(j, n)`, when given, emits
    lines at the start of each block of the blocked form (n elements from index j): the fused generator's
    prefetch. It does not change what is computed."""
    cts = ctype(ct)
    kind = "f" if DT(ct).is_float else "u" if DT(ct) == DT.DT_UINT64 else "i"
    init = REDUCE_INIT[(fn, kind)].format(ct=cts)
    L = lanes_of(ct)
    acc = em.fresh("acc")
    if L == 1:
        em.line(f"{cts} {acc} = {init};")
        vs = []
        for n in extents:
            v = em.fresh("r")
            em.open(f"for (int64_t {v} = 0; {v} < {n}; ++{v})")
            vs.append(v)
        em.line(f"{acc} = {REDUCE_STEP[fn].format(acc=acc, v=load(vs), ct=cts)};")
        em.close(len(vs))
        store(acc)
        return
    lv = em.fresh("l")
    em.line(f"{cts} {acc}[{L}];")
    em.line(f"for (int {lv} = 0; {lv} < {L}; ++{lv}) {acc}[{lv}] = {init};")
    if len(extents) == 1:
        # blocked form: L consecutive elements per pass, one per lane (vectorizes), then the tail
        n, j = extents[0], em.fresh("j")
        a = f"{acc}[{lv}]"
        step = REDUCE_STEP[fn].format(acc=a, v=load([f"({j} + {lv})"]), ct=cts)
        em.line(f"int64_t {j} = 0;")
        em.open(f"for (; {j} + {L} <= (int64_t)({n}); {j} += {L})")
        if each_block is not None:
            each_block(j, L)
        em.open(f"for (int {lv} = 0; {lv} < {L}; ++{lv})")
        em.line(f"{a} = {step};")
        em.close(2)
        em.open(f"for (int {lv} = 0; {j} + {lv} < (int64_t)({n}); ++{lv})")
        em.line(f"{a} = {step};")
        em.close()
    else:
        c = em.fresh("c")
        em.line(f"int64_t {c} = 0;")
        vs = []
        for n in extents:
            v = em.fresh("r")
            em.open(f"for (int64_t {v} = 0; {v} < {n}; ++{v})")
            vs.append(v)
        a = f"{acc}[{c} & {L - 1}]"
        em.line(f"{a} = {REDUCE_STEP[fn].format(acc=a, v=load(vs), ct=cts)};")
        em.line(f"++{c};")
        em.close(len(vs))
    store(f"pypto_rt::fold_{fn}<{L}>({acc})")
