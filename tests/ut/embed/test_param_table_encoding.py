"""The parameter table has one encoding (the bundle manifest's JSON, core/param_table_json.h) and one decoder: the
names it uses come from the core (pypto._core), the Python dtype codes agree with the kernel ABI's, and what the
front end hands pypto._core.JitFunction is what the export writes into a manifest."""
import json

import pytest

import pypto
from pypto import _core
from pypto.vocab.dtypes import DataType


def test_dtype_codes_and_names_agree_with_the_core():
    """The core names codes 0..PYPTO_DT_COUNT-1 exactly as Python does (some of them "named only": no storage
    layout, not native in Python); every native dtype has a core code; only DT_BOTTOM is beyond the core."""
    names = _core.DTYPE_NAMES
    for dt in DataType:
        if int(dt) < len(names):
            assert names[int(dt)] == dt.short, dt
        else:
            assert not dt.native, dt
    assert [dt.name for dt in DataType if int(dt) >= len(names)] == ["DT_BOTTOM"]
    assert len(set(names)) == len(names)


def test_encoding_names_come_from_the_core():
    assert (_core.PARAM_TENSOR, _core.PARAM_CONSTANT, _core.PARAM_SCALAR) == ("tensor", "constant", "scalar")
    assert (_core.DIM_FIXED, _core.DIM_STATIC, _core.DIM_DYNAMIC, _core.DIM_NAMED) == (
        "FIXED", "STATIC", "DYNAMIC", "NAMED")


N = pypto.dynamic("n")
A = pypto.Tensor([N, 4, pypto.STATIC, pypto.DYNAMIC], pypto.DT_FP32)
B = pypto.Tensor([N], pypto.DT_INT32)


def _kernel():
    @pypto.frontend.jit
    def enc(a: A, b: B, s: pypto.Scalar[pypto.DT_FP64], *, k=3):
        pass

    return enc


def test_the_table_round_trips_through_json_and_names_every_field():
    table = _kernel().param_table()
    assert json.loads(json.dumps(table)) == table
    assert table["name"] == "enc" and table["dim_names"] == ["n"]
    a, b, s, k = table["params"]
    assert a["kind"] == _core.PARAM_TENSOR and a["dtype"] == "float32" and [d["kind"] for d in a["dims"]] == [
        _core.DIM_NAMED, _core.DIM_FIXED, _core.DIM_STATIC, _core.DIM_DYNAMIC]
    assert a["dims"][0]["name"] == "n" and a["dims"][1]["value"] == 4
    assert b["dtype"] == "int32" and s == {"name": "s", "kind": _core.PARAM_SCALAR, "keyword_only": False,
                                           "dtype": "float64"}
    assert k == {"name": "k", "kind": _core.PARAM_CONSTANT, "keyword_only": True}


@pytest.mark.parametrize("bad, message", [
    ({"kind": "matrix"}, "unknown parameter kind 'matrix'"),
    ({"dtype": "float8"}, "unknown dtype 'float8'"),
    ({"dims": [{"kind": "RAGGED"}]}, "unknown dimension kind 'RAGGED'"),
    ({"dims": [{"kind": "NAMED", "name": "m"}]}, "named dimension 'm' is not in dim_names"),
])
def test_the_core_decoder_rejects_a_malformed_table(bad, message):
    def f(x):
        pass

    param = {"name": "x", "kind": "tensor", "keyword_only": False, "dtype": "float32", "any_shape": False,
             "ellipsis": False, "format": 0, "dims": []}
    param.update(bad)
    table = {"name": "f", "dim_names": [], "params": [param]}
    with pytest.raises(TypeError, match="kernel 'f': parameter 'x': " + message):
        _core.JitFunction(None, f, json.dumps(table), [], None, 1, 1, 0)
