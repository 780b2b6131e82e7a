"""`python -m pypto.export MODULE:KERNEL [...] --example [KERNEL=]EXPR [...] --out DIR`: write an AOT bundle.

Each --example is a Python expression evaluated with `torch`, `np`/`numpy`, `pypto` and `T(*shape, dtype=...)`
(a zero tensor; dtype a pypto dtype or name, default float32) in scope; it gives a tuple of positional
arguments or an (args, kwargs) pair. With several kernels prefix it with the kernel name: `k1=(T(4, 4),) * 3`.
A kernel without examples exports nothing unless `--examples-from MODULE:ATTR` names a dict
{kernel name: [examples]} (or a list for a single kernel).

    python -m pypto.export mykernels:scaled_add --out bundle \\
        --example "((T(64, 96),) * 3, {'alpha': 2.0})" --example "(T(8, 8),) * 3"
"""
from __future__ import annotations

import argparse
import importlib
import sys


def _resolve(spec: str):
    mod, sep, attr = spec.partition(":")
    if not sep or not mod or not attr:
        raise SystemExit(f"pypto.export: expected MODULE:NAME, got {spec!r}")
    sys.path.insert(0, ".")
    try:
        obj = importlib.import_module(mod)
    finally:
        sys.path.pop(0)
    for part in attr.split("."):
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

    ap = argparse.ArgumentParser(prog="python -m pypto.export", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
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
