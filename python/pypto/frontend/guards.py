"""Which module globals and closure variables a kernel reads — found once, at decoration.

The native core checks each of them by identity on every call (a dict lookup or a cell read, no Python code);
rebinding one makes the next call re-key by value and specialize again. Plain Python helper functions called
from the kernel are inlined by the tracer, so the globals *they* read are guarded too (recursively).
A local name that shadows a global is not a read of the global and is not guarded.
"""
from __future__ import annotations

import ast
import builtins
import dis
import inspect
import textwrap
import types
import weakref
from dataclasses import dataclass


@dataclass(frozen=True)
class GuardSpec:
    owner: str          # qualified name of the function that reads it (for messages)
    name: str
    container: object   # globals dict, or a cell
    is_cell: bool

    def native(self):
        return (self.container, None) if self.is_cell else (self.container, self.name)

    def current(self):
        """The value now bound (or `_ABSENT`)."""
        if self.is_cell:
            try:
                return self.container.cell_contents
            except ValueError:
                return _ABSENT
        return self.container.get(self.name, _ABSENT)


class _Absent:
    def __repr__(self):
        return "<unbound>"


_ABSENT = _Absent()
_DEAD = object()  # what a SeenValue gives back once its object died


class SeenValue:
    """A guard value as one specialization saw it (for explain and export), without keeping it alive: held weakly
    when its type allows, else strongly (the native core then bounds how many such specializations a kernel keeps,
    see docs/security.md), so that rebinding a big global many times does not keep every old value."""

    __slots__ = ("_ref", "_value")

    def __init__(self, value):
        try:
            self._ref, self._value = weakref.ref(value), None
        except TypeError:
            self._ref, self._value = None, value

    def get(self):
        """The value, or `_DEAD` when it was weakly held and has died (no live value can be it)."""
        if self._ref is None:
            return self._value
        v = self._ref()
        return _DEAD if v is None else v

    def __repr__(self):
        v = self.get()
        return "<a value that no longer exists>" if v is _DEAD else repr(v)


def seen_values(guards: list[GuardSpec]) -> dict:
    """{(owner, name): SeenValue} for the values the guards are bound to now."""
    return {(g.owner, g.name): SeenValue(g.current()) for g in guards}


def function_ast(fn) -> ast.FunctionDef | None:
    """The FunctionDef of `fn`, parsed from its source (None when the source is unavailable)."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    try:
        tree = ast.parse(src)
    except SyntaxError:  # e.g. a lambda inside an expression: getsource returns a fragment
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__code__.co_name:
            return node
    return None


def _free_reads(fn, node: ast.AST) -> list[str]:
    """Names read in `node` that are neither parameters nor locals of `fn` (in first-read order)."""
    code = fn.__code__
    local = set(code.co_varnames) | set(code.co_cellvars)
    seen: dict[str, None] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local:
            seen.setdefault(n.id, None)
    return list(seen)


def _is_user_helper(obj) -> bool:
    """A plain Python function that the tracer would inline (not pypto's own API, not a builtin)."""
    if not isinstance(obj, types.FunctionType):
        return False
    mod = getattr(obj, "__module__", "") or ""
    return not (mod == "pypto" or mod.startswith("pypto."))


def collect_guards(fn, tree: ast.AST | None = None, _seen: set | None = None) -> list[GuardSpec]:
    """Guards for `fn` and, recursively, for the helper functions it references."""
    seen = _seen if _seen is not None else set()
    if fn in seen:
        return []
    seen.add(fn)
    if tree is None:
        tree = function_ast(fn)
    if tree is None:
        return _code_guards(fn, seen)  # no source (exec, a REPL): read the names from the bytecode instead
    body = ast.Module(body=list(tree.body), type_ignores=[])  # the body only: skip decorators and annotations
    code = fn.__code__
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    guards: list[GuardSpec] = []
    for name in _free_reads(fn, body):
        if name in cells:
            g = GuardSpec(fn.__qualname__, name, cells[name], True)
        elif name in fn.__globals__ or not hasattr(builtins, name):
            # a global (or a name not bound yet: its later binding is noticed)
            g = GuardSpec(fn.__qualname__, name, fn.__globals__, False)
        else:
            # a builtin (range, len, ...) is not guarded: shadowing a builtin with a module global after
            # decoration is not noticed (documented), and the hot path pays for no lookups of them
            continue
        guards.append(g)
        value = g.current()
        if _is_user_helper(value):
            guards.extend(collect_guards(value, None, seen))
    guards.extend(_module_attribute_guards(fn, body, guards, seen))
    return guards


def _module_attribute_guards(fn, body: ast.AST, guards: list[GuardSpec], seen: set) -> list[GuardSpec]:
    """`M.name` where M is a guarded name bound to a user module (`import cfg` ... `cfg.SCALE`,
    `helpers.scale(x)`): the attribute is a global of that module, so it is guarded in the module's dict (and a
    helper reached this way is inlined, so its own reads are guarded too). pypto's own modules are not guarded.
    If M itself is rebound to another module, M's guard re-specializes; the attribute guards stay on the module
    seen at decoration."""
    bases = {g.name: g.current() for g in guards if g.owner == fn.__qualname__}
    out: list[GuardSpec] = []
    done: set = set()
    for n in ast.walk(body):
        if not (isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)):
            continue
        mod = bases.get(n.value.id)
        if not isinstance(mod, types.ModuleType) or (mod.__name__ == "pypto" or mod.__name__.startswith("pypto.")):
            continue
        if (id(mod), n.attr) in done:
            continue
        done.add((id(mod), n.attr))
        g = GuardSpec(f"{fn.__qualname__} ({mod.__name__}.{n.attr})", n.attr, vars(mod), False)
        out.append(g)
        value = g.current()
        if _is_user_helper(value):
            out.extend(collect_guards(value, None, seen))
    return out


def _code_reads(code) -> tuple[list[str], list[tuple[str, str]]]:
    """Global names loaded by `code` and its nested code objects (comprehensions, lambdas, inner functions), and
    the `G.attr` pairs read right after loading a global G."""
    names: dict[str, None] = {}
    attrs: dict[tuple[str, str], None] = {}
    stack = [code]
    while stack:
        c = stack.pop()
        last_global = None
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                names.setdefault(ins.argval, None)
                last_global = ins.argval
                continue
            if last_global is not None and ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                attrs.setdefault((last_global, ins.argval), None)
            last_global = None
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return list(names), list(attrs)


def _code_guards(fn, seen: set) -> list[GuardSpec]:
    """Guards of a function without source, from its bytecode: the globals it loads (LOAD_GLOBAL in it and its
    nested code objects) and its closure cells, so that rebinding them re-specializes exactly as with source."""
    code = fn.__code__
    guards: list[GuardSpec] = []
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        guards.append(GuardSpec(fn.__qualname__, name, cell, True))
    names, attrs = _code_reads(code)
    for name in names:
        if name not in fn.__globals__ and hasattr(builtins, name):
            continue  # a builtin: not guarded (as with source)
        guards.append(GuardSpec(fn.__qualname__, name, fn.__globals__, False))
    for g in list(guards):
        if _is_user_helper(g.current()):
            guards.extend(collect_guards(g.current(), None, seen))
    for base, attr in attrs:
        mod = fn.__globals__.get(base)
        if isinstance(mod, types.ModuleType) and not (mod.__name__ == "pypto" or mod.__name__.startswith("pypto.")):
            g = GuardSpec(f"{fn.__qualname__} ({mod.__name__}.{attr})", attr, vars(mod), False)
            guards.append(g)
            if _is_user_helper(g.current()):
                guards.extend(collect_guards(g.current(), None, seen))
    return guards
