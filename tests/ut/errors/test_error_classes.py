"""`pypto.error`: the reference's exception classes are the ones pypto raises; codes and messages as the reference."""
import pickle

import pytest
import torch

import pypto
from pypto import error


def test_reference_names_exist_and_form_one_hierarchy():
    for name in ("PyptoError", "PyptoGeneralError", "ParserError", "RenderedParserError", "FeError",
                 "PyptoRtError", "PassError", "VerifyError"):
        cls = getattr(error, name)
        assert issubclass(cls, error.PyptoError), name
    assert pypto.error.FeError is pypto.errors.FeError
    assert issubclass(pypto.KernelTraceError, error.FeError) and issubclass(pypto.KernelTraceError, ValueError)
    assert issubclass(pypto.KernelDefinitionError, error.FeError) and issubclass(pypto.KernelDefinitionError,
                                                                                   TypeError)
    assert issubclass(pypto.CompileError, error.PyptoRtError) and issubclass(pypto.CompileError, RuntimeError)


@pytest.mark.parametrize("inner,code", [(TypeError("t"), 0xF00001), (ValueError("v"), 0xF00002),
                                        (RuntimeError("r"), 0xF00003), (KeyError("k"), 0xF00006)])
def test_reference_message_form(inner, code):
    e = error.FeError(inner)
    assert e.err_code == code
    assert str(e) == f"ErrCode: {code:X}, {type(inner).__name__}: {inner}"
    assert str(error.PyptoError(0xF00002, "plain")) == "ErrCode: F00002, plain"
    assert str(error.FeError("text")) == "ErrCode: F00000, text"      # a string alone: the unknown code
    assert str(error.FeError(str(e))) == str(e)                       # never a second prefix


def test_parser_error_keeps_node():
    import ast
    node = ast.parse("x = 1").body[0]
    e = error.ParserError(node, ValueError("bad"))
    assert e.node is node and e.err_code == 0xF00002 and "ValueError: bad" in str(e)


def test_raised_trace_error_is_caught_as_feerror_with_code():
    @pypto.frontend.jit
    def k_bad(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):
        out[:] = pypto.reshape(a, [5])
    out = torch.full((4,), 2.0)
    with pytest.raises(error.FeError) as e:
        k_bad(torch.ones(4), out)
    assert isinstance(e.value, ValueError) and e.value.err_code == 0xF00002
    assert str(e.value).startswith("kernel 'k_bad': reshape")            # our message, no prefix
    assert torch.equal(out, torch.full((4,), 2.0))


def test_option_error_is_feerror():
    with pytest.raises(error.FeError, match="unknown runtime_options key 'no_such'"):
        @pypto.frontend.jit(runtime_options={"no_such": 1})
        def k(a: pypto.Tensor):
            pass


def test_errors_pickle():
    e = pickle.loads(pickle.dumps(pypto.KernelTraceError("kernel 'x': m")))
    assert str(e) == "kernel 'x': m" and e.err_code == 0xF00002
    e2 = pickle.loads(pickle.dumps(error.FeError(ValueError("v"))))
    assert str(e2) == "ErrCode: F00002, ValueError: v"


def test_not_supported_names_the_feature():
    e = pypto.errors.not_supported("pypto.foo(bar=...)")
    assert isinstance(e, NotImplementedError) and isinstance(e, error.FeError)
    assert str(e) == "pypto.foo(bar=...) is not supported yet by this pypto" and e.err_code == 0xF00005
