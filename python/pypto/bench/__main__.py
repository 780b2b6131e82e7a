"""`python -m pypto.bench`: see pypto.bench.harness (or `python -m pypto.bench --help`)."""
from .harness import main

if __name__ == "__main__":
    main()
