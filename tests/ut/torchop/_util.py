"""Helpers for the torch-op tests: output snapshots and message checks."""
from __future__ import annotations

import pytest
import torch


def sentinel(*shape) -> torch.Tensor:
    """An output buffer pre-filled with a value no kernel here computes."""
    return torch.full(shape, -12345.0)


def snap(*tensors) -> list[bytes]:
    return [t.detach().contiguous().view(torch.uint8).numpy().tobytes() for t in tensors]


def assert_untouched(before: list[bytes], *tensors) -> None:
    for i, (b, a) in enumerate(zip(before, snap(*tensors))):
        assert a == b, f"tensor #{i} was modified by a call that raised"


def raises(exc_type, fn, *parts: str) -> str:
    """Call fn(), expect exc_type, check that every part appears in the message; return the message."""
    with pytest.raises(exc_type) as ei:
        fn()
    msg = str(ei.value)
    for p in parts:
        assert p in msg, f"expected {p!r} in the error message, got: {msg}"
    return msg
