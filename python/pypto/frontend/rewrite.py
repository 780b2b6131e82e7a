"""Decoration-time processing of a kernel body: parse the source ONCE, rewrite it, compile it once.

What the rewrite does (errors are raised when the kernel is traced, naming the kernel and the user's line):
  * a `return <value>` anywhere in the body (reached or not, as the reference's parser checks them all first)
    makes the body raise KernelSyntaxError ("Return statements are not allowed") before it runs.
  * `break` / `continue` / `return` inside `for ... in pypto.loop(...)` (or pypto.loop_unroll) become a
    call that raises KernelTraceError: the body of a kernel loop is traced once, so Python control transfer
    out of it cannot mean what it says.
  * every `if` goes through a small runtime object (language/kernel_body.py; see _Rewriter.visit_If): a concrete
    condition picks the branch at trace time (plain Python semantics); a symbolic one (`if n > 16:`, `if pypto.cond(c):`)
    becomes a kernel branch — both bodies are traced into the then/else blocks of an IR `If`, and names the
    branches bind are merged afterwards (equal in both: kept; different: an error on use). `break` /
    `continue` / `return` inside a kernel branch raise.
  * `out = expr` where `out` is a parameter and `expr` does not read `out` gets a check in front of it:
    if `out` still holds the tensor parameter itself, the assignment would write nothing, so it raises
    ("writes nothing; use out[:] = ... or out.move(...)"). `x = pypto.reshape(x, ...)` (reads x) stays legal.
  * decorators, annotations and defaults are dropped (the tracer passes every argument explicitly).
  * the function is wrapped in a factory taking its free-variable names, so closure cells are read at trace
    time (a rebound closure variable is seen by the next trace); the factory runs with the real module
    globals (`fn.__globals__`), so globals are read at trace time too.
Line numbers are preserved (the parsed tree is shifted to the function's first line), so tracebacks and
errors point at the user's file and line. When the source is unavailable (REPL, exec) the function is used
as is, without these checks.
"""
from __future__ import annotations

import __future__ as _future
import ast
import inspect
import textwrap
import types
from typing import Callable

from ..errors import KernelDefinitionError
from ..language.control import KERNEL_BUILTINS
from ..language.kernel_body import PreparedKernel, TraceRuntime

_FACTORY = "__pypto_factory__"
_RT = "__pypto_rt__"
_LOOP_NAMES = ("loop", "loop_unroll")
_FUTURE_MASK = 0
for _n in _future.all_feature_names:
    _FUTURE_MASK |= getattr(_future, _n).compiler_flag


def _is_pypto_loop(it: ast.AST) -> bool:
    if not isinstance(it, ast.Call):
        return False
    f = it.func
    if isinstance(f, ast.Attribute):
        return f.attr in _LOOP_NAMES
    if isinstance(f, ast.Name):
        return f.id in _LOOP_NAMES
    return False


def _reads(node: ast.AST, name: str) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
            return True
    return False


def _rt_call(method: str, args: list, like: ast.AST) -> ast.stmt:
    call = ast.Call(func=ast.Attribute(value=ast.Name(id=_RT, ctx=ast.Load()), attr=method, ctx=ast.Load()),
                    args=args, keywords=[])
    stmt = ast.Expr(value=call)
    for n in ast.walk(stmt):
        ast.copy_location(n, like)
    return stmt


def _assigned_names(stmts) -> set:
    """Names a list of statements binds in the enclosing function scope (nested scopes excluded)."""
    out = set()
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            continue
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for al in n.names:
                out.add((al.asname or al.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif type(n).__name__ in ("MatchAs", "MatchStar") and getattr(n, "name", None):
            out.add(n.name)
        elif type(n).__name__ == "MatchMapping" and getattr(n, "rest", None):
            out.add(n.rest)
        stack.extend(ast.iter_child_nodes(n))
    return {x for x in out if not x.startswith("__pypto")}


class _Rewriter(ast.NodeTransformer):
    def __init__(self, params: set, excluded: frozenset = frozenset()):
        self.params = params
        self.excluded = excluded    # global / nonlocal names: not merged after a kernel branch
        self.pypto_loop_depth = 0   # > 0 inside a pypto.loop body
        self.plain_loop_depth = 0   # python loops nested inside the innermost pypto.loop
        self.branch_stack = []      # names of the Branch objects (language/kernel_body.py) of the enclosing `if`s
        self.loop_mark = 0          # len(branch_stack) when the innermost python/pypto loop began
        self.nbranch = 0
        self.changed = False
        self.value_return = None    # the line of the first `return <value>`

    def visit_If(self, node):
        """`if test: A else: B` ->

            __pypto_bK = __pypto_rt__.branch(test, line, locals(), names)
            if __pypto_bK.then_(): A          # concrete test: Python semantics; symbolic: A -> then-block
            __pypto_bK.mid(locals())
            if __pypto_bK.sym: <names> = their values from before the if
            if __pypto_bK.else_(): B          # symbolic: B -> else-block
            __pypto_bK.end()
            if __pypto_bK.sym: <names> = merged values (equal in both branches, else an error-on-use marker)
        """
        names = tuple(sorted(_assigned_names(node.body + node.orelse) - set(self.excluded)))
        self.nbranch += 1
        bn = f"__pypto_b{self.nbranch}"
        self.changed = True
        self.branch_stack.append(bn)
        body = self._stmts(node.body) or [ast.Pass()]
        orelse = self._stmts(node.orelse) or [ast.Pass()]
        self.branch_stack.pop()
        restores = "\n    ".join(f"{n} = {bn}.restore({n!r})" for n in names) or "pass"
        merges = "\n    ".join(f"{n} = __pypto_m[{n!r}]" for n in names)
        tmpl = (f"{bn} = {_RT}.branch(__pypto_test__, {node.lineno}, locals(), {names!r})\n"
                f"if {bn}.then_():\n    pass\n"
                f"{bn}.mid(locals())\n"
                f"if {bn}.sym:\n    {restores}\n"
                f"if {bn}.else_():\n    pass\n"
                f"{bn}.end()\n")
        if names:
            tmpl += f"if {bn}.sym:\n    __pypto_m = {bn}.merge(locals())\n    {merges}\n"
        stmts = ast.parse(tmpl).body
        for st in stmts:
            for n in ast.walk(st):
                if "lineno" in getattr(n, "_attributes", ()):
                    # the `if` header's span (not the whole statement's): tracebacks and errors of the
                    # condition point at the `if` line, not at the last line of its body
                    n.lineno, n.col_offset = node.lineno, node.col_offset
                    n.end_lineno, n.end_col_offset = node.test.end_lineno, node.test.end_col_offset
        stmts[0].value.args[0] = node.test
        stmts[1].body = body
        stmts[4].body = orelse
        return stmts

    # nested scopes keep their own semantics
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def _visit_loop(self, node, is_pypto: bool):
        saved = (self.pypto_loop_depth, self.plain_loop_depth, self.loop_mark)
        if is_pypto:
            self.pypto_loop_depth += 1
            self.plain_loop_depth = 0
        elif self.pypto_loop_depth:
            self.plain_loop_depth += 1
        self.loop_mark = len(self.branch_stack)
        node.body = self._stmts(node.body)
        self.pypto_loop_depth, self.plain_loop_depth, self.loop_mark = saved
        node.orelse = self._stmts(node.orelse)
        return node

    def visit_For(self, node):
        return self._visit_loop(node, _is_pypto_loop(node.iter))

    def visit_While(self, node):
        return self._visit_loop(node, False)

    def _stmts(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            if isinstance(r, list):
                out.extend(r)
            else:
                out.append(r)
        return out

    def generic_visit(self, node):
        for fname, old in ast.iter_fields(node):
            if isinstance(old, list) and old and isinstance(old[0], ast.stmt):
                setattr(node, fname, self._stmts(old))
            elif isinstance(old, list):
                for item in old:   # except handlers, match cases: their bodies are statement lists
                    if isinstance(item, (ast.excepthandler, getattr(ast, "match_case", ast.excepthandler))):
                        self.generic_visit(item)
        return node

    def _control(self, node, what):
        if self.pypto_loop_depth and (what == "return" or self.plain_loop_depth == 0):
            self.changed = True
            return _rt_call("control_error", [ast.Constant(what), ast.Constant(node.lineno)], node)
        brs = self.branch_stack if what == "return" else self.branch_stack[self.loop_mark:]
        if brs:
            self.changed = True
            tup = ast.Tuple(elts=[ast.Name(id=b, ctx=ast.Load()) for b in brs], ctx=ast.Load())
            return [_rt_call("jump_check", [tup, ast.Constant(what), ast.Constant(node.lineno)], node), node]
        return node

    def visit_Break(self, node):
        return self._control(node, "break")

    def visit_Continue(self, node):
        return self._control(node, "continue")

    def visit_Return(self, node):
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            # `return x`: a kernel returns nothing; refused before the body runs (see prepare), reached or not
            if self.value_return is None:
                self.value_return = node.lineno
            self.changed = True
        return self._control(node, "return")

    def _rebind_checks(self, targets, value, node):
        checks = []
        for t in targets:
            names = [t] if isinstance(t, ast.Name) else \
                [e for e in ast.walk(t) if isinstance(e, ast.Name) and isinstance(t, (ast.Tuple, ast.List))]
            for n in names:
                if n.id in self.params and isinstance(n.ctx, ast.Store) and not _reads(value, n.id):
                    checks.append(_rt_call("check_rebind", [ast.Name(id=n.id, ctx=ast.Load()),
                                                            ast.Constant(n.id), ast.Constant(node.lineno)], node))
        if checks:
            self.changed = True
        return checks

    def visit_Assign(self, node):
        return self._rebind_checks(node.targets, node.value, node) + [node]

    def visit_AnnAssign(self, node):
        if node.value is None:
            return node
        return self._rebind_checks([node.target], node.value, node) + [node]


def _strip_signature(fdef: ast.FunctionDef):
    fdef.decorator_list = []
    fdef.returns = None
    a = fdef.args
    for arg in a.posonlyargs + a.args + a.kwonlyargs:
        arg.annotation = None
    if a.vararg:
        a.vararg.annotation = None
    if a.kwarg:
        a.kwarg.annotation = None
    a.defaults = []
    a.kw_defaults = [None] * len(a.kwonlyargs)


def _global_names(fdef: ast.FunctionDef, freevars) -> frozenset:
    bound = set(freevars)
    loads = set()
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fdef:
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for al in n.names:
                bound.add((al.asname or al.name).split(".")[0])
    return frozenset(loads - bound)


def prepare(fn: Callable, kernel_name: str | None = None) -> PreparedKernel:
    """Parse and rewrite `fn` once. Never fails for lack of source (falls back to the plain function)."""
    if not isinstance(fn, types.FunctionType):
        raise KernelDefinitionError(f"pypto.frontend.jit expects a Python function, got {type(fn).__name__}")
    name = kernel_name or fn.__name__
    code = fn.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise KernelDefinitionError(f"kernel '{name}': generator / async functions cannot be kernels")
    filename = code.co_filename
    firstlineno = code.co_firstlineno
    freevars = tuple(code.co_freevars)
    runtime = TraceRuntime(name, filename)
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return PreparedKernel(name, fn, filename, firstlineno, None, freevars, frozenset(), False, runtime,
                              ["source unavailable: no rewriting"])
    fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fdef is None or fdef.name != fn.__name__:
        return PreparedKernel(name, fn, filename, firstlineno, None, freevars, frozenset(), False, runtime,
                              ["source is not a plain def: no rewriting"])
    ast.increment_lineno(tree, firstlineno - 1)
    a = fdef.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    gnames = _global_names(fdef, freevars)
    _strip_signature(fdef)
    declared = frozenset(x for n in ast.walk(fdef) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names)
    rw = _Rewriter(params, declared)
    fdef.body = rw._stmts(fdef.body)
    if rw.value_return is not None:
        fdef.body.insert(0, _rt_call("return_error", [ast.Constant(rw.value_return)], fdef.body[0]))
    if not fdef.body:
        fdef.body = [ast.copy_location(ast.Pass(), fdef)]

    factory_args = [ast.arg(arg=v) for v in freevars] + [ast.arg(arg=_RT)]
    # builtin min/max the body reads (not shadowed by a module global) mean pypto.min/max on symbolic scalars
    rebind = [ast.parse(f"{n} = {_RT}.builtins[{n!r}]").body[0] for n in sorted(KERNEL_BUILTINS)
              if n in gnames and n not in fn.__globals__]
    factory = ast.FunctionDef(
        name=_FACTORY,
        args=ast.arguments(posonlyargs=[], args=factory_args, vararg=None, kwonlyargs=[], kw_defaults=[],
                           kwarg=None, defaults=[]),
        body=rebind + [fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    if hasattr(ast.FunctionDef, "type_params") or "type_params" in getattr(ast.FunctionDef, "_fields", ()):
        factory.type_params = []
    for n in ast.walk(factory):
        if not hasattr(n, "lineno") and "lineno" in getattr(n, "_attributes", ()):
            ast.copy_location(n, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    mcode = compile(module, filename, "exec", flags=code.co_flags & _FUTURE_MASK, dont_inherit=True)
    fcode = next(c for c in mcode.co_consts if isinstance(c, types.CodeType) and c.co_name == _FACTORY)
    factory_fn = types.FunctionType(fcode, fn.__globals__, _FACTORY)
    return PreparedKernel(name, fn, filename, firstlineno, factory_fn, freevars, gnames, rw.changed, runtime)


__all__ = ["PreparedKernel", "prepare"]
