"""Helpers for the torch-op tests: output buffers; snapshots and message checks are the call-path tests' own."""
from __future__ import annotations

import torch

from callpath._util import assert_untouched, raises, snap  # noqa: F401  one copy of the checks for every area


def sentinel(*shape) -> torch.Tensor:
    """An output buffer pre-filled with a value no kernel here computes."""
    return torch.full(shape, -12345.0)
