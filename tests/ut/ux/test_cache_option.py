"""`host_options["cache_max_size"]`: the kernel cache's size cap as an option (PYPTO_CACHE_MAX_SIZE is its default):
after a new entry, least-recently-used entries go; a bad value is an error that names the option."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import pypto
from pypto.vocab.options import parse_size, validate_options

CHILD = textwrap.dedent('''
    import json, os, sys
    import torch
    import pypto
    from pypto.compiler import cache
    V = pypto.Tensor[[4], pypto.DT_FP32]
    cap, env_cap = json.loads(sys.argv[1]), json.loads(sys.argv[2])

    def build(i, host_options=None):
        @pypto.frontend.jit(host_options=host_options or {})
        def k(x: V, out: V, c=0.0):
            out[:] = x - c
        out = torch.zeros(4)
        k(torch.ones(4), out, c=float(i))
        assert torch.equal(out, torch.ones(4) - float(i))

    by_kernel = lambda: {e["key"]: e for e in cache.entries()}
    keys = []
    for i in range(3):                          # three entries, no cap
        before = set(by_kernel())
        build(i)
        keys += list(set(by_kernel()) - before)
    sizes = {k: e["size"] for k, e in by_kernel().items()}
    old, mid, new = keys
    cache.remove_entry(by_kernel()[new])        # the third is written again below, as the new entry
    os.utime(cache.subdir(old[:2]) / f"{old}.so", (1_000_000, 1_000_000))       # least recently used
    os.utime(cache.subdir(mid[:2]) / f"{mid}.so", (2_000_000, 2_000_000))
    limit = sizes[mid] + sizes[new] if cap == "fit-two" else cap
    if env_cap is not None:                     # read when the new entry is written (not for the setup above)
        os.environ["PYPTO_CACHE_MAX_SIZE"] = env_cap
    build(2, {"cache_max_size": limit})
    left = set(by_kernel())
    print(json.dumps({"old": old in left, "mid": mid in left, "new": new in left}))
''')


def _child(tmp_path, cap, env_cap=None):
    env = dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "cache"), PYPTO_TORCH_FAST_READER="0")
    env.pop("PYPTO_CACHE_MAX_SIZE", None)
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.run([sys.executable, str(script), json.dumps(cap), json.dumps(env_cap)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_option_evicts_least_recently_used_entries(tmp_path):
    # room for two entries: the oldest goes, the more recently used one and the new one stay
    assert _child(tmp_path, "fit-two") == {"old": False, "mid": True, "new": True}


def test_the_option_overrides_the_environment_and_keeps_the_new_entry(tmp_path):
    # the environment allows everything; the option's 1 byte leaves only the entry just written
    assert _child(tmp_path, "1", env_cap="1G") == {"old": False, "mid": False, "new": True}


def test_zero_leaves_the_cap_to_the_environment(tmp_path):
    assert _child(tmp_path, 0) == {"old": True, "mid": True, "new": True}  # neither option nor variable: unbounded
    assert _child(tmp_path / "b", 0, env_cap="1") == {"old": False, "mid": False, "new": True}


def test_sizes_are_normalised_to_bytes():
    assert parse_size("500M") == 500 << 20 and parse_size("2g") == 2 << 30 and parse_size("1048576") == 1048576

    for given, stored in (("500M", 500 << 20), (4096, 4096), (0, 0)):
        resolved = validate_options("k", ["x"], host_options={"cache_max_size": given})
        assert resolved.host["cache_max_size"] == stored
    assert validate_options("k", ["x"]).host["cache_max_size"] == 0  # default: the environment decides


@pytest.mark.parametrize("value, parts", [
    ("lots", ["not a size: 'lots'", "out of range"]),
    (-1, ["value -1 is out of range", ">= 0 bytes"]),
    (1.5, ["expected int (bytes) or a size str such as '500M'", "got 1.5 (float)"]),
    ("-2M", ["not a size: '-2M'"]),
])
def test_bad_values_name_the_kernel_and_the_option(value, parts):
    def my_kernel(x: pypto.Tensor[[4], pypto.DT_FP32]):
        pass

    with pytest.raises(pypto.OptionError) as ei:
        pypto.frontend.jit(my_kernel, host_options={"cache_max_size": value})
    msg = str(ei.value)
    assert "my_kernel" in msg and "cache_max_size" in msg and "host_options" in msg, msg
    for p in parts:
        assert p in msg, msg
