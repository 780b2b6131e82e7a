"""The option dicts given to @jit are read again when the kernel compiles, as the reference does (hello_world.py)."""
import pytest
import torch

import pypto
from pypto.errors import BackendUnavailableError


def _decorate(runtime_options):
    @pypto.frontend.jit(runtime_options=runtime_options)
    def late(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = a * 3.0
    return late


def test_run_mode_set_after_decoration_takes_effect_on_the_first_call():
    opts = {"run_mode": pypto.RunMode.NPU}
    k = _decorate(opts)
    opts["run_mode"] = pypto.RunMode.SIM  # what the reference's device_init does after the kernels are decorated
    a = torch.arange(4, dtype=torch.float32)
    out = torch.zeros(4)
    k(a, out)
    torch.testing.assert_close(out, a * 3.0)
    assert k.options.runtime["run_mode"] == pypto.RunMode.SIM


def test_npu_set_after_decoration_is_refused_on_the_miss_with_outputs_untouched():
    opts = {"run_mode": pypto.RunMode.SIM}
    k = _decorate(opts)
    opts["run_mode"] = pypto.RunMode.NPU
    out = torch.full((4,), 7.0)
    with pytest.raises(BackendUnavailableError) as e:
        k(torch.ones(4), out)
    assert "late" in str(e.value)
    torch.testing.assert_close(out, torch.full((4,), 7.0))
    opts["run_mode"] = pypto.RunMode.SIM  # and back: the next miss reads it again
    k(torch.ones(4), out)
    torch.testing.assert_close(out, torch.full((4,), 3.0))


def test_an_invalid_value_set_late_is_reported_on_the_call_naming_the_option():
    opts = {"run_mode": pypto.RunMode.SIM}
    k = _decorate(opts)
    opts["run_mode"] = "fast"
    out = torch.full((4,), 7.0)
    with pytest.raises((TypeError, ValueError)) as e:
        k(torch.ones(4), out)
    assert "run_mode" in str(e.value) and "late" in str(e.value)
    torch.testing.assert_close(out, torch.full((4,), 7.0))


def test_a_hit_keeps_what_was_compiled():
    opts = {"run_mode": pypto.RunMode.SIM}
    k = _decorate(opts)
    out = torch.zeros(4)
    k(torch.ones(4), out)
    opts["run_mode"] = pypto.RunMode.NPU  # read on the next compile only: this call hits
    k(torch.full((4,), 2.0), out)
    torch.testing.assert_close(out, torch.full((4,), 6.0))
