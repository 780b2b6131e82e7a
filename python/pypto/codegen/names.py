"""Names are data: how a user-chosen name (kernel, parameter, dim) may reach C++ source or a file name.

A kernel's `__name__`, its parameter names and its dim names are chosen by whoever wrote (or generated) the kernel,
and may hold any text: newlines, quotes, `*/`, path separators, non-ASCII, even lone surrogates. They reach
generated code in exactly three forms, each produced here and nowhere else:
- a C++ string literal (`c_string`): every byte outside printable ASCII, and `"`, `\\` and `?` (no trigraphs),
  is an octal escape, so the literal can neither end early nor splice lines;
- a comment (`comment_text`): printable ASCII only, no backslash (a trailing `\\` would splice the next line into
  the comment), everything else shown as `<U+XXXX>`;
- an identifier (`mangle`, defined by the tracer, which creates the identifiers): an injective spelling, so that
  distinct names never collide.
File names built from names use `file_component`: one safe path component (never `..`, never a separator).
"""
from __future__ import annotations

import hashlib
import re

from ..errors import KernelDefinitionError
from ..ir.tracer import _cident as mangle  # the tracer names parameters' C++ variables; see its docstring

_PRINTABLE = frozenset(chr(c) for c in range(32, 127))


def check_text(what: str, name: str) -> str:
    """`name` unchanged, or KernelDefinitionError when it cannot be encoded as UTF-8 (a lone surrogate): such a
    name could be neither emitted nor shown, and the native core would fail converting it."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise KernelDefinitionError(f"{what} {ascii(name)} is not valid UTF-8 (it holds a lone surrogate); "
                                    f"rename it") from None
    return name


def c_string(text: str) -> str:
    """`text` as a C++ string literal holding its UTF-8 bytes exactly (octal escapes are at most 3 digits, so an
    escape never swallows the character after it)."""
    out = []
    for b in text.encode("utf-8", "surrogatepass"):
        ch = chr(b)
        if ch in _PRINTABLE and ch not in '"\\?':
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def comment_text(text: str) -> str:
    """`text` made safe inside a `//` comment: printable ASCII except backslash kept, the rest as <U+XXXX>."""
    return "".join(ch if ch in _PRINTABLE and ch != "\\" else f"<U+{ord(ch):04X}>" for ch in text)


_SAFE_FILE = re.compile(r"[^A-Za-z0-9_.-]")


def file_component(name: str, limit: int = 64) -> str:
    """One safe file-name component derived from `name`: [A-Za-z0-9_.-] only, never empty, `.` or `..`, never
    starting with a dot or dash, at most `limit` characters. Two names that sanitize alike get different suffixes
    (a short hash of the original), so a sanitized name never silently overwrites another kernel's file."""
    safe = _SAFE_FILE.sub("_", name).lstrip(".-")[:limit]
    if safe != name or not safe:
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe or 'kernel'}_{digest}"
    return safe


__all__ = ["check_text", "c_string", "comment_text", "mangle", "file_component"]
