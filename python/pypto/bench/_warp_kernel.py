"""The Warp peer's kernel (a module of its own: warp compiles kernels from their module's source, and importing
it requires warp)."""
import warp as wp


@wp.kernel
def add3(a: wp.array(dtype=wp.float32), b: wp.array(dtype=wp.float32), c: wp.array(dtype=wp.float32),
         out: wp.array(dtype=wp.float32)):
    i = wp.tid()
    out[i] = a[i] + b[i] + c[i]
