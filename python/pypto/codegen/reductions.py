"""Emitters of the reductions and scans (language/reduce.py): `reduce` (sum, amax, amin, prod in the lane order of
lanes.py) and `cumsum` (cumsum, cumprod). A mixin of the unfused emitter (cpp.py)."""
from __future__ import annotations

from ..ir.nodes import Op
from .lanes import emit_reduce
from .templates import ctype


class ReductionEmitter:
    def op_reduce(self, op: Op):
        out, t = op.out, op.ins[0]
        self.alloc(out.storage)
        dims, keepdim, ct = op.attrs["dims"], op.attrs["keepdim"], op.attrs["ct"]
        cts = ctype(ct)
        fn = op.attrs["fn"]
        ip = self.ptr(t, const=True)
        keep = [a for a in range(len(t.shape)) if a not in dims]
        kvars, kopen = self.nest([t.shape[a] for a in keep], op.attrs.get("tile"), ivdep=False)
        full = [None] * len(t.shape)
        for a, v in zip(keep, kvars):
            full[a] = v
        if keepdim:
            ovars = [full[a] if a in keep else "0" for a in range(len(t.shape))]
        else:
            ovars = kvars

        def load(rvars):
            for a, v in zip(dims, rvars):
                full[a] = v
            return f"pypto_rt::Cvt<{cts}>::from({ip}[{self.index(t, full)}])"

        def store(acc):
            self.line(f"{out.storage.cname}[{self.index(out, ovars)}] = "
                      f"pypto_rt::Cvt<{ctype(out.dtype)}>::from({acc});")

        emit_reduce(self, fn, ct, [self.dim(t.shape[a]) for a in dims], load, store)
        self.close(kopen)

    def op_cumsum(self, op: Op):
        out, t = op.out, op.ins[0]
        self.alloc(out.storage)
        d, ct = op.attrs["dim"], ctype(op.attrs["ct"])
        ip = self.ptr(t, const=True)
        full, opened = self.lines_along(t, d)
        acc = self.fresh("acc")
        prod = op.attrs.get("fn") == "prod"      # cumprod
        self.line(f"{ct} {acc} = ({ct}){1 if prod else 0};")
        kv = self.fresh("k")
        self.open(f"for (int64_t {kv} = 0; {kv} < {self.dim(t.shape[d])}; ++{kv})")
        full[d] = kv
        self.line(f"{acc} = {acc} {'*' if prod else '+'} pypto_rt::Cvt<{ct}>::from({ip}[{self.index(t, full)}]);")
        self.line(f"{out.storage.cname}[{self.index(out, full)}] = pypto_rt::Cvt<{ctype(out.dtype)}>::from({acc});")
        self.close(1 + opened)


__all__ = ["ReductionEmitter"]
