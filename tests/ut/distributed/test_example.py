"""examples/distributed_allreduce.py runs as a user runs it (4 ranks) and every rank matches torch.distributed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pypto.distributed import leftover_windows

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "distributed_allreduce.py"


def test_distributed_allreduce_example():
    r = subprocess.run([sys.executable, str(EXAMPLE), "--world", "4", "--rows", "8", "--hidden", "64"],
                       capture_output=True, text=True, timeout=240, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(4):
        assert f"rank {rank}: all-reduce + RMSNorm of 8x64 matches torch.distributed" in r.stdout
    assert leftover_windows() == []
