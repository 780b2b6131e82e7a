"""A pytest plugin that saves the C++ every `pypto.codegen.generate` call of a test run produces, one file per IR.

A refactoring of the code generator must give byte-identical source for the same IR. Run the same tests before and
after the change with this plugin and compare the two folders:

    PYTHONPATH=benchmarks PYPTO_CODEGEN_SNAPSHOT=/tmp/before python -m pytest -q -n 2 -p codegen_snapshot tests
    ...change the code generator, reinstall...
    PYTHONPATH=benchmarks PYPTO_CODEGEN_SNAPSHOT=/tmp/after python -m pytest -q -n 2 -p codegen_snapshot tests
    python benchmarks/codegen_snapshot.py /tmp/before /tmp/after

Each file is named by a hash of what the generator was given (the IR's text and the keyword arguments) and holds
the source it returned. Kernels whose IR differs between runs (random programs, temporary names) appear on one
side only; the comparison counts them apart from the IRs both runs generated, which must match byte for byte.
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile

_ENV = "PYPTO_CODEGEN_SNAPSHOT"


def _record(folder: str, generate):
    from pypto.ir.nodes import format_kernel

    def recording_generate(kernel, *args, **kwargs):
        source = generate(kernel, *args, **kwargs)
        given = repr((format_kernel(kernel), args, sorted(kwargs.items())))
        name = hashlib.sha256(given.encode()).hexdigest()[:24]
        path = os.path.join(folder, name + ".cpp")
        if os.path.exists(path):
            with open(path) as f:
                if f.read() == source:
                    return source
            path = os.path.join(folder, name + f".{hashlib.sha256(source.encode()).hexdigest()[:12]}.conflict")
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
        return source

    return recording_generate


def pytest_configure(config):
    """Wrap the generator before test modules import it, and rebind every pypto module that already holds it."""
    folder = os.environ.get(_ENV)
    if not folder:
        raise RuntimeError(f"codegen_snapshot: set {_ENV} to the folder that receives the sources")
    os.makedirs(folder, exist_ok=True)
    import pypto.codegen.source as source_module

    original = source_module.generate
    wrapped = _record(folder, original)
    for name, module in list(sys.modules.items()):
        if (name == "pypto" or name.startswith("pypto.")) and getattr(module, "generate", None) is original:
            module.generate = wrapped


def compare(before: str, after: str) -> int:
    """Print how many IRs both runs generated and which of them differ; 0 when none differs.

    A `.conflict` file is a second source for an IR within one run: the generator read something besides the IR
    (a test that lowers the streaming threshold, say). It is named by its source's hash, so one present in both
    runs has the same bytes in both; one present in a single run is a difference."""
    a, b = set(os.listdir(before)), set(os.listdir(after))
    common = sorted(n for n in a & b if n.endswith(".cpp"))
    differ = []
    for n in common:
        with open(os.path.join(before, n)) as f, open(os.path.join(after, n)) as g:
            if f.read() != g.read():
                differ.append(n)
    both = [n for n in a & b if n.endswith(".conflict")]
    lone = sorted(n for n in a ^ b if n.endswith(".conflict") and n.split(".")[0] + ".cpp" in a & b)
    only = [sum(n.endswith(".cpp") for n in s) for s in (a - b, b - a)]
    print(f"IRs generated in both runs: {len(common)}; only before: {only[0]}; only after: {only[1]}")
    print(f"byte-identical: {len(common) - len(differ)}; different: {len(differ)}; second sources of one IR "
          f"(the generator read more than the IR): {len(both)} in both runs, {len(lone)} in one run only")
    for n in differ[:20] + lone[:20]:
        print("  ", n)
    return 1 if differ or lone else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python benchmarks/codegen_snapshot.py BEFORE_DIR AFTER_DIR")
    sys.exit(compare(sys.argv[1], sys.argv[2]))
