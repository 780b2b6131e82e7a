"""Random valid-region reshape kernels (seeded) against torch: a view whose tile is larger than its valid region,
reshaped with valid_shape= (the valid elements, read row-major, fill the new valid region row-major, as the
reference defines it), an elementwise op, reshaped back and assembled, as attention code does (the reference's
`test_reshape_copy_out.py`).

Each case draws a rank-3 input [b, l, d] (static or DYNAMIC dims; its last dim is the leading d of a wider
tensor's, so that the valid region is not packed in memory in some cases), a tile [bt, lt, dt] >= it in l and d, a loop
over b in chunks of bt (the last chunk partial), which dims to merge (the first two or the last two), an op and
a dtype. Checked: the reshaped intermediate (written out) is torch's reshape of the valid data, and the result of
the round trip is the op of the input.
"""
import random

import pytest
import torch

import pypto

D, S = pypto.DYNAMIC, pypto.STATIC
CASES = 12
OPS = {
    "square": (lambda p: p * p, lambda t: t * t),
    "add": (lambda p: p + 1.5, lambda t: t + 1.5),
    "exp": (lambda p: pypto.exp(p), lambda t: torch.exp(t)),
}


def _draw(rng: random.Random) -> dict:
    b, l, d = rng.choice([1, 3, 4, 6]), rng.choice([1, 3, 8]), rng.choice([4, 16, 40])
    return {"b": b, "l": l, "d": d, "bt": rng.choice([1, 2, 4]), "lt": l + rng.choice([0, 1, 5, 24]),
            "dt": d + rng.choice([0, 8]), "merge": rng.choice(["first", "last"]), "op": rng.choice(sorted(OPS)),
            "dyn": rng.choice([True, False]), "dtype": rng.choice([torch.float32, torch.bfloat16]),
            "extra": rng.choice([0, 0, 3])}


def _kernel(c: dict):
    bt, lt, dt, merge, extra = c["bt"], c["lt"], c["dt"], c["merge"], c["extra"]
    pop = OPS[c["op"]][0]
    ann = [D, D, S] if c["dyn"] else [S, S, S]

    @pypto.frontend.jit
    def k(x: pypto.Tensor(ann), mid: pypto.Tensor([S, S]), out: pypto.Tensor(ann)):
        b, l, _ = x.shape
        d = x.shape[2] - extra
        for i in pypto.loop(0, (b + bt - 1) // bt):
            rows = pypto.min(bt, b - i * bt)
            v = pypto.view(x, [bt, lt, dt], [i * bt, 0, 0], valid_shape=[rows, l, d])
            if merge == "first":
                flat = pypto.reshape(v, [bt * lt, dt], valid_shape=[rows * l, d])
                pypto.assemble(flat, [i * bt * l, 0], mid)
            else:
                flat = pypto.reshape(v, [bt, lt * dt], valid_shape=[rows, l * d])
                pypto.assemble(flat, [i * bt, 0], mid)
            back = pypto.reshape(pop(pypto.cast(flat, pypto.DT_FP32)), [bt, lt, dt], valid_shape=[rows, l, d])
            pypto.assemble(back, [i * bt, 0, 0], out)
    return k


@pytest.mark.parametrize("case", range(CASES))
def test_valid_region_reshape_matches_torch(case):
    c = _draw(random.Random(1000 + case))
    g = torch.Generator().manual_seed(case)
    wide = torch.randn(c["b"], c["l"], c["d"] + c["extra"], generator=g).to(c["dtype"])
    x = wide[:, :, :c["d"]]
    mshape = (c["b"] * c["l"], c["d"]) if c["merge"] == "first" else (c["b"], c["l"] * c["d"])
    mid = torch.full(mshape, -9.0).to(c["dtype"])
    out = torch.full(x.shape, -7.0)
    _kernel(c)(wide, mid, out)
    assert torch.equal(mid, x.reshape(mshape)), c
    want = OPS[c["op"]][1](x.float())
    torch.testing.assert_close(out, want, rtol=2e-6, atol=1e-6, msg=lambda m: f"{c}: {m}")
