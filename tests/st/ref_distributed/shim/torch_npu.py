"""Test-only stand-in for `torch_npu` (the reference's NPU plugin), so that the reference's multi-rank tests run on
CPU ranks: importing it names torch's private backend "npu" (so `torch.device("npu:0")` parses), maps every
tensor placement on "npu" to the CPU, and gives `torch.npu` the few calls the tests make. Never part of pypto."""
from __future__ import annotations

import functools
import types

import torch

if getattr(torch, "_pypto_npu_shim", False) is False:
    try:
        torch.utils.rename_privateuse1_backend("npu")
    except RuntimeError:
        pass

    def _cpu(dev):
        if dev is None:
            return None
        if isinstance(dev, torch.device):
            return torch.device("cpu") if dev.type == "npu" else dev
        if isinstance(dev, str) and dev.startswith("npu"):
            return "cpu"
        if isinstance(dev, int):
            return "cpu"
        return dev

    def _wrap_factory(fn):
        @functools.wraps(fn)
        def f(*args, **kw):
            if "device" in kw:
                kw["device"] = _cpu(kw["device"])
            return fn(*args, **kw)
        return f

    for _name in ("empty", "zeros", "ones", "full", "randn", "rand", "randint", "tensor", "arange", "empty_like",
                  "zeros_like", "ones_like", "full_like", "randn_like", "as_tensor", "eye", "linspace"):
        setattr(torch, _name, _wrap_factory(getattr(torch, _name)))

    _to = torch.Tensor.to

    def _tensor_to(self, *args, **kw):
        args = tuple(_cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
        if "device" in kw:
            kw["device"] = _cpu(kw["device"])
        return _to(self, *args, **kw)

    torch.Tensor.to = _tensor_to
    torch.Tensor.npu = lambda self, *a, **k: self
    _state = {"device": 0}
    torch.npu = types.SimpleNamespace(
        set_device=lambda d: _state.__setitem__("device", d),
        current_device=lambda: _state["device"],
        synchronize=lambda *a, **k: None,
        device_count=lambda: 64,
        is_available=lambda: True,
    )
    torch._pypto_npu_shim = True

npu = torch.npu
