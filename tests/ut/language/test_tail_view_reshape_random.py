"""Random kernels whose views run past their tensor's end (a tail tile, valid region smaller than the tile) and are
then reshaped without valid_shape, against torch: a rank-4 matmul (its batch dims are folded into one by a reshape
and unfolded after it) over a grid of [tb0, tb1, tm, tn] tiles, as the reference's test_batch_matmul_4d_nd does,
and a plain reshape of a tail view.

The class of a wrong result once computed silently: a tail tile copied to a temp is laid out over its static tile
(its caps), not over its valid sizes, and the reshape viewed that copy as if its valid rows were packed.
"""
import random

import pytest
import torch

import pypto

D, S = pypto.DYNAMIC, pypto.STATIC
CASES = 8


def _draw(rng: random.Random) -> dict:
    return {"b0": rng.choice([1, 2, 4]), "b1": rng.choice([1, 3]), "m": rng.choice([16, 20, 40]),
            "k": rng.choice([32, 40]), "n": rng.choice([32, 40, 72]), "tb0": rng.choice([1, 3]),
            "tb1": rng.choice([1, 2]), "tm": 16, "tn": 32, "a_trans": rng.choice([False, True]),
            "dtype": rng.choice([torch.int8, torch.float16])}


def _matmul_kernel(c: dict):
    tb0, tb1, tm, tn, kk, at = c["tb0"], c["tb1"], c["tm"], c["tn"], c["k"], c["a_trans"]
    out_dt = pypto.DT_INT32 if c["dtype"] == torch.int8 else pypto.DT_FP32

    @pypto.frontend.jit
    def k(a: pypto.Tensor([D, S, S, S]), b: pypto.Tensor([D, S, S, S]), out: pypto.Tensor([D, S, S, S])):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        pypto.set_vec_tile_shapes(1, 16, 32)
        b0, b1 = out.shape[0], out.shape[1]
        m, n = out.shape[2], out.shape[3]
        for i0 in pypto.loop(0, (b0 + tb0 - 1) // tb0):
            for i1 in pypto.loop(0, (b1 + tb1 - 1) // tb1):
                for mi in pypto.loop(0, (m + tm - 1) // tm):
                    for ni in pypto.loop(0, (n + tn - 1) // tn):
                        bs0, bs1 = slice(i0 * tb0, i0 * tb0 + tb0), slice(i1 * tb1, i1 * tb1 + tb1)
                        ms, ns = slice(mi * tm, mi * tm + tm), slice(ni * tn, ni * tn + tn)
                        av = a[bs0, bs1, 0:kk, ms] if at else a[bs0, bs1, ms, 0:kk]
                        o = pypto.matmul(av, b[bs0, bs1, 0:kk, ns], out_dt, a_trans=at)
                        out[bs0, bs1, ms, ns] = o
    return k


@pytest.mark.parametrize("case", range(CASES))
def test_rank4_matmul_tail_tiles_match_torch(case):
    rng = random.Random(2300 + case)
    c = _draw(rng)
    g = torch.Generator().manual_seed(case)
    a_shape = (c["b0"], c["b1"], c["k"], c["m"]) if c["a_trans"] else (c["b0"], c["b1"], c["m"], c["k"])
    a = torch.randint(-3, 4, a_shape, generator=g).to(c["dtype"])
    b = torch.randint(-3, 4, (c["b0"], c["b1"], c["k"], c["n"]), generator=g).to(c["dtype"])
    acc = torch.int32 if c["dtype"] == torch.int8 else torch.float32
    out = torch.full((c["b0"], c["b1"], c["m"], c["n"]), -7, dtype=acc)
    _matmul_kernel(c)(a, b, out)
    at = a.transpose(-1, -2) if c["a_trans"] else a
    want = torch.matmul(at.to(acc), b.to(acc))   # small integers: exact in fp32 too
    assert torch.equal(out, want), f"case {c}: {(out != want).sum().item()} elements differ"


@pytest.mark.parametrize("rows,cols,tile", [(5, 40, 32), (3, 7, 8), (6, 33, 16)])
def test_plain_reshape_of_a_tail_view_reads_the_valid_elements(rows, cols, tile):
    @pypto.frontend.jit
    def k(x: pypto.Tensor([S, D]), out: pypto.Tensor([D])):
        for j in pypto.loop(0, (x.shape[1] + tile - 1) // tile):
            v = x[0:rows, j * tile:j * tile + tile]           # the last one runs past the end
            flat = pypto.reshape(v * 2.0, [rows * v.shape[1]])
            pypto.assemble(flat, [rows * j * tile], out)

    x = torch.arange(rows * cols, dtype=torch.float32).reshape(rows, cols)
    out = torch.zeros(rows * cols)
    k(x, out)
    want = torch.cat([(x[:, j:j + tile] * 2.0).reshape(-1) for j in range(0, cols, tile)])
    assert torch.equal(out, want)
