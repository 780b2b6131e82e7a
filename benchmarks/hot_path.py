"""The cache-hit benchmark moved into the package: this is `python -m pypto.bench` (see docs/bench.md)."""
from pypto.bench import main

if __name__ == "__main__":
    main()
