"""The native core this process uses, chosen once: `pypto._core`, or the build with the hit path's per-stage counters
(and where its companion library libpypto_shmem lives: library_dir).

`PYPTO_PROFILE=1` (set before the first import of pypto) selects `pypto._core_prof` (`pypto.bench --breakdown`);
the default build has no counters, so they cost nothing when off. Every layer takes the core from here
(`from ..native import core`) instead of relying on the package `__init__` to have made the choice first.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # type checkers see the one interface both builds share (_core.pyi)
    from . import _core as core
elif os.environ.get("PYPTO_PROFILE", "0") not in ("", "0"):
    core = importlib.import_module(__package__ + "._core_prof")
    sys.modules[__package__ + "._core"] = core  # `import pypto._core` elsewhere names the same module
else:
    core = importlib.import_module(__package__ + "._core")



def library_dir():
    """Directory holding libpypto_shmem.so (the window registry that multi-rank kernels link): the lib/ beside the
    native core this process loaded, which is the installed package's lib/ (an editable install builds both into
    site-packages while the Python files stay in the checkout); the package's own lib/ when the core's has none."""
    from pathlib import Path

    for d in (Path(core.__file__).resolve().parent / "lib", Path(__file__).resolve().parent / "lib"):
        if (d / "libpypto_shmem.so").is_file():
            return d
    return Path(__file__).resolve().parent / "lib"


__all__ = ["core", "library_dir"]
