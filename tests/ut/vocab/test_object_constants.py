"""Dataclass configs and other objects as constants: keyed by value (never by id), read by attribute at trace time."""
import dataclasses
import enum

import pytest
import torch

import pypto
from pypto.vocab import constkey


@dataclasses.dataclass
class NormCfg:
    eps: float
    scale: float = 2.0


@dataclasses.dataclass(frozen=True)
class FrozenCfg:
    shift: float
    mode: str = "add"


@dataclasses.dataclass
class Outer:
    inner: FrozenCfg
    sizes: tuple = (1, 2)


class Plain:
    """Not a dataclass: keyed by what pickle rebuilds it from (its __dict__)."""

    def __init__(self, k):
        self.k = k


class Color(enum.Enum):
    RED = 1


@pypto.frontend.jit
def scaled(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), cfg):
    out[:] = a * cfg.scale + cfg.eps


@pypto.frontend.jit
def nested(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), cfg):
    out[:] = a + cfg.inner.shift * cfg.sizes[1]


@pypto.frontend.jit
def plain(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), cfg):
    out[:] = a + cfg.k


def _run(kernel, cfg, a=None):
    a = torch.arange(4, dtype=torch.float32) if a is None else a
    out = torch.zeros(4)
    kernel(a, out, cfg)
    return a, out


def test_dataclass_fields_are_read_at_trace_time():
    a, out = _run(scaled, NormCfg(eps=0.5))
    torch.testing.assert_close(out, a * 2.0 + 0.5)


def test_equal_configs_share_a_specialization_and_a_changed_field_compiles_anew():
    before = scaled.cache_info()["specializations"]
    _run(scaled, NormCfg(eps=0.25, scale=3.0))
    _run(scaled, NormCfg(eps=0.25, scale=3.0))  # another object, equal fields: a hit
    assert scaled.cache_info()["specializations"] == before + 1
    a, out = _run(scaled, NormCfg(eps=0.25, scale=4.0))
    torch.testing.assert_close(out, a * 4.0 + 0.25)
    assert scaled.cache_info()["specializations"] == before + 2


def test_a_config_mutated_in_place_is_keyed_again():
    cfg = NormCfg(eps=1.0, scale=1.0)
    a, out = _run(scaled, cfg)
    torch.testing.assert_close(out, a + 1.0)
    cfg.scale = 5.0  # same object, new value: a non-frozen dataclass is re-keyed on every call
    a, out = _run(scaled, cfg)
    torch.testing.assert_close(out, a * 5.0 + 1.0)


def test_nested_and_frozen_configs():
    a, out = _run(nested, Outer(FrozenCfg(1.5), (3, 4)))
    torch.testing.assert_close(out, a + 1.5 * 4)
    a, out = _run(nested, Outer(FrozenCfg(0.5), (3, 2)))
    torch.testing.assert_close(out, a + 0.5 * 2)


def test_plain_objects_are_keyed_by_their_state():
    a, out = _run(plain, Plain(2.0))
    torch.testing.assert_close(out, a + 2.0)
    obj = Plain(3.0)
    a, out = _run(plain, obj)
    torch.testing.assert_close(out, a + 3.0)
    obj.k = 7.0
    a, out = _run(plain, obj)
    torch.testing.assert_close(out, a + 7.0)


def test_keys_never_hold_an_address():
    assert constkey.key(NormCfg(1.0)) == ("d", (1.0, 2.0), True)
    assert constkey.key(FrozenCfg(1.0)) == ("d", (1.0, "add"), False)
    assert constkey.key(Plain(1))[1] == constkey.key(Plain(1))[1]
    assert constkey.key(torch.float16) == ("r", ("<global>", "float16"), False)
    assert constkey.key({"b": 1, "a": Color.RED})[1] == ("<dict>", ("a", Color.RED), ("b", 1))


def test_an_object_without_a_value_key_is_refused_with_its_type_and_outputs_untouched():
    class Local:  # defined in a function: no stable name, and a lock cannot be pickled
        def __init__(self):
            import threading
            self.lock = threading.Lock()

    a = torch.ones(4)
    out = torch.full((4,), 9.0)
    with pytest.raises(TypeError) as e:
        plain(a, out, Local())
    msg = str(e.value)
    assert "plain" in msg and "cfg" in msg and "Local" in msg and "constant" in msg
    torch.testing.assert_close(out, torch.full((4,), 9.0))


def test_export_refuses_an_object_constant_by_name():
    from pypto.export import encode_value, ExportError
    with pytest.raises(ExportError) as e:
        encode_value(NormCfg(1.0), "kernel 'k': parameter 'cfg'")
    assert "NormCfg" in str(e.value) and "parameter 'cfg'" in str(e.value)
