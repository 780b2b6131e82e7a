"""Every reference dtype name exists; torch maps both ways where torch has the type; unsupported ones say so."""
import pytest
import torch

import pypto
from pypto.vocab import dtypes

REFERENCE_NAMES = ["DT_INT4", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64", "DT_FP8", "DT_FP16", "DT_FP32",
                   "DT_BF16", "DT_HF4", "DT_HF8", "DT_FP8E4M3", "DT_FP8E5M2", "DT_FP8E8M0", "DT_FP4_E2M1",
                   "DT_FP4_E2M1X2", "DT_FP4_E1M2", "DT_FP4_E1M2X2", "DT_UINT8", "DT_UINT16", "DT_UINT32",
                   "DT_UINT64", "DT_BOOL", "DT_DOUBLE", "DT_BOTTOM"]

TORCH_PAIRS = [("DT_UINT16", "uint16"), ("DT_UINT32", "uint32"), ("DT_UINT64", "uint64"),
               ("DT_FP8E4M3", "float8_e4m3fn"), ("DT_FP8E5M2", "float8_e5m2"), ("DT_FP8E8M0", "float8_e8m0fnu"),
               ("DT_FP4_E2M1X2", "float4_e2m1fn_x2"), ("DT_DOUBLE", "float64"), ("DT_BOOL", "bool")]


@pytest.mark.parametrize("name", REFERENCE_NAMES)
def test_reference_dtype_names(name):
    dt = getattr(pypto, name)
    assert isinstance(dt, pypto.DataType)
    assert getattr(pypto.DataType, name if name != "DT_DOUBLE" else "DT_FP64") is dt


@pytest.mark.parametrize("name,torch_name", TORCH_PAIRS)
def test_torch_round_trip(name, torch_name):
    dt = getattr(pypto, name)
    tt = getattr(torch, torch_name)
    assert dtypes.to_torch(dt) is tt
    assert dtypes.from_torch(tt) is dt
    assert dt.itemsize == torch.empty(0, dtype=tt).element_size()


def test_fp4_x2_is_packed_two_per_byte():
    assert pypto.DT_FP4_E2M1X2.itemsize == 1 and pypto.DT_FP4_E2M1X2.is_float
    with pytest.raises(TypeError, match="DT_FP4_E2M1 has no torch dtype"):
        dtypes.to_torch(pypto.DT_FP4_E2M1)


def test_the_native_core_set():
    assert [d for d in pypto.DataType if d.native] == [pypto.DataType(i) for i in (*range(13), 15, 16, 17, 18, 19,
                                                                                   23)]
    assert [d for d in pypto.DataType if d.storage_only] == [pypto.DT_FP8E4M3, pypto.DT_FP8E5M2, pypto.DT_FP8E8M0,
                                                             pypto.DT_FP4_E2M1, pypto.DT_FP4_E2M1X2, pypto.DT_HF8]
    assert pypto.DT_UINT16.is_int and not pypto.DT_UINT16.is_float and pypto.DT_FP8E5M2.is_float
    # the core's names by code are the Python short names (the manifest and the messages use them)
    assert list(pypto._core.DTYPE_NAMES) == [pypto.DataType(i).short for i in range(len(pypto._core.DTYPE_NAMES))]
    assert len(pypto._core.DTYPE_NAMES) == pypto.DT_BOTTOM.value


def test_non_native_annotation_is_a_clear_decoration_error():
    with pytest.raises(pypto.KernelDefinitionError,
                       match=r"kernel 'k_hf4': parameter 'a': tensor dtype pypto.DT_HF4 is not supported yet"):
        @pypto.frontend.jit
        def k_hf4(a: pypto.Tensor([4], pypto.DT_HF4)):
            pass


def test_non_native_cast_is_a_clear_trace_error():
    @pypto.frontend.jit
    def k_cast(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = pypto.cast(pypto.cast(a, pypto.DT_INT4), pypto.DT_FP32)
    out = torch.full((4,), 3.0)
    with pytest.raises(pypto.KernelTraceError, match=r"kernel 'k_cast': cast: dtype pypto.DT_INT4 is not "
                                                      r"supported yet inside kernels"):
        k_cast(torch.ones(4), out)
    assert torch.equal(out, torch.full((4,), 3.0))


@pytest.mark.parametrize("tdt", [torch.int8, torch.int16, torch.int64, torch.uint8, torch.bool])
def test_narrow_native_dtypes_compute_exactly(tdt):
    dt = dtypes.from_torch(tdt)

    @pypto.frontend.jit
    def k(a: pypto.Tensor([], dt), out: pypto.Tensor([], pypto.DT_INT32)):
        pypto.set_vec_tile_shapes(8)
        out[:] = pypto.cast(a, pypto.DT_INT32)
    a = (torch.arange(-6, 6) % 7).to(tdt)
    out = torch.zeros(12, dtype=torch.int32)
    k(a, out)
    assert torch.equal(out, a.to(torch.int32))
