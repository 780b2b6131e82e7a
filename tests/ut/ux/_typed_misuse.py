"""Uses of the public API that a type checker must reject (test_types.py expects each marked line reported)."""
# mypy: disable-error-code="valid-type"
from __future__ import annotations

import pypto


@pypto.frontend.jit
def k(x: pypto.Tensor([8], pypto.DT_FP32)):
    pass


hits: str = k.cache_info()["hits"]  # ERROR
k.cache_info()["hitz"]  # ERROR
pypto.frontend.jit(k, runtime_options=3)  # ERROR
