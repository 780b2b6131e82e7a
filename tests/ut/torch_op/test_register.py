"""kernel.as_torch_op(): the schema it registers, eager calls against torch, and every registration error."""
from __future__ import annotations

import pytest
import torch

import pypto
from pypto.torch_op import TorchOpError

from . import _kernels as K
from ._util import assert_untouched, raises, sentinel, snap


@pytest.fixture(scope="module")
def ops():
    return {"gated": K.gated.as_torch_op("reg_gated"), "axpby": K.axpby.as_torch_op("reg_axpby"),
            "rows": K.rows_scale.as_torch_op("reg_rows"), "sig": K.sig.as_torch_op("reg_sig", returns=["out"])}


def test_schema_follows_the_parameter_table(ops):
    assert str(ops["gated"].default._schema) == \
        "pypto::reg_gated(Tensor x, Tensor g, Tensor(a!) out) -> ()"
    assert str(ops["axpby"].default._schema) == \
        "pypto::reg_axpby(Tensor x, Tensor y, Tensor(a!) out, float s, float beta=1.) -> ()"
    assert str(ops["rows"].default._schema) == ("pypto::reg_rows(Tensor x, Tensor(a!) out, str mode_=\"mul\", *, "
                                                "float[] shift=[0., 1.], bool flip=False, int reps=1) -> ()")
    assert str(ops["sig"].default._schema) == "pypto::reg_sig(Tensor x) -> Tensor"
    assert ops["gated"] is torch.ops.pypto.reg_gated


def test_same_registration_returns_the_same_op(ops):
    assert K.gated.as_torch_op("reg_gated") is ops["gated"]


def test_eager_calls_equal_torch(ops):
    x, g, y = K.rand(5, 16, seed=1), K.rand(5, 16, seed=2), K.rand(5, 16, seed=3)
    out = sentinel(5, 16)
    assert ops["gated"](x, g, out) is None
    torch.testing.assert_close(out, x * torch.sigmoid(g))
    ops["axpby"](x, y, out, 0.5, beta=-2.0)
    torch.testing.assert_close(out, x * 0.5 - 2.0 * y)
    ops["axpby"](x, y, out, 3.0)
    torch.testing.assert_close(out, x * 3.0 + y)
    torch.testing.assert_close(ops["sig"](x), torch.sigmoid(x))


@pytest.mark.parametrize("kw", [{}, {"mode_": "add"}, {"shift": [2.0, -3.0], "flip": True, "reps": 4}])
def test_constants_by_keyword(ops, kw):
    # `mode` is a keyword torch's functionalization reserves: the schema spells it `mode_`
    x, out = K.rand(3, 16, seed=4), sentinel(3, 16)
    ops["rows"](x, out, **kw)
    ref_kw = {k.rstrip("_"): tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
    torch.testing.assert_close(out, K.ref_rows_scale(x, **ref_kw))
    positional = sentinel(3, 16)
    ops["rows"](x, positional, ref_kw.get("mode", "mul"), **{k: v for k, v in kw.items() if k != "mode_"})
    torch.testing.assert_close(positional, out)


def test_opcheck_passes(ops):
    x, g = K.rand(4, 16, seed=5), K.rand(4, 16, seed=6)
    torch.library.opcheck(ops["gated"], (x, g, torch.empty(4, 16)))
    torch.library.opcheck(ops["axpby"], (x, g, torch.empty(4, 16), 1.5), {"beta": 0.25})
    torch.library.opcheck(ops["rows"], (x, torch.empty(4, 16)), {"mode_": "add", "shift": [1.0, 2.0], "reps": 3})
    torch.library.opcheck(ops["sig"], (x,))


# -- errors at call time: the annotation is checked before anything runs -------------------------------------

def test_wrong_dtype_names_kernel_parameter_expected_got(ops):
    x, out = K.rand(4, 16, seed=7), sentinel(4, 16)
    before = snap(out)
    raises(TypeError, lambda: ops["gated"](x, x.double(), out), "kernel 'gated'", "parameter 'g'", "float32",
           "float64")
    assert_untouched(before, out)


def test_named_dim_mismatch_leaves_output_untouched(ops):
    x, out = K.rand(4, 16, seed=8), sentinel(4, 16)
    before = snap(out)
    raises(ValueError, lambda: ops["gated"](x, K.rand(5, 16), out), "kernel 'gated'", "parameter 'g'",
           "named dimension 'N', expected 4 (as 'x' dimension 0)", "got 5")
    raises(ValueError, lambda: ops["gated"](x, K.rand(4, 8), out), "kernel 'gated'", "parameter 'g'",
           "dimension 1 must be 16", "got 8")
    raises(ValueError, lambda: ops["gated"](x, K.rand(4, 16, 1), out), "parameter 'g'", "expected 2 dimensions",
           "got 3")
    assert_untouched(before, out)


# -- what the op declares written --------------------------------------------------------------------------

def test_inferred_writes_come_from_a_trace_without_compiling():
    @pypto.frontend.jit
    def writes_b(x: pypto.Tensor([K.N, 16], pypto.DT_FP32), a: pypto.Tensor([K.N, 16], pypto.DT_FP32),
                 b: pypto.Tensor([K.N, 16], pypto.DT_FP32)):
        b[:] = x + a
    op = writes_b.as_torch_op("reg_writes_b")
    assert str(op.default._schema) == "pypto::reg_writes_b(Tensor x, Tensor a, Tensor(a!) b) -> ()"
    assert writes_b.cache_info()["specializations"] == 0     # registering compiled nothing


def test_a_specialization_writing_an_undeclared_tensor_is_refused_before_launch():
    op = K.two_outputs.as_torch_op("reg_two_inferred")     # inferred from the default both=False: writes a only
    assert str(op.default._schema).startswith("pypto::reg_two_inferred(Tensor x, Tensor(a!) a, Tensor b,")
    x, a, b = K.rand(3, 16, seed=9), sentinel(3, 16), sentinel(3, 16)
    op(x, a, b)
    torch.testing.assert_close(a, x + 1.0)
    a2 = sentinel(3, 16)
    before = snap(a2, b)
    raises(TorchOpError, lambda: op(x, a2, b, both=True), "kernel 'two_outputs'", "pypto::reg_two_inferred",
           "writes ['b']", "expected writes only to ['a']", "mutates_args")
    assert_untouched(before, a2, b)


def test_declared_union_covers_every_specialization():
    op = K.two_outputs.as_torch_op("reg_two_declared", mutates_args=["a", "b"])
    assert "Tensor(a!) a, Tensor(b!) b" in str(op.default._schema)
    x, a, b = K.rand(3, 16, seed=10), sentinel(3, 16), sentinel(3, 16)
    op(x, a, b, both=True)
    torch.testing.assert_close(a, x + 1.0)
    torch.testing.assert_close(b, x * 2.0)


# -- errors at registration -------------------------------------------------------------------------------

def test_a_constant_without_schema_type_is_refused():
    @pypto.frontend.jit
    def typed(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), dt=pypto.DT_FP32):
        out[:] = x
    raises(TorchOpError, lambda: typed.as_torch_op("reg_typed"), "kernel 'typed'", "constant 'dt'",
           "int, float, bool, str", "got default pypto.DT_FP32")

    @pypto.frontend.jit
    def untyped(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), k=None):
        out[:] = x
    raises(TorchOpError, lambda: untyped.as_torch_op("reg_untyped", mutates_args=["out"]), "kernel 'untyped'",
           "constant 'k'", "got default None")


def test_annotated_constants_and_optional():
    @pypto.frontend.jit
    def annotated(x: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32), k: int,
                  ws: list[float] = [1.0], opt: int | None = None):  # noqa: B006 - a constant's default
        out[:] = x * float(k) + ws[0] + (0.0 if opt is None else float(opt))
    op = annotated.as_torch_op("reg_annotated", mutates_args=["out"])
    assert str(op.default._schema) == ("pypto::reg_annotated(Tensor x, Tensor(a!) out, int k, float[] ws=[1.], "
                                       "int? opt=None) -> ()")
    x, out = K.rand(4, seed=11), sentinel(4)
    op(x, out, 3, [0.5], opt=2)
    torch.testing.assert_close(out, x * 3.0 + 2.5)


def test_inference_that_cannot_trace_asks_for_mutates_args():
    @pypto.frontend.jit
    def any_shape(x: pypto.Tensor(), out: pypto.Tensor()):
        out[:] = x
    raises(TorchOpError, lambda: any_shape.as_torch_op("reg_any"), "kernel 'any_shape'", "tensor 'x' has no fixed "
           "rank", "mutates_args=[...]", "['x', 'out']")
    op = any_shape.as_torch_op("reg_any", mutates_args=["out"])
    x, out = K.rand(2, 3, seed=12), sentinel(2, 3)
    op(x, out)
    torch.testing.assert_close(out, x)


def test_bad_arguments_are_refused():
    raises(TorchOpError, lambda: K.gated.as_torch_op("not an identifier"), "kernel 'gated'", "identifier")
    raises(TorchOpError, lambda: K.gated.as_torch_op("reg_bad1", mutates_args=["nope"]), "kernel 'gated'",
           "'nope'", "not a tensor parameter", "['x', 'g', 'out']")
    raises(TorchOpError, lambda: K.gated.as_torch_op("reg_bad2", mutates_args="out"), "kernel 'gated'",
           "mutates_args", "'out'")
    raises(TorchOpError, lambda: K.gated.as_torch_op("reg_bad3", returns=["x"]), "kernel 'gated'",
           "returns names 'x'", "does not write", "['out']")
    raises(TorchOpError, lambda: K.axpby.as_torch_op("reg_bad4", returns=["out"]), "kernel 'axpby'",
           "returned tensor 'out'", "does not fix its shape", "returns={'out': 'x'}")
    raises(TypeError, lambda: pypto.torch_op.as_torch_op(len), "expected a @pypto.frontend.jit kernel")


def test_a_taken_name_is_refused(ops):
    raises(TorchOpError, lambda: K.sig.as_torch_op("reg_gated"), "kernel 'sig'", "'pypto::reg_gated'",
           "already registered by kernel 'gated'")
    raises(TorchOpError, lambda: K.gated.as_torch_op("reg_gated", mutates_args=["g", "out"]),
           "already registered by the same kernel with other arguments")


def test_returns_like_an_input_or_by_callable():
    op = K.axpby.as_torch_op("reg_axpby_like", returns={"out": "x"})
    x, y = K.rand(6, 16, seed=13), K.rand(6, 16, seed=14)
    torch.testing.assert_close(op(x, y, 2.0), 2.0 * x + y)
    op2 = K.axpby.as_torch_op("reg_axpby_fn", returns={"out": lambda x, y, s, beta=1.0: (x.shape, torch.float32)})
    torch.testing.assert_close(op2(x, y, 2.0, beta=3.0), 2.0 * x + 3.0 * y)
