"""Per-call time of `out[:] = a + b` with STATIC vs DYNAMIC row annotations vs torch.add(out=), at 1x64, 32x32 and
1023x1000, 1 and 2 threads (medians of 5 batches): small-tensor cost and DYNAMIC vs STATIC (issue 22 items 3-4)."""
import time, torch, pypto
F2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
D2 = pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32)
def ks(a: F2, b: F2, out: F2):
    out[:] = a + b
def kd(a: D2, b: D2, out: D2):
    out[:] = a + b
def med(f, n=2000):
    for _ in range(200): f()
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n): f()
        ts.append((time.perf_counter() - t) / n)
    return sorted(ts)[2] * 1e9
for nt in (1, 2):
    torch.set_num_threads(nt)
    for R, C in ((1, 64), (32, 32), (1023, 1000)):
        a, b, o, to = torch.randn(R, C), torch.randn(R, C), torch.empty(R, C), torch.empty(R, C)
        s = pypto.frontend.jit(ks, runtime_options={"sim_threads": nt}); d = pypto.frontend.jit(kd, runtime_options={"sim_threads": nt})
        n = 2000 if R < 100 else 50
        ps, pd, tt = med(lambda: s(a, b, o), n), med(lambda: d(a, b, o), n), med(lambda: torch.add(a, b, out=to), n)
        print(f"{nt}T {R}x{C}: STATIC {ps:.0f} ns  DYNAMIC {pd:.0f} ns  torch {tt:.0f} ns  (static/torch {ps/tt:.2f}x, dynamic/static {pd/ps:.2f}x)", flush=True)
