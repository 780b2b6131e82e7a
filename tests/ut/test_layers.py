"""The package reads top to bottom: each layer of python/pypto imports only the layers before it, and no module
imports itself back through a circle (top-level or inside functions alike)."""
from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

import pytest

import pypto

ROOT = Path(pypto.__file__).resolve().parent

# Bottom first. `__main__` modules and the package `__init__` are entry points: they may import anything.
LAYERS = ["_version", "errors", "logger", "error", "_core", "native", "vocab", "distributed", "ir", "language", "codegen",
          "compiler", "verify", "frontend", "export", "torch_op", "capture", "pypto_impl", "runtime", "testing", "bench"]
NATIVE = {"_core", "_core_prof"}     # the nanobind extension: the bottom, like errors


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "pypto":
        return None
    if len(parts) == 1:             # the package itself imports every layer but bench: only bench may import it
        return LAYERS.index("bench")
    head = "_core" if parts[1] in NATIVE else parts[1]
    return LAYERS.index(head) if head in LAYERS else None


def is_entry_point(module: str) -> bool:
    return module == "pypto" or module.endswith(".__main__")


def imports_of(path: Path, module: str, is_package: bool, root: Path = ROOT):
    """(line, imported module) for every `import` / `from ... import` in the file, nested ones included.
    `from pkg import name` counts as importing `pkg.name` when that is a submodule."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("pypto"):
                    yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("pypto"):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                yield node.lineno, sub if _is_module(sub, root) else target


def _is_module(name: str, root: Path) -> bool:
    rel = Path(*name.split(".")[1:])
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file() or \
        name.split(".")[-1] in NATIVE


def modules(root: Path, top: str = "pypto"):
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = [top, *rel.parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        yield path, ".".join(parts), is_package


def violations(root: Path, top: str = "pypto") -> list[str]:
    """Every upward import and every import circle under `root`, each as 'file:line: ...'."""
    problems, graph = [], {}
    for path, module, is_package in modules(root, top):
        edges = graph.setdefault(module, [])
        for line, target in imports_of(path, module, is_package, root):
            target = target.replace("pypto", top, 1) if top != "pypto" else target
            edges.append((target, f"{path}:{line}"))
            if is_entry_point(module):
                continue
            src, dst = layer_of(module.replace(top, "pypto", 1)), layer_of(target.replace(top, "pypto", 1))
            if src is not None and dst is not None and dst > src:
                problems.append(f"{path}:{line}: {module} (layer {LAYERS[src]}) imports {target} "
                                f"(layer {LAYERS[dst]}, above it)")
    # circles among modules (a package's __init__ importing its own submodules is the package, not a circle)
    def deps(m):
        for t, where in graph.get(m, ()):
            while t not in graph and "." in t:
                t = t.rpartition(".")[0]
            if t in graph and t != m and not m.startswith(t + ".") and not is_entry_point(m):
                yield t, where
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t, where in deps(m):
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                problems.append(f"{where}: import circle: " + " -> ".join(cycle))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return problems


def test_no_upward_import_and_no_circle():
    found = violations(ROOT)
    assert not found, "\n".join(found)


def native_imports(root: Path, top: str = "pypto") -> list[str]:
    """Imports of the extension modules themselves: only `native` (which chooses `_core` or the profiling build) and
    the entry points may name them; every layer takes `core` from `native`, never from the package `__init__`."""
    found = []
    for path, module, is_package in modules(root, top):
        if is_entry_point(module) or module == f"{top}.native":
            continue
        for line, target in imports_of(path, module, is_package, root):
            if target.split(".")[-1] in NATIVE:
                found.append(f"{path}:{line}: {module} imports {target}; use `from {top}.native import core`")
    return found


def test_only_native_chooses_the_extension():
    found = native_imports(ROOT)
    assert not found, "\n".join(found)


def test_a_direct_extension_import_is_reported(tmp_path):
    root = _synthetic(tmp_path, {
        "__init__.py": "",
        "native.py": "from . import _core as core\n",
        "ir/__init__.py": "",
        "ir/nodes.py": "from .. import _core\n",
    })
    assert native_imports(root) == [f"{root / 'ir/nodes.py'}:1: pypto.ir.nodes imports pypto._core; "
                                    f"use `from pypto.native import core`"]


def test_every_layer_is_listed():
    """A new top-level module or package must be placed in LAYERS (or be an entry point)."""
    names = {p.stem if p.suffix == ".py" else p.name for p in ROOT.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.stem not in ("__init__", "__main__")}
    assert names <= set(LAYERS), sorted(names - set(LAYERS))


def _synthetic(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pypto"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def test_an_upward_import_is_reported_with_file_and_line(tmp_path):
    root = _synthetic(tmp_path, {
        "__init__.py": "",
        "ir/__init__.py": "",
        "ir/nodes.py": "import os\n\ndef f():\n    from ..language import ops\n",
        "language/__init__.py": "",
        "language/ops.py": "from ..ir import nodes\n",
    })
    found = violations(root)
    assert any(re.search(r"ir/nodes\.py:4: pypto\.ir\.nodes \(layer ir\) imports pypto\.language\.ops "
                         r"\(layer language, above it\)", f) for f in found), found


def test_a_circle_is_reported(tmp_path):
    root = _synthetic(tmp_path, {
        "__init__.py": "",
        "ir/__init__.py": "",
        "ir/a.py": "from . import b\n",
        "ir/b.py": "from .a import x\n",
    })
    found = violations(root)
    assert any("import circle: pypto.ir.a -> pypto.ir.b -> pypto.ir.a" in f or
               "import circle: pypto.ir.b -> pypto.ir.a -> pypto.ir.b" in f for f in found), found


def test_a_clean_tree_passes(tmp_path):
    root = _synthetic(tmp_path, {
        "__init__.py": "from . import frontend\n",
        "ir/__init__.py": "from .nodes import Value\n",
        "ir/nodes.py": "class Value: pass\n",
        "frontend/__init__.py": "from ..ir import nodes\n",
    })
    assert violations(root) == []


def test_version_matches_pyproject():
    pyproject = ROOT.parents[1] / "pyproject.toml"
    if not pyproject.is_file():   # an installed package: the checkout's pyproject is not beside it
        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    version = re.search(r'^version = "([^"]+)"', pyproject.read_text(), re.M).group(1)
    assert pypto.__version__ == version
