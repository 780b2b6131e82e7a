"""One generated translation unit: the kernel body (fused or unfused emitter), its prologue (tensor pointers,
dynamic dims, scalars) and the ABI entry points around it."""
from __future__ import annotations

from ..ir import sym as S
from ..ir.nodes import Kernel, format_kernel
from .cpp import _Emitter
from .fused import FusedEmitter
from .names import c_string, comment_text
from .templates import PRELUDE, ctype


def generate(kernel: Kernel, with_ir_comment: bool = True, fuse: bool = True, spec_key: str | None = None) -> str:
    """The C++ source of `kernel` (deterministic). fuse=False: one loop nest and one whole temporary per op
    (the reference the fused code is tested against bit for bit). spec_key: the specialization's key text
    (vocab/speckey.py), exported as `pypto_spec_key()` so that every loader can check what the library was compiled
    for."""
    em = FusedEmitter(kernel) if fuse else _Emitter(kernel)
    for t in kernel.tensors:
        st = kernel.params[t.param].storage
        em.line(f"{ctype(st.dtype)}* {st.cname} = ({ctype(st.dtype)}*)tensors[{t.index}].data;")  # as stored
    for var, ti, ax in kernel.dyn_vars:
        em.line(f"const int64_t {var.args[1]} = tensors[{ti}].shape[{ax}];")
    if kernel.runtime_debug_mode >= 4:
        for t in kernel.tensors:
            em.line(f"const int64_t dbg_numel_{t.index} = pypto_rt::numel(tensors[{t.index}]);")
    for s in kernel.scalars:
        v = kernel.scalar_vars[s.param]
        if v.kind == S.FLOAT:
            em.line(f"const double {v.args[1]} = scalars[{s.index}].f;")
        elif v.kind == S.BOOL:
            em.line(f"const bool {v.args[1]} = scalars[{s.index}].i != 0;")
        else:
            em.line(f"const int64_t {v.args[1]} = scalars[{s.index}].i;")
    if kernel.shmem is not None:
        em.shmem_prologue()
    em.block(kernel.body)
    em.line("(void)ctx; (void)scalars; (void)tensors;")
    em.line("return 0;")

    out = [f"// pypto generated kernel: {comment_text(kernel.name)}"]  # names are data: names.py
    if with_ir_comment:
        out.append("//")
        out += [("// " + comment_text(ln)).rstrip() for ln in format_kernel(kernel).splitlines()]
    if kernel.uses_threads or em.threaded:
        out.append("#define PYPTO_RT_THREADS 1")
    if em.gemm:
        out.append("#define PYPTO_RT_GEMM 1")
    out += [
        "#include <pypto/kernel_abi.h>",
        "#include <pypto/kernel_rt.h>",
    ]
    if em.quant:
        out.append("#include <pypto/kernel_quant.h>")
    if em.shmem:
        out.append("#include <pypto/kernel_shmem.h>")
        out.append("#include <pypto/kernel_shmem_ring.h>")
    out.append("")
    if any("pypto_k::" in ln for ln in em.lines):
        out += [PRELUDE, ""]
    out += [
        "namespace {",
        "int kernel_body(const PyptoTensorArg* tensors, const PyptoScalarArg* scalars, PyptoLaunchContext* ctx) {",
    ]
    out += em.lines
    out += [
        "}",
        "}  // namespace",
        "",
        'extern "C" __attribute__((visibility("default"))) uint32_t pypto_abi_version(void) {',
        "  return PYPTO_KERNEL_ABI_VERSION;",
        "}",
        "",
        'extern "C" __attribute__((visibility("default"))) int pypto_entry(const PyptoTensorArg* tensors, '
        "const PyptoScalarArg* scalars, PyptoLaunchContext* ctx) {",
        "  return kernel_body(tensors, scalars, ctx);",
        "}",
        "",
    ]
    if spec_key is not None:  # data, as an escaped string literal (names.py)
        out += [
            'extern "C" __attribute__((visibility("default"))) const char* pypto_spec_key(void) {',
            f"  return {c_string(spec_key)};",
            "}",
            "",
        ]
    return "\n".join(out)


__all__ = ["generate"]
