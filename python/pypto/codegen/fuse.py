"""Fusion planning: which consecutive statements of a block run together, tile by tile, in one loop nest.

A group is a run of consecutive elementwise ops, reductions and writes (Assign) of one block that share a "row"
axis of extent n0: every value a group computes has one dim (its row dim) that walks the same n0 rows, and no
statement needs rows of another tile (a reduction never reduces the row dim). The group then runs one tile of
rows at a time: each statement in order, on that tile only, in tile-sized buffers. Values are placed by the
numpy broadcasting alignment of each use, so reductions without keepdim and broadcasts are followed exactly.

Statements are added greedily; a statement that does not fit ends the group (it may start the next one). It does
not fit when: its row dim would differ from the group's, or has another extent (extents a run-time check of the
block has already proved equal count as the same: `out[:] = a + b` with DYNAMIC dims); it reads a non-root view of a
value the group computes (that value is then materialised whole by the group and read afterwards); it reads a
tensor the group writes through another view or row dim (or writes one the group read that way), since tiles
would then see each other's rows; it writes its own source's storage.

Per value the plan also decides how it lives: `escape` (read after the group: a whole temporary, written tile by
tile), `buffer` (a tile buffer: reductions, values consumed broadcast, values used twice that are expensive to
recompute, values whose recomputation would read a tensor the group overwrote in between) or inlined (its
expression is recomputed inside each consumer: no memory at all).
"""
from __future__ import annotations

from ..ir import sym as S
from ..ir.nodes import TEMP, Assign, Check, Op, ScalarRead, Value, same_dim

EXPENSIVE = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erfc", "pow", "div", "floordiv", "mod",
             # libm calls (include/pypto/kernel_rt.h) and divisions
             "erf", "exp2", "expm1", "log2", "log10", "log1p", "cbrt", "sin", "cos", "tan", "asin", "acos", "atan",
             "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "hypot", "fmod", "gcd", "reciprocal"}


class Equalities:
    """Dims proved equal by the run-time checks met so far in a block (`check (a.shape[0] == out.shape[0])`): every
    statement after such a check runs only when it held, so a group may treat the two as one extent."""

    def __init__(self):
        self.parent: dict = {}

    @staticmethod
    def _k(d):
        return ("s", d.key) if isinstance(d, S.Sym) else ("i", d)

    def _find(self, k):
        while self.parent.get(k, k) != k:
            k = self.parent[k]
        return k

    def note(self, cond) -> None:
        if isinstance(cond, S.Sym) and cond.op == "cmp" and cond.args[0] == "==":
            a, b = cond.args[1], cond.args[2]
            if all(isinstance(d, (S.Sym, int)) and not isinstance(d, bool) for d in (a, b)):
                ra, rb = self._find(self._k(a)), self._find(self._k(b))
                if ra != rb:
                    self.parent[ra] = rb

    def same(self, a, b) -> bool:
        return same_dim(a, b) or (bool(self.parent) and self._find(self._k(a)) == self._find(self._k(b)))


class Group:
    def __init__(self):
        self.stmts: list = []
        self.n0 = None
        self.axis: dict = {}        # id(stmt) -> row axis of its domain (ew: out, reduce: input, Assign: dst)
        self.made: dict = {}        # storage sid -> (Op, row axis of its out) for values computed here
        self.written: dict = {}     # storage sid -> (view, row dim)
        self.read_ext: dict = {}    # storage sid -> [(view, row dim or None)]
        self.tile = None            # the set_vec_tile_shapes tuple of the first op that had one
        self.escape: set = set()    # sids read after the group
        self.buffer: set = set()    # sids kept in tile buffers
        self.pos: dict = {}         # id(stmt) -> position in the group
        self.equal: Equalities | None = None  # extents the block's earlier checks proved equal

    def domain(self, st):
        if isinstance(st, Assign):
            return st.dst.shape
        if st.kind == "reduce":
            return st.ins[0].shape
        return st.out.shape


def same_view(a: Value, b: Value) -> bool:
    return (len(a.shape) == len(b.shape) and same_dim(a.offset, b.offset)
            and all(same_dim(x, y) for x, y in zip(a.shape, b.shape))
            and all(same_dim(x, y) for x, y in zip(a.strides, b.strides)))


def row_dim_of(v: Value, axis: int, rank: int):
    """The dim of operand v that walks the rows when its consumer's domain (rank `rank`) has row axis `axis`;
    None when v is broadcast along the rows."""
    k = axis - (rank - len(v.shape))
    if k < 0:
        return None
    d = v.shape[k]
    return None if (isinstance(d, int) and d == 1) else k


def _fusable(st) -> bool:
    if isinstance(st, Assign):
        return isinstance(st.src, Value) or not isinstance(st.src, (list, tuple))
    return isinstance(st, Op) and st.kind in ("ew", "reduce") and st.out.storage.kind == TEMP


def _try_add(g: Group, st) -> bool:
    """Add st to g when it fits (see the module docstring); return whether it was added."""
    if not _fusable(st):
        return False
    ins = [st.src] if isinstance(st, Assign) else st.ins
    vals = [v for v in ins if isinstance(v, Value)]
    dom = g.domain(st)
    rank = len(dom)
    if rank == 0:
        return False
    # the row axis of st's domain, from the values of the group it reads
    axis = None
    for v in vals:
        m = g.made.get(v.storage.sid)
        if m is None:
            continue
        if not same_view(v, m[0].out):
            return False
        a = m[1] + (rank - len(v.shape))
        if axis is not None and a != axis:
            return False
        if a == rank - 1 and rank > len(v.shape):
            # a smaller value of the group (a cast weight vector) broadcast over st's leading dims would make st's
            # contiguous last dim the row axis: tiles of columns, strided inner loops (RMSNorm's `* cast(w)`
            # ran 4x slower than torch). st starts a group of its own, reading the value whole.
            return False
        axis = a
    if axis is None:
        axis = 0
    if g.n0 is None:
        n0 = dom[axis]
        if isinstance(n0, int) and n0 <= 1 and rank > 1:
            return False
    else:
        n0 = g.n0
        if not (g.equal.same(dom[axis], n0) if g.equal is not None else same_dim(dom[axis], n0)):
            return False
    if isinstance(st, Op) and st.kind == "reduce" and axis in st.attrs["dims"]:
        return False
    # hazards on tensors the group writes
    reads = []
    for v in vals:
        if v.storage.sid in g.made:
            continue
        k = row_dim_of(v, axis, rank)
        w = g.written.get(v.storage.sid)
        if w is not None and (k is None or k != w[1] or not same_view(v, w[0])):
            return False
        reads.append((v, k))
    if isinstance(st, Assign):
        dst = st.dst
        sid = dst.storage.sid
        if any(v.storage.sid == sid for v in vals):
            return False
        for v, k in g.read_ext.get(sid, ()):
            if k is None or k != axis or not same_view(v, dst):
                return False
        w = g.written.get(sid)
        if w is not None and (w[1] != axis or not same_view(w[0], dst)):
            return False
    # it fits: record
    g.n0 = n0
    g.pos[id(st)] = len(g.stmts)
    g.stmts.append(st)
    g.axis[id(st)] = axis
    for v, k in reads:
        g.read_ext.setdefault(v.storage.sid, []).append((v, k))
    if isinstance(st, Assign):
        g.written[st.dst.storage.sid] = (st.dst, axis)
    else:
        if g.tile is None and isinstance(st.attrs.get("tile"), tuple):
            g.tile = st.attrs["tile"]
        out_axis = axis
        if st.kind == "reduce" and not st.attrs["keepdim"]:
            out_axis = axis - sum(1 for d in st.attrs["dims"] if d < axis)
        g.made[st.out.storage.sid] = (st, out_axis)
    return True


def readers(kernel) -> dict:
    """storage sid -> list of statements (anywhere in the kernel) that read a value of that storage."""
    out: dict = {}

    def walk(block):
        for st in block.stmts:
            if isinstance(st, Op):
                for v in st.ins:
                    if isinstance(v, Value):
                        out.setdefault(v.storage.sid, []).append(st)
            elif isinstance(st, Assign):
                if isinstance(st.src, Value):
                    out.setdefault(st.src.storage.sid, []).append(st)
            elif isinstance(st, ScalarRead):
                out.setdefault(st.src.storage.sid, []).append(st)
            for sub in ("body", "then", "orelse"):
                b = getattr(st, sub, None)
                if b is not None and hasattr(b, "stmts"):
                    walk(b)
            for part in getattr(st, "parts", ()) or ():
                walk(part[2])

    walk(kernel.body)
    return out


def plan_block(stmts, uses: dict) -> list:
    """Split a block's statements into items: a Group, or a single statement to emit unfused. A Check met
    while a group has not written anything yet is moved before the group."""
    items: list = []
    g = None
    equal = Equalities()
    for st in stmts:
        if isinstance(st, Check):
            equal.note(st.cond)
        if g is not None and _try_add(g, st):
            continue
        if g is not None and isinstance(st, Check) and not g.written:
            # a run-time check reads only scalars; before any write of the group nothing it skipped would be
            # observable, so it runs first and the group goes on
            items.append(st)
            continue
        if g is not None:
            items.append(g)
            g = None
        ng = Group()
        ng.equal = equal
        if _try_add(ng, st):
            g = ng
        else:
            items.append(st)
    if g is not None:
        items.append(g)
    for it in items:
        if isinstance(it, Group):
            _decide_storage(it, uses)
    return items


def _inline_reads(g: Group, st, memo: dict) -> tuple:
    """(external storages an inlined expression of st's value reads, earliest producer position in the chain)."""
    key = id(st)
    if key in memo:
        return memo[key]
    sids, first = set(), g.pos[id(st)]
    for v in st.ins:
        if not isinstance(v, Value):
            continue
        m = g.made.get(v.storage.sid)
        if m is None:
            sids.add(v.storage.sid)
        elif v.storage.sid not in g.buffer and v.storage.sid not in g.escape:
            s2, f2 = _inline_reads(g, m[0], memo)
            sids |= s2
            first = min(first, f2)
    memo[key] = (sids, first)
    return memo[key]


def _expr_cost(g: Group, st, memo: dict) -> tuple:
    """(number of ops, uses an expensive op) of st's inlined expression."""
    key = id(st)
    if key in memo:
        return memo[key]
    n, exp = 1, st.attrs.get("fn") in EXPENSIVE
    for v in st.ins:
        if isinstance(v, Value):
            m = g.made.get(v.storage.sid)
            if m is not None and v.storage.sid not in g.buffer and v.storage.sid not in g.escape:
                n2, e2 = _expr_cost(g, m[0], memo)
                n, exp = n + n2, exp or e2
    memo[key] = (n, exp)
    return memo[key]


def _decide_storage(g: Group, uses: dict):
    inside = {id(s) for s in g.stmts}
    consumers: dict = {}
    for st in g.stmts:
        for v in ([st.src] if isinstance(st, Assign) else st.ins):
            if isinstance(v, Value) and v.storage.sid in g.made:
                consumers.setdefault(v.storage.sid, []).append(st)
    for sid, (op, _ax) in g.made.items():
        if any(id(r) not in inside for r in uses.get(sid, ())):
            g.escape.add(sid)
        elif op.kind == "reduce":
            g.buffer.add(sid)
    # ew values, in program order (a producer's decision is known before its consumers')
    for st in g.stmts:
        if not isinstance(st, Op) or st.kind != "ew":
            continue
        sid = st.out.storage.sid
        if sid in g.escape or sid in g.buffer:
            continue
        cons = consumers.get(sid, [])
        if not cons:
            continue
        rank_v = len(st.out.shape)
        broadcast = False
        for c in cons:
            dom = g.domain(c)
            lead = len(dom) - rank_v
            if lead < 0 or any(not (isinstance(d, int) and d == 1) for d in dom[:lead]):
                broadcast = True
            for k, d in enumerate(st.out.shape):
                if isinstance(d, int) and d == 1 and not (isinstance(dom[lead + k], int) and dom[lead + k] == 1):
                    broadcast = True
        n, expensive = _expr_cost(g, st, {})
        reuse = len(cons) > 1 and (expensive or n > 4)
        # recomputing in a consumer reads the inputs again there: not after the group overwrote them
        sids, first = _inline_reads(g, st, {})
        last = max(g.pos[id(c)] for c in cons)
        stale = any(isinstance(w, Assign) and w.dst.storage.sid in sids and first < g.pos[id(w)] < last
                    for w in g.stmts)
        if broadcast or reuse or stale or n > 24:
            g.buffer.add(sid)
