"""Suite-wide settings: the fast torch reader is built in the foreground, so that every test sees the same reader
from its first call (the background build, the product's default, has its own test in tests/ut/compiler)."""
import os

os.environ.setdefault("PYPTO_TORCH_READER_WAIT", "1")
