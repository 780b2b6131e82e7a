"""The reference's operation enums (docs/zh/api/datatype): members and values as the reference defines them.

They are plain `enum.Enum`s here; an op that takes one (`pypto.cast(mode=, satmode=)`, `pypto.topk(algo)`,
`pypto.matmul(relu_type=, trans_mode=)`, ...) validates the member and either computes its behaviour or raises
UnsupportedFeatureError naming it. Constant keys (vocab/constkey.py) key enums by type and value, so a kernel
argument that is one of these members specializes by it.
"""
from __future__ import annotations

import enum

__all__ = ["AtomicRMWMode", "SatStatus", "CachePolicy", "CastMode", "LogBaseType", "OpType", "OutType", "PrecisionType", "ReLuType",
           "ReduceMode", "SaturationMode", "ScatterMode", "TopKAlgo", "TransMode", "PassConfigKey"]


class CachePolicy(enum.Enum):
    """How a tensor's data uses the caches (an NPU memory hint; no effect on the simulator)."""
    PREFETCH = 0
    NONE_CACHEABLE = 1


class CastMode(enum.Enum):
    """The rounding of a conversion (`pypto.cast(x, dtype, mode=...)`)."""
    CAST_NONE = 0    # the conversion's default: TRUNC for float -> int, RINT otherwise
    CAST_RINT = 1    # to nearest, ties to even
    CAST_ROUND = 2   # to nearest, ties away from zero
    CAST_FLOOR = 3   # toward -inf
    CAST_CEIL = 4    # toward +inf
    CAST_TRUNC = 5   # toward zero
    CAST_ODD = 6     # round to odd (fp32 -> fp16 only)


class LogBaseType(enum.Enum):
    """The base of `pypto.log`."""
    LOG_E = 0
    LOG_2 = 1
    LOG_10 = 2


class OpType(enum.Enum):
    """A comparison."""
    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class OutType(enum.Enum):
    """The form of a comparison's result: a bool per element, or one bit per element."""
    BOOL = 0
    BIT = 1


class PrecisionType(enum.Enum):
    """The precision mode of div/fmod/remainder/pow/exp/sqrt/rsqrt/log/reciprocal on the NPU. The simulator
    computes every op exactly as its reference (torch) does, so both modes give the same results here."""
    INTRINSIC = 0
    HIGH_PRECISION = 1


class ReLuType(enum.Enum):
    """Whether a matmul applies relu to its result."""
    NO_RELU = 0
    RELU = 1


class ReduceMode(enum.Enum):
    """How concurrent writes combine."""
    ATOMIC_ADD = 0


class SaturationMode(enum.Enum):
    """Out-of-range float -> int (and narrowing int) conversions: OFF wraps/truncates (the default), ON clamps
    to the target type's range."""
    ON = 0
    OFF = 1


class ScatterMode(enum.Enum):
    """The reduction of `pypto.scatter`/`scatter_`: NONE writes, ADD adds, MULTIPLY multiplies."""
    NONE = 0
    ADD = 1
    MULTIPLY = 2


class TopKAlgo(enum.Enum):
    """The algorithm of `pypto.topk` (both select the same values and indices)."""
    MERGE_SORT = 0
    RADIX_SELECT = 1


class TransMode(enum.Enum):
    """fp32 matmul inputs: CAST_NONE computes in fp32; CAST_RINT / CAST_ROUND round each input to tf32 (10
    mantissa bits) first, ties to even / away from zero."""
    CAST_NONE = 0
    CAST_RINT = 1
    CAST_ROUND = 2


class PassConfigKey(enum.Enum):
    """Keys of the NPU pass configuration (`pypto.set_pass_config`)."""
    KEY_DUMP_GRAPH = 0


class AtomicRMWMode(enum.Enum):
    """The reference's atomic read-modify-write modes (its values); no op here takes it yet."""
    ADD = 0
    MAX = 1
    MIN = 2


class SatStatus(enum.Enum):
    """Whether the reference's solver found a symbolic condition satisfiable (its values)."""
    SAT = 0
    UNSAT = 1
    UNKNOWN = 2
