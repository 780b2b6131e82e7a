"""`g.export(dir, name)`: a captured sequence into an AOT bundle, replayed from C++ by `Bundle::sequence(name)`.

The bundle holds every kernel the sequence launches, with exactly the specializations it recorded (the same
libraries), and under "sequences" the step: its buffers (one per captured tensor: dtype, shape, whether a launch
writes it, where it was first passed) and its launches (kernel, specialization, buffers per tensor parameter,
recorded scalars and the named slots that rebind them). The C++ caller passes one buffer per captured tensor.
"""
from __future__ import annotations

from pathlib import Path

from ..native import core as _core
from ..errors import CaptureError
from ..export import ExportError, _export
from ..vocab.params import TENSOR


def _sequence_json(native, name: str) -> tuple[dict, dict, list]:
    launches = native._launches()
    layouts = native._tensor_layouts()
    # distinct tensors that share memory (views of one storage) would need one caller buffer each: refused
    spans = sorted((addr, addr + nbytes, i) for i, (_d, _s, _w, addr, nbytes) in enumerate(layouts) if nbytes)
    for (a0, a1, i), (b0, b1, j) in zip(spans, spans[1:]):
        if b0 < a1:
            raise ExportError(f"pypto.capture: export '{name}': captured tensors {i} and {j} share memory (views "
                              f"of one storage); the C++ sequence takes one buffer per tensor, so the capture must "
                              f"use distinct tensors")
    keys: dict[str, list[bytes]] = {}
    kernels: list = []
    first_use: dict[int, str] = {}
    out_launches = []
    for li, (kernel, key, tensor_ids, scalars) in enumerate(launches):
        kname = kernel.__name__
        if kname not in keys:
            keys[kname] = []
            kernels.append(kernel)
        if key not in keys[kname]:
            keys[kname].append(key)
        params = [p.name for p in kernel.params if p.kind == TENSOR]
        for t, tid in enumerate(tensor_ids):
            pname = params[t] if t < len(params) else str(t)
            first_use.setdefault(tid, f"kernel '{kname}' parameter '{pname}' (launch {li})")
        out_launches.append({"kernel": kname, "specialization": keys[kname].index(key), "tensors": list(tensor_ids),
                             "scalars": [{"float": v} if isinstance(v, float) else {"int": v} for v in scalars],
                             "slots": []})
    for slot, li, s in native._slot_bindings():
        out_launches[li]["slots"].append({"scalar": s, "slot": slot})
    buffers = [{"dtype": _core.DTYPE_NAMES[d], "dtype_code": d, "shape": list(shape), "written": bool(w),
                "first_use": first_use[i]} for i, (d, shape, w, _a, _n) in enumerate(layouts)]
    seq = {"name": name, "buffers": buffers, "launches": out_launches,
           "slots": sorted({b[0] for b in native._slot_bindings()})}
    return seq, keys, kernels


def export_sequence(graph, directory, name: str = "step") -> Path:
    if not isinstance(name, str) or not name.isidentifier():
        raise CaptureError(f"pypto.capture: export: the sequence name must be an identifier, got {name!r}")
    native = graph._native
    native._check()  # a graph that would not replay exports nothing
    if len(native) == 0:
        raise CaptureError(f"pypto.capture: export '{name}': the capture recorded no launch")
    seq, keys, kernels = _sequence_json(native, name)
    return _export([(k, None) for k in kernels], Path(directory), sequences=[seq], keys=keys)
