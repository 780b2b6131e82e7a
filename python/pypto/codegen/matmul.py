"""Emitter of `matmul` (language/reduce.py): fp32 through the packed gemm of kernel_gemm.h on the thread pool,
fp64 and integers as a blocked i-k-j nest (set_cube_tile_shapes). A mixin of the unfused emitter (cpp.py)."""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT
from ..ir import sym as S
from ..ir.nodes import Op
from .templates import ctype

DEFAULT_MM_TILE = (64, 256, 256)   # (m0, k0, n0) when set_cube_tile_shapes was not called


class MatmulEmitter:
    def op_matmul(self, op: Op, into=None):
        """into: (pointer, row stride) of a 2-D float32 destination to accumulate in instead of op's own storage
        (the fused emitter passes the tensor a following `dst[...] = matmul` writes, when it overlaps no input)."""
        out = op.out
        a, b = op.ins
        if into is None:
            self.alloc(out.storage)
        ctd = op.attrs["ct"]
        ct = ctype(ctd)
        tile = op.attrs.get("tile")
        tm, tk, tn = (tile["m"][0], tile["k"][0], tile["n"][0]) if tile else DEFAULT_MM_TILE
        M, K, N = self.dim(a.shape[-2]), self.dim(a.shape[-1]), self.dim(b.shape[-1])
        ap, bp = self.ptr(a, const=True), self.ptr(b, const=True)
        batched = len(out.shape) == 3
        direct = DT(out.dtype) == DT(ctd)
        if into is not None:
            acc, acc_s0 = into
        elif direct:
            acc, acc_s0 = out.storage.cname, S.to_cpp(out.strides[-2])
            acc_b = S.to_cpp(out.strides[0]) if batched else "0"
        else:
            acc = self.fresh("macc")
            mc, nc = out.cap[-2], out.cap[-1]
            static = mc * nc if (mc is not None and nc is not None) else None
            self.alloc_raw(acc, ct, DT(ctd).itemsize, static, f"(pypto_rt::size_t)({M}) * (pypto_rt::size_t)({N})")
            acc_s0 = nc if static is not None else N
            acc_b = "0"
        bi = "0"
        opened = 0
        if batched:
            bi = self.fresh("bi")
            self.open(f"for (int64_t {bi} = 0; {bi} < {self.dim(out.shape[0])}; ++{bi})")
            opened += 1

        def bstride(v):
            return "0" if len(v.shape) == 2 else (f"{bi} * {S.to_cpp(v.strides[0])}"
                                                   if not (isinstance(v.shape[0], int) and v.shape[0] == 1)
                                                   else "0")

        ab, bb = bstride(a), bstride(b)
        obase = f"{bi} * {acc_b}" if batched else "0"
        i, j, k = self.fresh("i"), self.fresh("j"), self.fresh("k")
        if DT(ctd) == DT.DT_FP32:
            # packed, register-blocked kernel (kernel_gemm.h), cache blocks (m0, k0, n0), on the pool
            self.gemm = self.threaded = True
            nt = "1" if self.parallel_depth else "ctx->num_threads"
            rc = self.fresh("rc")
            self.line(f"const int {rc} = pypto_rt::gemm_f32((int64_t)({M}), (int64_t)({N}), (int64_t)({K}), "
                      f"{ap} + {ab}, {S.to_cpp(a.strides[-2])}, {S.to_cpp(a.strides[-1])}, {bp} + {bb}, "
                      f"{S.to_cpp(b.strides[-2])}, {S.to_cpp(b.strides[-1])}, {acc} + {obase}, {acc_s0}, "
                      f"{tm}, {tk}, {tn}, {nt});")
            self.line(f"if ({rc}) return {rc};")
        else:
            self.matmul_loops(a, b, ap, bp, ab, bb, acc, acc_s0, obase, ct, M, N, K, tm, tk, tn)
        if not direct:
            self.open(f"for (int64_t {i} = 0; {i} < {M}; ++{i})")
            self.line("#pragma GCC ivdep")
            self.open(f"for (int64_t {j} = 0; {j} < {N}; ++{j})")
            ob = f"{bi} * {S.to_cpp(out.strides[0])} + " if batched else ""
            self.line(f"{out.storage.cname}[{ob}{i} * {S.to_cpp(out.strides[-2])} + {j}] = "
                      f"pypto_rt::Cvt<{ctype(out.dtype)}>::from({acc}[{i} * {acc_s0} + {j}]);")
            self.close(2)
        self.close(opened)

    def matmul_loops(self, a, b, ap, bp, ab, bb, acc, acc_s0, obase, ct, M, N, K, tm, tk, tn):
        """fp64 / integer matmul: a blocked i-k-j nest (exact for integers; fp64 sums k in order)."""
        i, j, k = self.fresh("i"), self.fresh("j"), self.fresh("k")
        self.open(f"for (int64_t {i} = 0; {i} < {M}; ++{i})")
        self.line("#pragma GCC ivdep")
        self.open(f"for (int64_t {j} = 0; {j} < {N}; ++{j})")
        self.line(f"{acc}[{obase} + {i} * {acc_s0} + {j}] = ({ct})0;")
        self.close(2)
        ib, kb, jb = self.fresh("ib"), self.fresh("kb"), self.fresh("jb")
        ie, ke, je = self.fresh("ie"), self.fresh("ke"), self.fresh("je")
        self.open(f"for (int64_t {ib} = 0; {ib} < {M}; {ib} += {tm})")
        self.line(f"const int64_t {ie} = pypto_rt::imin({ib} + {tm}, (int64_t){M});")
        self.open(f"for (int64_t {kb} = 0; {kb} < {K}; {kb} += {tk})")
        self.line(f"const int64_t {ke} = pypto_rt::imin({kb} + {tk}, (int64_t){K});")
        self.open(f"for (int64_t {jb} = 0; {jb} < {N}; {jb} += {tn})")
        self.line(f"const int64_t {je} = pypto_rt::imin({jb} + {tn}, (int64_t){N});")
        self.open(f"for (int64_t {i} = {ib}; {i} < {ie}; ++{i})")
        self.line(f"{ct}* __restrict crow = {acc} + {obase} + {i} * {acc_s0};")
        self.open(f"for (int64_t {k} = {kb}; {k} < {ke}; ++{k})")
        a_idx = f"{ab} + {i} * {S.to_cpp(a.strides[-2])} + {k} * {S.to_cpp(a.strides[-1])}"
        self.line(f"const {ct} av = pypto_rt::Cvt<{ct}>::from({ap}[{a_idx}]);")
        self.line(f"const auto* __restrict brow = {bp} + {bb} + {k} * {S.to_cpp(b.strides[-2])};")
        bs1 = b.strides[-1]
        bj = j if (isinstance(bs1, int) and bs1 == 1) else f"{j} * {S.to_cpp(bs1)}"
        self.line("#pragma GCC ivdep")
        self.open(f"for (int64_t {j} = {jb}; {j} < {je}; ++{j})")
        self.line(f"crow[{j}] += av * pypto_rt::Cvt<{ct}>::from(brow[{bj}]);")
        self.close(6)


__all__ = ["MatmulEmitter"]
