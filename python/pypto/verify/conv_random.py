"""Interpreter rules of `conv` (torch.nn.functional.conv1d/2d/3d in float32) and of the random ops (Philox4x32-10
with numpy, the numbers codegen/conv_random.py generates): a mixin of the reference interpreter (interp.py)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..ir.nodes import Op
from ..codegen.conv_random import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, UNIFORM_BITS

_M32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(ctr, key):
    """Philox4x32-10 of counters `ctr` (4 uint64 arrays holding 32-bit words) and key (k0, k1): 4 word arrays."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) & _M32 for c in ctr)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0 = np.uint64(PHILOX_M0) * c0
        p1 = np.uint64(PHILOX_M1) * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _M32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _M32
        k0 = (k0 + np.uint64(PHILOX_W0)) & _M32
        k1 = (k1 + np.uint64(PHILOX_W1)) & _M32
    return c0, c1, c2, c3


def random_values(dist: str, shape, seed: int, counter: int, dtype_name: str) -> torch.Tensor:
    """The float32 values (float64 for normal, before rounding) of a random op's elements, row-major."""
    n = int(np.prod(shape)) if len(shape) else 1
    idx = np.arange(n, dtype=np.uint64)
    key = (seed & 0xFFFFFFFF, seed >> 32)
    per = 4 if dist == "uniform" else 2
    blk = idx // np.uint64(per)
    words = np.stack(philox4x32_10((blk & _M32, blk >> np.uint64(32), np.full(n, counter & 0xFFFFFFFF, np.uint64),
                                    np.full(n, counter >> 32, np.uint64)), key))
    sel = (idx % np.uint64(per)).astype(np.int64)
    cols = np.arange(n)
    if dist == "uniform":
        bits = UNIFORM_BITS[dtype_name]
        v = (words[sel, cols] >> np.uint64(32 - bits)).astype(np.float64) * 2.0 ** -bits
        return torch.from_numpy(v.astype(np.float32)).reshape(shape)
    u1 = (words[2 * sel, cols].astype(np.float64) + 1.0) * 2.0 ** -32
    u2 = words[2 * sel + 1, cols].astype(np.float64) * 2.0 ** -32
    v = np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    return torch.from_numpy(v.astype(np.float32)).reshape(shape)


class ConvRandomInterp:
    def op_conv(self, op: Op):
        a = op.attrs
        x = self.view(op.ins[0]).float()
        w = self.view(op.ins[1]).float()
        bias = self.view(op.ins[2]).float() if a["bias"] else None
        nd = x.dim() - 2
        pads = []
        for i in reversed(range(nd)):           # F.pad lists the last dim first
            pads += [a["paddings"][2 * i], a["paddings"][2 * i + 1]]
        fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
        r = fn(F.pad(x, pads), w, bias, stride=a["strides"], dilation=a["dilations"], groups=a["groups"])
        if a["relu"]:
            r = torch.relu(r)
        self.store(op.out, r)

    def op_random(self, op: Op):
        a = op.attrs
        shape = [int(self.ev(d)) for d in op.out.shape]
        self.store(op.out, random_values(a["dist"], shape, a["seed"], a["counter"], op.out.dtype.name))
