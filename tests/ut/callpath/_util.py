"""Helpers shared by the call-path tests: byte snapshots of outputs, error checks, data."""
from __future__ import annotations

import numpy as np
import pytest
import torch


def _bytes(x) -> bytes:
    if isinstance(x, torch.Tensor):
        return x.detach().contiguous().view(torch.uint8).numpy().tobytes()
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x).tobytes()
    if hasattr(x, "t") and isinstance(x.t, torch.Tensor):  # DLPack-only wrappers used in the tests
        return _bytes(x.t)
    raise TypeError(type(x))


def snap(*arrays) -> list[bytes]:
    """Byte snapshot of each array (to prove that a failed call wrote nothing)."""
    return [_bytes(a) for a in arrays]


def assert_untouched(before: list[bytes], *arrays) -> None:
    after = snap(*arrays)
    for i, (b, a) in enumerate(zip(before, after)):
        assert a == b, f"output #{i} was modified by a call that raised"


def raises(exc_type, fn, *parts: str) -> str:
    """Call fn(), expect exc_type, check that every part appears in the message; return the message."""
    with pytest.raises(exc_type) as ei:
        fn()
    msg = str(ei.value)
    for p in parts:
        assert p in msg, f"expected {p!r} in the error message, got: {msg}"
    return msg


def fails_untouched(exc_type, fn, out, *parts: str) -> str:
    """`raises`, and the output `out` holds the same bytes afterwards (a failed call wrote nothing)."""
    before = snap(out)
    msg = raises(exc_type, fn, *parts)
    assert_untouched(before, out)
    return msg


def rand(*shape, dtype=torch.float32, seed=None) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed if seed is not None else (hash(shape) & 0xFFFF))
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=g).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-100, 100, shape, generator=g).to(dtype)


def sentinel(*shape, dtype=torch.float32) -> torch.Tensor:
    """An output buffer pre-filled with a value no kernel here computes."""
    if dtype.is_floating_point:
        return torch.full(shape, -12345.0, dtype=dtype)
    if dtype == torch.bool:
        return torch.zeros(shape, dtype=dtype)
    return torch.full(shape, -77, dtype=dtype)


def info(kernel) -> dict:
    return dict(kernel.cache_info())


def bits_equal(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Bit-exact equality (distinguishes -0.0 from 0.0, NaN payloads compare by bits)."""
    return x.dtype == y.dtype and x.shape == y.shape and _bytes(x) == _bytes(y)
