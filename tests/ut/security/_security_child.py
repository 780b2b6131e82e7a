"""Runs hostile cases in a child Python process with a private cache, so that a crash or hang fails one test."""
import json
import os
import subprocess
import sys
import textwrap

PRELUDE = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    import torch
    import pypto
    V = pypto.Tensor([pypto.STATIC], pypto.DT_FP32)
''')


def run(body: str, cache_dir, timeout: float = 240, env: dict | None = None) -> dict:
    """Run PRELUDE + `body` in a child; the body prints one JSON object as its last line. Returns it, with the
    child's stderr under 'stderr'. A crash, a hang or a non-zero exit is a test failure that names the case."""
    e = dict(os.environ)
    e["PYPTO_CACHE_DIR"] = str(cache_dir)
    e.pop("PYPTO_CACHE_MAX_SIZE", None)
    e.update(env or {})
    code = PRELUDE + textwrap.dedent(body)
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the child hung (> {timeout} s):\n{code}") from None
    assert r.returncode == 0, f"child exited {r.returncode}:\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["stderr"] = r.stderr
    return out
