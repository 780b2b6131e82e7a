"""The docs (README.md, docs/*.md) name only what exists: files and folders of the checkout, command-line options the
named command accepts, and `pypto.*` modules and attributes; the README is self-contained and starts with the two
```bash blocks CI runs."""
from __future__ import annotations

import importlib
import re
import subprocess
import sysconfig
import sys
from functools import lru_cache
from pathlib import Path

import pytest

import pypto

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "python" / "pypto"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# folders a relative path in the docs may be written from: the root, the package, the C++ sources, and the
# installed package's parent (`pypto/include/pypto/*.h`, `pypto/lib/cmake/...` are shipped in the wheel)
# the installed package's folders count too; an editable install keeps its built files (include/, lib/cmake/) in
# site-packages while pypto.__file__ points into the checkout
BASES = [ROOT, PACKAGE, ROOT / "src", ROOT / "include", ROOT / "python", Path(pypto.__file__).resolve().parents[1],
         *{Path(p) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}]
# names the docs use for files that a command writes (not files of the checkout)
WRITTEN = {"manifest.json", "r.json", "bundle/", "plots/", "pypto_dump", "dump", "lib/", "app"}
EXTENSIONS = ("py", "md", "cpp", "h", "hpp", "txt", "toml", "sh", "cmake", "pyi", "in", "cfg", "json")
TOP = ("python/", "src/", "include/", "tests/", "docs/", "examples/", "benchmarks/", ".ci/")


def _code_spans(text: str) -> list[str]:
    """Inline `code` and the lines of fenced blocks."""
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, re.S)
    rest = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.S)
    return re.findall(r"`([^`\n]+)`", rest) + [line for b in blocks for line in b.splitlines()]


def _path_tokens(span: str) -> list[str]:
    out = []
    for tok in re.findall(r"[\w.$/*{}-]+", span):
        tok = tok.rstrip(".,:;")
        if "$" in tok or "{" in tok or tok.startswith(("http", "/")) or tok in WRITTEN:
            continue  # variables, URLs, absolute paths (a command's output, e.g. /tmp/bench.json), outputs
        if re.fullmatch(r"[A-Z_]+\.\w+", tok):
            continue  # a placeholder such as FILE.py
        looks_like_file = "/" in tok and re.search(rf"\.({'|'.join(EXTENSIONS)})$", tok)
        if tok.startswith(TOP) or looks_like_file or re.fullmatch(rf"[\w-]+\.({'|'.join(EXTENSIONS)})", tok) \
                and tok[0].isupper():
            out.append(tok)
    return out


def _exists(tok: str) -> bool:
    for base in BASES:
        if any(ch in tok for ch in "*?["):
            if list(base.glob(tok)):
                return True
        elif (base / tok).exists():
            return True
    return False


def test_every_file_the_docs_name_exists():
    missing, seen = [], 0
    for doc in DOCS:
        for span in _code_spans(doc.read_text()):
            for tok in _path_tokens(span):
                seen += 1
                if not _exists(tok):
                    missing.append(f"{doc.relative_to(ROOT)}: {tok}")
    assert seen >= 50, seen
    assert not missing, "\n".join(sorted(set(missing)))


@lru_cache(maxsize=None)
def _help(module: str) -> str:
    r = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"python -m {module} --help failed: {r.stderr[-2000:]}"
    return r.stdout


def _commands(text: str):
    """(module, options) for every `python -m pypto...` command the docs show (a `\\` continues a line)."""
    for span in _code_spans(text.replace("\\\n", " ")):
        for m in re.finditer(r"python -m (pypto(?:\.\w+)*)([^`|;&#]*)", span):
            yield m.group(1), re.findall(r"(?<![\w-])(--[a-z][\w-]*)", m.group(2))


def test_every_command_line_option_the_docs_name_exists():
    unknown, seen = [], 0
    for doc in DOCS:
        for module, options in _commands(doc.read_text()):
            seen += 1
            text = _help(module)
            unknown += [f"{doc.relative_to(ROOT)}: python -m {module} {o}" for o in options
                        if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text)]
    assert seen >= 5, seen
    assert not unknown, "\n".join(sorted(set(unknown)))


def _resolves(dotted: str) -> bool:
    if dotted.startswith("pypto.Tensor."):  # methods of kernel tensors: the IR value a Tensor parameter is traced as
        dotted = "pypto.ir.nodes.Value." + dotted[len("pypto.Tensor."):]
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            if not hasattr(obj, p):
                return False
            obj = getattr(obj, p)
        return True
    return False


def test_every_pypto_name_the_docs_use_exists():
    missing, seen = [], 0
    for doc in DOCS:
        # a table row whose status says "not yet" (docs/compat.md: the reference's names) documents an absence
        text = "\n".join(ln for ln in doc.read_text().splitlines() if not re.search(r"\|\s*not yet", ln))
        for span in _code_spans(text):
            for name in re.findall(r"(?<![\w./])pypto(?:\.[A-Za-z_]\w*)+(?![{\w])", span):
                seen += 1
                if not _resolves(name):
                    missing.append(f"{doc.relative_to(ROOT)}: {name}")
    assert seen >= 50, seen
    assert not missing, "\n".join(sorted(set(missing)))


def test_the_checker_catches_what_it_should():
    """The rules above, on made-up text: a missing file, an unknown option, an unknown module are all found."""
    text = ("See `docs/nothing_here.md` and `python/pypto/frontend/jit.py`.\n"
            "```\npython -m pypto.export a:b --out x --no-such-flag\n```\n`pypto.frontend.no_such_thing`, `pypto.exp`")
    spans = _code_spans(text)
    files = [t for s in spans for t in _path_tokens(s)]
    assert files == ["docs/nothing_here.md", "python/pypto/frontend/jit.py"], files
    assert [_exists(f) for f in files] == [False, True]
    cmds = list(_commands(text))
    assert cmds == [("pypto.export", ["--out", "--no-such-flag"])], cmds
    assert "--no-such-flag" not in _help("pypto.export") and "--out" in _help("pypto.export")
    assert not _resolves("pypto.frontend.no_such_thing") and _resolves("pypto.exp")


def test_the_readme_is_self_contained_and_starts_with_the_ci_blocks():
    text = (ROOT / "README.md").read_text()
    assert "../" not in text, "the README must not point outside the checkout"
    fences = re.findall(r"```(\w*)\n.*?```", text, re.S)
    assert fences[:2] == ["bash", "bash"], fences[:2]
    assert "docs/api.md" in text and (ROOT / "docs" / "api.md").is_file()
    assert ".venv" in re.findall(r"```bash\n(.*?)```", text, re.S)[0]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_each_doc_opens_with_a_title(doc):
    assert doc.read_text().startswith("# "), doc
