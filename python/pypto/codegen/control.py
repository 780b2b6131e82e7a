"""Emitters of the control-flow statements (language/control.py): kernel branches (C++ if/else), `pypto.loop`
(plain, or on the thread pool with parallel=True) and `unroll_list` loops. A mixin of the unfused emitter
(cpp.py)."""
from __future__ import annotations

from ..ir import sym as S
from ..ir.nodes import If, Loop, UnrolledLoop


class ControlEmitter:
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


__all__ = ["ControlEmitter"]
