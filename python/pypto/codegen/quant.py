"""Emitters of the quantization IR ops (language/quant_ops.py): fp4_pack / fp4_unpack (casts to and from the packed
FP4 pair), mx_scale / mx_quant (quant_mx) and bitcast (pack / unpack). A mixin of the unfused emitter (cpp.py):
the conversions are the functions of include/pypto/kernel_quant.h, which a kernel using them includes."""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT
from ..ir.nodes import Op
from .templates import ctype


class QuantEmitter:
    quant = False                   # set when the kernel needs pypto/kernel_quant.h

    def _pair_positions(self, ivars: list) -> tuple:
        """Index vars of the two unpacked elements of packed position `ivars` (last dim 2j and 2j + 1)."""
        j = ivars[-1]
        return ivars[:-1] + [f"(2 * {j})"], ivars[:-1] + [f"(2 * {j} + 1)"]

    def op_fp4_unpack(self, op: Op):
        out, x = op.out, op.ins[0]
        self.quant = True
        self.alloc(out.storage)
        xp = self.ptr(x, const=True)
        oct_ = ctype(out.dtype)
        ivars, opened = self.nest(x.shape, op.attrs.get("tile"), ivdep=False)
        u = self.fresh("u")
        self.line(f"const uint32_t {u} = {xp}[{self.index(x, ivars)}].bits;")
        lo, hi = self._pair_positions(ivars)
        for pos, nib in ((lo, u), (hi, f"({u} >> 4)")):
            if out.dtype == DT.DT_FP4_E2M1:   # one code per byte: a DT_FP4_E2M1 argument (ir/tracer.py)
                self.line(f"{out.storage.cname}[{self.index(out, pos)}].bits = (uint8_t)({nib} & 15u);")
                continue
            self.line(f"{out.storage.cname}[{self.index(out, pos)}] = pypto_rt::Cvt<{oct_}>::from("
                      f"pypto_rt::fp4_e2m1_value({nib}));")
        self.close(opened)

    def op_fp4_pack(self, op: Op):
        out, x = op.out, op.ins[0]
        self.quant = True
        self.alloc(out.storage)
        xp = self.ptr(x, const=True)
        ivars, opened = self.nest(out.shape, op.attrs.get("tile"), ivdep=False)
        lo, hi = self._pair_positions(ivars)
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}].bits = pypto_rt::fp4_e2m1_pair("
                  f"pypto_rt::Cvt<float>::from({xp}[{self.index(x, lo)}]), "
                  f"pypto_rt::Cvt<float>::from({xp}[{self.index(x, hi)}]));")
        self.close(opened)

    @staticmethod
    def _mx_scale_index(ivars: list, axis: int) -> list:
        """Index vars into the MX scale of the input element at `ivars` (quantized along `axis`)."""
        r = len(ivars)
        if axis == r - 1:
            c = ivars[-1]
            return ivars[:-1] + [f"({c} / 64)", f"(({c} / 32) % 2)"]
        row, col = ivars[-2], ivars[-1]
        return ivars[:-2] + [f"({row} / 64)", col, f"(({row} / 32) % 2)"]

    def op_mx_scale(self, op: Op):
        """One E8M0 exponent per block of 32 values along `axis` from the block's largest magnitude."""
        out, x = op.out, op.ins[0]
        self.quant = True
        self.alloc(out.storage)
        a = op.attrs
        axis, r = a["axis"], len(x.shape)
        xp = self.ptr(x, const=True)
        ncols = self.dim(x.shape[-1])
        ivars, opened = self.nest(out.shape, ivdep=False)
        acc, t, k = self.fresh("amax"), self.fresh("t"), self.fresh("k")
        self.line(f"float {acc} = 0.0f;")
        self.open(f"for (int64_t {t} = 0; {t} < 32; ++{t})")
        if axis == r - 1:
            g, h = ivars[-2], ivars[-1]
            self.line(f"const int64_t {k} = 64 * {g} + 32 * {h} + {t};")
            pos = ivars[:-2] + [k]
            self.line(f"if ({k} < {ncols}) {acc} = pypto_rt::mx_amax({acc}, pypto_rt::Cvt<float>::from("
                      f"{xp}[{self.index(x, pos)}]));")
        else:
            g, col, h = ivars[-3], ivars[-2], ivars[-1]
            self.line(f"const int64_t {k} = 64 * {g} + 32 * {h} + {t};")
            pos = ivars[:-3] + [k, col]
            self.line(f"{acc} = pypto_rt::mx_amax({acc}, pypto_rt::Cvt<float>::from({xp}[{self.index(x, pos)}]));")
        self.close()
        fn = (f"pypto_rt::mx_scale_nv({acc}, {float(a['max_elem'])!r})" if a["nv"]
              else f"pypto_rt::mx_scale_ocp({acc}, {int(a['emax'])})")
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}].bits = {fn};")
        self.close(opened)

    def op_mx_quant(self, op: Op):
        """x * 2^(127 - e) of each element's block, encoded as E4M3 (saturating) or packed E2M1 pairs."""
        out, (x, s) = op.out, op.ins
        self.quant = True
        self.alloc(out.storage)
        axis = op.attrs["axis"]
        xp, sp = self.ptr(x, const=True), self.ptr(s, const=True)

        def scaled(pos):
            return (f"pypto_rt::Cvt<float>::from({xp}[{self.index(x, pos)}]) * "
                    f"pypto_rt::mx_recip({sp}[{self.index(s, self._mx_scale_index(pos, axis))}].bits)")

        ivars, opened = self.nest(out.shape, ivdep=False)
        if out.dtype != DT.DT_FP4_E2M1X2:
            self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = pypto_rt::mx_e4m3({scaled(ivars)});")
        else:
            lo, hi = self._pair_positions(ivars)
            self.line(f"{out.storage.cname}[{self.index(out, ivars)}].bits = pypto_rt::fp4_e2m1_pair("
                      f"{scaled(lo)}, {scaled(hi)});")
        self.close(opened)

    def op_bitcast(self, op: Op):
        """The bytes of x's elements in row-major order into a fresh 1-D buffer of another dtype."""
        out, x = op.out, op.ins[0]
        self.quant = True
        self.alloc(out.storage)
        xp = self.ptr(x, const=True)
        size = x.dtype.itemsize
        dims = [self.dim(d) for d in x.shape]
        ob = self.fresh("ob")
        self.line(f"unsigned char* {ob} = (unsigned char*){out.storage.cname};")
        ivars, opened = self.nest(x.shape, ivdep=False)
        lin = ivars[0]
        for iv, d in zip(ivars[1:], dims[1:]):
            lin = f"({lin}) * {d} + {iv}"
        self.line(f"std::memcpy({ob} + ({lin}) * {size}, &{xp}[{self.index(x, ivars)}], {size});")
        self.close(opened)


__all__ = ["QuantEmitter"]
