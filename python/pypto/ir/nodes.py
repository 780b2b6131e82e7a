"""IR data structures: storages, tensor values (views of storages), statements, blocks, the kernel.

Model. Every tensor value is a strided window on a storage: (storage, element offset, strides, shape).
`shape` is the *logical* (valid) shape: ints or symbolic ints, the region every op computes on; `cap` is a
compile-time upper bound per dim (int, or None when unbounded) used to size buffers. Storages are kernel
parameters, op results (fresh contiguous temporaries) or local tensors (pypto.tensor / pypto.full).
Views, slices, transposes and broadcasts never copy: they only change offset/strides/shape.
Statements run in program order; `Loop` holds a nested block.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..vocab.dtypes import DataType
from . import sym as S

PARAM, TEMP, LOCAL = "param", "temp", "local"


class Storage:
    __slots__ = ("sid", "kind", "dtype", "shape", "cap", "strides", "param_index", "param_name", "scope",
                 "cname")

    def __init__(self, sid, kind, dtype, shape, cap, strides, scope, param_index=None, param_name=None):
        self.sid = sid
        self.kind = kind
        self.dtype = dtype
        self.shape = tuple(shape)        # shape the storage is allocated for (logical at creation)
        self.cap = tuple(cap)            # per-dim upper bounds (None = unknown)
        self.strides = tuple(strides)
        self.scope = scope
        self.param_index = param_index
        self.param_name = param_name
        self.cname = param_name if kind == PARAM else f"t{sid}"

    @property
    def writable(self) -> bool:
        return self.kind in (PARAM, LOCAL)

    def static_elems(self):
        """Element count if every cap is static, else None."""
        n = 1
        for c in self.cap:
            if c is None:
                return None
            n *= c
        return n


class Value:
    """A tensor inside a kernel trace (the object users see as a tensor parameter / op result). Its Python
    operators and methods (`a + b`, slicing, `.sum()`) are installed by the language layer
    (`pypto/language/tensor_methods.py`)."""

    __slots__ = ("vid", "dtype", "shape", "cap", "storage", "offset", "strides", "scope", "label")

    def __init__(self, vid, dtype: DataType, shape, cap, storage: Storage, offset, strides, scope, label=None):
        self.vid = vid
        self.dtype = dtype
        self.shape = tuple(shape)
        self.cap = tuple(cap)
        self.storage = storage
        self.offset = offset
        self.strides = tuple(strides)
        self.scope = scope
        self.label = label

    @property
    def is_root(self) -> bool:
        """True when this value is exactly its whole storage (not a view)."""
        st = self.storage
        return (_same(self.offset, 0) and len(self.shape) == len(st.shape)
                and all(_same(a, b) for a, b in zip(self.shape, st.shape))
                and all(_same(a, b) for a, b in zip(self.strides, st.strides)))

    def text(self) -> str:
        if self.label:
            return self.label
        return f"%{self.vid}"

    def type_text(self) -> str:
        return f"{self.dtype.short}[{', '.join(S.to_text(d) for d in self.shape)}]"

    def __repr__(self):
        return f"<pypto tensor {self.text()}: {self.type_text()}>"


def _same(a, b) -> bool:
    if isinstance(a, S.Sym) or isinstance(b, S.Sym):
        return isinstance(a, S.Sym) and isinstance(b, S.Sym) and a.key == b.key
    return a == b


same_dim = _same


def row_major(shape) -> tuple:
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc = S.mul(acc, d)
    return tuple(reversed(strides))


# ---- statements ------------------------------------------------------------------------------------------

@dataclass
class Op:
    """out = kind(ins, attrs). `out` is always a fresh storage (TEMP or LOCAL)."""
    kind: str
    out: Value
    ins: list
    attrs: dict = field(default_factory=dict)
    line: str = ""


@dataclass
class Assign:
    """dst (a writable view) <- src (a value broadcast to dst's shape, or a scalar)."""
    dst: Value
    src: Any
    line: str = ""


@dataclass
class ScalarRead:
    """var <- the one element of `src` (a 0-d view of an integer tensor), read at this point of the program:
    `n = counts[i]` in a kernel gives a runtime scalar usable as a loop bound, an offset or an `if` condition."""
    var: Any
    src: Value


@dataclass
class Check:
    """A run-time condition; when false the kernel returns an error with `msg`."""
    cond: Any
    msg: str


@dataclass
class Loop:
    var: S.Sym
    start: Any
    stop: Any
    step: Any
    body: "Block"
    parallel: bool = False
    name: str = ""
    unroll_list: tuple = ()
    line: str = ""


@dataclass
class UnrolledLoop:
    """`pypto.loop(..., unroll_list=[f0, f1, ..., 1])` / `pypto.loop_unroll`: the iteration space of one loop
    (start, stop, step) covered by one sub-loop per factor, largest first. Sub-loop `(f, var, body)` runs
    `(remaining // f)` times; each run handles f consecutive iterations (`var` is the first of them); the
    factor-1 sub-loop is the remainder loop."""
    start: Any
    stop: Any
    step: Any
    parts: list                     # [(factor, var Sym, Block)]
    parallel: bool = False
    name: str = ""
    replicate: bool = True          # True: the body was traced f times (pypto.loop); False: once (loop_unroll)
    line: str = ""


@dataclass
class If:
    """A kernel-level branch on a symbolic bool: `then` runs when `cond` holds at run time, else `orelse`."""
    cond: Any
    then: "Block"
    orelse: "Block"
    line: str = ""


class Block:
    __slots__ = ("stmts", "parent", "loop", "depth", "branch")

    def __init__(self, parent=None, loop=None, branch=None):
        self.stmts = []
        self.parent = parent
        self.loop = loop
        self.branch = branch          # the If whose then/else block this is (None otherwise)
        self.depth = 0 if parent is None else parent.depth + 1

    def encloses(self, other) -> bool:
        """True when `other` is this block or nested inside it."""
        b = other
        while b is not None:
            if b is self:
                return True
            b = b.parent
        return False


@dataclass
class Kernel:
    name: str
    tensors: list                  # TensorArg in ABI order
    scalars: list                  # ScalarArg in ABI order
    constants: dict
    params: dict                   # tensor param name -> root Value
    scalar_vars: dict              # scalar param name -> Sym var
    dyn_vars: list                 # (var Sym, tensor index, axis) read at entry
    body: Block
    storages: list
    written: tuple = ()
    uses_threads: bool = False
    vec_tiles_used: list = field(default_factory=list)
    runtime_debug_mode: int = 0    # debug_options.runtime_debug_mode (4: bounds checks in the generated code)
    shmem: Any = None              # language/distributed.py's ShmemPlan when the kernel uses shmem tensors

    def __str__(self) -> str:
        return format_kernel(self)


# ---- printing -------------------------------------------------------------------------------------------

def _arg_text(a) -> str:
    if isinstance(a, Value):
        return value_text(a)
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(_arg_text(x) for x in a) + "]"
    if isinstance(a, DataType):
        return a.short
    return S.to_text(a) if isinstance(a, S.Sym) else repr(a)


def value_text(v: Value) -> str:
    if v.is_root:
        return v.storage.param_name if v.storage.kind == PARAM else f"%{v.storage.sid}"
    base = v.storage.param_name if v.storage.kind == PARAM else f"%{v.storage.sid}"
    return (f"{base}@{S.to_text(v.offset)}[{', '.join(S.to_text(d) for d in v.shape)}]"
            f"/({', '.join(S.to_text(s) for s in v.strides)})")


def format_kernel(k: Kernel) -> str:
    lines = []
    params = []
    for t in k.tensors:
        dims = ", ".join(str(d) if isinstance(d, int) else f"?{d.name or ''}" for d in t.dims)
        params.append(f"{t.param}: {t.dtype.short}[{dims}] #t{t.index}")
    for s in k.scalars:
        params.append(f"{s.param}: {s.dtype.short} #s{s.index}")
    lines.append(f"kernel {k.name}({', '.join(params)})")
    if k.constants:
        lines.append("  constants " + ", ".join(f"{n}={v!r}" for n, v in k.constants.items()))
    for var, ti, ax in k.dyn_vars:
        lines.append(f"  {S.to_text(var)} = shape(t{ti})[{ax}]")
    _format_block(k.body, lines, 1)
    lines.append(f"  written: {list(k.written)}")
    return "\n".join(lines) + "\n"


def _format_block(block: Block, lines: list, depth: int):
    ind = "  " * depth
    for st in block.stmts:
        if isinstance(st, Op):
            attrs = "".join(f" {k}={_arg_text(v)}" for k, v in st.attrs.items() if v is not None)
            lines.append(f"{ind}%{st.out.storage.sid}: {st.out.type_text()} = {st.kind}("
                         f"{', '.join(_arg_text(a) for a in st.ins)}){attrs}")
        elif isinstance(st, Assign):
            lines.append(f"{ind}{value_text(st.dst)} <- {_arg_text(st.src)}")
        elif isinstance(st, Check):
            lines.append(f"{ind}check {S.to_text(st.cond)}  # {st.msg}")
        elif isinstance(st, ScalarRead):
            lines.append(f"{ind}{S.to_text(st.var)} = read({value_text(st.src)})")
        elif isinstance(st, Loop):
            par = " parallel" if st.parallel else ""
            lines.append(f"{ind}for {S.to_text(st.var)} in loop({S.to_text(st.start)}, {S.to_text(st.stop)}, "
                         f"{S.to_text(st.step)}){par}:")
            _format_block(st.body, lines, depth + 1)
        elif isinstance(st, UnrolledLoop):
            par = " parallel" if st.parallel else ""
            lines.append(f"{ind}unrolled loop({S.to_text(st.start)}, {S.to_text(st.stop)}, {S.to_text(st.step)})"
                         f"{par}:")
            for f, var, body in st.parts:
                lines.append(f"{ind}  x{f} {S.to_text(var)}:")
                _format_block(body, lines, depth + 2)
        elif isinstance(st, If):
            lines.append(f"{ind}if {S.to_text(st.cond)}:")
            _format_block(st.then, lines, depth + 1)
            if st.orelse.stmts:
                lines.append(f"{ind}else:")
                _format_block(st.orelse, lines, depth + 1)
