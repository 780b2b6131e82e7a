"""The fused generator: each group of fuse.py runs tile by tile (rows of the group's row axis), in tile buffers,
on the process-wide thread pool when the group is large.

Every value keeps the unfused semantics bit for bit: each op converts its result to its dtype (Cvt) exactly as
the unfused store does, reductions use the same lane order (lanes.py), and nothing is contracted
(-ffp-contract=off). Only where values live changes: inlined into their consumer's expression, a tile buffer, or
(read after the group) the whole temporary the unfused code would have allocated, filled tile by tile.
Tiles write disjoint rows and nothing combines across tiles, so the result is the same for any thread count.
"""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT
from ..ir import sym as S
from ..ir.nodes import Assign, Op, Value, same_dim
from .cpp import _Emitter
from .flat import Flat, check_flat, flat_start
from .fuse import Group, same_view, plan_block, readers, row_dim_of
from .lanes import emit_reduce
from .machine import stream_min_bytes
from .templates import ctype, ew_store

TILE_BUFFER_BUDGET = 192 * 1024    # bytes of tile buffers per tile (L2-resident; on the stack when static)
TILE_TARGET_ELEMS = 8192           # elements per tile when set_vec_tile_shapes does not say
PARALLEL_MIN_WORK = 65536          # elements; kernel_par.h's PARALLEL_MIN_WORK (no pool below it)
TILE_L1_BYTES = 8 * 1024           # a tile's buffers + the input rows it reads stay within this (a sixth of L1)
PREFETCH_BLOCK = 64                # elements per prefetch request of the next tile's rows (4 lines of fp32)
PREFETCH_AHEAD = 8192              # bytes of rows ahead a one-pass row reduction requests (_prefetch_plan)


def _is1(d) -> bool:
    return isinstance(d, int) and d == 1


class FusedEmitter(_Emitter):
    def __init__(self, kernel):
        super().__init__(kernel)
        self.uses = readers(kernel)
        self.threaded = False

    def block(self, block):
        if self.debug >= 4:          # bounds checks are per statement: keep the unfused code
            return super().block(block)
        items = plan_block(block.stmts, self.uses)
        i = 0
        while i < len(items):
            it = items[i]
            if i + 1 < len(items) and self.matmul_into(it, items[i + 1]):
                i += 2
                continue
            if isinstance(it, Group):
                self.group(it)
            else:
                self.stmt(it)
            i += 1

    def matmul_into(self, op, nxt) -> bool:
        """`dst[...] = matmul(a, b)` (fp32 result, a 2-D dst with contiguous rows, the product read nowhere else):
        gemm accumulates straight into dst instead of a zeroed temporary that is then copied: the same sums in
        the same order, so the same bits. Only when dst's memory overlaps neither input (checked at run time:
        parameters may alias); otherwise the temporary path."""
        if not (isinstance(op, Op) and op.kind == "matmul" and isinstance(nxt, Group) and len(nxt.stmts) == 1):
            return False
        st = nxt.stmts[0]
        out = op.out
        if not (isinstance(st, Assign) and isinstance(st.src, Value) and st.src.storage.sid == out.storage.sid
                and len(out.shape) == 2 and DT(out.dtype) == DT.DT_FP32 == DT(op.attrs["ct"])
                and [id(u) for u in self.uses.get(out.storage.sid, ())] == [id(st)]):
            return False
        src, dst = st.src, st.dst
        if not (same_view(src, out) and DT(dst.dtype) == DT.DT_FP32 and len(dst.shape) == 2
                and all(same_dim(x, y) for x, y in zip(dst.shape, out.shape))
                and isinstance(dst.strides[-1], int) and dst.strides[-1] == 1):
            return False
        a, b = op.ins
        qd = self.ptr(dst, const=False)

        def span(v, q):
            end = " + ".join([q, "1"] + [f"(({self.dim(d)}) - 1) * ({S.to_cpp(s)})" for d, s in zip(v.shape, v.strides)])
            return f"(const void*){q}, (const void*)({end})"

        qa, qb = self.ptr(a, const=True), self.ptr(b, const=True)
        self.open(f"if (!pypto_rt::overlaps({span(dst, qd)}, {span(a, qa)}) && "
                  f"!pypto_rt::overlaps({span(dst, qd)}, {span(b, qb)}))")
        self.op_matmul(op, into=(qd, S.to_cpp(dst.strides[-2])))
        self.ind -= 1
        self.open("} else")
        self.stmt(op)
        self.group(nxt)
        self.close()
        return True

    # ---- sizes ----------------------------------------------------------------------------------------------
    def _row_elems(self, g: Group, st):
        """Elements per row of st's domain (int when static, else None)."""
        dom, ax = g.domain(st), g.axis[id(st)]
        n = 1
        for k, d in enumerate(dom):
            if k == ax:
                continue
            if not isinstance(d, int):
                return None
            n *= d
        return n

    def _buf_dims(self, g: Group, sid, T):
        op, ax = g.made[sid]
        dims = []
        for k, (d, c) in enumerate(zip(op.out.shape, op.out.cap)):
            dims.append(T if k == ax else (c if c is not None else d))
        return dims

    def tile_rows(self, g: Group) -> int:
        user = None
        if g.tile:
            for st in g.stmts:
                if not isinstance(st, Assign) and st.attrs.get("tile") == g.tile:
                    r, a = len(g.domain(st)), g.axis[id(st)]
                    if len(g.tile) >= r - a:
                        user = g.tile[-(r - a)]
                    break
        per_row = [self._row_elems(g, st) for st in g.stmts]
        known = [n for n in per_row if n is not None]
        elems = max(known) if known else 1024
        T = user or max(1, TILE_TARGET_ELEMS // max(elems, 1))
        row_bytes = 0
        for sid in g.buffer:
            op = g.made[sid][0]
            n = 1
            for x in self._buf_dims(g, sid, 1):
                n *= x if isinstance(x, int) else 1024
            row_bytes += n * op.out.dtype.itemsize
        if row_bytes:
            T = min(T, max(1, TILE_BUFFER_BUDGET // row_bytes))
        # A tile's working set (its buffers and the input rows its passes read) kept well inside L1: every pass
        # after the first reads from L1, and the next tile's prefetch (below) stays a few KB ahead. The row count
        # of a tile changes where values live, never what is computed (tiles are disjoint rows).
        in_bytes = 0
        for views in g.read_ext.values():
            per_sid = 0
            for v, k in views:
                if k is None:
                    continue
                n = 1
                for j, x in enumerate(v.shape):
                    if j != k:
                        n *= x if isinstance(x, int) else 1024
                per_sid = max(per_sid, n * v.dtype.itemsize)
            in_bytes += per_sid
        if (row_bytes + in_bytes) and len(self._passes(g)) > 1:
            T = min(T, max(1, TILE_L1_BYTES // (row_bytes + in_bytes)))
        ub = S.upper_bound(g.n0)
        if isinstance(ub, int) and ub > 0:
            T = min(T, ub)
        return max(1, T)

    @staticmethod
    def _passes(g: Group) -> list:
        """The statements of g that loop over the tile (the others are inlined into their consumers). With one
        pass nothing is read twice, so the tile need not stay in L1: it keeps TILE_TARGET_ELEMS elements, which
        the loop's remainder and the per-tile work then become small against."""
        return [st for st in g.stmts if isinstance(st, Assign) or st.kind == "reduce"
                or st.out.storage.sid in g.buffer or st.out.storage.sid in g.escape]

    # ---- values ---------------------------------------------------------------------------------------------
    def _align(self, v: Value, idx: list) -> list:
        """Indices of v's dims for a use in a domain indexed by idx (numpy right alignment; size-1 dims: 0)."""
        lead = len(idx) - len(v.shape)
        out = []
        for k, d in enumerate(v.shape):
            out.append(None if _is1(d) else idx[lead + k])
        return out

    def _offset(self, strides, idx, local: bool, ahead: int = 0, shape=None) -> str:
        first = check_flat(strides, idx, shape) if any(isinstance(e, Flat) for e in idx) else None
        terms = []
        for d, (s, e) in enumerate(zip(strides, idx)):
            if isinstance(e, Flat):       # the run's row (outermost) and its element (innermost stride)
                if d == first and e.is_row and not local:
                    terms.append(f"{self.r0} * {S.to_cpp(s)}")
                if e.pos == e.count - 1:
                    terms.append(e.var if (isinstance(s, int) and s == 1) else f"{e.var} * {S.to_cpp(s)}")
                continue
            if e is None or (isinstance(s, int) and s == 0):
                continue
            var, is_row = e
            r0 = f"{self.r0} + {ahead}" if ahead else self.r0
            x = f"({r0} + {var})" if (is_row and not local) else var
            terms.append(x if (isinstance(s, int) and s == 1) else f"{x} * {S.to_cpp(s)}")
        return " + ".join(terms) if terms else "0"

    def load(self, v: Value, idx: list) -> str:
        """C++ expression of v's element (v's own dtype) at idx (one entry per dim of v)."""
        g = self.g
        sid = v.storage.sid
        m = g.made.get(sid)
        if m is None:
            return f"{self.ptrs[id(v)]}[{self._offset(v.strides, idx, False, shape=v.shape)}]"
        op = m[0]
        if sid in g.buffer:
            return f"{self.bufs[sid][0]}[{self._offset(self.bufs[sid][1], idx, True, shape=v.shape)}]"
        if sid in g.escape:
            return f"{v.storage.cname}[{self._offset(op.out.strides, idx, False, shape=v.shape)}]"
        return self.ew_value(op, idx)

    def ew_value(self, op, idx: list) -> str:
        raw, args = [], []
        for j, (a, ct) in enumerate(zip(op.ins, op.attrs["cts"])):
            if isinstance(a, Value):
                e = self.load(a, self._align(a, idx))
                raw.append(e)
                args.append(e if ct is None else f"pypto_rt::Cvt<{ctype(ct)}>::from({e})")
            else:
                raw.append(None)
                args.append(self.consts[(id(op), j)])
        return ew_store(op.attrs["fn"], op.ins, op.attrs["cts"], op.out.dtype, raw, args, self.hoist)

    def store_target(self, sid, idx: list) -> str:
        g = self.g
        op = g.made[sid][0]
        if sid in g.buffer:
            name, strides = self.bufs[sid]
            return f"{name}[{self._offset(strides, idx, True, shape=op.out.shape)}]"
        return f"{op.out.storage.cname}[{self._offset(op.out.strides, idx, False, shape=op.out.shape)}]"

    # ---- loops ----------------------------------------------------------------------------------------------
    def _domain_nest(self, dom, axis, dims=None):
        """Loops over dom (or the dims listed in `dims`) with the row axis limited to the tile; returns
        (index entries per dim of dom (None for dims not looped), opened)."""
        idx = [None] * len(dom)
        ks = list(range(len(dom))) if dims is None else dims
        opened = 0
        for n, k in enumerate(ks):
            v = self.fresh("i")
            hi = self.nr if k == axis else self.dim(dom[k])
            if n == len(ks) - 1:
                self.line("#pragma GCC ivdep")
            self.open(f"for (int64_t {v} = 0; {v} < {hi}; ++{v})")
            idx[k] = (v, k == axis)
            opened += 1
        return idx, opened

    def _elementwise(self, dom, axis, stmt):
        """Loops over all of dom, the innermost through elem_loop: stmt(idx) is the one-line statement of an
        element. Where every access of the statement is contiguous over the trailing dims (flat.py), those dims run
        as one loop."""
        k = len(dom) - 1
        if k < 0:
            self.line(stmt([]))
            return
        j = flat_start(dom, axis, stmt)
        if j is not None:
            idx, opened = self._domain_nest(dom, axis, list(range(j)))
            v = self.fresh("i")
            count = k + 1 - j
            for n, d in enumerate(range(j, k + 1)):
                idx[d] = Flat(v, d == axis, n, count)
            ext = " * ".join(f"(int64_t)({self.nr if d == axis else self.dim(dom[d])})" for d in range(j, k + 1))
            self.elem_loop(v, "0", ext, lambda: stmt(idx))
            self.close(opened)
            return
        idx, opened = self._domain_nest(dom, axis, list(range(k)))
        v = self.fresh("i")
        idx[k] = (v, k == axis)
        self.elem_loop(v, "0", self.nr if k == axis else self.dim(dom[k]), lambda: stmt(idx))
        self.close(opened)

    # ---- the next tile's rows --------------------------------------------------------------------------------
    def _prefetch_plan(self, g: Group, T: int):
        """Where the next tile's input rows are requested: in the group's second pass over whole rows (the first
        brings this tile's rows from memory; the second reads them from L1 and computes, the exp of a softmax, the
        variance of a layernorm). Requests spread over that pass keep memory busy while it computes, and the next
        tile's first pass finds its rows in the cache. Returns (statement, [(view, pointer)], rows ahead) or None:
        one-pass groups other than a row reduction (streaming maps: the hardware prefetcher keeps up), rows of fewer
        than PREFETCH_BLOCK elements, inputs whose rows are not contiguous along the last dim."""
        per_row = [self._row_elems(g, st) for st in g.stmts]
        known = [n for n in per_row if n is not None]
        if not known or max(known) < PREFETCH_BLOCK:
            return None
        top = max(known)
        passes = [st for st, n in zip(g.stmts, per_row)        # statements that loop (not inlined ones)
                  if n == top and g.axis[id(st)] != len(g.domain(st)) - 1
                  and (isinstance(st, Assign) or st.kind == "reduce"
                       or st.out.storage.sid in g.buffer or st.out.storage.sid in g.escape)]
        one_pass = len(passes) == 1
        if not passes or (one_pass and (isinstance(passes[0], Assign) or passes[0].kind != "reduce")):
            return None
        st = passes[0] if one_pass else passes[1]
        dom, ax = g.domain(st), g.axis[id(st)]
        if not isinstance(st, Assign) and st.kind == "reduce" and list(st.attrs["dims"]) != [len(dom) - 1]:
            return None
        targets, seen = [], set()
        for views in g.read_ext.values():
            for v, k in views:
                q = self.ptrs.get(id(v))
                if (k is None or q is None or q in seen or k == len(v.shape) - 1 or len(v.shape) > len(dom)
                        or k + len(dom) - len(v.shape) != ax or _is1(v.shape[-1])
                        or not (isinstance(v.strides[-1], int) and v.strides[-1] == 1)):
                    continue
                seen.add(q)
                targets.append((v, q))
        if not targets:
            return None
        if one_pass:
            # a one-pass row reduction (sum / amax / prod along the last dim) has no second pass to hide the next
            # tile's misses behind, and the hardware prefetcher stops at each 4 KiB page, so a row of 1024 fp32
            # (one page) starts cold. Its requests run PREFETCH_AHEAD bytes of rows ahead instead of one tile: a
            # 4096 x 1024 fp32 row sum in C++, 1 thread, after 16 MiB of other traffic: 0.41 ms, 1 row ahead 0.44,
            # 2 rows (8 KiB) 0.33, 4 rows 0.34 (torch's sum 0.32 on the same input)
            row = top * max(v.dtype.itemsize for v, _q in targets)
            T = max(T, -(-PREFETCH_AHEAD // row))
        return st, targets, T

    def _prefetch(self, st, idx: list, j: str, n: int):
        """Prefetch requests for the next tile's elements [j, j + n) of the row at idx (st's domain)."""
        if self.pf is None or self.pf[0] is not st:
            return
        _, targets, T = self.pf
        for v, q in targets:
            full = list(idx)
            full[-1] = (j, False)
            off = self._offset(v.strides, self._align(v, full), False, ahead=T)
            nbytes = max(64, (n * v.dtype.itemsize + 63) // 64 * 64)
            self.line(f"pypto_rt::prefetch_at<{nbytes}>({q}, {off});")

    def _last_dim_loop(self, st, idx: list, n: str, body):
        """The loop over the last dim of st's domain (idx: the outer entries; the last is filled here) whose
        statement is body(idx) (elem_loop); in blocks of PREFETCH_BLOCK elements with the next tile's requests
        when st is the prefetching pass."""
        k = len(idx) - 1
        v = self.fresh("i")
        if self.pf is None or self.pf[0] is not st:
            idx[k] = (v, False)
            self.elem_loop(v, "0", n, lambda: body(idx))
            return
        j, e = self.fresh("j"), self.fresh("e")
        self.open(f"for (int64_t {j} = 0; {j} < {n}; {j} += {PREFETCH_BLOCK})")
        self._prefetch(st, idx, j, PREFETCH_BLOCK)
        self.line(f"const int64_t {e} = pypto_rt::imin((int64_t)({j} + {PREFETCH_BLOCK}), (int64_t)({n}));")
        idx[k] = (v, False)
        self.elem_loop(v, j, e, lambda: body(idx))
        self.close()

    # ---- one group ------------------------------------------------------------------------------------------
    def group(self, g: Group):
        self.g = g
        self.line(f"// fused: {len(g.stmts)} statement(s), tiled along rows")
        for st in g.stmts:                      # whole temporaries for values read after the group
            if not isinstance(st, Assign) and st.out.storage.sid in g.escape:
                self.alloc(st.out.storage)
        self.line("{")
        self.ind += 1
        written = set(g.written)
        self.ptrs, self.consts = {}, {}
        for st in g.stmts:
            ins = [st.src] if isinstance(st, Assign) else st.ins
            for j, a in enumerate(ins):
                if isinstance(a, Value):
                    if a.storage.sid not in g.made and id(a) not in self.ptrs:
                        self.ptrs[id(a)] = self.ptr(a, const=True, restrict=a.storage.sid not in written)
                elif isinstance(st, Assign):
                    self.consts[(id(st), 0)] = self.scalar_const(a, st.dst.dtype)
                else:
                    self.consts[(id(st), j)] = self.scalar_const(a, st.attrs["cts"][j])
            if isinstance(st, Assign):
                self.ptrs[id(st.dst)] = self.ptr(st.dst, const=False)
        T = self.tile_rows(g)
        n0 = self.dim(g.n0)
        nt_name = self.fresh("ntiles")
        self.line(f"const int64_t {nt_name} = ({n0} + {T - 1}) / {T};")
        per_row = [self._row_elems(g, st) for st in g.stmts]
        static_work = None
        if isinstance(g.n0, int) and all(n is not None for n in per_row):
            static_work = g.n0 * max(per_row)
        serial = self.parallel_depth > 0 or (static_work is not None and static_work < PARALLEL_MIN_WORK)
        if serial:
            self.tile_loop(g, T, nt_name, "0", nt_name)
        else:
            self.threaded = True
            last = g.stmts[-1]
            work = S.to_cpp(static_work) if static_work is not None else " * ".join(
                [f"(int64_t)({n0})"] + [f"(int64_t)({self.dim(d)})" for k, d in enumerate(g.domain(last))
                                        if k != g.axis[id(last)]])
            nt, np_, part = self.fresh("nt"), self.fresh("np"), self.fresh("part")
            self.line(f"const int32_t {nt} = ({work}) >= {PARALLEL_MIN_WORK} ? ctx->num_threads : 1;")
            self.line(f"const int64_t {np_} = {nt} > 1 ? pypto_rt::imin({nt_name}, (int64_t){nt} * 4) : 1;")
            body = self.fresh("tiles")
            self.line(f"auto {body} = [&](int64_t {part}) -> int {{")
            self.ind += 1
            self.tile_loop(g, T, nt_name, f"{nt_name} * {part} / {np_}", f"{nt_name} * ({part} + 1) / {np_}")
            self.line("return 0;")
            self.ind -= 1
            self.line("};")
            rc = self.fresh("rc")
            self.line(f"const int {rc} = pypto_rt::run_parts({np_}, {nt}, {body});")
            self.line(f"if ({rc}) return {rc};")
        self.close()
        self.g = None

    def tile_loop(self, g: Group, T: int, ntiles: str, t0: str, t1: str):
        self.bufs = {}
        total = 0
        for st in g.stmts:                      # tile buffers: once per part, reused by its tiles
            if isinstance(st, Assign) or st.out.storage.sid not in g.buffer:
                continue
            sid = st.out.storage.sid
            dims = self._buf_dims(g, sid, T)
            strides, acc = [], 1
            for d in reversed(dims):
                strides.append(acc)
                acc = S.mul(acc, d)
            strides.reverse()
            name = self.fresh("tb")
            ct, isz = ctype(st.out.dtype), st.out.dtype.itemsize
            if isinstance(acc, int) and acc * isz <= TILE_BUFFER_BUDGET and total + acc * isz <= TILE_BUFFER_BUDGET:
                total += acc * isz
                self.line(f"alignas(64) {ct} {name}[{max(acc, 1)}];")
            else:
                self.line(f"pypto_rt::Scratch {name}_s((pypto_rt::size_t)({S.to_cpp(acc)}) * sizeof({ct}));")
                self.line(f"{ct}* {name} = ({ct}*){name}_s.p;")
            self.bufs[sid] = (name, strides)
        self.pf = self._prefetch_plan(g, T)
        tt = self.fresh("tt")
        self.streamed = False
        self.r0, self.nr = self.fresh("r0"), self.fresh("nr")
        self.open(f"for (int64_t {tt} = {t0}; {tt} < {t1}; ++{tt})")
        self.line(f"const int64_t {self.r0} = {tt} * {T};")
        self.line(f"const int64_t {self.nr} = pypto_rt::imin((int64_t){T}, {self.dim(g.n0)} - {self.r0});")
        for st in g.stmts:
            if isinstance(st, Assign):
                self.fused_assign(g, st)
            elif st.kind == "reduce":
                self.fused_reduce(g, st)
            elif st.out.storage.sid in g.buffer or st.out.storage.sid in g.escape:
                self.fused_ew(g, st)
        self.close()
        if self.streamed:                       # this part's streaming stores land before it reports done
            self.line("pypto_rt::stream_fence();")

    def fused_ew(self, g: Group, op):
        dom, ax = op.out.shape, g.axis[id(op)]
        def stmt(ix):
            return f"{self.store_target(op.out.storage.sid, ix)} = {self.ew_value(op, ix)};"

        if self.pf is None or self.pf[0] is not op:
            self._elementwise(dom, ax, stmt)
            return
        k = len(dom) - 1
        idx, opened = self._domain_nest(dom, ax, list(range(k)))
        self._last_dim_loop(op, idx, self.dim(dom[k]), stmt)
        self.close(opened)

    def streams(self, g: Group, st: Assign) -> bool:
        """Whether st's write uses streaming stores: a static output of at least stream_min_bytes() whose last dim
        is contiguous and that nothing in the group reads (it would come back from memory, not the cache), in a
        group with a reduction (softmax, norms: rows computed at length, then written). A pure elementwise map
        keeps plain stores: on the AMD EPYC (Zen 4) machines streaming made them 1.2-1.4x slower (neg / abs /
        reciprocal fp32 4096x1024, 1 thread: 1.27-1.40 ms streaming vs 0.97-1.16 plain, torch 0.9-1.0), where it
        saved 5-20% for softmax (1.35-1.40 vs 1.71-2.02 ms) and layernorm (0.97-0.98 vs 1.04-1.23); axpy is
        even there (1.52-1.75 vs 1.58-1.76; on an earlier Intel machine streaming gave it 12%)."""
        if not any(isinstance(s, Op) and s.kind == "reduce" for s in g.stmts):
            return False
        dst = st.dst
        n = 1
        for d in dst.shape:
            if not isinstance(d, int):
                return False
            n *= d
        last = dst.strides[-1]
        return (n * dst.dtype.itemsize >= stream_min_bytes() and isinstance(last, int) and last == 1
                and 64 % dst.dtype.itemsize == 0 and dst.storage.sid not in g.read_ext)

    def fused_assign(self, g: Group, st: Assign):
        dst = st.dst
        ax = g.axis[id(st)]

        def rhs(idx):
            if isinstance(st.src, Value):
                return self.load(st.src, self._align(st.src, idx))
            return self.consts[(id(st), 0)]

        def stmt(ix):
            return f"{self.ptrs[id(dst)]}[{self._offset(dst.strides, ix, False, shape=dst.shape)}] = {rhs(ix)};"

        if not self.streams(g, st):
            if self.pf is not None and self.pf[0] is st:
                k = len(dst.shape) - 1
                idx, opened = self._domain_nest(dst.shape, ax, list(range(k)))
                self._last_dim_loop(st, idx, self.dim(dst.shape[k]), stmt)
                self.close(opened)
            else:
                self._elementwise(dst.shape, ax, stmt)
            return
        # a contiguous run along the last dim that starts on a 64-byte line and is whole lines: computed a line
        # at a time into a register-sized block and streamed; any other run (odd width, unaligned view): plain
        k = len(dst.shape) - 1
        idx, opened = self._domain_nest(dst.shape, ax, list(range(k))) if k else ([None], 0)
        row = k == ax
        ct, per = ctype(dst.dtype), 64 // dst.dtype.itemsize
        d, n, j, l, v = self.fresh("d"), self.fresh("n"), self.fresh("j"), self.fresh("l"), self.fresh("v")

        def at(var):
            full = list(idx)
            full[k] = (var, row)
            return full

        self.line(f"{ct}* __restrict {d} = {self.ptrs[id(dst)]} + {self._offset(dst.strides, at('0'), False)};")
        self.line(f"const int64_t {n} = {self.nr if row else self.dim(dst.shape[k])};")
        self.open(f"if (pypto_rt::stream_ok({d}, {n} * (int64_t)sizeof({ct})))")
        # four lines a block (an exp block of elem_loop for fp32), then the run's last lines one at a time
        self.line(f"int64_t {j} = 0;")
        for size, cond in ((4 * per, f"{j} + {4 * per} <= {n}"), (per, f"{j} < {n}")):
            self.open(f"for (; {cond}; {j} += {size})")
            if not row:
                self._prefetch(st, idx, j, size)
            self.line(f"alignas(64) {ct} {v}[{size}];")
            self.elem_loop(l, "0", str(size), lambda: f"{v}[{l}] = {rhs(at(f'({j} + {l})'))};")
            if size == per:
                self.line(f"pypto_rt::stream64({d} + {j}, {v});")
            else:
                b = self.fresh("b")
                self.line(f"for (int {b} = 0; {b} < {size}; {b} += {per}) pypto_rt::stream64({d} + {j} + {b}, {v} + {b});")
            self.close()
        self.ind -= 1
        self.open("} else")
        self.elem_loop(j, "0", n, lambda: f"{d}[{j}] = {rhs(at(j))};")
        self.close()
        self.close(opened)
        self.streamed = True

    def fused_reduce(self, g: Group, op):
        t, out = op.ins[0], op.out
        dims, keepdim, ct = op.attrs["dims"], op.attrs["keepdim"], op.attrs["ct"]
        ax = g.axis[id(op)]
        keep = [k for k in range(len(t.shape)) if k not in dims]
        idx, opened = self._domain_nest(t.shape, ax, keep) if keep else ([None] * len(t.shape), 0)
        cts = ctype(ct)

        def load(rvars):
            full = list(idx)
            for k, v in zip(dims, rvars):
                full[k] = (v, False)
            return f"pypto_rt::Cvt<{cts}>::from({self.load(t, self._align(t, full))})"

        oidx = [idx[k] if k in keep else None for k in range(len(t.shape))] if keepdim else [idx[k] for k in keep]
        target = self.store_target(out.storage.sid, oidx)

        def store(acc):
            self.line(f"{target} = pypto_rt::Cvt<{ctype(out.dtype)}>::from({acc});")

        def each_block(j, n):
            full = list(idx)
            full[-1] = (j, False)
            self._prefetch(op, full, j, n)

        emit_reduce(self, op.attrs["fn"], ct, [self.dim(t.shape[k]) for k in dims], load, store,
                    each_block if (self.pf is not None and self.pf[0] is op) else None)
        self.close(opened)


def uses_gemm(kernel) -> bool:
    return _any_op(kernel.body, lambda op: op.kind == "matmul" and DT(op.attrs["ct"]) == DT.DT_FP32)


def _any_op(block, pred) -> bool:
    from ..ir.nodes import Op

    for st in block.stmts:
        if isinstance(st, Op) and pred(st):
            return True
        for sub in ("body", "then", "orelse"):
            b = getattr(st, sub, None)
            if b is not None and hasattr(b, "stmts") and _any_op(b, pred):
                return True
        for part in getattr(st, "parts", ()) or ():
            if _any_op(part[2], pred):
                return True
    return False


__all__ = ["FusedEmitter", "uses_gemm", "row_dim_of"]
