"""pypto quickstart: two kernels on the CPU simulator, checked against torch, and the per-call host time.

The first call's time is split in two: the kernel's own build (trace, C++, g++; a disk-cache load on later runs)
and a one-off setup of the process (loading the fast torch tensor reader; on an empty cache it is compiled in
the background instead, and calls meanwhile read tensors through torch's DLPack API). The hit time is measured
the way `python -m pypto.bench` measures it, with the fast reader in place, so the two agree.

    python examples/quickstart.py
"""
import time
import timeit

import torch

import pypto


@pypto.frontend.jit
def scaled_add(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               b: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               alpha=1.0, tile=32):
    pypto.set_vec_tile_shapes(tile, tile)
    out[:] = a * alpha + b


@pypto.frontend.jit
def rows_exp(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
             out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 15) // 16):
        v = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[pypto.min(16, n - i * 16), 64])
        pypto.assemble(pypto.exp(v), [i * 16, 0], out)


def per_call_ns(stmt, repeat=7, number=20000, **names):
    """Median over `repeat` loops of the mean per-call time of `stmt`, in ns. Timed as `python -m pypto.bench`
    times it: a timeit loop of the bare call statement, its names bound as locals. (A helper that forwards
    `fn(*args, **kwargs)` would time Python building that tuple and dict too: several hundred ns per call.)"""
    timer = timeit.Timer(stmt, globals=names)
    return sorted(timer.repeat(repeat, number))[repeat // 2] / number * 1e9


def main():
    torch.manual_seed(0)
    a, b = torch.randn(64, 96), torch.randn(64, 96)
    out = torch.zeros(64, 96)
    t0 = time.perf_counter()
    scaled_add(a, b, out, alpha=2.0)
    first = time.perf_counter() - t0
    ok = torch.allclose(out, a * 2.0 + b)
    kernel = scaled_add.cache_info()["compile_seconds"]  # trace + C++ + g++ (or the load from the disk cache)
    print(f"scaled_add 64x96: matches torch: {ok}; first call {first * 1e3:.0f} ms = "
          f"{kernel * 1e3:.0f} ms for this kernel (trace + C++ + g++, or a load from the disk cache on later runs)"
          f" + {(first - kernel) * 1e3:.0f} ms one-off setup (loading the fast torch tensor reader; on an empty "
          f"cache it is compiled in the background, ~1 s, while calls use torch's DLPack API)")

    for n in (16, 40, 1):
        x = torch.randn(n, 64)
        y = torch.zeros(n, 64)
        rows_exp(x, y)
        print(f"rows_exp n={n:2d}: matches torch: {torch.allclose(y, torch.exp(x))}")
    print(f"rows_exp specializations for n=16,40,1: {rows_exp.cache_info()['specializations']} (DYNAMIC rows)")

    sa, sb, so = torch.randn(4, 4), torch.randn(4, 4), torch.zeros(4, 4)
    scaled_add(sa, sb, so, 2.0)
    names = dict(k=scaled_add, a=sa, b=sb, o=so, add=torch.add)
    pypto.compiler.torch_reader.ensure_installed(wait=True)  # hits below use the fast reader, as the bench's do
    t_pos = per_call_ns("k(a, b, o, 2.0)", **names)
    t_kw = per_call_ns("k(a, b, o, alpha=2.0)", **names)
    t_torch = per_call_ns("add(a, b, out=o)", **names)
    print(f"per-call host time of a cache hit, 16-element tensors (median of 7 timeit loops, as the bench times "
          f"it): pypto {t_pos:.0f} ns positional, {t_kw:.0f} ns with alpha= by keyword; torch.add(out=) "
          f"{t_torch:.0f} ns. Figures vary with the machine and its load; `python -m pypto.bench --quick` "
          f"measures them properly (docs/bench.md)")
    if not ok:
        raise SystemExit("quickstart: results differ from torch")


if __name__ == "__main__":
    main()
