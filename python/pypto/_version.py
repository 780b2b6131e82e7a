"""The package version: must equal [project].version in pyproject.toml (tests/ut/test_layers.py checks)."""
__version__ = "0.1.0"
