"""The unfused emitter: IR statements -> C++17 loop nests (`source.py` wraps them into the translation unit;
`fused.py` extends this emitter to run groups of ops tile by tile).
Codegen model: a tensor value is (pointer, dims, strides). Dims and strides are printed as C++ expressions,
so static sizes become literals that g++ can unroll/vectorize and DYNAMIC sizes read the argument's shape.
Views are pointer offsets with the parent's strides; broadcast dims contribute no index term (stride 0).
Op results are fresh contiguous buffers: on the stack when the size is static and small, else an RAII heap
block (pypto_rt::Buffer). Elementwise and reduction loop nests are blocked by set_vec_tile_shapes; matmul is
a blocked i-k-j nest (set_cube_tile_shapes). `pypto.loop(parallel=True)` runs its body through
pypto_rt::parallel_for on ctx->num_threads threads; `unroll_list` loops become one sub-loop per factor over a
shared iteration count (the last one is the remainder loop); kernel branches are C++ if/else. With
debug_options.runtime_debug_mode=4 every statement is preceded by bounds checks of the views it touches
(pypto_rt::check_view). The output is deterministic: the same IR gives byte-identical source.
"""
from __future__ import annotations

from ..vocab.dtypes import DataType as DT
from ..ir import sym as S
from ..ir.nodes import (LOCAL, PARAM, TEMP, Assign, Check, If, Kernel, Loop, Op, ScalarRead, Storage, UnrolledLoop,
                        Value)
from .conv_random import ConvRandomEmitter
from .lanes import emit_reduce
from .names import c_string
from .quant import QuantEmitter
from .templates import ctype, ew_expr

STACK_BUFFER_MAX = 64 * 1024       # bytes: a static temporary up to this size lives on the stack
STACK_TOTAL_MAX = 512 * 1024       # bytes of stack temporaries per kernel before spilling to the heap
DEFAULT_MM_TILE = (64, 256, 256)   # (m0, k0, n0) when set_cube_tile_shapes was not called
EXP_BLOCK = 64                     # elements per block of an elementwise loop with float32 exps (elem_loop)


class _Emitter(QuantEmitter, ConvRandomEmitter):
    def __init__(self, kernel: Kernel):
        self.k = kernel
        self.lines: list[str] = []
        self.ind = 1
        self.n = 0
        self.stack_bytes = 0
        self.parallel_depth = 0
        self.debug = kernel.runtime_debug_mode
        self.threaded = False      # something may run on the thread pool: PYPTO_RT_THREADS
        self.gemm = False          # an fp32-accumulating matmul: PYPTO_RT_GEMM
        self.hoist = None          # set by elem_loop while it builds a statement: ew_expr's `hoist`

    # ---- plumbing -------------------------------------------------------------------------------------------
    def line(self, s: str):
        self.lines.append("  " * self.ind + s)

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def open(self, header: str):
        self.line(header + " {")
        self.ind += 1

    def close(self, n: int = 1):
        for _ in range(n):
            self.ind -= 1
            self.line("}")

    def dim(self, d) -> str:
        """A dim as a C++ expression; non-trivial symbolic ones are hoisted into a const local."""
        if isinstance(d, int):
            return S.to_cpp(d)
        if d.op == "var":
            return S.to_cpp(d)
        name = self.fresh("n")
        self.line(f"const int64_t {name} = {S.to_cpp(d)};")
        return name

    # ---- memory -------------------------------------------------------------------------------------------
    def alloc_raw(self, name: str, ct: str, itemsize: int, static_elems, dyn_elems: str = "", zero=False):
        if static_elems is not None:
            nbytes = static_elems * itemsize
            if nbytes <= STACK_BUFFER_MAX and self.stack_bytes + nbytes <= STACK_TOTAL_MAX:
                self.stack_bytes += nbytes
                init = " = {}" if zero else ""
                self.line(f"alignas(64) {ct} {name}[{max(static_elems, 1)}]{init};")
                return
            dyn_elems = f"(pypto_rt::size_t){static_elems}"
        self.line(f"pypto_rt::Buffer {name}_buf({dyn_elems} * sizeof({ct}));")
        self.line(f"{ct}* {name} = ({ct}*){name}_buf.p;")

    def alloc(self, st: Storage):
        n = st.static_elems()
        dyn = " * ".join(f"(pypto_rt::size_t)({S.to_cpp(d)})" for d in st.shape) or "(pypto_rt::size_t)1"
        self.alloc_raw(st.cname, ctype(st.dtype), st.dtype.itemsize, n, dyn)

    def ptr(self, v: Value, const: bool, restrict=None) -> str:
        """Hoist a pointer to v's first element (restrict: no write in its scope goes through another pointer;
        by default for const pointers)."""
        name = self.fresh("q")
        q = "const " if const else ""
        restrict = " __restrict" if (const if restrict is None else restrict) else ""
        off = "" if (isinstance(v.offset, int) and v.offset == 0) else f" + {S.to_cpp(v.offset)}"
        self.line(f"{q}{ctype(v.dtype)}*{restrict} {name} = {v.storage.cname}{off};")
        return name

    @staticmethod
    def index(v: Value, ivars: list) -> str:
        """Element offset of v for loop variables `ivars` (right-aligned: broadcasting)."""
        lead = len(ivars) - len(v.shape)
        terms = []
        for ax, (d, s) in enumerate(zip(v.shape, v.strides)):
            if isinstance(d, int) and d == 1:
                continue
            if isinstance(s, int) and s == 0:
                continue
            i = ivars[lead + ax]
            terms.append(i if (isinstance(s, int) and s == 1) else f"{i} * {S.to_cpp(s)}")
        return " + ".join(terms) if terms else "0"

    def nest(self, shape, tile=None, ivdep=True) -> tuple[list, int]:
        """Open a (blocked) loop nest over `shape`; returns (index vars, number of opened loops)."""
        ivars, opened, last = self.nest_outer(shape, tile)
        if last is not None:
            v, lo, hi = last
            if ivdep:
                self.line("#pragma GCC ivdep")
            self.open(f"for (int64_t {v} = {lo}; {v} < {hi}; ++{v})")
            opened += 1
        return ivars, opened

    def nest_outer(self, shape, tile=None):
        """nest() without the innermost loop: (index vars, opened, (var, lo, hi) of the innermost loop or None for
        a 0-d shape), for a caller that runs that loop through elem_loop."""
        r = len(shape)
        dims = [self.dim(d) for d in shape]
        tiles = [None] * r
        if tile:
            for k in range(1, min(r, len(tile)) + 1):
                t = tile[-k]
                d = shape[r - k]
                if isinstance(d, int) and t >= d:
                    continue
                tiles[r - k] = t
        ivars = [self.fresh("i") for _ in range(r)]
        opened = 0
        lo, hi = ["0"] * r, list(dims)
        for ax in range(r):
            if tiles[ax] is None:
                continue
            bv, ev = self.fresh("b"), self.fresh("e")
            self.open(f"for (int64_t {bv} = 0; {bv} < {dims[ax]}; {bv} += {tiles[ax]})")
            self.line(f"const int64_t {ev} = pypto_rt::imin({bv} + {tiles[ax]}, (int64_t){dims[ax]});")
            lo[ax], hi[ax] = bv, ev
            opened += 1
        for ax in range(r - 1):
            self.open(f"for (int64_t {ivars[ax]} = {lo[ax]}; {ivars[ax]} < {hi[ax]}; ++{ivars[ax]})")
            opened += 1
        return ivars, opened, ((ivars[-1], lo[-1], hi[-1]) if r else None)

    def elem_loop(self, v: str, lo: str, hi: str, body):
        """`for (v = lo; v < hi; ++v) <body()>`, body() returning the one-line statement for element v (built with
        ew_expr, which sees self.hoist). Where the statement has float32 exps, the loop runs in blocks of
        EXP_BLOCK elements: the block's argument of each exp goes into a buffer that pypto_rt::exp16 turns into
        its exp 16 lanes at a time (vscalefps where the machine has AVX-512), then the statement reads the buffer;
        the last < EXP_BLOCK elements run the plain statement with the scalar exp_. exp16 gives exp_'s bits, so
        where an element falls never changes its value. (Blocks of 16 are worse: g++ peels such loops completely
        and then fails to vectorize them.) Softmax 4096x1024 fp32, one thread: 1.70 -> 1.38-1.47 ms."""
        hoisted = []
        if lo == "0" and hi.isdigit() and int(hi) < EXP_BLOCK:       # not one whole block: the plain loop
            text = body()
        else:
            jb, lv = self.fresh("jb"), self.fresh("l")

            def hoist(arg):
                name = self.fresh("vx")
                hoisted.append((name, arg))
                return f"{name}[{lv}]"

            self.hoist = hoist
            try:
                text = body()
            finally:
                self.hoist = None
        if not hoisted:
            self.line("#pragma GCC ivdep")
            self.open(f"for (int64_t {v} = {lo}; {v} < {hi}; ++{v})")
            self.line(text)
            self.close()
            return
        B = EXP_BLOCK
        self.line(f"int64_t {jb} = {lo};")
        self.open(f"for (; {jb} + {B} <= ({hi}); {jb} += {B})")
        each = f"for (int {lv} = 0; {lv} < {B}; ++{lv}) {{ const int64_t {v} = {jb} + {lv}; "
        for name, arg in hoisted:
            self.line(f"alignas(64) float {name}[{B}];")
            self.line("#pragma GCC ivdep")
            self.line(f"{each}{name}[{lv}] = {arg}; }}")
            self.line(f"for (int {lv} = 0; {lv} < {B}; {lv} += 16) pypto_rt::exp16({name} + {lv});")
        self.line("#pragma GCC ivdep")
        self.line(f"{each}{text} }}")
        self.close()
        self.line("#pragma GCC ivdep")
        self.line(f"for (int64_t {v} = {jb}; {v} < ({hi}); ++{v}) {body()}")

    # ---- statements -----------------------------------------------------------------------------------------
    def block(self, block):
        for st in block.stmts:
            self.stmt(st)

    def stmt(self, st):
        if isinstance(st, Op):
            if self.debug >= 4:
                self.bounds([a for a in st.ins if isinstance(a, Value)] + [st.out], st.kind)
            getattr(self, "op_" + st.kind)(st)
        elif isinstance(st, Assign):
            if self.debug >= 4:
                self.bounds([st.dst] + ([st.src] if isinstance(st.src, Value) else []), "write")
            self.assign(st)
        elif isinstance(st, Check):
            self.line(f"if (!{S.to_cpp(st.cond)}) return pypto_rt::fail(ctx, {c_string(st.msg)});")
        elif isinstance(st, ScalarRead):
            if self.debug >= 4:
                self.bounds([st.src], "read")
            off = S.to_cpp(st.src.offset)
            self.line(f"const int64_t {st.var.args[1]} = (int64_t){st.src.storage.cname}[{off}];")
        elif isinstance(st, Loop):
            self.loop(st)
        elif isinstance(st, UnrolledLoop):
            self.unrolled_loop(st)
        elif isinstance(st, If):
            self.branch(st)
        else:  # pragma: no cover
            raise TypeError(st)

    # ---- runtime_debug_mode=4: bounds checks ----------------------------------------------------------------
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

    def branch(self, st: If):
        self.open(f"if ({S.to_cpp(st.cond)})")
        self.block(st.then)
        if st.orelse.stmts:
            self.ind -= 1
            self.line("} else {")
            self.ind += 1
            self.block(st.orelse)
        self.close()

    def trip_count(self, st, b0: str, cnt: str):
        """Declare `b0` = the loop's start and `cnt` = its number of iterations (>= 0) for any step sign."""
        step = st.step
        self.line(f"const int64_t {b0} = {S.to_cpp(st.start)};")
        if step > 0:
            span = f"{S.to_cpp(st.stop)} - {b0} + {step - 1}"
        else:
            span = f"{b0} - {S.to_cpp(st.stop)} + {-step - 1}"
        self.line(f"const int64_t {cnt} = pypto_rt::imax(0, pypto_rt::floordiv({span}, {abs(step)}));")

    def unrolled_loop(self, st: UnrolledLoop):
        """One sub-loop per unroll factor over a shared iteration count: sub-loop f runs (remaining // f)
        passes of f iterations each; the factor-1 sub-loop takes the rest."""
        step = st.step
        b0, cnt, done = self.fresh("lb"), self.fresh("cnt"), self.fresh("done")
        self.line("{")
        self.ind += 1
        self.trip_count(st, b0, cnt)
        self.line(f"int64_t {done} = 0;")
        for f, var, body in st.parts:
            v = var.args[1]
            n, k = self.fresh("np"), self.fresh("k")
            self.line(f"// unroll factor {f}" + (" (remainder loop)" if f == 1 else ""))
            self.line("{")
            self.ind += 1
            self.line(f"const int64_t {n} = ({cnt} - {done}) / {f};")
            if st.parallel:
                rc = self.fresh("rc")
                self.line(f"const int {rc} = pypto_rt::parallel_for({n}, ctx->num_threads, "
                          f"[&](int64_t {k}) -> int {{")
                self.ind += 1
                self.line(f"const int64_t {v} = {b0} + ({done} + {k} * {f}) * ({step});")
                self.parallel_depth += 1
                self.block(body)
                self.parallel_depth -= 1
                self.line("return 0;")
                self.ind -= 1
                self.line("});")
                self.line(f"if ({rc}) return {rc};")
            else:
                self.open(f"for (int64_t {k} = 0; {k} < {n}; ++{k})")
                self.line(f"const int64_t {v} = {b0} + ({done} + {k} * {f}) * ({step});")
                self.block(body)
                self.close()
            self.line(f"{done} += {n} * {f};")
            self.close()
        self.close()

    def loop(self, st: Loop):
        v = st.var.args[1]
        step = st.step
        if not st.parallel:
            self.line("{")
            self.ind += 1
            stop = self.fresh("stop")
            self.line(f"const int64_t {stop} = {S.to_cpp(st.stop)};")
            cmp = "<" if step > 0 else ">"
            self.open(f"for (int64_t {v} = {S.to_cpp(st.start)}; {v} {cmp} {stop}; {v} += {step})")
            self.block(st.body)
            self.close(2)
            return
        b0, cnt, k, rc = self.fresh("lb"), self.fresh("cnt"), self.fresh("k"), self.fresh("rc")
        self.line("{")
        self.ind += 1
        self.trip_count(st, b0, cnt)
        self.line(f"const int {rc} = pypto_rt::parallel_for({cnt}, ctx->num_threads, [&](int64_t {k}) -> int {{")
        self.ind += 1
        self.line(f"const int64_t {v} = {b0} + {k} * ({step});")
        self.parallel_depth += 1
        self.block(st.body)
        self.parallel_depth -= 1
        self.line("return 0;")
        self.ind -= 1
        self.line("});")
        self.line(f"if ({rc}) return {rc};")
        self.close(1)

    def scalar_const(self, s, ct_dtype) -> str:
        name = self.fresh("c")
        ct = ctype(ct_dtype)
        self.line(f"const {ct} {name} = pypto_rt::Cvt<{ct}>::from({S.to_cpp(s)});")
        return name

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
            args = []
            for name, v, ct in loads:
                if v is None:
                    args.append(name)
                    continue
                e = f"{name}[{self.index(v, ivars)}]"
                args.append(e if ct is None else f"pypto_rt::Cvt<{ctype(ct)}>::from({e})")
            expr = ew_expr(op.attrs["fn"], args, cts[-1], self.hoist)
            return f"{out.storage.cname}[{self.index(out, ivars)}] = pypto_rt::Cvt<{ctype(out.dtype)}>::from({expr});"

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

    def lines_along(self, t: Value, d: int):
        """Open a loop nest over every dim of t but `d` (one iteration per line along d). Returns (index
        variables per dim with None at d, number of opened loops)."""
        others = [a for a in range(len(t.shape)) if a != d]
        ovars, opened = self.nest([t.shape[a] for a in others], ivdep=False)
        full = [None] * len(t.shape)
        for a, v in zip(others, ovars):
            full[a] = v
        return full, opened

    # ---- data-dependent indexing (language/indexing.py) -----------------------------------------------------
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


__all__ = ["_Emitter"]
