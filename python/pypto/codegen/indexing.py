"""Emitters of the data-dependent indexing ops (language/indexing.py): gather, scatter (with reduce=) and
index_put, every index checked against its dim at run time. A mixin of the unfused emitter (cpp.py)."""
from __future__ import annotations

from ..ir.nodes import Op, Value
from .names import c_string
from .templates import ctype


class IndexingEmitter:
    def _checked_index(self, ip: str, idx: Value, ivars: list, n: str, msg: str) -> str:
        """Load index[ivars] into a fresh int64 and fail the kernel when it is outside [0, n)."""
        j = self.fresh("g")
        self.line(f"const int64_t {j} = (int64_t){ip}[{self.index(idx, ivars)}];")
        self.line(f"if ({j} < 0 || {j} >= {n}) return pypto_rt::fail(ctx, {c_string(msg)});")
        return j

    def op_gather(self, op: Op):
        out, (t, idx) = op.out, op.ins
        d = op.attrs["dim"]
        self.alloc(out.storage)
        tp, ip = self.ptr(t, const=True), self.ptr(idx, const=True)
        n = self.dim(t.shape[d])
        ivars, opened = self.nest(out.shape, ivdep=False)
        full = list(ivars)
        full[d] = self._checked_index(ip, idx, ivars, n, op.attrs["msg"])
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = {tp}[{self.index(t, full)}];")
        self.close(opened)

    def op_scatter(self, op: Op):
        out, (t, idx, src) = op.out, op.ins
        d = op.attrs["dim"]
        self.alloc(out.storage)
        tp, ip = self.ptr(t, const=True), self.ptr(idx, const=True)
        ivars, opened = self.nest(out.shape)
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = {tp}[{self.index(t, ivars)}];")
        self.close(opened)
        sp = self.ptr(src, const=True) if isinstance(src, Value) else self.scalar_const(src, out.dtype)
        n = self.dim(out.shape[d])
        ivars, opened = self.nest(idx.shape, ivdep=False)
        full = list(ivars)
        full[d] = self._checked_index(ip, idx, ivars, n, op.attrs["msg"])
        rhs = f"{sp}[{self.index(src, ivars)}]" if isinstance(src, Value) else sp
        self.store_update(out, self.index(out, full), rhs, op.attrs.get("reduce"), op.attrs.get("ct"),
                          op.attrs.get("alpha", 1))
        self.close(opened)

    def store_update(self, out: Value, at: str, rhs: str, reduce, ctd, alpha=1):
        """out[at] = rhs, or with reduce 'add' / 'mul': out[at] = out[at] (+|*) alpha * rhs computed in the
        compute type `ctd` and converted back once (scatter reduce=, index_add, index_put_ accumulate)."""
        dst = f"{out.storage.cname}[{at}]"
        if reduce is None:
            self.line(f"{dst} = {rhs};")
            return
        ct = ctype(ctd)
        val = f"pypto_rt::Cvt<{ct}>::from({rhs})"
        if not (isinstance(alpha, int) and alpha == 1):
            val = f"{self.scalar_const(alpha, ctd)} * {val}"
        sym = "+" if reduce == "add" else "*"
        self.line(f"{dst} = pypto_rt::Cvt<{ctype(out.dtype)}>::from(pypto_rt::Cvt<{ct}>::from({dst}) {sym} {val});")

    def op_index_put(self, op: Op):
        """out = a copy of t; out[idx0[r], ..., idx{k-1}[r], ...] = (or +=) values[r, ...] for every row r."""
        out, (t, vals), idxs = op.out, op.ins[:2], op.ins[2:]
        self.alloc(out.storage)
        tp = self.ptr(t, const=True)
        ivars, opened = self.nest(out.shape)
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = {tp}[{self.index(t, ivars)}];")
        self.close(opened)
        vp = self.ptr(vals, const=True)
        ips = [self.ptr(ix, const=True) for ix in idxs]
        ns = [self.dim(out.shape[j]) for j in range(len(idxs))]
        ivars, opened = self.nest(vals.shape, ivdep=False)
        full = [self._checked_index(ip, ix, ivars[:1], n, msg)
                for ip, ix, n, msg in zip(ips, idxs, ns, op.attrs["msgs"])] + ivars[1:]
        self.store_update(out, self.index(out, full), f"{vp}[{self.index(vals, ivars)}]",
                          "add" if op.attrs["accumulate"] else None, op.attrs["ct"])
        self.close(opened)


__all__ = ["IndexingEmitter"]
