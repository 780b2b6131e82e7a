"""`python -m pypto.bench` (or `pypto-bench`): the per-call host-latency harness.

Measures pypto's cache-hit call as one thing varies at a time (scenarios.py), next to its floors and peers
(peers.py), with wall time over interleaved rounds (timing.py), instruction counts under callgrind
(callgrind.py), a per-stage breakdown from a profiled build (breakdown.py) and the cold paths (cold.py); prints
tables, writes JSON (schema.py) and plots (report.py). `run(...)` returns the result dict that `--json` writes.
See docs/bench.md.

The top layer: may import every other layer and the package itself.
"""
from .harness import main, run

__all__ = ["main", "run"]
