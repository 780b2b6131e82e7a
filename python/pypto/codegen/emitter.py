"""The emitter's plumbing: output lines and indentation, fresh names, dims as C++ expressions, buffers, pointers,
(blocked) loop nests, the blocked elementwise loop (elem_loop) and the statement dispatch that every op family's
mixin builds on (cpp.py composes them into the unfused emitter)."""
from __future__ import annotations

from ..ir import sym as S
from ..ir.nodes import Assign, Check, If, Kernel, Loop, Op, ScalarRead, Storage, UnrolledLoop, Value
from .names import c_string
from .templates import ctype

STACK_BUFFER_MAX = 64 * 1024       # bytes: a static temporary up to this size lives on the stack
STACK_TOTAL_MAX = 512 * 1024       # bytes of stack temporaries per kernel before spilling to the heap
EXP_BLOCK = 64                     # elements per block of an elementwise loop with float32 exps (elem_loop)


class EmitterCore:
    """State and helpers shared by every op family. stmt() dispatches to methods the mixins define: assign
    (elementwise.py), loop / unrolled_loop / branch (control.py), bounds (bounds.py) and op_<kind> for each IR op
    kind (one module per op family)."""

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

    def scalar_const(self, s, ct_dtype) -> str:
        name = self.fresh("c")
        ct = ctype(ct_dtype)
        self.line(f"const {ct} {name} = pypto_rt::Cvt<{ct}>::from({S.to_cpp(s)});")
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

    # ---- loop nests -----------------------------------------------------------------------------------------
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

    def lines_along(self, t: Value, d: int):
        """Open a loop nest over every dim of t but `d` (one iteration per line along d). Returns (index
        variables per dim with None at d, number of opened loops)."""
        others = [a for a in range(len(t.shape)) if a != d]
        ovars, opened = self.nest([t.shape[a] for a in others], ivdep=False)
        full = [None] * len(t.shape)
        for a, v in zip(others, ovars):
            full[a] = v
        return full, opened


    def elem_loop(self, v: str, lo: str, hi: str, body):
        """`for (v = lo; v < hi; ++v) <body()>`, body() returning the one-line statement for element v (built with
        ew_expr, which sees self.hoist). Where the statement has float32 exps, the loop runs in blocks of
        EXP_BLOCK elements: the block's argument of each exp goes into a buffer that pypto_rt::exp16 turns into
        its exp 16 lanes at a time (vscalefps where the machine has AVX-512), then the statement reads the buffer;
        the last < EXP_BLOCK elements run the plain statement with the scalar exp_. exp16 gives exp_'s bits, so
        where an element falls never changes its value. float32 sin/cos/tan are hoisted the same way into
        pypto_rt::sin_block & co., which skip the Payne-Hanek reduction for a block whose |x| are all < 2^20
        (same bits as sin_: the reductions agree there): sin fp32 4096x1024 8.1 ms -> see docs/performance.md. (Blocks of 16 are worse: g++ peels such loops completely
        and then fails to vectorize them.) Softmax 4096x1024 fp32, one thread: 1.70 -> 1.38-1.47 ms."""
        hoisted = []
        if lo == "0" and hi.isdigit() and int(hi) < EXP_BLOCK:       # not one whole block: the plain loop
            text = body()
        else:
            jb, lv = self.fresh("jb"), self.fresh("l")

            def hoist(arg, fn="exp"):
                name = self.fresh("vx")
                hoisted.append((name, arg, fn))
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
        for name, arg, fn in hoisted:
            self.line(f"alignas(64) float {name}[{B}];")
            self.line("#pragma GCC ivdep")
            self.line(f"{each}{name}[{lv}] = {arg}; }}")
            if fn == "exp":
                self.line(f"for (int {lv} = 0; {lv} < {B}; {lv} += 16) pypto_rt::exp16({name} + {lv});")
            else:
                self.line(f"pypto_rt::{fn}_block<{B}>({name});")
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


__all__ = ["EmitterCore"]
