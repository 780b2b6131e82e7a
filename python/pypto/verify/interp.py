"""A reference interpreter of the kernel IR on torch tensors: the golden of `verify_options`.

It runs the traced IR (the "tensor graph") statement by statement with the same memory model as the generated
C++ (every value is a strided window on a storage; temporaries are fresh buffers) and the same arithmetic
(loads converted to the compute type, elementwise templates of codegen/templates.py, stores converted to the
result dtype), but with torch operations instead of compiled loops. Loops run serially in iteration order,
kernel branches evaluate their condition, run-time checks raise KernelRuntimeError with the kernel's message.

    outs = interpret(kernel_ir, [tensor args in ABI order], [scalar values in ABI order])

returns the tensor arguments after the kernel ran on copies of them (the inputs are never modified).
"""
from __future__ import annotations

import math

import torch

from ..errors import KernelRuntimeError
from ..vocab.dtypes import DataType as DT
from ..ir import sym as S
from ..ir.nodes import PARAM, Assign, Check, If, Kernel, Loop, Op, ScalarRead, UnrolledLoop, Value
from .conv_random import ConvRandomInterp
from .quant import QuantInterp

_TORCH = {
    DT.DT_BOOL: torch.bool, DT.DT_INT8: torch.int8, DT.DT_INT16: torch.int16, DT.DT_INT32: torch.int32,
    DT.DT_INT64: torch.int64, DT.DT_UINT8: torch.uint8, DT.DT_FP16: torch.float16, DT.DT_BF16: torch.bfloat16,
    DT.DT_FP32: torch.float32, DT.DT_FP64: torch.float64, DT.DT_UINT16: torch.uint16, DT.DT_UINT32: torch.uint32,
    DT.DT_UINT64: torch.uint64, DT.DT_FP8E4M3: torch.float8_e4m3fn, DT.DT_FP8E5M2: torch.float8_e5m2,
    DT.DT_FP8E8M0: torch.float8_e8m0fnu, DT.DT_FP4_E2M1X2: torch.float4_e2m1fn_x2,
}
_SIGN = -(1 << 63)


def torch_dtype(dt) -> torch.dtype:
    return _TORCH[DT(dt)]


def _compute(dt) -> torch.dtype:
    """The C++ compute type of a dtype: float for fp16/bf16/fp32/FP8, double for fp64, int64 for ints, bool.
    uint64_t (of uint16/32/64) is held in int64 with the same bits (torch computes little on uint64): ops whose
    result depends on the unsigned reading are handled in _ew."""
    d = DT(dt)
    if d == DT.DT_FP64:
        return torch.float64
    if d.is_float:
        return torch.float32
    if d == DT.DT_BOOL:
        return torch.bool
    return torch.int64


_VAR_ID = (lambda var: var.args[1])  # the interpreter's environment is keyed by variable id


class UnsupportedOp(Exception):
    """The interpreter has no rule for an op kind (reported by verify as a skipped stage)."""


class _Interp(QuantInterp, ConvRandomInterp):
    def __init__(self, k: Kernel, tensors, scalars):
        self.k = k
        self.env: dict = {}
        self.mem: dict = {}
        for t, arg in zip(k.tensors, tensors):
            st = k.params[t.param].storage
            self.mem[st.sid] = arg.reshape(-1)
        for var, ti, ax in k.dyn_vars:
            self.env[var.args[1]] = int(tensors[ti].shape[ax])
        for s, val in zip(k.scalars, scalars):
            v = k.scalar_vars[s.param]
            self.env[v.args[1]] = float(val) if v.kind == S.FLOAT else (bool(val) if v.kind == S.BOOL else int(val))

    # ---- scalars ----------------------------------------------------------------------------------------------
    def ev(self, x):
        return S.evaluate(x, self.env, key=_VAR_ID)

    # ---- memory -------------------------------------------------------------------------------------------------
    def view(self, v: Value) -> torch.Tensor:
        flat = self.mem[v.storage.sid]
        shape = [int(self.ev(d)) for d in v.shape]
        strides = [int(self.ev(s)) for s in v.strides]
        return flat.as_strided(shape, strides, flat.storage_offset() + int(self.ev(v.offset)))

    def alloc(self, v: Value):
        st = v.storage
        dims = [c if c is not None else self.ev(d) for c, d in zip(st.cap, st.shape)]
        n = 1
        for d in dims:
            n *= max(int(d), 0)
        self.mem[st.sid] = torch.zeros(max(n, 1), dtype=torch_dtype(st.dtype))

    def load(self, a, ct):
        """An operand converted to compute type `ct` (tensor view or scalar)."""
        if isinstance(a, Value):
            t = self.view(a)
            return t if ct is None else t.to(_compute(ct))
        val = self.ev(a)
        return torch.tensor(val, dtype=_compute(ct) if ct is not None else None)

    def store(self, out: Value, value: torch.Tensor):
        dst = self.view(out)
        dst.copy_(_convert(value, out.dtype).expand(dst.shape))

    # ---- statements -------------------------------------------------------------------------------------------
    def block(self, block):
        for st in block.stmts:
            if isinstance(st, Op):
                fn = getattr(self, "op_" + st.kind, None)
                if fn is None:
                    raise UnsupportedOp(f"op '{st.kind}'")
                self.alloc(st.out)
                fn(st)
            elif isinstance(st, Assign):
                dst = self.view(st.dst)
                if isinstance(st.src, Value):
                    src = self.view(st.src)
                    lead = dst.dim() - src.dim()
                    src = src.reshape((1,) * lead + tuple(src.shape)) if lead > 0 else src
                    dst.copy_(_convert(src, st.dst.dtype).expand(dst.shape))
                else:
                    dst.fill_(_convert(torch.tensor(self.ev(st.src)), st.dst.dtype).item())
            elif isinstance(st, Check):
                if not self.ev(st.cond):
                    raise KernelRuntimeError(st.msg)
            elif isinstance(st, ScalarRead):
                self.env[st.var.args[1]] = int(self.view(st.src).reshape(-1)[0])
            elif isinstance(st, Loop):
                start, stop, step = self.ev(st.start), self.ev(st.stop), st.step
                for i in range(start, stop, step):
                    self.env[st.var.args[1]] = i
                    self.block(st.body)
            elif isinstance(st, UnrolledLoop):
                start, stop, step = self.ev(st.start), self.ev(st.stop), st.step
                n = len(range(start, stop, step))
                done = 0
                for f, var, body in st.parts:
                    np_ = (n - done) // f
                    for k in range(np_):
                        self.env[var.args[1]] = start + (done + k * f) * step
                        self.block(body)
                    done += np_ * f
            elif isinstance(st, If):
                self.block(st.then if self.ev(st.cond) else st.orelse)
            else:
                raise UnsupportedOp(type(st).__name__)

    # ---- ops ----------------------------------------------------------------------------------------------------
    def op_fill(self, op):
        val = self.ev(op.ins[0])
        self.view(op.out).fill_(_convert(torch.tensor(val, dtype=_compute(op.out.dtype)), op.out.dtype).item())

    def op_ew(self, op):
        cts = op.attrs["cts"]
        args = [self.load(a, ct) for a, ct in zip(op.ins, cts)]
        ct = cts[-1]
        r = _ew(op.attrs["fn"], args, ct)
        self.store(op.out, r)

    def op_iota(self, op):
        out = self.view(op.out)
        ct = torch.float64 if op.attrs["fp"] else torch.int64
        start = torch.tensor(self.ev(op.attrs["start"]), dtype=ct)
        step = torch.tensor(self.ev(op.attrs["step"]), dtype=ct)
        r = start + torch.arange(out.shape[0], dtype=ct) * step
        out.copy_(_convert(r, op.out.dtype))

    def op_reduce(self, op):
        t = self.load(op.ins[0], op.attrs["ct"])
        dims, keep, fn = tuple(op.attrs["dims"]), op.attrs["keepdim"], op.attrs["fn"]
        if fn == "sum":
            r = t.sum(dim=dims, keepdim=keep, dtype=t.dtype) if dims else t
        elif fn == "prod":
            r = t
            for d in sorted(dims, reverse=True):
                r = r.prod(dim=d, keepdim=keep)
        elif fn in ("amax", "amin"):
            flip = DT(op.attrs["ct"]) == DT.DT_UINT64   # unsigned order: compare with the sign bit flipped
            t = t ^ _SIGN if flip else t
            r = t.amax(dim=dims, keepdim=keep) if fn == "amax" else t.amin(dim=dims, keepdim=keep)
            r = r ^ _SIGN if flip else r
        else:
            raise UnsupportedOp(f"reduce fn {fn}")
        self.store(op.out, r)

    def op_cumsum(self, op):
        t = self.load(op.ins[0], op.attrs["ct"])
        if op.attrs.get("fn") == "prod":
            self.store(op.out, t.cumprod(op.attrs["dim"]))
        else:
            self.store(op.out, t.cumsum(op.attrs["dim"]))

    def op_argext(self, op):
        t = self.load(op.ins[0], op.attrs["ct"])
        d = op.attrs["dim"]
        r = (torch.argmax if op.attrs["largest"] else torch.argmin)(t, dim=d, keepdim=op.attrs["keepdim"])
        self.store(op.out, r)

    def op_argsort(self, op):
        t = self.load(op.ins[0], op.attrs["ct"])
        _, order = torch.sort(t, dim=op.attrs["dim"], descending=op.attrs["descending"], stable=True)
        self.store(op.out, order)

    def _update(self, out, at, val, reduce, ct, alpha=1):
        """out[at] = val, or (reduce 'add' / 'mul') out[at] (+|*)= alpha * val in compute type ct, rounded once."""
        if reduce is None:
            out[at] = val
            return
        c = _compute(ct)
        cur, v = out[at].to(c), val.to(c)
        if alpha != 1:
            v = torch.tensor(alpha, dtype=c) * v
        out[at] = _convert(cur + v if reduce == "add" else cur * v, op_dtype(out))

    def op_index_put(self, op):
        t, vals, idxs = op.ins[0], op.ins[1], op.ins[2:]
        out = self.view(op.out)
        out.copy_(self.view(t))
        v = self.view(vals)
        ixs = [self._index(self.view(ix), out.shape[j], msg) for j, (ix, msg) in enumerate(zip(idxs, op.attrs["msgs"]))]
        red = "add" if op.attrs["accumulate"] else None
        for r in range(v.shape[0]):     # in row order, like the generated loops
            at = tuple(int(ix[r]) for ix in ixs)
            self._update(out, at, v[r], red, op.attrs["ct"])

    def op_matmul(self, op):
        ct = _compute(op.attrs["ct"])
        a, b = self.view(op.ins[0]).to(ct), self.view(op.ins[1]).to(ct)
        self.store(op.out, torch.matmul(a, b))

    def _index(self, idx: torch.Tensor, n: int, msg: str) -> torch.Tensor:
        idx = idx.to(torch.int64)
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise KernelRuntimeError(msg)
        return idx

    def op_gather(self, op):
        t, idx = self.view(op.ins[0]), self.view(op.ins[1])
        d = op.attrs["dim"]
        ix = self._index(idx, t.shape[d], op.attrs["msg"])
        sl = [slice(0, s) for s in ix.shape]
        sl[d] = slice(None)
        self.store(op.out, torch.gather(t[tuple(sl)], d, ix))

    def op_scatter(self, op):
        t, idx, src = op.ins
        d = op.attrs["dim"]
        out = self.view(op.out)
        out.copy_(self.view(t).to(out.dtype))
        ix = self._index(self.view(idx), out.shape[d], op.attrs["msg"])
        if isinstance(src, Value):
            sv = self.view(src)[tuple(slice(0, s) for s in ix.shape)].to(out.dtype)
        else:
            sv = torch.full(tuple(ix.shape), self.ev(src)).to(out.dtype)
        # sequential order like the generated loops (a later duplicate index wins)
        for pos in range(ix.numel()):
            j = list(_unravel(pos, ix.shape))
            tgt = list(j)
            tgt[d] = int(ix[tuple(j)])
            self._update(out, tuple(tgt), sv[tuple(j)], op.attrs.get("reduce"), op.attrs.get("ct"),
                         op.attrs.get("alpha", 1))

    def op_topk(self, op):
        t = self.load(op.ins[0], op.attrs["ct"])
        d, k, largest = op.attrs["dim"], op.attrs["k"], op.attrs["largest"]
        if k == 0:
            return
        _, order = torch.sort(t, dim=d, descending=largest, stable=True)
        self.store(op.out, order.narrow(d, 0, k))


def op_dtype(t: torch.Tensor):
    """The pypto dtype of a torch tensor of this interpreter."""
    return next(k for k, v in _TORCH.items() if v == t.dtype)


def _unravel(pos, shape):
    out = []
    for s in reversed(shape):
        out.append(pos % s)
        pos //= s
    return tuple(reversed(out))


def _convert(value: torch.Tensor, dt) -> torch.Tensor:
    """Cvt<To>::from: float -> int truncates toward zero, anything -> bool is x != 0."""
    td = torch_dtype(dt)
    if td == torch.bool:
        return value != 0
    if value.is_floating_point() and not td.is_floating_point:
        return value.trunc().to(td)
    return value.to(td)


def _ew(fn: str, a: list, ct):
    if ct is not None and DT(ct) == DT.DT_UINT64:
        return _ew_unsigned(fn, a)
    f = DT(ct).is_float if ct is not None else False
    if fn == "add":
        return a[0] + a[1]
    if fn == "sub":
        return a[0] - a[1]
    if fn == "mul":
        return a[0] * a[1]
    if fn == "div":
        if f:
            return a[0] / a[1]
        q = torch.where(a[1] == 0, torch.ones_like(a[1]), a[1])
        return torch.where(a[1] == 0, torch.zeros_like(a[0]), torch.div(a[0], q, rounding_mode="trunc"))
    if fn == "floordiv":
        if f:
            return torch.floor((a[0] - torch.remainder(a[0], a[1])) / a[1])
        q = torch.where(a[1] == 0, torch.ones_like(a[1]), a[1])
        return torch.where(a[1] == 0, torch.zeros_like(a[0] + a[1]), torch.div(a[0], q, rounding_mode="floor"))
    if fn == "mod":
        if f:
            return torch.remainder(a[0], a[1])
        q = torch.where(a[1] == 0, torch.ones_like(a[1]), a[1])
        return torch.where(a[1] == 0, torch.zeros_like(a[0] + a[1]), torch.remainder(a[0], q))
    if fn == "pow":
        if f:
            return torch.pow(a[0], a[1])
        x, y = torch.broadcast_tensors(a[0], a[1])
        neg = y < 0
        r = torch.pow(x, torch.where(neg, torch.zeros_like(y), y))
        negr = torch.where(x == 1, torch.ones_like(x), torch.where(x == -1, torch.where(y % 2 != 0, -torch.ones_like(x),
                                                                                       torch.ones_like(x)),
                                                                  torch.zeros_like(x)))
        return torch.where(neg, negr, r)
    if fn == "maximum":
        return torch.maximum(a[0], a[1])
    if fn == "minimum":
        return torch.minimum(a[0], a[1])
    unary = {"exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh, "erfc": torch.erfc,
             "sigmoid": lambda x: 1 / (1 + torch.exp(-x)), "neg": torch.neg,
             "logical_not": torch.logical_not, "erf": torch.erf, "exp2": torch.exp2, "expm1": torch.expm1,
             "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p,
             "cbrt": lambda x: torch.sign(x) * torch.abs(x).pow(1.0 / 3.0), "sin": torch.sin, "cos": torch.cos,
             "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
             "cosh": torch.cosh, "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh,
             "reciprocal": torch.reciprocal, "sign": torch.sign, "signbit": torch.signbit, "isnan": torch.isnan,
             "isfinite": torch.isfinite, "bitwise_not": torch.bitwise_not}
    if fn in unary:
        return unary[fn](a[0])
    binary = {"atan2": torch.atan2, "hypot": torch.hypot, "gcd": torch.gcd, "bitwise_and": torch.bitwise_and,
              "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor, "shl": torch.bitwise_left_shift,
              "shr": torch.bitwise_right_shift, "logical_and": torch.logical_and,
              "lrelu": lambda x, s: torch.where(x > 0, x, x * s), "prelu": lambda x, w: torch.where(x > 0, x, w * x)}
    if fn in binary:
        return binary[fn](a[0], a[1])
    if fn == "fmod":
        if f:
            return torch.fmod(a[0], a[1])
        q = torch.where(a[1] == 0, torch.ones_like(a[1]), a[1])
        return torch.where(a[1] == 0, torch.zeros_like(a[0] + a[1]), torch.fmod(a[0], q))
    if fn == "rsqrt":
        return 1 / torch.sqrt(a[0])
    if fn == "relu":
        return torch.maximum(a[0], torch.zeros_like(a[0]))
    if fn == "abs":
        return torch.abs(a[0])
    if fn in ("round", "trunc", "floor", "ceil"):
        return {"round": torch.round, "trunc": torch.trunc, "floor": torch.floor,
                "ceil": torch.ceil}[fn](a[0]) if f else a[0]
    cmp = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
    if fn in cmp:
        return cmp[fn](a[0], a[1])
    if fn == "where":
        return torch.where(a[0].to(torch.bool), a[1], a[2])
    if fn == "cast":
        return a[0]
    raise UnsupportedOp(f"elementwise fn '{fn}'")


def _ew_unsigned(fn: str, a: list):
    """C unsigned 64-bit arithmetic on int64 tensors that hold the same bits: add/sub/mul/neg wrap alike;
    comparisons (and max/min) compare with the sign bit flipped; division-like ops need operands below 2^63."""
    cmp = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
    if fn in cmp:
        return cmp[fn](a[0] ^ _SIGN, a[1] ^ _SIGN)
    if fn in ("maximum", "minimum"):
        first = (a[0] ^ _SIGN) > (a[1] ^ _SIGN) if fn == "maximum" else (a[0] ^ _SIGN) < (a[1] ^ _SIGN)
        return torch.where(first, a[0], a[1])
    if fn == "abs" or fn in ("round", "trunc", "floor", "ceil"):
        return a[0]
    if fn in ("floordiv", "mod", "pow", "div") and any(bool((x < 0).any()) for x in a if isinstance(x, torch.Tensor)):
        raise UnsupportedOp(f"elementwise fn '{fn}' on uint64 values of 2^63 or more")
    return _ew(fn, a, DT.DT_INT64)


def interpret(kernel: Kernel, tensors, scalars=()) -> list:
    """Run `kernel` on copies of `tensors` (torch tensors / numpy arrays, ABI order) with `scalars`; returns
    the copies after the run. Raises KernelRuntimeError for a failed run-time check, UnsupportedOp for IR the
    interpreter does not know."""
    if kernel.shmem is not None:
        # one process's interpreter cannot see the other ranks' windows nor take part in their signals
        raise UnsupportedOp(f"the multi-rank shmem ops of kernel '{kernel.name}' (pypto.distributed: only the "
                            f"compiled kernel runs them; its stage is compared against set_verify_golden_data)")
    copies = []
    for t in tensors:
        tt = t if isinstance(t, torch.Tensor) else torch.from_numpy(t)
        copies.append(tt.detach().clone().contiguous())
    it = _Interp(kernel, copies, list(scalars))
    it.block(kernel.body)
    return copies


__all__ = ["interpret", "UnsupportedOp", "torch_dtype"]
