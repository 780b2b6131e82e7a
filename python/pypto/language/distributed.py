"""The reference's multi-rank ops (`pypto.distributed.*`, `pypto.experimental.shmem_*`): symmetric shmem tensors,
one-sided puts and gets with SET / atomic ADD, per-tile signals, waits and barriers, traced into IR ops that
codegen/shmem.py turns into loads, stores and atomics on the windows libpypto_shmem maps.

This module installs the ops into the `pypto.distributed` namespace (the layer below owns groups and windows and
cannot import the language): the same pattern as tensor_methods.py installing operators on IR values.

Semantics on the simulator. Each rank runs its ops in program order: `pred=` tokens are accepted (they order ops
on the device, whose engines run out of order) and need nothing here; a program that is correct on the device
with its preds is correct here. A program that is only correct *without* program order — e.g. a wait placed
before the signal it expects from this same rank — deadlocks here as on a device that honours the preds, and
fails with the wait's timeout error. Signals are kept per tile: the first shmem_signal / shmem_wait_until on a
shmem tensor fixes its signal tile (the region's shape); later regions must cover whole tiles.

Every execution of create_shmem_tensor / create_shmem_signal (once per launch, or once per iteration of the
`pypto.loop` it is written in) binds fresh, zeroed data and signals, as the reference binds a fresh region of the
group's window at each execution of its create op: the tensor owns a ring of RING slots in the window, the
execution number picks the slot, and a slot is zeroed by its owner before reuse once every rank has moved past the
execution that last used it (kernel_shmem_ring.h). Every rank must execute each create the same number of times.
"""
from __future__ import annotations

import enum
import hashlib

from .. import distributed as _dist_pkg
from ..distributed.groups import group_of
from ..ir.nodes import Storage, Value, row_major
from ..vocab.dtypes import DataType
from ..vocab.enums import OpType
from ._helpers import DT, S, check_int_list, check_tensor, current, fmt_shape
from .shape_ops import _window

SHMEM = "shmem"          # storage kind of a shmem tensor's local data
SIG_HEADER = 80          # int32s before each signal grid (barrier counters, epoch): kernel_shmem.h
ALIGN = 64
RING = 4                 # slots per shmem tensor: executions of its create that may be in flight across ranks
RING_BIG = 2             # ... for a slot over BIG_SLOT bytes (2 is the least the reuse protocol allows)
BIG_SLOT = 16 << 20
RING_HEADER = 64         # bytes before a tensor's ring: the int32 count of its creates this rank has entered
SHMEM_DTYPES = (DT.DT_FP32, DT.DT_FP16, DT.DT_BF16, DT.DT_INT32, DT.DT_INT8, DT.DT_INT16, DT.DT_INT64,
                DT.DT_UINT8, DT.DT_FP64)


class AtomicType(enum.IntEnum):
    """How a put (or signal) combines with the destination: SET overwrites, ADD accumulates atomically."""
    SET = 0
    ADD = 1


class ShmemAlloc:
    """One create_shmem_tensor / create_shmem_signal of a kernel: its place in the group's window."""

    def __init__(self, index, group_index, dtype, shape, n_pes, storage):
        self.index, self.group_index, self.dtype, self.shape = index, group_index, dtype, tuple(shape)
        self.n_pes, self.storage = n_pes, storage
        self.tile = None          # signal tile shape, fixed by the first signal / wait region
        self.data_off = self.sig_off = 0   # slot 0's data and signal grid (slot k: + k * slot_bytes)
        self.hdr_off, self.slot_bytes, self.ring = 0, 0, RING

    def ntiles(self) -> int:
        n = 1
        for d, g in zip(self.shape, self.tile or self.shape):
            n *= -(-d // g)
        return n


class ShmemPlan:
    """The shmem tensors of one kernel, per group; `layout()` places them (deterministic: trace order)."""

    def __init__(self, kernel_name: str = ""):
        self.kernel_name = kernel_name   # in the digest: each kernel has windows of its own
        self.groups: list = []
        self.allocs: list = []
        self.pe_vars: dict = {}

    def group_index(self, name) -> int:
        if name not in self.groups:
            self.groups.append(name)
        return self.groups.index(name)

    def layout(self) -> list:
        """[(group, digest, bytes)] per group, setting each alloc's offsets."""
        out = []
        for gi, g in enumerate(self.groups):
            cur, desc = 0, [g, self.kernel_name]
            for a in self.allocs:
                if a.group_index != gi:
                    continue
                a.hdr_off = cur = _align(cur)
                n = a.dtype.itemsize
                for d in a.shape:
                    n *= d
                sig = _align(n)
                a.slot_bytes = _align(sig + 4 * (SIG_HEADER + a.n_pes * a.ntiles()))
                a.ring = RING if a.slot_bytes <= BIG_SLOT else RING_BIG
                a.data_off = cur + RING_HEADER
                a.sig_off = a.data_off + sig
                cur = a.data_off + a.ring * a.slot_bytes
                desc.append((a.dtype.name, a.shape, a.n_pes, a.tile, a.ring))
            digest = hashlib.sha256(repr(desc).encode()).hexdigest()[:32]
            out.append((g, digest, _align(max(cur, 1), 4096)))
        return out


def _align(n, a=ALIGN):
    return (n + a - 1) // a * a


class ShmemTensor:
    """A symmetric tensor: the same shape on every rank of the group. `.data` is this rank's copy (a tensor usable
    by any op); `.signal` is its per-tile int32 signal grid (used through shmem_signal / shmem_wait_until)."""

    def __init__(self, alloc, data: Value, offsets):
        self.alloc, self.data, self.offsets = alloc, data, tuple(offsets)

    @property
    def signal(self):
        return self

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    def __repr__(self):
        return f"<pypto shmem tensor {self.alloc.dtype.short}{fmt_shape(self.alloc.shape)} of group " \
               f"{current('shmem').shmem.groups[self.alloc.group_index]!r}>"


def _builder(op):
    """The trace's builder, refusing shmem ops in the body of a pypto.loop(parallel=True): its iterations run
    concurrently, while signals, waits and the per-execution slots of created tensors assume program order."""
    b = current(op)
    blk = b.block
    while blk is not None:
        lp = getattr(blk, "loop", None)
        if lp is not None and getattr(lp, "parallel", False):
            raise b.error(op, "shmem ops are not supported inside pypto.loop(parallel=True) (its iterations run "
                              "concurrently; signals, waits and created shmem tensors need program order): use a "
                              "sequential pypto.loop")
        blk = blk.parent
    return b


def _plan(b) -> ShmemPlan:
    if getattr(b, "shmem", None) is None:
        b.shmem = ShmemPlan(b.kernel_name)
    return b.shmem


def _check_group(b, op, group, n_pes):
    if not isinstance(group, str):
        raise b.error(op, f"group_name must be a group name string (pypto.distributed.group_name(pg)), got "
                          f"{type(group).__name__} {group!r}")
    try:
        ranks = group_of(group, f"kernel '{b.kernel_name}'")[1]
    except Exception as e:
        raise b.error(op, str(e)) from None
    if n_pes is not None and (not isinstance(n_pes, int) or isinstance(n_pes, bool) or n_pes != len(ranks)):
        raise b.error(op, f"n_pes must be the size of group {group!r} ({len(ranks)} ranks), got {n_pes!r}")
    return _plan(b).group_index(group)


def _create(group, n_pes, dtype, shape, op):
    b = _builder(op)
    gi = _check_group(b, op, group, n_pes)
    dtype = DataType(dtype) if not isinstance(dtype, DataType) else dtype
    if dtype not in SHMEM_DTYPES:
        raise b.error(op, f"dtype must be one of {', '.join(d.short for d in SHMEM_DTYPES)}, got {dtype.short}")
    shape = check_int_list(shape, op, "shape", allow_sym=False)
    if not 1 <= len(shape) <= 4 or any(d <= 0 for d in shape):
        raise b.error(op, f"shape must have 1 to 4 positive dims, got {fmt_shape(shape)}")
    plan = _plan(b)
    strides = row_major(shape)
    st = Storage(len(b.storages), SHMEM, dtype, shape, shape, strides, b.body)
    b.storages.append(st)
    alloc = ShmemAlloc(len(plan.allocs), gi, dtype, shape, n_pes, st)
    st.cname = f"sh{st.sid}"
    plan.allocs.append(alloc)
    data = Value(b._new_vid(), dtype, tuple(shape), tuple(shape), st, 0, strides, b.body)
    b.op("shmem_create", _token(b), [], a=alloc.index)   # at run time: this execution's (zeroed) slot
    return ShmemTensor(alloc, data, [0] * len(shape))


def create_shmem_tensor(group_name, n_pes, dtype, shape):
    """A symmetric tensor of `shape` and `dtype` on each of the `n_pes` ranks of group `group_name`."""
    return _create(group_name, n_pes, dtype, shape, "create_shmem_tensor")


def create_shmem_signal(group_name, n_pes):
    """A signal-only shmem tensor (for shmem_barrier_all and small flags)."""
    return _create(group_name, n_pes, DT.DT_INT32, [1, 8], "create_shmem_signal")


def _shmem(x, op, what="src") -> ShmemTensor:
    if not isinstance(x, ShmemTensor):
        b = _builder(op)
        raise b.error(op, f"{what} must be a shmem tensor (pypto.distributed.create_shmem_tensor), got "
                          f"{type(x).__name__}")
    return x


def shmem_view(src, shape, offsets, *, valid_shape=None):
    """A tile of a shmem tensor (as pypto.view): the result is still a shmem tensor."""
    op = "shmem_view"
    src = _shmem(src, op)
    return _view(src, shape, offsets, valid_shape, op)


def _view(src, shape, offsets, valid_shape, op):
    b = _builder(op)
    shape = check_int_list(shape, op, "shape", allow_sym=False)
    offsets = check_int_list(offsets, op, "offsets")
    rank = len(src.data.shape)
    if len(shape) != rank or len(offsets) != rank:
        raise b.error(op, f"shape and offsets need one entry per dim of the shmem tensor (rank {rank}); got "
                          f"shape {fmt_shape(shape)}, offsets {fmt_shape(offsets)}")
    logical = tuple(shape)
    if valid_shape is not None:
        logical = tuple(check_int_list(valid_shape, op, "valid_shape"))
    v = _window(src.data, offsets, logical, tuple(shape), op)
    return ShmemTensor(src.alloc, v, [S.add(a, o) for a, o in zip(src.offsets, offsets)])


def _region(src, shape, offsets, op):
    return src if shape is None or offsets is None else _view(src, shape, offsets, None, op)


def _pe(b, op, what, pe, n_pes):
    if isinstance(pe, bool) or not isinstance(pe, (int, S.Sym)):
        raise b.error(op, f"{what} must be an int or a symbolic scalar, got {type(pe).__name__} {pe!r}")
    if isinstance(pe, int) and not 0 <= pe < n_pes:
        raise b.error(op, f"{what} {pe} is out of range for a group of {n_pes} ranks (expected 0 to {n_pes - 1})")
    b.use(pe, op)
    return pe


def _atomic(b, op, what, a):
    try:
        return AtomicType(int(a)) == AtomicType.ADD
    except (TypeError, ValueError):
        raise b.error(op, f"{what} must be pypto.AtomicType.SET or ADD, got {a!r}") from None


def _token(b):
    return b.new_temp(DT.DT_INT32, (1, 1))


def _preds(b, op, pred):
    """pred= tokens: checked (tensors), then only documented: program order already orders them."""
    if pred is None:
        return
    for p in (pred if isinstance(pred, (list, tuple)) else [pred]):
        if not isinstance(p, (Value, ShmemTensor)):
            raise b.error(op, f"pred must be a list of tensors (tokens of earlier ops), got {type(p).__name__}")


def _put(src, offsets, dst, dst_pe, put_op, pred, op):
    b = _builder(op)
    src = check_tensor(src, op, "src")
    dst = _shmem(dst, op, "dst")
    _preds(b, op, pred)
    add = _atomic(b, op, "put_op", put_op)
    widening = add and src.dtype in (DT.DT_FP16, DT.DT_BF16) and dst.dtype == DT.DT_FP32
    if src.dtype != dst.dtype and not widening:   # (the reference's rule: ADD of fp16/bf16 may accumulate in fp32)
        raise b.error(op, f"src dtype {src.dtype.short} differs from the shmem tensor's {dst.dtype.short} (only an "
                          f"ADD put of fp16/bf16 into an fp32 shmem tensor converts)")
    offsets = check_int_list(offsets, op, "offsets")
    if len(offsets) != len(dst.data.shape) or len(src.shape) != len(offsets):
        raise b.error(op, f"offsets {fmt_shape(offsets)} and src shape {fmt_shape(src.shape)} need one entry per "
                          f"dim of the shmem tensor (rank {len(dst.data.shape)})")
    if any(c is None for c in src.cap):
        raise b.error(op, "src needs a bounded shape (a tile: pypto.view with valid_shape=)")
    view = _window(dst.data, offsets, src.shape, src.cap, op)
    pe = _pe(b, op, "dst_pe", dst_pe, dst.alloc.n_pes)
    return b.op("shmem_put", _token(b), [src, view], a=dst.alloc.index, pe=pe, add=add)


def shmem_put(src, offsets, dst, dst_pe, *, put_op=AtomicType.SET, pred=None):
    """Write tile `src` into shmem tensor `dst` of rank `dst_pe` at `offsets` (SET, or atomic ADD per element)."""
    return _put(src, offsets, dst, dst_pe, put_op, pred, "shmem_put")


def _get(src, src_pe, shape, offsets, valid_shape, pred, op):
    b = _builder(op)
    src = _shmem(src, op)
    _preds(b, op, pred)
    if shape is not None and offsets is not None:
        src = _view(src, shape, offsets, valid_shape, op)
    v = src.data
    out = b.new_temp(v.dtype, v.shape, v.cap)
    return b.op("shmem_get", out, [v], a=src.alloc.index, pe=_pe(b, op, "src_pe", src_pe, src.alloc.n_pes))


def shmem_get(src, src_pe, shape=None, offsets=None, *, valid_shape=None, pred=None):
    """A local copy of the tile of shmem tensor `src` held by rank `src_pe`."""
    return _get(src, src_pe, shape, offsets, valid_shape, pred, "shmem_get")


def _signal_tiles(b, op, src: ShmemTensor):
    """(per-dim tile, per-dim first-tile index expressions) of the region `src`; fixes the alloc's tile."""
    a = src.alloc
    shape = [c for c in src.data.cap]
    if a.tile is None:
        a.tile = tuple(shape)
    for ax, (d, g) in enumerate(zip(shape, a.tile)):
        if d % g:
            raise b.error(op, f"the region's dim {ax} ({d}) is not a whole number of signal tiles ({g}, fixed by "
                              f"the first signal/wait on this shmem tensor, shape {fmt_shape(a.tile)})")
    for ax, (o, g) in enumerate(zip(src.offsets, a.tile)):
        if isinstance(o, int) and o % g:
            raise b.error(op, f"offset {o} of dim {ax} is not a multiple of the signal tile {g}")
    return list(a.tile), [d // g for d, g in zip(shape, a.tile)]


def shmem_signal(src, src_pe, signal, shape=None, offsets=None, *, target_pe, sig_op=AtomicType.SET, pred=None):
    """Set (or add) `signal` in the signal slots of region [offsets, shape] of `src` (data of rank `src_pe`) on
    rank `target_pe` (-1: every rank of the group)."""
    op = "shmem_signal"
    b = _builder(op)
    src = _region(_shmem(src, op), shape, offsets, op)
    _preds(b, op, pred)
    if isinstance(signal, bool) or not isinstance(signal, (int, S.Sym)):
        raise b.error(op, f"signal must be an int, got {signal!r}")
    tile, counts = _signal_tiles(b, op, src)
    everyone = isinstance(target_pe, int) and not isinstance(target_pe, bool) and target_pe == -1
    return b.op("shmem_signal", _token(b), [], a=src.alloc.index, offsets=list(src.offsets), counts=counts,
                src_pe=_pe(b, op, "src_pe", src_pe, src.alloc.n_pes),
                target=None if everyone else _pe(b, op, "target_pe", target_pe, src.alloc.n_pes),
                value=signal, add=_atomic(b, op, "sig_op", sig_op))


def shmem_wait_until(src, src_pe, cmp_value=0, shape=None, offsets=None, *, cmp=OpType.EQ, clear_signal=False,
                     pred=None):
    """Wait on this rank until every signal slot of region [offsets, shape] of `src` (rank `src_pe`'s data)
    equals `cmp_value`. clear_signal=True consumes the signal: the wait ends when a slot has reached `cmp_value`
    and takes exactly `cmp_value` off it, so a count a fast peer has already added for the next round survives
    (the slot reads 0 again when nothing more arrived: the reference's reset). Bounded by
    pypto.distributed.set_timeout (then an error naming kernel, rank, group, slot, expected, last seen)."""
    op = "shmem_wait_until"
    b = _builder(op)
    src = _region(_shmem(src, op), shape, offsets, op)
    _preds(b, op, pred)
    if cmp != OpType.EQ:
        raise b.error(op, f"only cmp=pypto.OpType.EQ is supported (as in the reference), got {cmp!r}")
    if isinstance(cmp_value, bool) or not isinstance(cmp_value, (int, S.Sym)):
        raise b.error(op, f"cmp_value must be an int, got {cmp_value!r}")
    tile, counts = _signal_tiles(b, op, src)
    return b.op("shmem_wait", _token(b), [], a=src.alloc.index, offsets=list(src.offsets), counts=counts,
                src_pe=_pe(b, op, "src_pe", src_pe, src.alloc.n_pes), value=cmp_value, clear=bool(clear_signal))


def shmem_barrier_all(src, pred=None):
    """Every rank of `src`'s group waits here until all have arrived (reusable; bounded by the timeout)."""
    op = "shmem_barrier_all"
    b = _builder(op)
    src = _shmem(src, op)
    _preds(b, op, pred)
    return b.op("shmem_barrier", _token(b), [], a=src.alloc.index)


def shmem_clear_data(src, shape=None, offsets=None, *, pred=None):
    """Zero region [offsets, shape] of this rank's copy of `src`."""
    op = "shmem_clear_data"
    b = _builder(op)
    src = _region(_shmem(src, op), shape, offsets, op)
    _preds(b, op, pred)
    return b.op("shmem_clear_data", _token(b), [src.data], a=src.alloc.index)


def shmem_clear_signal(src, *, pred=None):
    """Zero every signal slot of this rank's copy of `src`."""
    op = "shmem_clear_signal"
    b = _builder(op)
    src = _shmem(src, op)
    _preds(b, op, pred)
    return b.op("shmem_clear_signal", _token(b), [], a=src.alloc.index)


def my_symbolic_pe(group_name):
    """This process's rank in group `group_name`, as a runtime scalar (offsets, loop bounds, pe arguments)."""
    op = "my_symbolic_pe"
    b = _builder(op)
    gi = _check_group(b, op, group_name, None)
    plan = _plan(b)
    if gi not in plan.pe_vars:
        plan.pe_vars[gi] = S.var(f"my_pe({group_name})", f"pe_g{gi}")
    return plan.pe_vars[gi]


# pypto.experimental: the UB-side variants; on the simulator the same moves as put / get
def shmem_store(src, offsets, dst, dst_pe, *, put_op=AtomicType.SET, pred=None):
    """As shmem_put (the reference stores from on-chip buffers; here every tile is memory)."""
    if pred is not None and isinstance(src, Value):
        pred = [p for p in pred if p is not src]
    return _put(src, offsets, dst, dst_pe, put_op, pred, "shmem_store")


def shmem_load(src, src_pe, shape=None, offsets=None, *, pred=None, valid_shape=None):
    """As shmem_get: the tile of rank `src_pe`, ready for computation."""
    return _get(src, src_pe, shape, offsets, valid_shape, pred, "shmem_load")


def nop(pred=None):
    """Join several tokens into one (an ordering point only)."""
    b = current("nop")
    _preds(b, "nop", pred)
    return b.op("shmem_nop", _token(b), [])


OPS = ("create_shmem_tensor", "create_shmem_signal", "shmem_view", "shmem_put", "shmem_get", "shmem_signal",
       "shmem_wait_until", "shmem_barrier_all", "shmem_clear_data", "shmem_clear_signal", "my_symbolic_pe")
for _n in OPS:
    setattr(_dist_pkg, _n, globals()[_n])
_dist_pkg.AtomicType = AtomicType
_dist_pkg.ShmemTensor = ShmemTensor

__all__ = list(OPS) + ["AtomicType", "ShmemTensor", "ShmemPlan", "shmem_store", "shmem_load", "nop", "SHMEM"]
