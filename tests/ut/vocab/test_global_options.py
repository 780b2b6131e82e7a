"""`pypto.set_*_options` / `get_*_options` and their precedence under scopes and decorators."""
import pytest
import torch

import pypto


@pytest.fixture(autouse=True)
def _clean():
    pypto.reset_options()
    yield
    pypto.reset_options()


def _decorate(**groups):
    @pypto.frontend.jit(**groups)
    def k(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = a + 1.0
    return k


def _opt(kernel, group, key):
    return kernel.options.as_dict()[group][key]


def test_every_group_has_set_and_get():
    for g in ("host", "runtime", "codegen", "pass", "verify", "debug"):
        assert callable(getattr(pypto, f"set_{g}_options")) and isinstance(getattr(pypto, f"get_{g}_options")(),
                                                                            dict)


def test_precedence_decorator_over_scope_over_global():
    pypto.set_runtime_options(device_sched_mode=1, stitch_function_max_num=64, launch_early_mode=1)
    with pypto.options(runtime_options={"device_sched_mode": 2, "stitch_function_max_num": 32}):
        k = _decorate(runtime_options={"device_sched_mode": 3})
        assert pypto.get_runtime_options()["device_sched_mode"] == 2
    assert _opt(k, "runtime_options", "device_sched_mode") == 3      # decorator
    assert _opt(k, "runtime_options", "stitch_function_max_num") == 32  # scope
    assert _opt(k, "runtime_options", "launch_early_mode") == 1          # global
    assert pypto.get_runtime_options()["device_sched_mode"] == 1


def test_kernels_are_isolated_from_later_global_changes():
    pypto.set_pass_options(enable_slice=True)
    k1 = _decorate()
    pypto.set_pass_options(enable_slice=False)
    k2 = _decorate()
    assert _opt(k1, "pass_options", "enable_slice") is True and _opt(k2, "pass_options", "enable_slice") is False
    for k in (k1, k2):
        a, out = torch.randn(4), torch.zeros(4)
        k(a, out)
        assert torch.equal(out, a + 1.0)


def test_host_compile_stage_takes_compstage():
    pypto.set_host_options(compile_stage=pypto.CompStage.TENSOR_GRAPH)
    assert pypto.get_host_options()["compile_stage"] == pypto.CompStage.TENSOR_GRAPH
    assert pypto.CompStage is pypto.CompileStage


def test_dict_form_and_set_options():
    pypto.set_debug_options({"compile_debug_mode": 1})
    pypto.set_options(verify_options={"pass_verify_error_tol": [1e-2, 1e-2]})
    assert pypto.get_debug_options()["compile_debug_mode"] == 1
    assert pypto.get_options()["verify_options"]["pass_verify_error_tol"] == [1e-2, 1e-2]


def test_invalid_global_option_names_key_and_keeps_old_value():
    pypto.set_runtime_options(device_sched_mode=1)
    with pytest.raises(pypto.OptionError, match=r"pypto.set_runtime_options: runtime_options\['device_sched_mode'\]"):
        pypto.set_runtime_options(device_sched_mode=9)
    with pytest.raises(pypto.OptionError, match="unknown runtime_options key 'nope'"):
        pypto.set_runtime_options(nope=1)
    assert pypto.get_runtime_options()["device_sched_mode"] == 1


def test_reset_options():
    pypto.set_codegen_options(enable_pmu_trace=True)
    pypto.reset_options()
    assert pypto.get_codegen_options()["enable_pmu_trace"] is False
