"""Emitters of the ops that rank the elements of each line along a dim (language/struct_ops.py, indexing.py):
argmax / argmin (`argext`), argsort and topk, with NaN ranked as torch ranks it. A mixin of the unfused emitter
(cpp.py)."""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT
from ..ir.nodes import Op
from .templates import ctype


class RankingEmitter:
    def better(self, x: str, y: str, largest: bool, is_float: bool) -> str:
        """x ranks strictly before y: larger (largest) or smaller; a NaN ranks before every number."""
        cmp = f"{x} {'>' if largest else '<'} {y}"
        if not is_float:
            return f"({cmp})"
        return f"((pypto_rt::isnan_({x}) && !pypto_rt::isnan_({y})) || {cmp})"

    def op_argext(self, op: Op):
        """argmax / argmin along `dim`: the first best element of each line (a NaN beats every number)."""
        out, t = op.out, op.ins[0]
        d, keepdim = op.attrs["dim"], op.attrs["keepdim"]
        self.alloc(out.storage)
        ctd = op.attrs["ct"]
        ct = ctype(ctd)
        tp = self.ptr(t, const=True)
        n = self.dim(t.shape[d])
        full, opened = self.lines_along(t, d)
        ovars = [v if v is not None else "0" for v in full] if keepdim else [v for v in full if v is not None]
        best, bi, j, v = self.fresh("bv"), self.fresh("bi"), self.fresh("j"), self.fresh("v")
        full[d] = "0"
        self.line(f"{ct} {best} = pypto_rt::Cvt<{ct}>::from({tp}[{self.index(t, full)}]);")
        self.line(f"int64_t {bi} = 0;")
        self.open(f"for (int64_t {j} = 1; {j} < {n}; ++{j})")
        full[d] = j
        self.line(f"const {ct} {v} = pypto_rt::Cvt<{ct}>::from({tp}[{self.index(t, full)}]);")
        self.line(f"if {self.better(v, best, op.attrs['largest'], DT(ctd).is_float)} {{ {best} = {v}; {bi} = {j}; }}")
        self.close()
        self.line(f"{out.storage.cname}[{self.index(out, ovars)}] = pypto_rt::Cvt<{ctype(out.dtype)}>::from({bi});")
        self.close(opened)

    def op_argsort(self, op: Op):
        """Indices that sort each line along `dim`: a stable merge sort of 0..n-1 (pypto_rt::stable_sort_idx)."""
        out, t = op.out, op.ins[0]
        d = op.attrs["dim"]
        self.alloc(out.storage)
        ctd = op.attrs["ct"]
        ct = ctype(ctd)
        tp = self.ptr(t, const=True)
        n = self.dim(t.shape[d])
        static = t.shape[d] if isinstance(t.shape[d], int) else None
        vals, ids, tmp = self.fresh("sv"), self.fresh("si"), self.fresh("st")
        self.alloc_raw(vals, ct, DT(ctd).itemsize, static, f"(pypto_rt::size_t)({n})")
        self.alloc_raw(ids, "int64_t", 8, static, f"(pypto_rt::size_t)({n})")
        self.alloc_raw(tmp, "int64_t", 8, static, f"(pypto_rt::size_t)({n})")
        full, opened = self.lines_along(t, d)
        j, x, y = self.fresh("j"), self.fresh("x"), self.fresh("y")
        self.open(f"for (int64_t {j} = 0; {j} < {n}; ++{j})")
        full[d] = j
        self.line(f"{vals}[{j}] = pypto_rt::Cvt<{ct}>::from({tp}[{self.index(t, full)}]); {ids}[{j}] = {j};")
        self.close()
        a, c = f"{vals}[{x}]", f"{vals}[{y}]"
        if op.attrs["descending"]:          # NaN first, as torch.sort(descending=True)
            less = self.better(a, c, True, DT(ctd).is_float)
        elif DT(ctd).is_float:              # NaN last
            less = f"((!pypto_rt::isnan_({a}) && pypto_rt::isnan_({c})) || {a} < {c})"
        else:
            less = f"({a} < {c})"
        self.line(f"pypto_rt::stable_sort_idx({ids}, {tmp}, {n}, [&](int64_t {x}, int64_t {y}) {{ return {less}; }});")
        self.open(f"for (int64_t {j} = 0; {j} < {n}; ++{j})")
        full[d] = j
        self.line(f"{out.storage.cname}[{self.index(out, full)}] = pypto_rt::Cvt<{ctype(out.dtype)}>::from({ids}[{j}]);")
        self.close(1 + opened)

    def op_topk(self, op: Op):
        """Indices of the k best elements per line along `dim`: insertion into a sorted k-slot buffer (stable:
        a later element only displaces strictly worse ones; NaN ranks above every number)."""
        out, t = op.out, op.ins[0]
        d, k, largest = op.attrs["dim"], op.attrs["k"], op.attrs["largest"]
        self.alloc(out.storage)
        if k == 0:
            return
        ct = ctype(op.attrs["ct"])
        tp = self.ptr(t, const=True)
        n = self.dim(t.shape[d])
        vals, ids = self.fresh("tkv"), self.fresh("tki")
        self.alloc_raw(vals, ct, DT(op.attrs["ct"]).itemsize, k)
        self.alloc_raw(ids, "int64_t", 8, k)
        cmp = ">" if largest else "<"

        def better(x, y):
            nan_first = f"pypto_rt::isnan_({x}) && !pypto_rt::isnan_({y})" if largest else \
                f"!pypto_rt::isnan_({x}) && pypto_rt::isnan_({y})"
            return f"(({nan_first}) || {x} {cmp} {y})"

        full, opened = self.lines_along(t, d)
        cnt, j, v, p = self.fresh("cnt"), self.fresh("j"), self.fresh("v"), self.fresh("p")
        self.line(f"int64_t {cnt} = 0;")
        self.open(f"for (int64_t {j} = 0; {j} < {n}; ++{j})")
        full[d] = j
        self.line(f"const {ct} {v} = pypto_rt::Cvt<{ct}>::from({tp}[{self.index(t, full)}]);")
        self.line(f"if ({cnt} == {k} && !{better(v, f'{vals}[{k - 1}]')}) continue;")
        self.line(f"int64_t {p} = {cnt} < {k} ? {cnt} : {k - 1};")
        self.open(f"while ({p} > 0 && {better(v, f'{vals}[{p} - 1]')})")
        self.line(f"{vals}[{p}] = {vals}[{p} - 1]; {ids}[{p}] = {ids}[{p} - 1]; --{p};")
        self.close()
        self.line(f"{vals}[{p}] = {v}; {ids}[{p}] = {j};")
        self.line(f"if ({cnt} < {k}) ++{cnt};")
        self.close()
        q = self.fresh("q")
        self.open(f"for (int64_t {q} = 0; {q} < {k}; ++{q})")
        full[d] = q
        self.line(f"{out.storage.cname}[{self.index(out, full)}] = {ids}[{q}];")
        self.close(1 + opened)


__all__ = ["RankingEmitter"]
