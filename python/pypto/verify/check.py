"""verify_options: run every stage of a specialization on copies of the arguments and compare with golden data.

Stages: TENSOR_GRAPH = the traced IR run by the reference interpreter (`interp.py`); CODEGEN_BINARY = the compiled
kernel (`launch.py`). Golden data comes from `set_verify_golden_data` (per thread) or, for the compiled kernel,
from the interpreter's result.
"""
from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field

from ..errors import KernelRuntimeError
from .launch import launch
from .verify_log import log_top_folder, write_report


# ---- verify_options: compare every stage with golden data --------------------------------------------------------

_golden = threading.local()


def set_verify_golden_data(in_out_tensors=None, goldens=None):
    """`pypto.set_verify_golden_data(in_out_tensors=None, goldens=None)`: data for kernels compiled with
    verify_options={"enable_pass_verify": True}. `goldens`: one entry per tensor parameter (in order), the
    expected content of that tensor after the kernel ran, or None to skip it. `in_out_tensors`: the tensor
    arguments to run the verification on (default: the call's own arguments). Kept (per thread) until replaced;
    call with no arguments to clear."""
    def check(lst, what):
        if lst is None:
            return None
        if not isinstance(lst, (list, tuple)):
            raise TypeError(f"set_verify_golden_data: {what} must be a list of tensors (None entries allowed), "
                            f"got {type(lst).__name__}")
        out = []
        for i, t in enumerate(lst):
            if t is None:
                out.append(None)
                continue
            if hasattr(t, "device") and getattr(t.device, "type", "cpu") != "cpu":
                raise ValueError(f"set_verify_golden_data: {what}[{i}] must be on the CPU, got device {t.device}")
            try:
                import torch

                out.append(t if isinstance(t, torch.Tensor) else torch.as_tensor(t))
            except Exception:
                raise TypeError(f"set_verify_golden_data: {what}[{i}] is not a tensor: {type(t).__name__}") \
                    from None
        return out

    _golden.goldens = check(goldens, "goldens")
    _golden.in_out = check(in_out_tensors, "in_out_tensors")


@dataclass
class StageReport:
    stage: str
    status: str                     # "ok", "mismatch", "error" (the stage failed), "skipped"
    detail: str = ""
    worst: dict = field(default_factory=dict)   # tensor name -> {"index", "got", "golden", "abs_diff"}
    tensors: dict = field(default_factory=dict)  # tensor name -> (parameter index, PASS/FAILED/NO_COMPARE, note)


def error_budget(n: int, rtol: float, atol: float) -> int:
    """How many elements (of n non-zero pairs) may exceed the tolerance, as the reference's verifier allows
    (flow_verifier.h): n * min(rtol, atol), or, when that is 0, min(16, floor(sqrt(n)) // 2)."""
    budget = int(n * min(rtol, atol))
    return budget if budget else min(16, int(math.sqrt(n)) // 2)


def _compare(got, golden, rtol, atol):
    """(number of elements outside tolerance, worst element dict or None, elements allowed outside), by the
    reference's rule: an element is outside when |got - golden| > (|got| + |golden|) * rtol / 2 + atol; the
    tensor passes when at most error_budget(...) are (pairs of zeros not counted) and none is 128-fold outside.
    NaN against NaN and an infinity against the same infinity agree; any other non-finite difference fails."""
    import torch

    if got.dtype == getattr(torch, "float4_e2m1fn_x2", None):   # no float conversion in torch: compare the bytes
        got, golden = got.view(torch.uint8), golden.view(torch.uint8)
    g = golden.to(torch.float64)
    a = got.to(torch.float64)
    if tuple(a.shape) != tuple(g.shape):
        return -1, {"got_shape": tuple(a.shape), "golden_shape": tuple(g.shape)}, 0
    diff = (a - g).abs()
    both_nan = torch.isnan(a) & torch.isnan(g)
    same_inf = torch.isinf(a) & torch.isinf(g) & (a == g)
    tol = (a.abs() + g.abs()) * (rtol / 2) + atol
    excess = diff - tol
    excess = torch.where(both_nan | same_inf, torch.full_like(excess, -1.0), excess)
    excess = torch.where(torch.isnan(excess) | torch.isinf(tol), torch.full_like(excess, math.inf), excess)
    bad = excess > 0
    nbad = int(bad.sum())
    if nbad == 0:
        return 0, None, 0
    zeros = int(((a.abs() + g.abs()) == 0).sum())
    allowed = error_budget(a.numel() - zeros, rtol, atol)
    far = bool((excess > 127 * tol).any())          # diff > 128 * tol
    flat = int(torch.argmax(excess.reshape(-1)))
    idx = []
    rem = flat
    for s in reversed(a.shape):
        idx.append(rem % s)
        rem //= s
    idx = list(reversed(idx))
    worst = {"index": idx, "got": float(a.reshape(-1)[flat]),
             "golden": float(g.reshape(-1)[flat]), "abs_diff": float(diff.reshape(-1)[flat])}
    return nbad, worst, (-1 if far else allowed)


def verify(kernel_ir, request, library: str, args_by_name: dict, options, num_threads: int = 1,
           debug_mode: int = 0) -> list:
    """Run every stage on copies of the arguments and compare with the golden data (verify_options).
    `kernel_ir` is the IR the build traced (compiler/pipeline.py BuildResult.kernel_ir): the interpreter runs
    exactly what was compiled, without tracing the kernel again.

    Stages: TENSOR_GRAPH = the traced IR run by the reference interpreter (verify/interp.py);
    CODEGEN_BINARY = the compiled kernel. Golden for a tensor: the entry of set_verify_golden_data(goldens=...)
    when given, else (for CODEGEN_BINARY) the TENSOR_GRAPH result. Only tensors the kernel writes are compared.
    Returns the StageReports; raises KernelRuntimeError naming the stage, the tensor and the worst element when
    a stage is outside `pass_verify_error_tol` or fails."""
    import torch

    from .interp import UnsupportedOp, interpret  # torch is optional for pypto: needed once verification runs

    vo = options.verify
    rtol, atol = (float(x) for x in vo.get("pass_verify_error_tol", (1e-3, 1e-3)))
    filt = {str(x).upper() for x in (vo.get("pass_verify_pass_filter") or ())}
    want = (lambda s: not filt or "ALL" in filt or s in filt)
    name = request.kernel_name
    tspecs = sorted(request.tensors, key=lambda t: t.index)
    inputs = getattr(_golden, "in_out", None)
    if inputs is not None and len(inputs) != len(tspecs):
        raise KernelRuntimeError(f"kernel '{name}': pass verify: set_verify_golden_data got {len(inputs)} "
                                 f"in_out_tensors, the kernel has {len(tspecs)} tensor parameters")
    if inputs is None:
        inputs = [args_by_name[t.param] for t in tspecs]
    inputs = [t if isinstance(t, torch.Tensor) else torch.as_tensor(t) for t in inputs]
    goldens = getattr(_golden, "goldens", None)
    if goldens is not None and len(goldens) != len(tspecs):
        raise KernelRuntimeError(f"kernel '{name}': pass verify: set_verify_golden_data got {len(goldens)} "
                                 f"goldens, the kernel has {len(tspecs)} tensor parameters")
    svals = [args_by_name[s.param] for s in sorted(request.scalars, key=lambda s: s.index)]
    written = set(kernel_ir.written)
    reports, results = [], {}

    def run_stage(stage):
        if stage == "TENSOR_GRAPH":
            return interpret(kernel_ir, inputs, svals)
        copies = [t.detach().clone().contiguous() for t in inputs]
        sc = [(v, s.dtype.is_float) for v, s in zip(svals, sorted(request.scalars, key=lambda s: s.index))]
        launch(library, copies, sc, num_threads, debug_mode)
        return copies

    failures = []
    for stage in ("TENSOR_GRAPH", "CODEGEN_BINARY"):
        if not want(stage):
            reports.append(StageReport(stage, "skipped", "not in pass_verify_pass_filter"))
            continue
        try:
            outs = run_stage(stage)
        except UnsupportedOp as e:
            reports.append(StageReport(stage, "skipped", f"the reference interpreter does not support {e}"))
            continue
        except KernelRuntimeError as e:
            reports.append(StageReport(stage, "error", str(e)))
            failures.append(f"stage {stage} failed: {e}")
            continue
        results[stage] = outs
        _save(vo, name, stage, tspecs, outs)
        rep = _compare_stage(stage, tspecs, written, outs, goldens, results, rtol, atol)
        reports.append(rep)
        if rep.detail:
            failures.append(f"stage {stage}: {rep.detail}")
    write_report(name, reports)
    if failures:
        raise KernelRuntimeError(f"kernel '{name}': pass verify failed: " + " | ".join(failures))
    return reports


def _compare_stage(stage: str, tspecs, written: set, outs, goldens, results: dict, rtol: float,
                   atol: float) -> StageReport:
    """The report of one stage: each tensor the kernel writes against its golden (the given golden data, else the
    TENSOR_GRAPH stage's result); `detail` names every tensor outside the tolerance."""
    rep = StageReport(stage, "ok")
    msgs = []
    for i, t in enumerate(tspecs):
        if t.index not in written:
            rep.tensors[t.param] = (i, "NO_COMPARE", "not written by the kernel")
            continue
        gold = goldens[i] if goldens is not None else None
        src = "golden data"
        if gold is None and goldens is None and stage != "TENSOR_GRAPH" and "TENSOR_GRAPH" in results:
            gold, src = results["TENSOR_GRAPH"][i], "the TENSOR_GRAPH stage (IR interpreter)"
        if gold is None:
            rep.tensors[t.param] = (i, "NO_COMPARE", "no golden data")
            continue
        nbad, worst, allowed = _compare(outs[i], gold, rtol, atol)
        if nbad == 0 or 0 < nbad <= allowed:
            within = f", {nbad} element(s) outside the tolerance, within the {allowed} allowed" if nbad else ""
            rep.tensors[t.param] = (i, "PASS", f"against {src}{within}")
            continue
        rep.status = "mismatch"
        rep.worst[t.param] = worst
        if nbad < 0:
            msgs.append(f"tensor '{t.param}': shape {list(worst['got_shape'])} differs from the golden's "
                        f"{list(worst['golden_shape'])}")
        else:
            msgs.append(f"tensor '{t.param}': {nbad} of {outs[i].numel()} elements differ from {src} beyond "
                        f"rtol={rtol:g}, atol={atol:g}; worst at index {worst['index']}: got {worst['got']!r}, "
                        f"golden {worst['golden']!r} (|diff| {worst['abs_diff']:.6g})"
                        + ("; one is 128-fold outside" if allowed < 0 else f"; at most {allowed} may be"))
        rep.tensors[t.param] = (i, "FAILED", msgs[-1])
    rep.detail = "; ".join(msgs)
    return rep


def _save(vo, name, stage, tspecs, outs):
    if not vo.get("pass_verify_save_tensor"):
        return
    import torch

    # the reference's default: its log folder (<LogTopFolder>, where the verify log is too)
    d = os.path.join(vo.get("pass_verify_save_tensor_dir") or os.path.join(log_top_folder(), "verify"), name)
    os.makedirs(d, exist_ok=True)
    for t, o in zip(tspecs, outs):
        torch.save(o, os.path.join(d, f"{stage}_{t.param}.pt"))


