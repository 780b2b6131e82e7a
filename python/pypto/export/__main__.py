"""`python -m pypto.export MODULE:KERNEL [...] --example [KERNEL=]EXPR [...] --out DIR`: write an AOT bundle.

MODULE is a dotted module importable from the current directory (`examples.quickstart`) or a file
(`examples/quickstart.py`).

Each --example is a Python expression evaluated with `torch`, `np`/`numpy`, `pypto` and `T(*shape, dtype=...)`
(a zero tensor; dtype a pypto dtype or name, default float32) in scope; it gives a tuple of positional
arguments or an (args, kwargs) pair. With several kernels prefix it with the kernel name: `k1=(T(4, 4),) * 3`.
A kernel without examples exports nothing unless `--examples-from MODULE:ATTR` names a dict
{kernel name: [examples]} (or a list for a single kernel).

    python -m pypto.export examples.quickstart:scaled_add --out bundle \\
        --example "((T(64, 96),) * 3, {'alpha': 2.0})" --example "(T(8, 8),) * 3"
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path


def _resolve(spec: str):
    """MODULE:NAME (a dotted module importable from the current directory or sys.path) or FILE.py:NAME."""
    mod, sep, attr = spec.rpartition(":")
    if not sep or not mod or not attr:
        raise SystemExit(f"pypto.export: expected MODULE:NAME or FILE.py:NAME, got {spec!r}")
    if mod.endswith(".py"):
        path = Path(mod)
        if not path.is_file():
            raise SystemExit(f"pypto.export: {spec!r}: no file {str(path)!r} (relative to {os.getcwd()})")
        name = f"pypto_export_{path.stem}"
        loader = importlib.util.spec_from_file_location(name, path)
        obj = importlib.util.module_from_spec(loader)
        sys.modules[name] = obj
        loader.loader.exec_module(obj)
    else:
        sys.path.insert(0, os.getcwd())
        try:
            obj = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name is None or not mod.startswith(e.name):
                raise  # the module was found; something it imports is missing: the traceback says what
            hint = f"; for a file write {mod.replace('.', '/')}.py:{attr}" if Path(mod.replace(".", "/") + ".py") \
                .is_file() else ""
            raise SystemExit(f"pypto.export: {spec!r}: cannot import module {mod!r} from {os.getcwd()} or "
                             f"sys.path (no module named {e.name!r}); give a dotted path from the current "
                             f"directory (e.g. examples.quickstart:scaled_add) or a file "
                             f"(examples/quickstart.py:scaled_add){hint}") from None
        finally:
            sys.path.remove(os.getcwd())
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in vars(obj) if not n.startswith("_"))[:20]
            raise SystemExit(f"pypto.export: {spec!r}: {mod} has no attribute {part!r}; it has: {', '.join(names)}")
        obj = getattr(obj, part)
    return obj


def _namespace() -> dict:
    import numpy as np

    import pypto

    ns = {"np": np, "numpy": np, "pypto": pypto}
    try:
        import torch

        ns["torch"] = torch
    except ImportError:
        torch = None

    def T(*shape, dtype="float32"):
        from pypto.vocab.dtypes import DataType

        if isinstance(dtype, DataType):
            dtype = dtype.short
        if torch is not None:
            return torch.zeros(shape, dtype=getattr(torch, dtype))
        return np.zeros(shape, dtype=dtype)

    ns["T"] = T
    return ns


def main(argv=None) -> int:
    from . import ExportError, export

    first, _, rest = __doc__.partition("\n")
    ap = argparse.ArgumentParser(prog="python -m pypto.export", description=first,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=rest.strip("\n"))
    ap.add_argument("kernels", nargs="+", metavar="MODULE:KERNEL")
    ap.add_argument("--out", required=True, help="bundle directory (created)")
    ap.add_argument("--example", action="append", default=[], metavar="[KERNEL=]EXPR")
    ap.add_argument("--examples-from", metavar="MODULE:ATTR")
    a = ap.parse_args(argv)
    kernels = [_resolve(k) for k in a.kernels]
    names = [k.__name__ for k in kernels]
    examples: dict = {n: [] for n in names}
    if a.examples_from:
        src = _resolve(a.examples_from)
        if isinstance(src, dict):
            for n, exs in src.items():
                if n not in examples:
                    raise SystemExit(f"pypto.export: --examples-from names unknown kernel '{n}'; kernels: {names}")
                examples[n].extend(exs)
        elif len(names) == 1:
            examples[names[0]].extend(src)
        else:
            raise SystemExit("pypto.export: with several kernels, --examples-from must name a dict")
    ns = _namespace()
    for e in a.example:
        target, expr = None, e
        head, sep, rest = e.partition("=")
        if sep and head.strip().isidentifier() and head.strip() in examples and not rest.startswith("="):
            target, expr = head.strip(), rest
        if target is None:
            if len(names) != 1:
                raise SystemExit(f"pypto.export: with several kernels write --example KERNEL=EXPR ({names})")
            target = names[0]
        examples[target].append(eval(expr, dict(ns)))  # noqa: S307 - a build tool evaluating its own arguments
    try:
        path = export(kernels, a.out, {n: (exs or None) for n, exs in examples.items()})
    except ExportError as err:
        print(f"pypto.export: {err}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
