"""Test-only, for the reference test runner (tests/st/run_reference_tests.py): the Python processes a reference case
starts itself (a script it runs with `python`, a multiprocessing spawn child) get the case's NPU placement mapping.

The runner puts this folder on the module path of each case's process, so every Python process started under it
imports this module at start. It does nothing until the process imports `torch_npu`; then it loads
`reference_shim` (tests/st), which installs the torch_npu stand-in and the CPU placement, as in the case's own
process. Never on the path of our own suite.
"""
import importlib.abc
import importlib.util
import sys


class _LoadShimOnTorchNpu(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch_npu":
            return None
        sys.meta_path.remove(self)
        import reference_shim  # noqa: F401  (installs sys.modules["torch_npu"])
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return sys.modules["torch_npu"]

    def exec_module(self, module):
        pass


if "reference_shim" not in sys.modules:
    sys.meta_path.insert(0, _LoadShimOnTorchNpu())
