"""Libraries are loaded only for the key they were compiled for, and only after verification — in the core's miss
path and in the verify stages' launcher alike. Each case in a child process, with its own cache."""
import shutil

from _security_child import run

KERNEL = '''
        @pypto.frontend.jit{opts}
        def k(x: V, out: V):
            out[:] = x * 3.0 + 1.0
'''  # indented like the bodies below, which are dedented together with it


def test_a_cache_library_for_another_key_is_refused_by_the_core(tmp_path):
    cache = tmp_path / "cache"
    built = run(KERNEL.format(opts="") + '''
        for n in (4, 8):
            k(torch.arange(n, dtype=torch.float32), torch.zeros(n))
        print(json.dumps({"libs": [info["result"].library for _k, info, _l, _s in k._specializations()]}))
    ''', cache)
    lib4, lib8 = built["libs"]
    # someone who can write the cache (it is yours: see docs/security.md) puts the 8-element library, with its own
    # valid sidecar hash, under the 4-element entry's name
    shutil.copyfile(lib8, lib4)
    shutil.copyfile(lib8 + ".sha256", lib4 + ".sha256")
    r = run(KERNEL.format(opts="") + '''
        x = torch.arange(4, dtype=torch.float32); out = torch.full((4,), -1.0)
        try:
            k(x, out)
            err = None
        except Exception as e:
            err = f"{type(e).__name__}: {e}"
        print(json.dumps({"err": err, "out": out.tolist()}))
    ''', cache)
    assert r["err"] and r["err"].startswith("CompileError"), r
    for part in ("kernel 'k'", "was compiled for another specialization", '"shape":[8]', '"shape":[4]',
                 "refusing to load it"):
        assert part in r["err"], (part, r["err"])
    assert r["out"] == [-1.0] * 4  # nothing ran


def test_a_legit_cache_library_still_loads_in_a_new_process(tmp_path):
    cache = tmp_path / "cache"
    body = KERNEL.format(opts="") + '''
        x = torch.arange(4, dtype=torch.float32); out = torch.zeros(4)
        k(x, out)
        cached = [info["result"].cached for _k, info, _l, _s in k._specializations()]
        print(json.dumps({"ok": bool(torch.equal(out, x * 3.0 + 1.0)), "cached": cached}))
    '''
    first, second = run(body, cache), run(body, cache)
    assert first["ok"] and second["ok"]
    assert first["cached"] == [False] and second["cached"] == [True]  # loaded from the disk cache, key checked


PLANTED = r'''
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
  FILE* f = fopen(MARKER, "w");
  if (f) { fputs("planted code ran", f); fclose(f); }
}
'''


def test_verified_kernel_never_loads_a_replaced_library(tmp_path):
    marker = tmp_path / "marker"
    src = tmp_path / "planted.c"
    src.write_text(PLANTED.replace("MARKER", '"' + str(marker) + '"'))
    r = run(KERNEL.format(opts='(verify_options={"enable_pass_verify": True})') + f'''
        import subprocess
        x = torch.arange(8, dtype=torch.float32); out = torch.full((8,), -1.0)
        k.compile(x, out)                      # built and loaded by the core; the verify stage has not loaded it
        lib = next(info["result"].library for _k, info, _l, _s in k._specializations())
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", lib + ".planted", {str(src)!r}], check=True)
        # replaced after the build (a new file: the one this process mapped keeps its bytes); its sidecar hash no
        # longer matches
        os.replace(lib + ".planted", lib)
        try:
            k(x, out)
            err = None
        except Exception as e:
            err = f"{{type(e).__name__}}: {{e}}"
        print(json.dumps({{"err": err, "out": out.tolist()}}))
    ''', tmp_path / "cache")
    assert not marker.exists(), "the replaced library was loaded: its constructor ran"
    assert r["err"] and "fails verification" in r["err"] and "not loading it" in r["err"], r
    assert r["out"] == [-1.0] * 8


def test_verified_kernel_still_verifies_and_runs(tmp_path):
    r = run(KERNEL.format(opts='(verify_options={"enable_pass_verify": True})') + '''
        x = torch.arange(8, dtype=torch.float32); out = torch.zeros(8)
        k(x, out)
        print(json.dumps({"ok": bool(torch.equal(out, x * 3.0 + 1.0)), "verified": k.last_verify is not None}))
    ''', tmp_path / "cache")
    assert r["ok"] and r["verified"], r
