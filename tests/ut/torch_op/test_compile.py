"""pypto ops inside torch.compile(fullgraph=True) (default and dynamic=True) and torch.export: no graph break, results
equal eager. Inductor compiles are slow: two Inductor graphs in all; the other checks use the aot_eager backend,
which runs the same Dynamo capture, FakeTensor tracing and functionalization."""
from __future__ import annotations

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from . import _kernels as K


@pytest.fixture(scope="module")
def ops():
    return K.gated.as_torch_op("cmp_gated"), K.axpby.as_torch_op("cmp_axpby")


class Model(torch.nn.Module):
    """Two pypto kernels with torch ops around them."""

    def __init__(self, gated, axpby):
        super().__init__()
        self.gated, self.axpby = gated, axpby
        self.proj = torch.nn.Linear(K.D, K.D)
        torch.nn.init.normal_(self.proj.weight, generator=torch.Generator().manual_seed(0))

    def forward(self, x, s: float):
        h = self.proj(x)
        g = torch.empty_like(h)
        self.gated(h, x.tanh(), g)
        out = torch.empty_like(g)
        self.axpby(g.relu(), x, out, s, beta=0.5)
        return out.sum(dim=1, keepdim=True) * out


def reference(model, x, s):
    h = model.proj(x)
    g = (h * torch.sigmoid(x.tanh())).relu() * s + 0.5 * x
    return g.sum(dim=1, keepdim=True) * g


def _compiled(fn, *args, **compile_kw):
    """Run `fn` compiled with fullgraph=True; return (result, graph breaks, graphs compiled)."""
    torch._dynamo.reset()
    counters.clear()
    result = torch.compile(fn, fullgraph=True, **compile_kw)(*args)
    return result, sum(counters["graph_break"].values()), counters["stats"]["unique_graphs"]


@torch.no_grad()
def test_model_under_inductor_equals_eager(ops):
    model = Model(*ops)
    x = K.rand(6, K.D, seed=1)
    eager = model(x, 2.0)
    torch.testing.assert_close(eager, reference(model, x, 2.0))
    compiled, breaks, graphs = _compiled(model, x, 2.0)
    assert (breaks, graphs) == (0, 1)
    torch.testing.assert_close(compiled, eager)


@torch.no_grad()
def test_model_dynamic_shapes_compile_once(ops):
    """dynamic=True: the named dim N (and the STATIC batch of axpby) stay symbolic, so new batch sizes reuse the
    graph while pypto specializes its own kernels underneath."""
    model = Model(*ops)
    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(model, fullgraph=True, dynamic=True)
    for n in (5, 9, 3):
        x = K.rand(n, K.D, seed=n)
        torch.testing.assert_close(fn(x, 1.5), model(x, 1.5))
    assert sum(counters["graph_break"].values()) == 0
    assert counters["stats"]["unique_graphs"] == 1


def test_explain_reports_no_graph_break(ops):
    gated, _ = ops

    def f(x, g):
        out = torch.empty_like(x)
        gated(x * 2, g, out)
        return out + 1
    x, g = K.rand(4, K.D, seed=2), K.rand(4, K.D, seed=3)
    report = torch._dynamo.explain(f)(x, g)
    assert (report.graph_break_count, report.graph_count) == (0, 1)
    result, breaks, _ = _compiled(f, x, g, backend="aot_eager")
    assert breaks == 0
    torch.testing.assert_close(result, x * 2 * torch.sigmoid(g) + 1)


def test_the_raw_kernel_breaks_the_graph_but_the_op_does_not(ops):
    def raw(x, g):
        out = torch.empty_like(x)
        K.gated(x, g, out)
        return out
    x, g = K.rand(4, K.D, seed=4), K.rand(4, K.D, seed=5)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch._dynamo.reset()
        torch.compile(raw, fullgraph=True, backend="eager")(x, g)


def test_functional_op_and_written_input_under_compile():
    sig = K.sig.as_torch_op("cmp_sig", returns=["out"])
    two = K.two_outputs.as_torch_op("cmp_two", mutates_args=["a", "b"])

    def f(x):
        a, b = torch.zeros_like(x), torch.zeros_like(x)
        two(sig(x), a, b, both=True)
        return a - b
    x = K.rand(7, K.D, seed=6)
    result, breaks, graphs = _compiled(f, x, backend="aot_eager", dynamic=True)
    assert (breaks, graphs) == (0, 1)
    y = torch.sigmoid(x)
    torch.testing.assert_close(result, (y + 1.0) - y * 2.0)


def test_torch_export(ops):
    gated, axpby = ops

    class Small(torch.nn.Module):
        def forward(self, x, g):
            out = torch.empty_like(x)
            gated(x, g, out)
            res = torch.empty_like(out)
            axpby(out, g, res, 3.0)
            return res
    x, g = K.rand(8, K.D, seed=7), K.rand(8, K.D, seed=8)
    batch = torch.export.Dim("batch", min=2, max=1024)
    ep = torch.export.export(Small(), (x, g), dynamic_shapes=({0: batch}, {0: batch}))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert any("cmp_gated" in t or "auto_functionalized" in t for t in targets), targets
    for n in (8, 3):
        x, g = K.rand(n, K.D, seed=n), K.rand(n, K.D, seed=n + 1)
        torch.testing.assert_close(ep.module()(x, g), x * torch.sigmoid(g) * 3.0 + g)
