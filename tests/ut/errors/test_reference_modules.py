"""The reference's module paths import (`pypto.experimental`, `pypto.runtime`, `pypto.pypto_impl`) with the names its
programs use, and `pypto.error._catch_and_wrap_error` wraps errors as its contract says."""
import subprocess
import sys

import pytest
import torch

import pypto
from pypto.error import PyptoError, PyptoGeneralError, _catch_and_wrap_error
from pypto.errors import UnsupportedFeatureError


def test_module_paths_import_in_a_fresh_process():
    code = ("import pypto.experimental, pypto.runtime, pypto.pypto_impl\n"
            "from pypto.experimental import set_operation_options, get_operation_options\n"
            "from pypto.pypto_impl import ir\n"
            "from pypto.pypto_impl.ir import DataType\n"
            "import pypto\n"
            "assert pypto.experimental is sys.modules['pypto.experimental']\n"
            "assert DataType is pypto.DataType\n")
    r = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_pypto_impl_names():
    impl = pypto.pypto_impl
    assert impl.TileL1Info is pypto.TileL1Info and impl.TileL0Info is pypto.TileL0Info
    assert impl.ConvReLuType.RELU is pypto.ReLuType.RELU and int(impl.ConvReLuType.NO_RELU.value) == 0
    codes = {e.name: int(e) for e in impl.ExternalError}
    assert codes == {"INVALID_TYPE": 1, "INVALID_VAL": 2, "RUNTIME_ERROR": 3, "NAME_ERROR": 4,
                     "NOT_IMPLEMENTED_ERROR": 5, "KEY_ERROR": 6, "INVALID_OPERATION": 7, "OUT_OF_RANGE": 8,
                     "UNKNOWN": 0xFFFF}
    # the code an error carries is 0xF00000 | its kind
    assert pypto.errors.err_code_of(ValueError()) == 0xF00000 | impl.ExternalError.INVALID_VAL
    with pytest.raises(AttributeError, match=r"pypto_impl.SetVerifyData: .*not supported yet"):
        impl.SetVerifyData
    assert not hasattr(impl, "DeviceTensorData")


def test_runtime_device_calls():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = x * 2

    pypto.runtime._device_init()
    x, out = torch.arange(4.0), torch.zeros(4)
    k(x, out)
    pypto.runtime._device_synchronize()
    pypto.runtime._device_fini()
    assert torch.equal(out, x * 2)
    with pytest.raises(UnsupportedFeatureError, match=r"_device_run_once_data_from_host.*not supported yet"):
        pypto.runtime._device_run_once_data_from_host(k, [x, out])


def test_catch_and_wrap_error():
    @_catch_and_wrap_error("build the graph")
    def fine(x):
        return x * 2

    @_catch_and_wrap_error("build the graph")
    def bad():
        raise ValueError("width must be > 0")

    @_catch_and_wrap_error("build the graph")
    def coded():
        raise RuntimeError("ErrCode: F00003, device lost")

    @_catch_and_wrap_error("build the graph")
    def ours():
        raise PyptoError(0xF00001, "already ours")

    assert fine(5) == 10
    with pytest.raises(PyptoGeneralError) as e:
        bad()
    assert str(e.value) == "ErrCode: F00002, Failed to build the graph 'bad'. ValueError: width must be > 0"
    assert e.value.err_code == 0xF00002 and isinstance(e.value.__cause__, ValueError)
    with pytest.raises(PyptoGeneralError) as e:
        coded()
    assert str(e.value).count("ErrCode:") == 1 and "ErrCode: F00003" in str(e.value)
    assert e.value.err_code == 0xF00003
    with pytest.raises(PyptoError) as e:
        ours()
    assert type(e.value) is PyptoError and str(e.value) == "ErrCode: F00001, already ours"


def test_call_argument_errors_are_fe_errors_and_builtins():
    """The reference's annotation tests catch a call's argument errors as pypto.error.FeError; ours are that and the
    builtin, with our message (kernel, parameter, expected, got) and the reference's phrase for a strided tensor."""
    from pypto.errors import ArgumentTypeError, ArgumentValueError

    @pypto.frontend.jit
    def fe_k(a: pypto.Tensor([4, 4], pypto.DT_FP32), out: pypto.Tensor([4, 4], pypto.DT_FP32)):
        out[:] = a

    out = torch.full((4, 4), -1.0)
    cases = [((torch.zeros(4, 4, dtype=torch.int32), out), ArgumentTypeError, TypeError, 0xF00001,
              r"kernel 'fe_k': parameter 'a': expected dtype float32, got int32"),
             ((torch.zeros(4, 5), out), ArgumentValueError, ValueError, 0xF00002,
              r"kernel 'fe_k': parameter 'a': dimension 1 must be 4 .*got 5"),
             ((torch.zeros(4, 4).t(), out), ArgumentValueError, ValueError, 0xF00002,
              r"kernel 'fe_k': parameter 'a': expected a contiguous .*not all tensors are contiguous"),
             ((torch.zeros(4, 4),), ArgumentTypeError, TypeError, 0xF00001,
              r"kernel 'fe_k': missing required argument\(s\) 'out'")]
    for args, ours, builtin, code, msg in cases:
        with pytest.raises(pypto.error.FeError, match=msg) as e:
            fe_k(*args)
        assert type(e.value) is ours and isinstance(e.value, builtin) and e.value.err_code == code
        assert torch.equal(out, torch.full((4, 4), -1.0))
