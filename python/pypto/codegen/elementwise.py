"""Emitters of the element-by-element statements: tensor writes (Assign: assemble, slice stores, copies), fill,
the elementwise ops (`ew`: arithmetic, math, casts; language/elementwise.py) and iota. A mixin of the unfused
emitter (cpp.py)."""
from __future__ import annotations

from ..ir import sym as S
from ..ir.nodes import Assign, Op, Value
from .templates import ctype, ew_store


class ElementwiseEmitter:
    def assign(self, st: Assign):
        dst = st.dst
        dp = self.ptr(dst, const=False)
        if isinstance(st.src, Value):
            sp = self.ptr(st.src, const=True)
            src = None
        else:
            src = self.scalar_const(st.src, dst.dtype)
        ivars, opened = self.nest(dst.shape)
        rhs = src if src is not None else f"{sp}[{self.index(st.src, ivars)}]"
        self.line(f"{dp}[{self.index(dst, ivars)}] = {rhs};")
        self.close(opened)

    def op_fill(self, op: Op):
        out = op.out
        self.alloc(out.storage)
        c = self.scalar_const(op.ins[0], out.dtype)
        ivars, opened = self.nest(out.shape, op.attrs.get("tile"))
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = {c};")
        self.close(opened)

    def op_ew(self, op: Op):
        out = op.out
        self.alloc(out.storage)
        cts = op.attrs["cts"]
        loads = []
        for a, ct in zip(op.ins, cts):
            if isinstance(a, Value):
                loads.append((self.ptr(a, const=True), a, ct))
            else:
                loads.append((self.scalar_const(a, ct), None, ct))
        ivars, opened, last = self.nest_outer(out.shape, op.attrs.get("tile"))

        def body():
            raw, args = [], []
            for name, v, ct in loads:
                if v is None:
                    raw.append(None)
                    args.append(name)
                    continue
                e = f"{name}[{self.index(v, ivars)}]"
                raw.append(e)
                args.append(e if ct is None else f"pypto_rt::Cvt<{ctype(ct)}>::from({e})")
            value = ew_store(op.attrs["fn"], op.ins, cts, out.dtype, raw, args, self.hoist)
            return f"{out.storage.cname}[{self.index(out, ivars)}] = {value};"

        if last is None:
            self.line(body())
        else:
            self.elem_loop(*last, body)
        self.close(opened)

    def op_iota(self, op: Op):
        out = op.out
        self.alloc(out.storage)
        ct = "double" if op.attrs["fp"] else "int64_t"
        start, step = self.fresh("c"), self.fresh("c")
        self.line(f"const {ct} {start} = ({ct})({S.to_cpp(op.attrs['start'])});")
        self.line(f"const {ct} {step} = ({ct})({S.to_cpp(op.attrs['step'])});")
        ivars, opened = self.nest(out.shape)
        self.line(f"{out.storage.cname}[{ivars[0]}] = pypto_rt::Cvt<{ctype(out.dtype)}>::from({start} + "
                  f"({ct}){ivars[0]} * {step});")
        self.close(opened)


__all__ = ["ElementwiseEmitter"]
