"""Emitters of the multi-rank IR ops (language/distributed.py): remote puts / gets as loads and stores through
the window's base pointers, per-tile int32 signals, waits and barriers. A mixin of the unfused emitter (cpp.py);
the calls are the functions of include/pypto/kernel_shmem.h, which a kernel using them includes, and the window
is looked up once per launch by its key (group | allocation digest) in libpypto_shmem's registry, which the
pipeline filled (distributed/windows.py) before the kernel first ran. Single-rank kernels emit none of this."""
from __future__ import annotations

from ..ir import sym as S
from ..ir.nodes import Op
from .names import c_string
from .templates import ctype

SIG_HEADER = 80   # int32s before a tensor's signal grid (kernel_shmem.h PYPTO_SHMEM_SIG_HEADER)


class ShmemEmitter:
    shmem = False                   # set when the kernel needs pypto/kernel_shmem.h

    def shmem_prologue(self):
        """Look the windows up, name this rank (my_symbolic_pe) and point at this rank's copy of each tensor."""
        plan = self.k.shmem
        self.shmem = True
        self._kn = c_string(self.k.name)
        for gi, (group, digest, _nbytes) in enumerate(plan.layout()):
            w = f"w{gi}"
            self.line(f"const PyptoShmemWindow* {w} = pypto_shmem_lookup({c_string(f'{group}|{digest}')});")
            msg = (f"kernel '{self.k.name}': no shared-memory window of group '{group}' is mapped in this process "
                   f"(it was released, or the kernel was loaded without being built here)")
            self.line(f"if (!{w}) return pypto_rt::fail(ctx, {c_string(msg)});")
            self.line(f"const int64_t pe_g{gi} = {w}->rank; (void)pe_g{gi};")
        for a in plan.allocs:   # bound by the tensor's shmem_create op (each execution: a fresh slot)
            ct = ctype(a.dtype)
            self.line(f"{ct}* {a.storage.cname} = nullptr; (void){a.storage.cname};")
            self.line(f"int32_t gn{a.index} = 0; int64_t so{a.index} = 0; (void)gn{a.index}; (void)so{a.index};")

    def op_shmem_create(self, op: Op):
        """This execution of create_shmem_tensor: enter the next ring slot (zeroed) and point at it."""
        a, w = self._alloc_of(op)
        self._token(op)
        ct = ctype(a.dtype)
        self.line(f"if (pypto_shmem::ring_enter(ctx, {w}, {a.hdr_off}, {a.data_off}, {a.slot_bytes}, {a.ring}, "
                  f"{a.index}, {self._kn}, &gn{a.index}, &so{a.index})) return 1;")
        self.line(f"{a.storage.cname} = ({ct}*)({w}->base[{w}->rank] + {a.data_off} + so{a.index});")

    def _ready(self, a, w: str, pe: str, opname: str):
        """Before touching rank `pe`'s copy: it has entered (zeroed) this execution's slot."""
        what = f"{opname} (waiting for the peer to enter this execution of the shmem tensor's create)"
        self.line(f"if (pypto_shmem::ring_ready(ctx, {w}, {a.hdr_off}, {a.ring}, gn{a.index}, {pe}, {a.index}, "
                  f"{self._kn}, {c_string(what)})) return 1;")

    def _alloc_of(self, op: Op):
        a = self.k.shmem.allocs[op.attrs["a"]]
        return a, f"w{a.group_index}"

    def _pe(self, pe, w: str, opname: str, what: str) -> str:
        name = self.fresh("pe")
        self.line(f"const int64_t {name} = {S.to_cpp(pe)};")
        self.line(f"if ((uint64_t){name} >= (uint64_t){w}->n_pes) return pypto_shmem::bad_pe(ctx, {w}, {self._kn}, "
                  f"{c_string(opname)}, {c_string(what)}, {name});")
        return name

    def _token(self, op: Op):
        self.alloc(op.out.storage)
        self.line(f"{op.out.storage.cname}[0] = 0;")

    def _remote(self, a, w: str, pe: str, v, opname: str) -> str:
        self._ready(a, w, pe, opname)
        ct, q = ctype(v.dtype), self.fresh("qr")
        self.line(f"{ct}* {q} = ({ct}*)({w}->base[{pe}] + {a.data_off} + so{a.index}) + {S.to_cpp(v.offset)};")
        return q

    def op_shmem_put(self, op: Op):
        (src, view), (a, w) = op.ins, self._alloc_of(op)
        self._token(op)
        pe = self._pe(op.attrs["pe"], w, "shmem_put", "dst_pe")
        qs = self.ptr(src, const=True)
        qd = self._remote(a, w, pe, view, "shmem_put")
        ct = ctype(view.dtype)
        fn = "put_add" if op.attrs["add"] else "put_set"
        ivars, opened = self.nest(src.shape, None, ivdep=False)
        val = f"{qs}[{self.index(src, ivars)}]"
        if src.dtype != view.dtype:      # fp16/bf16 added into fp32
            val = f"pypto_rt::Cvt<{ct}>::from({val})"
        self.line(f"pypto_shmem::{fn}<{ct}>(&{qd}[{self.index(view, ivars)}], {val});")
        self.close(opened)

    def op_shmem_get(self, op: Op):
        (v,), (a, w) = op.ins, self._alloc_of(op)
        out = op.out
        self.alloc(out.storage)
        pe = self._pe(op.attrs["pe"], w, "shmem_get", "src_pe")
        qs = self._remote(a, w, pe, v, "shmem_get")
        ivars, opened = self.nest(v.shape, None, ivdep=True)
        self.line(f"{out.storage.cname}[{self.index(out, ivars)}] = {qs}[{self.index(v, ivars)}];")
        self.close(opened)

    def _tiles(self, op: Op, a, opname: str, src_pe: str):
        """Open loops over the region's signal tiles; returns (slot index expression, opened loops)."""
        ntiles_dim = [-(-d // g) for d, g in zip(a.shape, a.tile)]
        lin = f"{src_pe} * {a.ntiles()}"
        opened = 0
        for ax, (o, g, n) in enumerate(zip(op.attrs["offsets"], a.tile, op.attrs["counts"])):
            first = self.fresh("f")
            self.line(f"const int64_t {first} = ({S.to_cpp(o)}) / {g};")
            if not isinstance(o, int):
                self.line(f"if (({S.to_cpp(o)}) % {g} != 0) return pypto_shmem::bad_offset(ctx, {self._kn}, "
                          f"{c_string(opname)}, {ax}, {S.to_cpp(o)}, {g});")
            t = self.fresh("tl")
            self.open(f"for (int64_t {t} = {first}; {t} < {first} + {n}; ++{t})")
            opened += 1
            stride = 1
            for m in ntiles_dim[ax + 1:]:
                stride *= m
            lin = f"{lin} + {t} * {stride}"
        return lin, opened

    def _grid(self, a, w: str, pe: str) -> str:
        g = self.fresh("sg")
        self.line(f"int32_t* {g} = (int32_t*)({w}->base[{pe}] + {a.sig_off} + so{a.index}) + {SIG_HEADER};")
        return g

    def op_shmem_signal(self, op: Op):
        a, w = self._alloc_of(op)
        at = op.attrs
        self._token(op)
        src_pe = self._pe(at["src_pe"], w, "shmem_signal", "src_pe")
        if at["target"] is None:
            tgt = self.fresh("tp")
            self.open(f"for (int64_t {tgt} = 0; {tgt} < {w}->n_pes; ++{tgt})")
        else:
            tgt = self._pe(at["target"], w, "shmem_signal", "target_pe")
        self._ready(a, w, tgt, "shmem_signal")   # (inside the loop over every rank for target_pe=-1)
        grid = self._grid(a, w, tgt)
        slot, opened = self._tiles(op, a, "shmem_signal", src_pe)
        add = "true" if at["add"] else "false"
        self.line(f"pypto_shmem::signal({grid}, {slot}, (int32_t)({S.to_cpp(at['value'])}), {add});")
        self.close(opened + (1 if at["target"] is None else 0))

    def op_shmem_wait(self, op: Op):
        a, w = self._alloc_of(op)
        at = op.attrs
        self._token(op)
        src_pe = self._pe(at["src_pe"], w, "shmem_wait_until", "src_pe")
        grid = self._grid(a, w, f"{w}->rank")
        slot, opened = self._tiles(op, a, "shmem_wait_until", src_pe)
        s = self.fresh("slot")
        self.line(f"const int64_t {s} = {slot};")
        # clear_signal consumes: wait until the slot reaches the value, then take exactly that much off, so that a
        # fast peer's next signal (already added) is kept for the next wait instead of breaking an exact compare
        ge = "true" if at["clear"] else "false"
        v = self.fresh("want")
        self.line(f"const int32_t {v} = (int32_t)({S.to_cpp(at['value'])});")
        self.line(f"if (pypto_shmem::wait_for(ctx, {w}, {grid}, {s}, {v}, {ge}, "
                  f"{self._kn}, \"shmem_wait_until\", {s} - {src_pe} * {a.ntiles()}, {src_pe})) return 1;")
        if at["clear"]:
            self.line(f"__atomic_fetch_sub({grid} + {s}, {v}, __ATOMIC_ACQ_REL);")
        self.close(opened)

    def op_shmem_barrier(self, op: Op):
        a, w = self._alloc_of(op)
        self._token(op)
        what = c_string("shmem_barrier_all (waiting for the peer to enter this execution of the signal's create)")
        self.line(f"if (pypto_shmem::ring_ready_all(ctx, {w}, {a.hdr_off}, {a.ring}, gn{a.index}, {a.index}, "
                  f"{self._kn}, {what})) return 1;")
        self.line(f"if (pypto_shmem::barrier(ctx, {w}, {a.sig_off} + so{a.index}, {self._kn})) return 1;")

    def op_shmem_clear_data(self, op: Op):
        (v,), (a, _w) = op.ins, self._alloc_of(op)
        self._token(op)
        q = self.ptr(v, const=False)
        ct = ctype(v.dtype)
        ivars, opened = self.nest(v.shape, None, ivdep=True)
        self.line(f"{q}[{self.index(v, ivars)}] = pypto_rt::Cvt<{ct}>::from(0);")
        self.close(opened)

    def op_shmem_clear_signal(self, op: Op):
        a, w = self._alloc_of(op)
        self._token(op)
        self.line(f"std::memset((int32_t*)({w}->base[{w}->rank] + {a.sig_off} + so{a.index}) + {SIG_HEADER}, 0, "
                  f"{4 * a.n_pes * a.ntiles()});")

    def op_shmem_nop(self, op: Op):
        self._token(op)


__all__ = ["ShmemEmitter"]
