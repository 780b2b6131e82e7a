"""Names are data: a hostile kernel or parameter name never becomes code, a path, or a collision."""
import os

import pytest

from pypto.codegen.names import c_string, comment_text, file_component, mangle
from _security_child import run


def test_planted_constructor_in_kernel_name_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    r = run(f'''
        def k(x: V, out: V):
            out[:] = x * 2.0
        k.__name__ = k.__qualname__ = ('k\\nextern "C" int system(const char*); __attribute__((constructor)) '
                                       'static void evil() {{ system("touch {marker}"); }}\\n//')
        k = pypto.frontend.jit(k)
        x = torch.arange(8, dtype=torch.float32); out = torch.zeros(8)
        k(x, out)
        print(json.dumps({{"ok": bool(torch.equal(out, x * 2.0))}}))
    ''', tmp_path / "cache")
    assert r["ok"]
    assert not marker.exists(), "the constructor planted in __name__ ran"


def test_backslash_newline_in_name_cannot_splice_a_comment(tmp_path):
    r = run('''
        def k(x: V, out: V):
            out[:] = x + 1.0
        k.__name__ = "k\\\\"
        k = pypto.frontend.jit(k)
        x = torch.arange(8, dtype=torch.float32); out = torch.zeros(8)
        k(x, out)
        print(json.dumps({"ok": bool(torch.equal(out, x + 1.0))}))
    ''', tmp_path / "cache")
    assert r["ok"]


def test_dump_and_export_file_names_stay_inside_their_directories(tmp_path):
    dump, bundle = tmp_path / "a" / "dump", tmp_path / "b" / "bundle"
    r = run(f'''
        def k(x: V, out: V):
            out[:] = x - 1.0
        k.__name__ = k.__qualname__ = "../../escaped"
        k = pypto.frontend.jit(k, debug_options={{"compile_debug_mode": 1, "dump_dir": {str(dump)!r}}})
        x = torch.arange(8, dtype=torch.float32); out = torch.zeros(8)
        k(x, out)
        pypto.export([k], {str(bundle)!r})
        print(json.dumps({{"ok": bool(torch.equal(out, x - 1.0))}}))
    ''', tmp_path / "cache")
    assert r["ok"]
    outside = [p for p in tmp_path.rglob("*escaped*") if dump not in p.parents and bundle not in p.parents]
    assert outside == [], f"files written outside dump_dir / the bundle: {outside}"
    assert any(dump.glob("*escaped*.cpp")) and any((bundle / "lib").glob("*escaped*.so"))


def test_parameter_names_that_used_to_collide_compile_and_compute(tmp_path):
    r = run('''
        D = pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)
        @pypto.frontend.jit
        def k1(x: D, x_d0: V, out: V):
            out[:] = x + x_d0
        ns = {"pypto": pypto, "V": V}
        exec("def k2(a_b: V, a\\u203fb: V, out: V):\\n    out[:] = a_b * 2.0 + a\\u203fb\\n", ns)
        k2 = pypto.frontend.jit(ns["k2"])
        a = torch.arange(6, dtype=torch.float32); b = torch.full((6,), 0.5); o1 = torch.zeros(6); o2 = torch.zeros(6)
        k1(a, b, o1)
        k2(a, b, o2)
        print(json.dumps({"ok1": bool(torch.equal(o1, a + b)), "ok2": bool(torch.equal(o2, a * 2.0 + b))}))
    ''', tmp_path / "cache")
    assert r["ok1"] and r["ok2"]


def test_lone_surrogate_name_is_an_error_not_a_crash(tmp_path):
    r = run('''
        def k(x: V, out: V):
            out[:] = x
        k.__name__ = "bad\\ud800"
        try:
            pypto.frontend.jit(k)
            msg = None
        except pypto.KernelDefinitionError as e:
            msg = str(e)
        print(json.dumps({"msg": msg}))
    ''', tmp_path / "cache")
    assert r["msg"] and "not valid UTF-8" in r["msg"] and "kernel name" in r["msg"]


def test_mangle_is_injective_and_c_like():
    names = ["x", "x_d0", "a_b", "a\u203fb", "a__b", "a_x5f_", "_", "__", "é", "x_x", "xx"]
    got = [mangle(n) for n in names]
    assert len(set(got)) == len(got), got
    assert all(g.isascii() and (g.replace("_", "a").isalnum() or g == "") for g in got)
    assert mangle("x") + "_d0" not in got


def test_c_string_and_comment_text_escape_everything_dangerous():
    s = 'a"b\\c\n?\u00e9\ud800'
    lit = c_string(s)
    assert lit.startswith('"') and lit.endswith('"') and "\n" not in lit
    body = lit[1:-1]
    assert '"' not in body.replace('\\042', '') and "?" not in body
    assert all(32 <= ord(ch) < 127 for ch in lit)
    c = comment_text("x\\\ny\u2028")
    assert "\\" not in c and "\n" not in c and all(32 <= ord(ch) < 127 for ch in c)


@pytest.mark.parametrize("name", ["../../x", "/etc/passwd", "..", ".", "", "a/b", "-rf", "\x00", "k\u00e9"])
def test_file_component_is_one_safe_component(name):
    f = file_component(name)
    assert f and os.sep not in f and f not in (".", "..") and not f.startswith((".", "-"))
    assert all(ch.isascii() and (ch.isalnum() or ch in "_.-") for ch in f)
    assert file_component("a/b") != file_component("a_b")
