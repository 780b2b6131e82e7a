"""g.export(dir) and the C++ runtime's Sequence: the same results as g.replay() for the same inputs, the caller's
buffers checked with clear messages, and manifests that disagree with their libraries refused at load."""
from __future__ import annotations

import json
import random

import pytest
import torch

import pypto
from pypto.export import ExportError

from . import _kernels as K
from ._cpp import build_sequence_binary, run_case


@pytest.fixture(scope="module")
def exe():
    return build_sequence_binary()


def _capture_program(seed):
    rng = random.Random(seed)
    bufs = [torch.rand(K.N) for _ in range(5)]
    with pypto.capture() as g:
        alpha = g.slot("alpha", 1.5)
        for _ in range(rng.randrange(4, 20)):
            name = rng.choice(("add", "mul", "axpy"))
            x, y = rng.randrange(5), rng.randrange(5)
            out = rng.choice([b for b in range(5) if b not in (x, y)])
            if name == "axpy":
                K.axpy(bufs[x], bufs[y], bufs[out], alpha)
            else:
                getattr(K, name)(bufs[x], bufs[y], bufs[out])
        K.shift(bufs[0], bufs[4], g.slot("k", 2))
    return g, bufs


@pytest.mark.parametrize("seed", range(3))
def test_cpp_sequence_matches_replay(seed, exe, tmp_path):
    g, bufs = _capture_program(seed)
    g.export(tmp_path / "bundle", "step")
    fresh = [torch.rand(K.N) for _ in bufs]
    for b, f in zip(bufs, fresh):
        b.copy_(f)
    cpp = [t.clone() for t in g.tensors]  # the C++ buffers: the captured tensors, in capture order
    g.replay(alpha=-0.75, k=5)
    r = run_case(exe, {"bundle": str(tmp_path / "bundle"), "sequence": "step", "slots": {"alpha": -0.75, "k": 5},
                       "int_slots": ["k"]}, tmp_path, cpp)
    assert r["code"] == "OK", r
    assert r["slots"] == ["alpha", "k"] and r["launches"] == len(g)
    for i, (b, c) in enumerate(zip(g.tensors, cpp)):
        assert torch.equal(b, c), (seed, i)


def _exported(tmp_path):
    x, y, out = torch.rand(K.N), torch.rand(K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.axpy(x, y, out, g.slot("alpha", 2.0))
        K.shift(out, y, g.slot("k", 1))
    g.export(tmp_path / "bundle")
    return g, [x.clone(), y.clone(), out.clone()]


def _case(tmp_path, **kw):
    return {"bundle": str(tmp_path / "bundle"), "sequence": "step", **kw}


def test_caller_buffer_errors(exe, tmp_path):
    g, bufs = _exported(tmp_path)

    def refused(code, *words, tensors=None, **kw):
        ts = tensors if tensors is not None else [b.clone() for b in bufs]
        before = [t.clone() for t in ts]
        r = run_case(exe, _case(tmp_path, **kw), tmp_path, ts)
        assert r["code"] == code, r
        for w in words:
            assert w in r["message"], r["message"]
        for t, b in zip(ts, before):
            # bitwise: a buffer reinterpreted from other bits may hold NaNs, which torch.equal never calls equal
            assert torch.equal(t.view(torch.uint8), b.view(torch.uint8)), "a refused run launched"

    refused("TypeError", "sequence 'step'", "expected 3 buffers", "got 2", tensors=[b.clone() for b in bufs[:2]])
    refused("ValueError", "buffer 1 (kernel 'axpy' parameter 'y' (launch 0))", "expected float32[16]", "float32[8]",
            tensors=[bufs[0].clone(), torch.rand(8), bufs[2].clone()])
    refused("TypeError", "buffer 0", "expected dtype float32, got float64", dtypes={0: 9},
            tensors=[torch.arange(8, dtype=torch.float64).view(torch.float32), bufs[1].clone(), bufs[2].clone()])
    refused("TypeError", "no scalar slot 'beta'", "'alpha', 'k'", slots={"beta": 1.0})
    refused("TypeError", "slot 'k'", "kernel 'shift' takes it as an integer, got a float", slots={"k": 1.5})
    refused("ValueError", "buffer 1", "is written by the sequence and overlaps buffer 2", alias=[[2, 1]])
    r = run_case(exe, {"bundle": str(tmp_path / "bundle"), "sequence": "nope"}, tmp_path, [])
    assert r["code"] == "NotFound" and "no sequence 'nope'; it has 'step'" in r["message"]


def test_tampered_sequence_is_refused_at_load(exe, tmp_path):
    _exported(tmp_path)
    m = json.loads((tmp_path / "bundle" / "manifest.json").read_text())

    def load_error(edit, *words):
        mm = json.loads(json.dumps(m))
        edit(mm["sequences"][0])
        (tmp_path / "bundle" / "manifest.json").write_text(json.dumps(mm))
        r = run_case(exe, _case(tmp_path), tmp_path, [])
        assert r["code"] == "LoadError", r
        for w in words:
            assert w in r["message"], r["message"]

    load_error(lambda s: s["buffers"][0].update(shape=[8]), "sequence 'step': launch 0", "kernel's annotations")
    load_error(lambda s: s["launches"][0].update(kernel="nope"), "no kernel 'nope'")
    load_error(lambda s: s["launches"][0].update(tensors=[0, 1]), "takes 3 tensors")
    load_error(lambda s: s["launches"][0].update(tensors=[0, 1, 7]), "out of range")
    load_error(lambda s: s["launches"][0].update(specialization=3), "specialization", "out of range")
    load_error(lambda s: s["launches"][0]["slots"][0].update(slot="zzz"), "slot 'zzz'")
    load_error(lambda s: s["launches"][1].update(scalars=[{"float": 1.0}]), "scalar 0")
    load_error(lambda s: s["buffers"][0].update(dtype_code=99), "dtype_code", "out of range")


def test_export_refusals(tmp_path):
    x, out = torch.rand(2 * K.N), torch.zeros(K.N)
    with pypto.capture() as g:
        K.add(x[:K.N], x[4:K.N + 4], out)  # two views of one storage
    with pytest.raises(ExportError, match="share memory"):
        g.export(tmp_path / "b1")
    with pypto.capture() as empty:
        pass
    with pytest.raises(pypto.CaptureError, match="recorded no launch"):
        empty.export(tmp_path / "b2")
    with pytest.raises(pypto.CaptureError, match="identifier"):
        g.export(tmp_path / "b3", "not a name")
    out.resize_(4)
    with pytest.raises(pypto.CaptureError, match="replay refused"):
        g.export(tmp_path / "b4")
