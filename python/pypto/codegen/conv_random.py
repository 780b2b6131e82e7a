"""Emitters of `conv` (language/conv.py) and the random ops `uniform` / `normal` (language/random.py): a mixin of
the unfused emitter (cpp.py).

conv: direct loops, out[n, co, o...] = sum over the group's input channels and the kernel taps of
x[n, g * cin_g + ci, o * stride - pad_lo + k * dilation] * w[co, ci, k], skipping taps in the padding, summed in
float in that order; + bias, relu, one rounding to the output dtype.

random: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), keyed by the seed
(key[0] = k1:k0) with counter (block_lo, block_hi, c_lo, c_hi), where c = counter[1] and the block is the
element's row-major index divided by 4 (uniform: word index % 4) or by 2 (normal: words 2 (index % 2) and
2 (index % 2) + 1, Box-Muller). Each element is a pure function of (seed, counter, index): the result does not
depend on threads or tiling. verify/conv_random.py computes the same numbers with numpy.
"""
from __future__ import annotations

from ..ir.nodes import Op
from .templates import ctype

PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57   # the Philox4x32 multipliers
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85   # the key bumps (golden ratio, sqrt(3) - 1)
UNIFORM_BITS = {"DT_FP32": 24, "DT_FP16": 11, "DT_BF16": 8}   # significand bits: k * 2^-bits is exact, < 1

_PHILOX_CPP = (
    "auto {f} = [](uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1, int w) {{"
    " for (int r = 0; r < 10; ++r) {{"
    " const uint64_t p0 = (uint64_t)" + str(PHILOX_M0) + "u * c0, p1 = (uint64_t)" + str(PHILOX_M1) + "u * c2;"
    " const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;"
    " c1 = (uint32_t)p1; c3 = (uint32_t)p0; c0 = n0; c2 = n2;"
    " k0 += " + str(PHILOX_W0) + "u; k1 += " + str(PHILOX_W1) + "u; }}"
    " return w == 0 ? c0 : w == 1 ? c1 : w == 2 ? c2 : c3; }};")


class ConvRandomEmitter:
    def op_conv(self, op: Op):
        out, x, w = op.out, op.ins[0], op.ins[1]
        a = op.attrs
        nd = len(x.shape) - 2
        self.alloc(out.storage)
        xp, wp = self.ptr(x, const=True), self.ptr(w, const=True)
        bp = self.ptr(op.ins[2], const=True) if a["bias"] else None
        cin_g = w.shape[1]
        ivars, opened = self.nest(out.shape, None, ivdep=False)
        n, co, os_ = ivars[0], ivars[1], ivars[2:]
        acc, ci = self.fresh("acc"), self.fresh("ci")
        self.line(f"float {acc} = {f'pypto_rt::Cvt<float>::from({bp}[{self.index(op.ins[2], [co])}])' if bp else '0.0f'};")
        self.open(f"for (int64_t {ci} = 0; {ci} < {cin_g}; ++{ci})")
        ks, pos = [], []
        for i in range(nd):
            k, p = self.fresh("k"), self.fresh("p")
            self.open(f"for (int64_t {k} = 0; {k} < {w.shape[2 + i]}; ++{k})")
            self.line(f"const int64_t {p} = {os_[i]} * {a['strides'][i]} - {a['paddings'][2 * i]} + "
                      f"{k} * {a['dilations'][i]};")
            self.line(f"if ({p} < 0 || {p} >= {self.dim(x.shape[2 + i])}) continue;")
            ks.append(k)
            pos.append(p)
        chan = ci if a["groups"] == 1 else f"({co} / {w.shape[0] // a['groups']} * {cin_g} + {ci})"
        xi = self.index(x, [n, chan] + pos)
        wi = self.index(w, [co, ci] + ks)
        self.line(f"{acc} += pypto_rt::Cvt<float>::from({xp}[{xi}]) * pypto_rt::Cvt<float>::from({wp}[{wi}]);")
        self.close(1 + nd)
        if a["relu"]:
            self.line(f"if (!({acc} > 0.0f)) {acc} = {acc} != {acc} ? {acc} : 0.0f;")
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = pypto_rt::Cvt<{ctype(out.dtype)}>::from({acc});")
        self.close(opened)

    def op_random(self, op: Op):
        out = op.out
        a = op.attrs
        self.alloc(out.storage)
        f = self.fresh("philox")
        self.line(_PHILOX_CPP.format(f=f))
        seed, ctr = a["seed"], a["counter"]
        k = f"(uint32_t){seed & 0xffffffff}u, (uint32_t){seed >> 32}u"
        c = f"(uint32_t){ctr & 0xffffffff}u, (uint32_t){ctr >> 32}u"
        ivars, opened = self.nest(out.shape, None, ivdep=False)
        idx, v = self.fresh("idx"), self.fresh("v")
        lin = "0"
        for d, iv in zip(out.shape, ivars):
            lin = f"({lin}) * {d} + {iv}"
        self.line(f"const uint64_t {idx} = (uint64_t)({lin});")
        if a["dist"] == "uniform":
            bits = UNIFORM_BITS[out.dtype.name]
            blk = f"{idx} >> 2"
            self.line(f"const float {v} = (float)({f}((uint32_t)({blk}), (uint32_t)(({blk}) >> 32), {c}, {k}, "
                      f"(int)({idx} & 3)) >> {32 - bits}) * {2.0 ** -bits!r}f;")
        else:
            blk, u1, u2 = f"{idx} >> 1", self.fresh("u"), self.fresh("u")
            wsel = f"2 * (int)({idx} & 1)"
            args = f"(uint32_t)({blk}), (uint32_t)(({blk}) >> 32), {c}, {k}"
            self.line(f"const double {u1} = ((double){f}({args}, {wsel}) + 1.0) * 0x1p-32;")
            self.line(f"const double {u2} = (double){f}({args}, {wsel} + 1) * 0x1p-32;")
            self.line(f"const float {v} = (float)(__builtin_sqrt(-2.0 * __builtin_log({u1})) * "
                      f"__builtin_cos(6.283185307179586 * {u2}));")
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = pypto_rt::Cvt<{ctype(out.dtype)}>::from({v});")
        self.close(opened)
