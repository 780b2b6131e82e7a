"""pypto.verify — layer 6: checking a specialization against golden data (`verify_options`).

Owns the golden data (`set_verify_golden_data`), the reference interpreter of the IR (`interp.py`, torch ops, run
on the traced kernel), the ctypes launcher of compiled kernels (`launch.py`) and the stage comparison
(`check.py`). May import: errors, vocab, ir, compiler (and torch/numpy). Never frontend, export, bench.
"""
from .check import StageReport, set_verify_golden_data, verify
from .launch import launch

__all__ = ["StageReport", "set_verify_golden_data", "verify", "launch"]
