"""`python -m pypto.bench`: see pypto.bench.harness (or `python -m pypto.bench --help`)."""
import os

# torch's OpenMP workers (libgomp's default wait policy) spin for milliseconds after every parallel torch call, on
# the cores pypto's pool is about to use: on a 2-core machine a pypto kernel timed right after a torch op then gets
# no second core and runs at about 1-thread speed (measured: 2 of 4 `--kernels` runs, 2-thread rows 1.3-1.8x torch;
# with sleeping workers 4 of 4 at 0.7-0.9x). The harness times each library as it runs alone: workers sleep
# between calls. torch's own times do not change with it (docs/performance.md). Set before anything imports torch;
# an explicit OMP_WAIT_POLICY is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .harness import main  # noqa: E402  (after the policy: harness imports torch)

if __name__ == "__main__":
    main()
