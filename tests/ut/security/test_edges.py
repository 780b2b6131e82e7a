"""Errors at the edges name the kernel and say what to do; debugging options never break a call; interrupts
propagate; a partially overlapping output is refused (Python path). Each case runs in a child process."""
from __future__ import annotations

import pytest

from _security_child import run


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("edges_cache")


def test_huge_int_constant_names_kernel_and_parameter(cache):
    r = run('''
        @pypto.frontend.jit
        def k(x: V, out: V, c=1):
            out[:] = x * 2.0
        x = torch.ones(4); out = torch.full((4,), 7.0)
        try:
            k(x, out, 10 ** 5000)
            msg = None
        except ValueError as e:
            msg = str(e)
        k(x, out, 3)                      # the kernel still works with a sane value
        print(json.dumps({"msg": msg, "ok": bool(torch.equal(out, x * 2.0))}))
    ''', cache)
    assert r["msg"] and "kernel 'k'" in r["msg"] and "parameter 'c'" in r["msg"] and "pass a smaller value" in r["msg"]
    assert "Exceeds the limit" not in r["msg"] and r["ok"]


def test_interrupt_in_a_scalars_conversion_propagates_untouched(cache):
    r = run('''
        class Interrupting:
            def __float__(self): raise KeyboardInterrupt("from __float__")
            def __index__(self): raise KeyboardInterrupt("from __index__")
        class InterruptingConstant:
            def __reduce_ex__(self, protocol): raise KeyboardInterrupt("from the constant's key")
        @pypto.frontend.jit
        def kc(x: V, out: V, c=None):
            out[:] = x + 1.0
        class Failing:
            def __float__(self): raise ZeroDivisionError("user bug")
        @pypto.frontend.jit
        def kf(x: V, out: V, s: pypto.Scalar[pypto.DT_FP32]):
            out[:] = x * s
        @pypto.frontend.jit
        def ki(x: pypto.Tensor([pypto.STATIC], pypto.DT_INT32), out: pypto.Tensor([pypto.STATIC], pypto.DT_INT32),
               s: pypto.Scalar[pypto.DT_INT32]):
            out[:] = x * s
        x = torch.ones(4); out = torch.full((4,), 7.0)
        xi = torch.ones(4, dtype=torch.int32); outi = torch.full((4,), 7, dtype=torch.int32)
        kf(x, out, 2.0); ki(xi, outi, 2)   # built; the calls below fail before launching
        out.fill_(7.0); outi.fill_(7)
        got = []
        for call in (lambda: kf(x, out, Interrupting()), lambda: ki(xi, outi, Interrupting()),
                     lambda: kf(x, out, Failing()), lambda: kf(x, out, object()),
                     lambda: kc(x, out, InterruptingConstant())):
            try:
                call()
                got.append(None)
            except BaseException as e:
                got.append([type(e).__name__, str(e)])
        print(json.dumps({"got": got, "untouched": bool((out == 7).all() and (outi == 7).all())}))
    ''', cache)
    assert r["got"][0] == ["KeyboardInterrupt", "from __float__"]
    assert r["got"][1] == ["KeyboardInterrupt", "from __index__"]
    assert r["got"][2] == ["ZeroDivisionError", "user bug"]
    # pypto.errors.ArgumentTypeError: a TypeError and the reference's FeError (tests/ut/errors)
    assert r["got"][3][0] == "ArgumentTypeError" and "kernel 'kf'" in r["got"][3][1]
    assert r["got"][4] == ["KeyboardInterrupt", "from the constant's key"]
    assert r["untouched"]


def test_dump_dir_that_cannot_be_used_warns_and_the_kernel_runs(cache, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a directory")
    home = tmp_path / "home"
    home.mkdir()
    r = run(f'''
        import warnings
        from pypto.compiler.dumps import DumpWarning
        results = {{}}
        for name, ddir in (("file", {str(a_file)!r}), ("under_file", {str(a_file / "sub")!r}),
                           ("nul", "dump\\0dir"), ("home", "~/dumps")):
            @pypto.frontend.jit(debug_options={{"compile_debug_mode": 1, "dump_dir": ddir}})
            def k(x: V, out: V):
                out[:] = x + 1.0
            x = torch.arange(4, dtype=torch.float32); out = torch.zeros(4)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                k(x, out)
            dump = [str(m.message) for m in w if issubclass(m.category, DumpWarning)]
            results[name] = {{"ok": bool(torch.equal(out, x + 1.0)), "warnings": dump}}
        print(json.dumps(results))
    ''', cache, env={"HOME": str(home)})
    for name in ("file", "under_file", "nul"):
        got = r[name]
        assert got["ok"], name
        assert len(got["warnings"]) == 1 and "kernel 'k'" in got["warnings"][0], (name, got)
        assert "the kernel runs without it" in got["warnings"][0]
    assert r["home"]["ok"] and r["home"]["warnings"] == []
    assert any((home / "dumps").glob("k_*.ir.txt")) and any((home / "dumps").glob("k_*.cpp"))
    assert not (tmp_path / "~").exists()
    assert a_file.read_text() == "not a directory"


OVERLAP = '''
    @pypto.frontend.jit
    def k(x: V, out: V):
        out[:] = x * 2.0 + 1.0
    @pypto.frontend.jit
    def kd(x: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)):
        out[:] = x * 2.0 + 1.0
    M = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
    @pypto.frontend.jit
    def k2(a: M, b: M, out: M, out2: M):
        out[:] = a + b
        out2[:] = a - b
    def attempt(fn, *args):
        snap = [a.clone() for a in args]
        try:
            fn(*args)
            return None
        except ValueError as e:
            return [str(e), all(bool(torch.equal(a, s)) for a, s in zip(args, snap))]
    base = torch.arange(9, dtype=torch.float32)
    r = {}
    r["out_is_x_shifted"] = attempt(k, base[:-1], base[1:])
    r["x_is_out_shifted"] = attempt(k, base[1:], base[:-1])
    r["dynamic"] = attempt(kd, base[:-1], base[1:])
    g = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    r["rows"] = attempt(k2, g[0:2], torch.ones(2, 4), g[1:3], torch.zeros(2, 4))
    r["second_output"] = attempt(k2, torch.ones(2, 4), g[2:4], torch.zeros(2, 4), g[3:5])
    # no false alarms: disjoint parts of one buffer, and the same tensor in and out (an in-place update)
    h = torch.arange(8, dtype=torch.float32)
    lo, hi = h[:4], h[4:]
    ok_disjoint = attempt(k, lo, hi) is None and bool(torch.equal(hi, torch.arange(4.) * 2 + 1))
    y = torch.arange(5, dtype=torch.float32)
    ok_inplace = attempt(k, y, y) is None and bool(torch.equal(y, torch.arange(5.) * 2 + 1))
    yd = torch.arange(5, dtype=torch.float32)
    ok_inplace_dyn = attempt(kd, yd, yd) is None and bool(torch.equal(yd, torch.arange(5.) * 2 + 1))
    e = torch.zeros(0)
    ok_empty = attempt(kd, e, e[0:0]) is None
    print(json.dumps({"r": r, "ok": [ok_disjoint, ok_inplace, ok_inplace_dyn, ok_empty]}))
'''


def test_partially_overlapping_output_is_refused_naming_both_parameters(cache):
    got = run(OVERLAP, cache)
    r = got["r"]
    for case in ("out_is_x_shifted", "x_is_out_shifted", "dynamic"):
        msg, untouched = r[case]
        assert "parameter 'out'" in msg and "partially overlaps the memory of parameter 'x'" in msg, (case, msg)
        assert untouched, case
    msg, untouched = r["rows"]
    assert "kernel 'k2': parameter 'out'" in msg and "parameter 'a'" in msg and untouched
    msg, untouched = r["second_output"]
    assert "kernel 'k2': parameter 'out2'" in msg and "parameter 'b'" in msg and untouched
    assert got["ok"] == [True, True, True, True]
