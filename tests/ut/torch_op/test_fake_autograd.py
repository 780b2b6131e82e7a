"""FakeTensor calls check shapes without touching data (in a child process: a fake reaching the native kernel would
read a NULL pointer); autograd through a functional op whose backward is another pypto kernel."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

from . import _kernels as K
from ._util import raises

_FAKE_SCRIPT = textwrap.dedent("""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from tests.ut.torch_op import _kernels as K

    gated = K.gated.as_torch_op("fake_gated")
    sig = K.sig.as_torch_op("fake_sig", returns=["out"])
    with FakeTensorMode() as mode:
        x, g, out = torch.empty(5, 16), torch.empty(5, 16), torch.empty(5, 16)
        assert gated(x, g, out) is None
        y = sig(x)
        assert type(y).__name__ == "FakeTensor" and tuple(y.shape) == (5, 16) and y.dtype == torch.float32
        for bad, want in (((x, torch.empty(4, 16), out), "named dimension 'N', expected 5 (as 'x' dimension 0)"),
                          ((x, g, torch.empty(5, 16, dtype=torch.float64)), "expected dtype float32, got float64")):
            try:
                gated(*bad)
            except (TypeError, ValueError) as e:
                assert "kernel 'gated'" in str(e) and want in str(e), str(e)
            else:
                raise AssertionError("no error for " + want)
    # nothing was built or launched: the fakes never reached the native kernel
    assert K.gated.cache_info()["specializations"] == 0 and K.sig.cache_info()["specializations"] == 0
    print("FAKE-OK")
""")


def test_fake_tensor_call_checks_shapes_without_touching_data():
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    proc = subprocess.run([sys.executable, "-c", _FAKE_SCRIPT], cwd=root, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and "FAKE-OK" in proc.stdout, proc.stdout + proc.stderr


def _sig_autograd_ops():
    forward = K.sig.as_torch_op("ag_sig", returns=["out"])
    backward_op = K.sig_backward.as_torch_op("ag_sig_backward", returns=["grad_x"])

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return backward_op(y, grad.contiguous())
    torch.library.register_autograd("pypto::ag_sig", backward, setup_context=setup_context)
    return forward


def test_gradients_match_torch():
    sig = _sig_autograd_ops()
    torch.manual_seed(0)
    lin = torch.nn.Linear(K.D, K.D)
    x = K.rand(6, K.D, seed=1)
    target = K.rand(6, K.D, seed=2)

    def loss(act):
        return ((act(lin(x)) - target) ** 2).mean()

    grads = torch.autograd.grad(loss(sig), list(lin.parameters()))
    want = torch.autograd.grad(loss(torch.sigmoid), list(lin.parameters()))
    for got, ref in zip(grads, want):
        torch.testing.assert_close(got, ref)
    # and the same gradients through a compiled graph (the backward kernel traced into the backward graph)
    torch._dynamo.reset()
    compiled = torch.autograd.grad(torch.compile(loss, fullgraph=True, backend="aot_eager")(sig),
                                   list(lin.parameters()))
    for got, ref in zip(compiled, want):
        torch.testing.assert_close(got, ref)


def test_an_op_without_backward_raises_when_a_gradient_is_needed():
    no_grad_fn = K.sig.as_torch_op("ag_sig_plain", returns=["out"])
    x = K.rand(3, K.D, seed=3).requires_grad_()
    raises(RuntimeError, lambda: no_grad_fn(x).sum().backward(), "pypto.ag_sig_plain",
           "no autograd formula was registered")
    inplace = K.sig.as_torch_op("ag_sig_inplace")
    out = torch.empty(3, K.D)
    inplace(x, out)
    raises(RuntimeError, lambda: out.sum().backward(), "does not require grad and does not have a grad_fn")
    # without a gradient the ops just run
    with torch.no_grad():
        torch.testing.assert_close(no_grad_fn(x), torch.sigmoid(x))
