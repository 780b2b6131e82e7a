"""A pytest plugin for the reference test runner (test-only): maps the reference tests' NPU placement to the CPU.

Loaded by `run_reference_tests.py` in each child process (`pytest -p reference_shim`), never by our own suite.
It maps placement only, nothing a kernel computes:
- `import torch_npu` gets a stand-in whose `npu` namespace (also `torch.npu`) knows the placement calls
  (`set_device`, `synchronize`, `current_device`, `device_count`, `is_available`, `empty_cache`); every other
  torch_npu feature (`npu_format_cast`, `profiler`, streams, graphs, ...) raises `NpuOnlyFeature` naming it, so the
  runner lists that case as needing an NPU-only feature instead of counting it as failed;
- `tensor.npu()`, `tensor.to("npu:0")` and `device="npu..."` (or an int device) in torch's factories place the
  tensor on the CPU; `module.npu()` keeps a module's parameters there (it returns the module, as torch's
  `module.cuda()` does). A tensor "on the NPU" is a separate copy, as a device copy is, and `.cpu()` of it copies back,
  so a test that keeps a host tensor and its device copy keeps two tensors, as on the NPU (`.npu()` of a tensor
  already on the NPU is that tensor, as in torch);
- `RunMode.NPU` (given in `runtime_options`, or the default with `ASCEND_HOME_PATH` set) becomes `RunMode.SIM`;
- the Python processes a case starts itself (a script it runs with `python`, a multiprocessing child) get the same
  mapping: the runner puts `reference_child/` on their module path, whose `sitecustomize` loads this module when
  such a process imports `torch_npu`.
One setting of the suite's conftest files is kept, as it decides what a case checks: ut/interpreter's conftest turns
pass verify on (`enable_pass_verify=True`, `pass_verify_pass_filter=["all"]`) for every kernel of that folder, whose
cases then read the verify log. Ours fixes `enable_pass_verify` when a kernel is decorated, so the shim sets it in
`pytest_configure`, before the case's module is imported.
"""
from __future__ import annotations

import functools
import os
import sys
import types

import torch

NPU_ONLY_MARK = "NPU-only torch_npu feature:"
_ON_NPU = "_reference_shim_on_npu"
_FACTORIES = ("arange", "empty", "eye", "full", "full_like", "ones", "ones_like", "rand", "rand_like", "randint",
              "randn", "randn_like", "randperm", "tensor", "zeros", "zeros_like", "empty_like", "as_tensor",
              "linspace", "empty_strided")


class NpuOnlyFeature(RuntimeError):
    """A torch_npu feature with no CPU meaning (the case needs an NPU)."""

    def __init__(self, name: str):
        super().__init__(f"{NPU_ONLY_MARK} {name}")


def _is_npu(device) -> bool:
    if isinstance(device, bool):
        return False
    if isinstance(device, int):
        return True  # an int device is the current accelerator: the NPU in the reference's tests
    return isinstance(device, str) and device.split(":")[0] == "npu"


def _is_cpu(device) -> bool:
    return (isinstance(device, str) and device.split(":")[0] == "cpu") or (
        isinstance(device, torch.device) and device.type == "cpu")


def _mark(t):
    if isinstance(t, torch.Tensor):
        setattr(t, _ON_NPU, True)
    return t


def _to_device(t: torch.Tensor):
    return _mark(t.detach().clone().requires_grad_(t.requires_grad) if t.is_leaf else t.clone())


class _NpuNamespace(types.ModuleType):
    """`torch_npu.npu` / `torch.npu`: the placement calls; anything else is NPU-only."""

    def __init__(self, name: str):
        super().__init__(name)
        self.set_device = lambda *a, **k: None
        self.synchronize = lambda *a, **k: None
        self.current_device = lambda: 0
        self.device_count = lambda: 1
        self.is_available = lambda *a, **k: True
        self.is_initialized = lambda: True
        self.memory_reserved = lambda *a, **k: 0
        self.empty_cache = lambda: None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NpuOnlyFeature(f"{self.__name__}.{name}")


class _TorchNpu(types.ModuleType):
    """`torch_npu`: placement through `.npu`; every other attribute is an NPU-only feature."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NpuOnlyFeature(f"torch_npu.{name}")


class _TorchNpuFinder:
    """`import torch_npu.profiler` and the like: an NPU-only feature, named."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname.startswith("torch_npu.") and fullname != "torch_npu.npu":
            raise NpuOnlyFeature(fullname)
        return None


def _wrap_factory(fn):
    @functools.wraps(fn)
    def factory(*args, **kwargs):
        if _is_npu(kwargs.get("device")):
            kwargs["device"] = "cpu"
            return _mark(fn(*args, **kwargs))
        return fn(*args, **kwargs)
    return factory


def _install_tensor_methods() -> None:
    orig_to, orig_cpu = torch.Tensor.to, torch.Tensor.cpu

    def npu(self, *args, **kwargs):   # a tensor already on the device is returned as is, as torch does
        return self if getattr(self, _ON_NPU, False) else _to_device(self)

    def to(self, *args, **kwargs):
        dev = kwargs.get("device", args[0] if args else None)
        if _is_npu(dev):
            if "device" in kwargs:
                kwargs["device"] = "cpu"
            else:
                args = ("cpu",) + args[1:]
            out = orig_to(self, *args, **kwargs)
            if out is self and getattr(self, _ON_NPU, False):
                return self
            return _to_device(out) if out is self else _mark(out)
        if _is_cpu(dev) and getattr(self, _ON_NPU, False):
            return orig_to(self.clone(), *args, **kwargs)
        return orig_to(self, *args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.clone() if getattr(self, _ON_NPU, False) else orig_cpu(self, *args, **kwargs)

    torch.Tensor.npu, torch.Tensor.to, torch.Tensor.cpu = npu, to, cpu

    def module_npu(self, device=None):   # `module.npu()`: its parameters and buffers stay on the CPU, as torch's
        return self                      # `module.cuda()` moves them in place and returns the module
    torch.nn.Module.npu = module_npu


def _install_run_mode() -> None:
    """RunMode.NPU -> SIM where an option value is checked (the one place every run mode passes through)."""
    os.environ.pop("ASCEND_HOME_PATH", None)
    import pypto
    from pypto.vocab import options as _options
    spec_type = _options.OptionSpec
    orig = spec_type._check_enum

    def check_enum(self, value):
        v = orig(self, value)
        return pypto.RunMode.SIM if v is pypto.RunMode.NPU else v
    spec_type._check_enum = check_enum


def pytest_configure(config):
    if any("ut/interpreter/" in str(a).replace(os.sep, "/") for a in config.args):
        import pypto
        pypto.set_verify_options(enable_pass_verify=True, pass_verify_pass_filter=["all"])


def install() -> None:
    npu = _NpuNamespace("torch_npu.npu")
    mod = _TorchNpu("torch_npu")
    mod.npu = npu
    mod.__path__ = []  # a package, so that `import torch_npu.x` reaches the finder
    sys.modules["torch_npu"] = mod
    sys.modules["torch_npu.npu"] = npu
    sys.meta_path.insert(0, _TorchNpuFinder())
    torch.npu = _NpuNamespace("torch.npu")
    for name in _FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, _wrap_factory(getattr(torch, name)))
    _install_tensor_methods()
    _install_run_mode()


install()
