"""User mistakes at call time and at decoration: exception type, message content (kernel, parameter, expected,
got) and no output modified by a call that raised."""

import ctypes
import threading

import numpy as np
import pytest
import torch

import pypto
from pypto.errors import BackendUnavailableError, KernelDefinitionError, KernelTraceError, OptionError

from ._util import assert_untouched, info, raises, rand, sentinel, snap


def make_fixed():
    @pypto.frontend.jit
    def fixed_add(a: pypto.Tensor([8], pypto.DT_FP32), b: pypto.Tensor([8], pypto.DT_FP32),
                  out: pypto.Tensor([8], pypto.DT_FP32)):
        out[:] = a + b
    return fixed_add


def make_scaled():
    @pypto.frontend.jit
    def scaled(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32), alpha=1.0):
        out[:] = a * alpha
    return scaled


@pytest.fixture(params=["cold", "warm"])
def warm(request):
    """Each error is checked before any specialization exists ('cold') and after one was compiled ('warm')."""
    return request.param == "warm"


def _fixed(warm):
    k = make_fixed()
    a, b, out = rand(8, seed=1), rand(8, seed=2), sentinel(8)
    if warm:
        k(a, b, sentinel(8))
    return k, a, b, out


# -- tensors -------------------------------------------------------------------------------------------------

def test_wrong_dtype(warm):
    k, a, b, out = _fixed(warm)
    before = snap(out)
    raises(TypeError, lambda: k(a.double(), b, out), "kernel 'fixed_add'", "parameter 'a'", "float32", "float64")
    assert_untouched(before, out)


def test_wrong_dtype_of_output_leaves_output_untouched(warm):
    k, a, b, _ = _fixed(warm)
    out = torch.full((8,), 7, dtype=torch.int32)
    before = snap(out)
    raises(TypeError, lambda: k(a, b, out), "kernel 'fixed_add'", "parameter 'out'", "float32", "int32")
    assert_untouched(before, out)


def test_wrong_fixed_dim(warm):
    k, a, b, out = _fixed(warm)
    before = snap(out)
    raises(ValueError, lambda: k(a, rand(7), out), "kernel 'fixed_add'", "parameter 'b'", "8", "7")
    assert_untouched(before, out)


def test_wrong_rank(warm):
    k, a, b, out = _fixed(warm)
    before = snap(out)
    msg = raises(ValueError, lambda: k(a.reshape(2, 4), b, out), "kernel 'fixed_add'", "parameter 'a'", "1", "2")
    assert "dimension" in msg
    assert_untouched(before, out)


def test_non_contiguous_transposed_input():
    k = make_scaled()
    a, out = rand(4, 6, seed=3), sentinel(6, 4)
    before = snap(out)
    raises(ValueError, lambda: k(a.t(), out), "kernel 'scaled'", "parameter 'a'", "contiguous")
    assert_untouched(before, out)


def test_non_contiguous_strided_input():
    k = make_fixed()
    a, b, out = rand(16, seed=4)[::2], rand(8, seed=5), sentinel(8)
    assert a.shape == (8,)
    before = snap(out)
    raises(ValueError, lambda: k(a, b, out), "kernel 'fixed_add'", "parameter 'a'", "contiguous")
    assert_untouched(before, out)


def test_empty_tensor_with_any_strides_is_contiguous():
    # torch.zeros(2, 0) has strides (1, 1) and torch calls it contiguous; so does the binder (it has no elements
    # to lay out). A non-empty tensor with the same mismatch is still refused.
    k = make_scaled()
    for a in (torch.zeros(2, 0), torch.zeros(0, 3).as_strided((0, 3), (7, 5))):
        assert a.is_contiguous() and a.stride() != (a.shape[1], 1)
        out = torch.zeros(a.shape)
        k(a, out, alpha=2.0)
        assert torch.equal(out, a * 2.0)
    k(np.zeros((3, 0), np.float32), np.zeros((3, 0), np.float32))
    a = rand(2, 3, seed=9).as_strided((2, 3), (1, 1))
    raises(ValueError, lambda: k(a, sentinel(2, 3)), "kernel 'scaled'", "parameter 'a'", "contiguous")


def test_non_contiguous_output_is_rejected_and_untouched(warm):
    k = make_scaled()
    a = rand(4, 4, seed=6)
    if warm:
        k(a, sentinel(4, 4))
    base = sentinel(4, 4)
    out = base.t()
    before = snap(base)
    raises(ValueError, lambda: k(a, out), "kernel 'scaled'", "parameter 'out'", "contiguous")
    assert_untouched(before, base)


def test_non_contiguous_numpy_input():
    k = make_scaled()
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    out = np.zeros((4, 3), np.float32)
    before = snap(out)
    raises(ValueError, lambda: k(a, out), "kernel 'scaled'", "parameter 'a'", "contiguous")
    assert_untouched(before, out)


def test_meta_tensor_is_rejected_clearly():
    # torch refuses to export a meta tensor through DLPack; pypto must still say which parameter is wrong.
    k = make_fixed()
    a, b, out = rand(8), rand(8), sentinel(8)
    before = snap(out)
    m = torch.empty(8, device="meta")
    msg = raises((TypeError, ValueError), lambda: k(m, b, out), "kernel 'fixed_add'", "parameter 'a'")
    assert "meta" in msg or "device" in msg
    assert_untouched(before, out)


def test_meta_tensor_device_check(warm):
    """torch cannot export a meta tensor (through DLPack or the fast reader): the call must still fail before
    anything runs, naming the kernel, the parameter and the device, cold (no specialization yet) and warm."""
    k, _a, b, out = _fixed(warm)
    before = snap(out)
    msg = raises((TypeError, ValueError), lambda: k(torch.empty(8, device="meta"), b, out), "kernel 'fixed_add'",
                 "parameter 'a'", "meta")
    assert msg.startswith("kernel 'fixed_add': parameter 'a': "), msg
    assert_untouched(before, out)


# A DLPack producer that claims its data lives on a CUDA device (the data pointer is a real host buffer, so
# nothing is harmed if it were read by mistake).
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_DLTENSOR_NAME = b"dltensor"


class FakeCudaTensor:
    def __init__(self, n: int, device_type: int = 2):
        self.host = np.zeros(n, np.float32)
        self.shape_arr = (ctypes.c_int64 * 1)(n)
        self.managed = []
        self.device_type = device_type

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        m = _DLManagedTensor()
        m.dl_tensor.data = self.host.ctypes.data
        m.dl_tensor.device = _DLDevice(self.device_type, 0)
        m.dl_tensor.ndim = 1
        m.dl_tensor.dtype = _DLDataType(2, 32, 1)  # float32
        m.dl_tensor.shape = self.shape_arr
        m.dl_tensor.strides = None
        m.dl_tensor.byte_offset = 0
        m.deleter = None
        self.managed.append(m)  # keep alive: no deleter
        return _capsule_new(ctypes.addressof(m), _DLTENSOR_NAME, None)

    def __dlpack_device__(self):
        return (self.device_type, 0)


def test_non_cpu_dlpack_device_is_rejected(warm):
    k, a, b, out = _fixed(warm)
    before = snap(out)
    raises(ValueError, lambda: k(FakeCudaTensor(8), b, out), "kernel 'fixed_add'", "parameter 'a'", "CPU",
           "cuda")
    assert_untouched(before, out)


@pytest.mark.parametrize("bad", [3, 2.5, [1.0] * 8, None, "abc"], ids=["int", "float", "list", "None", "str"])
def test_non_tensor_where_tensor_expected(bad, warm):
    k, a, b, out = _fixed(warm)
    before = snap(out)
    raises(TypeError, lambda: k(a, bad, out), "kernel 'fixed_add'", "parameter 'b'", "expected a tensor",
           type(bad).__name__)
    assert_untouched(before, out)


def test_tensor_where_constant_expected(warm):
    k = make_scaled()
    a, out = rand(2, 3), sentinel(2, 3)
    if warm:
        k(a, sentinel(2, 3), 2.0)
    before = snap(out)
    raises(TypeError, lambda: k(a, out, torch.tensor(2.0)), "kernel 'scaled'", "parameter 'alpha'",
           "compile-time constant", "tensor")
    raises(TypeError, lambda: k(a, out, np.float32(2.0).reshape(1)), "kernel 'scaled'", "parameter 'alpha'",
           "compile-time constant")
    assert_untouched(before, out)


_LOCK = threading.Lock()


def _module_level_function():
    return 1


# Objects with no value key (pickle cannot rebuild a lock; a lambda has no stable name) are refused by the core.
@pytest.mark.parametrize("bad", [_LOCK, lambda: 1, (1, _LOCK), [1, lambda: 0]],
                         ids=["lock", "lambda", "tuple-with-lock", "list-with-lambda"])
def test_unsupported_constant_type(bad, warm):
    k = make_scaled()
    a, out = rand(2, 3), sentinel(2, 3)
    if warm:
        k(a, sentinel(2, 3), 2.0)
    before = snap(out)
    n_before = info(k)["specializations"]
    msg = raises(TypeError, lambda: k(a, out, bad), "kernel 'scaled'", "parameter 'alpha'", "constant")
    inner = bad[1] if isinstance(bad, (tuple, list)) else bad
    assert type(inner).__name__ in msg
    assert_untouched(before, out)
    assert info(k)["specializations"] == n_before


# Objects with a value key are constants (pypto.vocab.constkey); one the kernel cannot compute with fails its trace.
@pytest.mark.parametrize("bad", [{"x": 1}, {1, 2}, object(), (1, {}), [1, _module_level_function]],
                         ids=["dict", "set", "object", "tuple-with-dict", "list-with-function"])
def test_keyed_constant_misused_fails_the_trace(bad, warm):
    k = make_scaled()
    a, out = rand(2, 3), sentinel(2, 3)
    if warm:
        k(a, sentinel(2, 3), 2.0)
    before = snap(out)
    n_before = info(k)["specializations"]
    raises(KernelTraceError, lambda: k(a, out, bad), "kernel 'scaled'", "mul", type(bad).__name__)
    assert_untouched(before, out)
    assert info(k)["specializations"] == n_before


def test_readonly_numpy_output(warm):
    k = make_fixed()
    a, b = rand(8, seed=1).numpy(), rand(8, seed=2).numpy()
    if warm:
        k(a, b, np.zeros(8, np.float32))
    out = np.full(8, -5.0, np.float32)
    out.setflags(write=False)
    before = snap(out)
    raises(ValueError, lambda: k(a, b, out), "kernel 'fixed_add'", "parameter 'out'", "read-only")
    assert_untouched(before, out)


def test_numpy_dtype_pypto_lacks(warm):
    k, a, b, out = _fixed(warm)
    before = snap(out)
    raises(TypeError, lambda: k(np.zeros(8, np.complex64), b, out), "kernel 'fixed_add'", "parameter 'a'",
           "float32", "complex64")
    assert_untouched(before, out)


def test_torch_dtype_pypto_lacks_on_bare_tensor():
    @pypto.frontend.jit
    def copy_any(a: pypto.Tensor, out: pypto.Tensor):
        out[:] = a + 0

    out = sentinel(4)
    before = snap(out)
    raises(TypeError, lambda: copy_any(torch.zeros(4, dtype=torch.complex64), out), "kernel 'copy_any'",
           "parameter 'a'", "complex")
    assert_untouched(before, out)


def test_npu_run_mode_without_cann(monkeypatch):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.NPU})
    def npu_add(a: pypto.Tensor([8], pypto.DT_FP32), b: pypto.Tensor([8], pypto.DT_FP32),
                out: pypto.Tensor([8], pypto.DT_FP32)):
        out[:] = a + b

    a, b, out = rand(8), rand(8), sentinel(8)
    before = snap(a, b, out)
    with pytest.raises(BackendUnavailableError) as ei:
        npu_add(a, b, out)
    assert isinstance(ei.value, RuntimeError)
    msg = str(ei.value)
    assert "npu_add" in msg and "ASCEND_HOME_PATH" in msg and "SIM" in msg
    assert_untouched(before, a, b, out)
    assert info(npu_add)["specializations"] == 0


def test_error_then_success_then_error_on_hit_path():
    k, a, b, out = _fixed(False)
    raises(TypeError, lambda: k(a.double(), b, out), "parameter 'a'")
    k(a, b, out)
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)
    out2 = sentinel(8)
    before = snap(out2)
    raises(ValueError, lambda: k(a, b[:7], out2), "parameter 'b'")
    assert_untouched(before, out2)
    ci = info(k)
    assert ci["misses"] == 1 and ci["specializations"] == 1


def test_all_arguments_checked_before_launch_constant_error_last():
    # The tensors are fine; only the last (constant) argument is bad: nothing may be launched.
    k = make_scaled()
    a, out = rand(3, 3), sentinel(3, 3)
    k(a, sentinel(3, 3), 2.0)
    before = snap(out)
    raises(TypeError, lambda: k(a, out, _LOCK), "parameter 'alpha'")
    assert_untouched(before, out)


def test_runtime_scalar_wrong_type():
    @pypto.frontend.jit
    def scale_rt(a: pypto.Tensor([pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([pypto.STATIC], pypto.DT_FP32),
                 s: pypto.Scalar[pypto.DT_FP32]):
        out[:] = a * s

    a, out = rand(4), sentinel(4)
    before = snap(out)
    raises(TypeError, lambda: scale_rt(a, out, "2"), "kernel 'scale_rt'", "parameter 's'", "float32")
    raises(TypeError, lambda: scale_rt(a, out, torch.ones(1)), "kernel 'scale_rt'", "parameter 's'")
    assert_untouched(before, out)


# -- decoration ------------------------------------------------------------------------------------------------

def test_tensor_param_after_non_tensor():
    def bad(a: pypto.Tensor([4], pypto.DT_FP32), alpha, out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = a * alpha

    msg = raises(KernelDefinitionError, lambda: pypto.frontend.jit(bad), "kernel 'bad'", "'out'", "'alpha'")
    assert "first" in msg
    with pytest.raises(TypeError):  # KernelDefinitionError is a TypeError
        pypto.jit(bad)


def test_empty_tensor_subscript():
    # `pypto.Tensor[]` is a SyntaxError in Python itself; the empty subscript reachable at run time is `[()]`.
    with pytest.raises(SyntaxError):
        compile("pypto.Tensor[]", "<test>", "eval")
    raises(TypeError, lambda: pypto.Tensor[()], "pypto.Tensor[]", "shape")


def test_tensor_default_value_rejected():
    def bad(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32) = None):
        out[:] = a

    raises(KernelDefinitionError, lambda: pypto.jit(bad), "kernel 'bad'", "'out'", "default")


def test_varargs_refused_at_the_call():
    # as in the reference: decorating succeeds, the call raises (tests/ut/frontend/test_parser_errors.py)
    def bad(a: pypto.Tensor([4], pypto.DT_FP32), *rest):
        pass

    k = pypto.jit(bad)
    raises(NotImplementedError, lambda: k(torch.zeros(4)), "kernel 'bad'", "'*rest'", "Variable-length arguments")


def test_unknown_option_key():
    def k(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = a

    msg = raises(OptionError, lambda: pypto.jit(runtime_options={"run_mod": pypto.RunMode.SIM})(k), "'run_mod'",
                 "run_mode", "valid keys")
    assert "device_sched_parallelism" in msg  # lists the valid keys
    with pytest.raises(ValueError):
        pypto.jit(pass_options={"no_such_option": 1})(k)


@pytest.mark.parametrize("group, key, value, parts", [
    ("runtime_options", "device_sched_parallelism", 9, ["device_sched_parallelism", "9", "1", "8"]),
    ("runtime_options", "sim_threads", 65, ["sim_threads", "65", "1", "64"]),
    ("runtime_options", "device_sched_mode", -1, ["device_sched_mode", "-1", "0", "3"]),
    ("debug_options", "runtime_debug_mode", 5, ["runtime_debug_mode", "5", "4"]),
])
def test_out_of_range_option(group, key, value, parts):
    def k(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = a

    raises(OptionError, lambda: pypto.jit(**{group: {key: value}})(k), *parts)


def test_ready_on_host_tensors_must_name_parameters():
    def k(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = a

    raises(OptionError, lambda: pypto.jit(runtime_options={"ready_on_host_tensors": ["zz"]})(k), "'zz'")


# -- strides, ranks, numpy scalars -----------------------------------------------------------------------------

def test_size_one_dims_with_any_stride_are_contiguous():
    k = make_scaled()
    a = rand(4, 1, seed=7).t()          # shape (1, 4), strides (1, 1): row-major in effect
    out = sentinel(1, 4)
    k(a, out, 3.0)
    torch.testing.assert_close(out, a * 3.0, rtol=0, atol=0)


def test_expanded_zero_stride_input_is_rejected():
    k = make_fixed()
    a, b, out = rand(1).expand(8), rand(8), sentinel(8)
    before = snap(out)
    raises(ValueError, lambda: k(a, b, out), "kernel 'fixed_add'", "parameter 'a'", "contiguous")
    assert_untouched(before, out)


def test_bare_tensor_rank_above_the_maximum():
    @pypto.frontend.jit
    def add_bare_r(a: pypto.Tensor, out: pypto.Tensor):
        out[:] = a + a

    shape = (1,) * 9
    out = sentinel(*shape)
    before = snap(out)
    raises(ValueError, lambda: add_bare_r(rand(*shape), out), "kernel 'add_bare_r'", "parameter 'a'", "at most",
           "9")
    assert_untouched(before, out)


def test_numpy_float64_constant_is_a_float_subclass():
    # API.md §3: int/str (and float) subclasses are keyed by type and value; np.float64 subclasses float
    k = make_scaled()
    a, out = rand(2, 3), sentinel(2, 3)
    k(a, out, np.float64(2.0))
    torch.testing.assert_close(out, a * 2.0, rtol=0, atol=0)
    assert info(k)["specializations"] == 1
