"""pypto.maximum / pypto.minimum pick one of their operands, bit for bit: a when a is NaN, else b when b is NaN,
else the larger (smaller) with a on a tie (so relu(-0.0) = maximum(-0.0, 0) is -0.0, as torch.relu gives). Every
pair of a set of special values (signed zeros, infinities, NaNs of both signs and several payloads, subnormals,
numbers), against that rule computed in Python on the bits and against torch bit for bit where no NaN is
involved; relu of signed zeros; and amax/amin of rows holding them against torch."""
import itertools

import numpy as np
import torch

import pypto

F1 = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)
F2 = pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], pypto.DT_FP32)

SPECIAL = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FA5A5A5, 0xFF812345,
           0x00000001, 0x80000001, 0x3F800000, 0xBF800000, 0x3F800001, 0x7F7FFFFF, 0xFF7FFFFF]


@pypto.frontend.jit
def max_min(a: F1, b: F1, mx: F1, mn: F1):
    mx[:] = pypto.maximum(a, b)
    mn[:] = pypto.minimum(a, b)


@pypto.frontend.jit
def row_max_min(x: F2, mx: F1, mn: F1):
    mx[:] = pypto.amax(x, -1)
    mn[:] = pypto.amin(x, -1)


def _f(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def _pick(a, b, larger: bool):
    fa, fb = _f([a])[0], _f([b])[0]
    if np.isnan(fa):
        return a
    if np.isnan(fb):
        return b
    return a if ((fa >= fb) if larger else (fa <= fb)) else b


def test_maximum_minimum_pick_the_operand_the_rule_names_bit_for_bit():
    pairs = list(itertools.product(SPECIAL, SPECIAL))
    a = torch.from_numpy(_f([p[0] for p in pairs]).copy())
    b = torch.from_numpy(_f([p[1] for p in pairs]).copy())
    mx, mn = torch.full_like(a, 7.0), torch.full_like(a, 7.0)
    max_min(a, b, mx, mn)
    got_mx = mx.numpy().view(np.uint32).tolist()
    got_mn = mn.numpy().view(np.uint32).tolist()
    t_mx = torch.maximum(a, b).numpy().view(np.uint32).tolist()
    t_mn = torch.minimum(a, b).numpy().view(np.uint32).tolist()
    for k, (x, y) in enumerate(pairs):
        assert got_mx[k] == _pick(x, y, True), (hex(x), hex(y), hex(got_mx[k]))
        assert got_mn[k] == _pick(x, y, False), (hex(x), hex(y), hex(got_mn[k]))
        fx, fy = _f([x])[0], _f([y])[0]
        # torch itself answers a +0/-0 tie differently on its scalar and vector paths (torch.maximum(+0, -0) is
        # +0 for one element, -0 in a longer tensor): compared where no NaN and no such tie is involved
        if not (np.isnan(fx) or np.isnan(fy) or (fx == fy and x != y)):
            assert (got_mx[k], got_mn[k]) == (t_mx[k], t_mn[k]), (hex(x), hex(y))


@pypto.frontend.jit
def relu_kernel(a: F1, out: F1):
    out[:] = pypto.relu(a)


def test_relu_keeps_the_sign_of_zero_like_torch():
    a = torch.tensor([-0.0, 0.0, -1.0, 2.0, float("-inf"), float("inf")])
    out = torch.full_like(a, 7.0)
    relu_kernel(a, out)
    assert torch.equal(out.view(torch.int32), torch.relu(a).view(torch.int32))


def test_amax_amin_of_rows_with_specials_match_torch():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 300, generator=g)
    specials = torch.from_numpy(_f(SPECIAL).copy())
    for r in range(64):                       # rows 0..14 get one special each, at a row-dependent column
        if r < len(SPECIAL):
            x[r, (r * 37) % 300] = specials[r]
    x[20, 5], x[20, 250] = float("nan"), float("-inf")
    x[21, :] = float("-inf")
    mx, mn = torch.zeros(64), torch.zeros(64)
    row_max_min(x, mx, mn)
    torch.testing.assert_close(mx, x.amax(-1), rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(mn, x.amin(-1), rtol=0, atol=0, equal_nan=True)


def _lane_order_pick(row, larger: bool):
    """amax/amin of a NaN-free row by the documented lane order (docs/language.md "Reductions"; kernel_rt.h
    fold_*): element j into lane j % 64, a lane keeping what it holds on a tie, then lane l with l + w for
    w = 32 ... 1, the lower lane kept on a tie. Returns the float32 bits."""
    def keep(a, b):
        return a if ((a >= b) if larger else (a <= b)) else b
    acc = [np.float32(-np.inf if larger else np.inf)] * 64
    for j, v in enumerate(row):
        acc[j % 64] = keep(acc[j % 64], np.float32(v))
    w = 32
    while w:
        acc = [keep(acc[i], acc[i + w]) for i in range(w)]
        w //= 2
    return int(np.asarray([acc[0]], dtype=np.float32).view(np.uint32)[0])


def test_amax_amin_of_signed_zero_ties_keep_the_lane_order_pick():
    """Which zero a +0/-0 tie gives is the lane order's (torch gives the first one met; pypto's fixed order
    can give another): rows of -1 (+1) with zeros of random signs at random places, widths with and without a
    tail, every result's sign bit as the lane-order rule gives it."""
    g = np.random.default_rng(7)
    for width in (64, 300, 1000, 1024):
        x = -np.ones((32, width), dtype=np.float32)
        for r in range(32):
            at = g.choice(width, size=1 + r % 6, replace=False)
            x[r, at] = np.where(g.random(at.size) < 0.5, np.float32(-0.0), np.float32(0.0))
        t = torch.from_numpy(x)
        for sign, larger in ((1, True), (-1, False)):
            src = t * sign if sign == 1 else -t
            mx, mn = torch.zeros(32), torch.zeros(32)
            row_max_min(src, mx, mn)
            got = (mx if larger else mn).numpy().view(np.uint32).tolist()
            want = [_lane_order_pick(row, larger) for row in src.numpy()]
            assert got == want, (width, larger)
