"""pypto quickstart: two kernels on the CPU simulator, checked against torch, and the per-call host time.

    python examples/quickstart.py
"""
import time

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


def per_call_ns(fn, *args, repeat=7, number=20000, **kwargs):
    """Median over `repeat` runs of the mean per-call time of `number` calls, in ns."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(number):
            fn(*args, **kwargs)
        runs.append((time.perf_counter_ns() - t0) / number)
    return sorted(runs)[len(runs) // 2]


def main():
    torch.manual_seed(0)
    a, b = torch.randn(64, 96), torch.randn(64, 96)
    out = torch.zeros(64, 96)
    t0 = time.perf_counter()
    scaled_add(a, b, out, alpha=2.0)
    first = time.perf_counter() - t0
    ok = torch.allclose(out, a * 2.0 + b)
    print(f"scaled_add 64x96: matches torch: {ok}; first call (trace+codegen+compile or disk-cache load) {first*1e3:.1f} ms")

    for n in (16, 40, 1):
        x = torch.randn(n, 64)
        y = torch.zeros(n, 64)
        rows_exp(x, y)
        print(f"rows_exp n={n:2d}: matches torch: {torch.allclose(y, torch.exp(x))}")
    print(f"rows_exp specializations for n=16,40,1: {rows_exp.cache_info()['specializations']} (DYNAMIC rows)")

    sa, sb, so = torch.randn(4, 4), torch.randn(4, 4), torch.zeros(4, 4)
    scaled_add(sa, sb, so, alpha=2.0)
    t_pypto = per_call_ns(scaled_add, sa, sb, so, alpha=2.0)
    t_torch = per_call_ns(torch.add, sa, sb, out=so)
    print(f"per-call host time, 16-element tensors (median of 7): pypto cache hit {t_pypto:.0f} ns, "
          f"torch.add(out=) {t_torch:.0f} ns")
    if not ok:
        raise SystemExit("quickstart: results differ from torch")


if __name__ == "__main__":
    main()
