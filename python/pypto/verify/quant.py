"""The verify interpreter's rules for the quantization IR ops (fp4_pack, fp4_unpack, mx_scale, mx_quant, bitcast):
a mixin of interp._Interp computing with torch what include/pypto/kernel_quant.h computes in the kernel."""
from __future__ import annotations

import torch

from ..ir.nodes import Op

_E2M1_MAG = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def e2m1_values(codes: torch.Tensor) -> torch.Tensor:
    """4-bit E2M1 codes (uint8, low nibble) -> float32."""
    mag = torch.tensor(_E2M1_MAG, dtype=torch.float32)[(codes & 7).long()]
    return torch.where((codes & 8) != 0, -mag, mag)


def e2m1_codes(f: torch.Tensor) -> torch.Tensor:
    """float32 -> E2M1 codes: nearest even, saturating to +-6 (inf too), NaN -> +6."""
    a = f.abs()
    code = torch.where(a < 2, torch.round(a * 2), torch.where(a < 4, torch.round(a) + 2, torch.round(a * 0.5) + 4))
    code = torch.where(a >= 6, torch.full_like(code, 7), code)
    sign = (f.view(torch.int32) >> 28) & 8
    nan = f.isnan()
    code = torch.where(nan, torch.full_like(code, 7), code).to(torch.int32) | torch.where(nan, 0, sign)
    return code.to(torch.uint8)


def _pairs(f: torch.Tensor) -> torch.Tensor:
    c = e2m1_codes(f.float().contiguous())
    return c[..., 0::2] | (c[..., 1::2] << 4)


def _mx_exponents(amax: torch.Tensor, nv: bool, emax: int, max_elem: float) -> torch.Tensor:
    nan = amax.isnan()
    if not nv:
        e = ((amax.view(torch.int32) >> 23) & 0xff) - emax
    else:
        a = amax.double()
        _, k = torch.frexp(a / max_elem)
        k = k.to(torch.int64)
        k = k + (a > max_elem * torch.pow(2.0, k.double())).long()          # exact: max_elem * 2^k
        k = k - (a <= max_elem * torch.pow(2.0, (k - 1).double())).long()
        e = torch.where(a <= max_elem * 2.0 ** -127, 0, k + 127)
        e = torch.where(amax.isinf(), 254, e)
    e = e.clamp(0, 254)
    return torch.where(nan, 255, e).to(torch.uint8)


def _recip(e: torch.Tensor) -> torch.Tensor:
    r = torch.pow(2.0, 127.0 - e.double()).float()
    return torch.where(e == 255, torch.tensor(float("nan")), r)


class QuantInterp:
    def op_fp4_unpack(self, op: Op):
        b = self.view(op.ins[0]).view(torch.uint8)
        vals = torch.stack([e2m1_values(b & 0xf), e2m1_values(b >> 4)], -1).flatten(-2)
        self.store(op.out, vals)

    def op_fp4_pack(self, op: Op):
        self.view(op.out).view(torch.uint8).copy_(_pairs(self.view(op.ins[0])))

    def op_mx_scale(self, op: Op):
        x = self.view(op.ins[0]).float()
        a, r = op.attrs, x.dim()
        if a["axis"] == r - 1:
            c = x.shape[-1]
            g = (c + 63) // 64
            x = torch.nn.functional.pad(x, (0, 64 * g - c))
            amax = x.abs().reshape(*x.shape[:-1], g, 2, 32).amax(-1)
        else:
            rows, c = x.shape[-2], x.shape[-1]
            amax = x.abs().reshape(*x.shape[:-2], rows // 64, 2, 32, c).amax(-2).transpose(-1, -2)
        e = _mx_exponents(amax.contiguous(), a["nv"], a["emax"], a["max_elem"])
        self.view(op.out).view(torch.uint8).copy_(e)

    def op_mx_quant(self, op: Op):
        x, s = op.ins
        xv = self.view(x).float()
        rec = _recip(self.view(s).view(torch.uint8))
        r = xv.dim()
        if op.attrs["axis"] == r - 1:
            rec = rec.reshape(*rec.shape[:-2], -1).repeat_interleave(32, -1)[..., :xv.shape[-1]]
        else:
            rec = rec.transpose(-1, -2).reshape(*rec.shape[:-3], -1, rec.shape[-2]).repeat_interleave(32, -2)
        v = xv * rec
        out = self.view(op.out).view(torch.uint8)
        if op.out.dtype.name == "DT_FP4_E2M1X2":
            out.copy_(_pairs(v))
        else:
            q = torch.where(v.isnan(), v, v.clamp(-448.0, 448.0)).to(torch.float8_e4m3fn).view(torch.uint8)
            out.copy_(torch.where(v.isnan(), torch.tensor(0x7f, dtype=torch.uint8), q))

    def op_bitcast(self, op: Op):
        src = self.view(op.ins[0]).contiguous().reshape(-1).view(torch.uint8)
        self.view(op.out).view(torch.uint8).copy_(src)      # the result is a fresh 1-D temporary


__all__ = ["QuantInterp", "e2m1_values", "e2m1_codes"]
