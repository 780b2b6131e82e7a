"""Emitter of the runtime_debug_mode=4 bounds checks: before a statement, every view it touches must lie inside
its storage (pypto_rt::check_view). A mixin of the unfused emitter (cpp.py)."""
from __future__ import annotations

from ..ir import sym as S
from ..ir.nodes import LOCAL, PARAM, TEMP, Storage
from .names import c_string


class BoundsCheckEmitter:
    def storage_numel(self, st: Storage) -> str:
        if st.kind == PARAM:
            return f"dbg_numel_{st.param_index}"
        n = st.static_elems()
        if n is not None:
            return S.to_cpp(n)
        return " * ".join(f"(int64_t)({S.to_cpp(d)})" for d in st.shape) or "(int64_t)1"

    def bounds(self, values, what: str):
        """Before a statement: every element each operand view can touch (offset + sum of (dim-1)*stride,
        both signs) must lie inside its storage, else the kernel fails with the tensor, the offending element
        index (unravelled over the tensor's shape) and the shape — before anything of the statement runs."""
        seen = set()
        for v in values:
            if id(v) in seen:
                continue
            seen.add(id(v))
            st = v.storage
            if st.kind == TEMP and v.is_root:
                continue      # a whole fresh temporary: allocated for exactly this shape
            if st.kind == PARAM:
                tname = f"tensor '{st.param_name}'"
                shp = f"tensors[{st.param_index}].shape"
                srank = f"(int)tensors[{st.param_index}].ndim"
            else:
                tname = f"{'local tensor' if st.kind == LOCAL else 'temporary'} %{st.sid}"
                sdims = [S.to_cpp(c if c is not None else d) for c, d in zip(st.cap, st.shape)]
                arr = self.fresh("dbs")
                self.line(f"const int64_t {arr}[{max(len(sdims), 1)}] = {{{', '.join(sdims) or '1'}}};")
                shp, srank = arr, str(len(sdims))
            r = len(v.shape)
            dn, sn = self.fresh("dbd"), self.fresh("dbt")
            self.line(f"const int64_t {dn}[{max(r, 1)}] = {{{', '.join(S.to_cpp(d) for d in v.shape) or '1'}}};")
            self.line(f"const int64_t {sn}[{max(r, 1)}] = {{{', '.join(S.to_cpp(x) for x in v.strides) or '0'}}};")
            msg = c_string(f"kernel '{self.k.name}': runtime_debug_mode=4: {what}: out-of-bounds access of {tname}")
            self.line(f"if (pypto_rt::check_view(ctx, {msg}, {S.to_cpp(v.offset)}, {r}, {dn}, {sn}, "
                      f"{self.storage_numel(st)}, {srank}, {shp})) return 1;")


__all__ = ["BoundsCheckEmitter"]
