"""Control flow: kernel-level if/elif/else and pypto.cond, trace-time Python control flow, helpers, and the
errors for break/continue/return (with and without source) — every result compared with torch. Loops:
test_loops.py."""
import re

import pytest
import torch

import pypto
from pypto.codegen import generate
from pypto.testing import simple_request
from pypto.errors import KernelTraceError
from pypto.frontend.rewrite import prepare
from pypto.vocab.params import build_params
from pypto.ir import trace

from callpath._util import fails_untouched as _fails_untouched

F32, D = pypto.DT_FP32, pypto.DYNAMIC
D4 = pypto.Tensor([pypto.DYNAMIC, 4], F32)
I32 = pypto.Scalar[pypto.DT_INT32]


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _ir_and_source(fn, *args, options=None, **kw):
    params = build_params(fn.__name__, fn)
    req, _, _ = simple_request(fn.__name__, params, args, kw, options)
    k = trace(prepare(fn, fn.__name__), req)
    return str(k), generate(k)


def _untouched(t, fill):
    return bool((t == fill).all())


# ---------------------------------------------------------------------------------------------------------------
# kernel-level if / elif / else and pypto.cond
# ---------------------------------------------------------------------------------------------------------------

@pypto.frontend.jit
def k_branches(x: D4, out: D4, lim: I32):
    n = x.shape[0]
    if n > 4:                                     # symbolic (a DYNAMIC dim): a kernel branch
        out[:] = x * 2.0
    else:
        out[:] = x * -1.0
    for i in pypto.loop(n):
        r = x[i:i + 1, :]
        if i < lim:
            out[i:i + 1, :] = out[i:i + 1, :] + pypto.exp(r)
        elif pypto.cond(i == lim):
            out[i:i + 1, :] = r + 1000.0
        elif i % 2 == 0:
            if i > lim + 2:                       # nested branch
                out[i:i + 1, :] = r * 0.0
        else:
            out[i:i + 1, :] = r - 7.0


def _branches_ref(x, lim):
    n = x.shape[0]
    out = x * 2.0 if n > 4 else x * -1.0
    for i in range(n):
        if i < lim:
            out[i] = out[i] + torch.exp(x[i])
        elif i == lim:
            out[i] = x[i] + 1000.0
        elif i % 2 == 0:
            if i > lim + 2:
                out[i] = 0.0
        else:
            out[i] = x[i] - 7.0
    return out


@pytest.mark.parametrize("n,lim", [(3, 1), (4, 0), (9, 2), (12, 5), (6, 99), (7, -1)])
def test_symbolic_if_elif_else(n, lim):
    x = _rand(n, 4, seed=n + 31 * lim)
    out = torch.zeros(n, 4)
    k_branches(x, out, lim)
    torch.testing.assert_close(out, _branches_ref(x, lim), rtol=1e-6, atol=1e-6)
    assert k_branches.cache_info()["specializations"] == 1     # one kernel: branches decided at run time


def test_symbolic_if_becomes_a_cpp_branch():
    def k(x: D4, out: D4):
        if x.shape[0] > 4:
            out[:] = x * 2.0
        else:
            out[:] = x

    ir, src = _ir_and_source(k, torch.zeros(5, 4), torch.zeros(5, 4))
    assert "if (x.shape[0] > 4):" in ir and "else:" in ir
    assert "if ((p_x_d0 > 4)) {" in src and "} else {" in src


def test_concrete_if_and_python_loops_are_resolved_at_trace_time():
    def k(x: pypto.Tensor([pypto.STATIC, 4], F32), out: pypto.Tensor([pypto.STATIC, 4], F32), mode: str = "a"):
        if mode == "a":
            out[:] = x + 1.0
        elif x.shape[0] > 3:                      # static dim: a Python bool
            out[:] = x * 3.0
        else:
            out[:] = x
        for j in range(2):                        # unrolled at trace time
            if j == 1:
                out[:] = out[:] * 2.0
        w = 0
        while w < 2:
            w += 1
            out[:] = out[:] - 0.5

    ir, src = _ir_and_source(k, torch.zeros(5, 4), torch.zeros(5, 4), mode="b")
    assert " if " not in ir and "if (" not in src.split("kernel_body")[1].replace("if (!", "")
    kj = pypto.frontend.jit(k)
    for mode, rows in (("a", 5), ("b", 5), ("b", 2)):
        x = _rand(rows, 4, seed=rows)
        out = torch.zeros(rows, 4)
        kj(x, out, mode)
        base = x + 1.0 if mode == "a" else (x * 3.0 if rows > 3 else x)
        assert torch.equal(out, base * 2.0 - 0.5 - 0.5)


def test_names_after_a_kernel_branch():
    """A name bound alike in both branches keeps its value; a tensor bound in both is merged (the tests of
    "a tensor bound in both branches" below); a tensor and a number, or a name bound in one branch only, cannot be
    used after."""
    @pypto.frontend.jit
    def k_same(x: D4, out: D4):
        scale = 3.0
        if x.shape[0] > 2:
            scale = 3.0                 # same value in both branches: usable after the if
            out[:] = x
        else:
            out[:] = x * 0.0
        out[:] = out * scale

    for n in (1, 5):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        k_same(x, out)
        assert torch.equal(out, (x if n > 2 else x * 0.0) * 3.0)

    def k_diff(x: D4, out: D4):
        if x.shape[0] > 2:
            y = x * 2.0
        else:
            y = 2.0
        out[:] = y

    with pytest.raises(KernelTraceError, match=r"k_diff.*`y` gets values in the two branches of the kernel-level "
                                               r"`if` at .*test_control_flow.py:\d+ that cannot be merged"):
        _ir_and_source(k_diff, torch.zeros(3, 4), torch.zeros(3, 4))

    def k_one(x: D4, out: D4):
        if x.shape[0] > 2:
            z = x + 1.0
        out[:] = z  # noqa: F821

    with pytest.raises(KernelTraceError, match=r"k_one.*`z` is assigned in only one branch"):
        _ir_and_source(k_one, torch.zeros(3, 4), torch.zeros(3, 4))


def test_tensor_from_a_branch_used_later_is_an_error():
    def k_leak(x: D4, out: D4):
        keep = [None]
        if x.shape[0] > 2:
            keep[0] = x * 2.0           # mutating a list hides the rebinding from the merge
        out[:] = keep[0]

    with pytest.raises(KernelTraceError, match=r"k_leak.*computed inside a kernel branch .* used outside it"):
        _ir_and_source(k_leak, torch.zeros(3, 4), torch.zeros(3, 4))


def test_cond_validates_its_argument():
    def k_bad(x: D4, out: D4):
        if pypto.cond(x):
            out[:] = x

    with pytest.raises(KernelTraceError, match=r"k_bad.*cond: expects a symbolic or concrete scalar condition, "
                                               r"got Value"):
        _ir_and_source(k_bad, torch.zeros(3, 4), torch.zeros(3, 4))


def test_break_inside_a_kernel_branch_is_an_error():
    def k_brk(x: D4, out: D4):
        for j in range(3):
            if x.shape[0] > j:
                break
        out[:] = x

    with pytest.raises(KernelTraceError, match=r"k_brk.*`break` inside a kernel-level branch .*test_control_flow"
                                               r"\.py:\d+\) is not supported"):
        _ir_and_source(k_brk, torch.zeros(3, 4), torch.zeros(3, 4))


# ---------------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------------

def _inner(v, s):
    return pypto.exp(v) * s


def _outer(v):
    return _inner(v, 2.0) + _inner(v, -1.0)


def test_helpers_and_nested_helpers_are_inlined():
    @pypto.frontend.jit
    def k(x: D4, out: D4):
        for i in pypto.loop(x.shape[0]):
            out[i:i + 1, :] = _outer(x[i:i + 1, :])

    x = _rand(5, 4)
    out = torch.zeros(5, 4)
    k(x, out)
    torch.testing.assert_close(out, torch.exp(x) * 2.0 + torch.exp(x) * -1.0, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# break / continue / return inside pypto.loop
# ---------------------------------------------------------------------------------------------------------------

_SOURCE_LESS = '''
import pypto
T = pypto.Tensor([pypto.DYNAMIC, 4], pypto.DT_FP32)

def k_break(x: T, out: T):
    for i in pypto.loop(x.shape[0]):
        out[i:i + 1, :] = x[i:i + 1, :]
        break

def k_continue(x: T, out: T):
    for i in pypto.loop(x.shape[0]):
        for j in range(2):
            if j == 0:
                continue          # legal: a Python loop
        out[i:i + 1, :] = x[i:i + 1, :]
        if x.shape[1] == 4:       # a static dim: a Python bool
            continue
        out[i:i + 1, :] = x[i:i + 1, :] * 2.0

def k_return(x: T, out: T):
    for i in pypto.loop(x.shape[0]):
        out[i:i + 1, :] = x[i:i + 1, :]
        return

def k_fine(x: T, out: T):
    for i in pypto.loop(x.shape[0]):
        for j in range(3):
            if j == 1:
                continue
            if j == 2:
                break
        out[i:i + 1, :] = x[i:i + 1, :] * 2.0
    for i in pypto.loop(x.shape[0]):      # bodies ending in if/else, try/except, a nested loop
        if x.shape[1] == 4:
            out[i:i + 1, :] = out[i:i + 1, :] + 1.0
        else:
            out[i:i + 1, :] = out[i:i + 1, :]
    for i in pypto.loop(x.shape[0]):
        try:
            out[i:i + 1, :] = out[i:i + 1, :] - 1.0
        except ZeroDivisionError:
            pass
    for i in pypto.loop(x.shape[0]):
        for jj in range(1):
            out[i:i + 1, :] = out[i:i + 1, :] * 1.0
'''


def _exec_kernels():
    g = {}
    exec(compile(_SOURCE_LESS, "<exec-kernels>", "exec"), g)
    return g


@pytest.mark.parametrize("name,what,line", [("k_break", "break", 8), ("k_continue", "continue", 17),
                                            ("k_return", "return", 23)])
@pytest.mark.parametrize("source", [True, False])
def test_control_transfer_out_of_a_pypto_loop(name, what, line, source):
    if source:   # rewritten from the source (defined in a temporary module file)
        import importlib.util
        import sys
        import tempfile

        d = tempfile.mkdtemp()
        path = f"{d}/cf_{name}.py"
        with open(path, "w") as f:
            f.write(_SOURCE_LESS)
        spec = importlib.util.spec_from_file_location(f"cf_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        fn, where = getattr(mod, name), f"cf_{name}.py:{line}"
    else:        # exec'd: no source; found from the trace (break/return) and the bytecode (continue)
        fn, where = _exec_kernels()[name], "<exec-kernels>:"
    k = pypto.frontend.jit(fn)
    x = _rand(3, 4)
    out = torch.full((3, 4), -3.0)
    with pytest.raises(KernelTraceError) as ei:
        k(x, out)
    msg = str(ei.value)
    assert f"kernel '{name}'" in msg and where in msg and "not supported" in msg
    assert f"`{what}`" in msg or (not source and what in ("break", "return") and "`break` / `return`" in msg)
    if not source and what == "continue":
        assert f"<exec-kernels>:{line}" in msg
    assert _untouched(out, -3.0)


def test_python_loop_control_inside_a_pypto_loop_is_fine_without_source():
    k = pypto.frontend.jit(_exec_kernels()["k_fine"])
    x = _rand(4, 4)
    out = torch.zeros(4, 4)
    k(x, out)
    torch.testing.assert_close(out, (x * 2.0 + 1.0) - 1.0, rtol=0, atol=0)


def test_return_inside_a_pypto_loop_of_a_helper():
    def helper(x, out):
        for i in pypto.loop(x.shape[0]):
            out[i:i + 1, :] = x[i:i + 1, :]
            return

    @pypto.frontend.jit
    def k(x: D4, out: D4):
        helper(x, out)

    out = torch.full((2, 4), 9.0)
    with pytest.raises(KernelTraceError, match=r"kernel 'k': `break` / `return` inside a pypto.loop body is not "
                                               r"supported \(the loop at .*test_control_flow.py:\d+ was left"):
        k(_rand(2, 4), out)
    assert _untouched(out, 9.0)


def test_dynamic_tensor_as_a_tile_is_an_error():
    @pypto.frontend.jit
    def k_tile(x: D4, out: D4):
        out[:] = pypto.view(x, [x.shape[0], 4], [0, 0])

    out = torch.full((3, 4), 2.0)
    with pytest.raises(KernelTraceError) as ei:
        k_tile(_rand(3, 4), out)
    msg = str(ei.value)
    assert "kernel 'k_tile'" in msg and "view: the tile shape must be static ints, got [x.shape[0], 4]" in msg
    assert "valid_shape=" in msg and re.search(r"test_control_flow.py:\d+", msg)
    assert _untouched(out, 2.0)


def test_exec_kernels_really_have_no_source():
    # the source-less cases above are not rewritten: their errors come from the trace / bytecode checks
    for name in ("k_break", "k_continue", "k_return"):
        pk = prepare(_exec_kernels()[name])
        assert pk.factory is None and pk.notes == ["source unavailable: no rewriting"]


def test_reference_loop_keywords():
    @pypto.frontend.jit
    def k(x: D4, out: D4):
        for b_idx in pypto.loop(0, x.shape[0], 1, name="LOOP_L0_bIdx", idx_name="b_idx", submit_before_loop=True):
            out[b_idx:b_idx + 1, :] = x[b_idx:b_idx + 1, :] + 2.0
        for i, f in pypto.loop_unroll(0, x.shape[0], 1, name="LOOP_U", idx_name="u_idx", unroll_list=[2]):
            out[i:i + f, :] = out[i:i + f, :] * 3.0

    x = _rand(5, 4)
    out = torch.zeros(5, 4)
    k(x, out)
    assert torch.equal(out, (x + 2.0) * 3.0)
    ir, _ = _ir_and_source(k.__wrapped__, x, out)
    assert "for b_idx in loop(0, x.shape[0], 1):" in ir and "x2 u_idx_x2:" in ir


def test_branches_inside_parallel_loops_with_bounds_checks():
    @pypto.frontend.jit(runtime_options={"sim_threads": 4}, debug_options={"runtime_debug_mode": 4})
    def k(x: D4, out: D4, lim: I32):
        for i in pypto.loop(0, x.shape[0], 1, unroll_list=[2], parallel=True):
            if i < lim:
                out[i:i + 1, :] = pypto.exp(x[i:i + 1, :])
            else:
                out[i:i + 1, :] = x[i:i + 1, :] * -1.0

    for n, lim in ((1, 0), (7, 3), (16, 9)):
        x = _rand(n, 4, seed=n)
        out = torch.zeros(n, 4)
        k(x, out, lim)
        ref = torch.where(torch.arange(n)[:, None] < lim, torch.exp(x), -x)
        torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# scalars assigned differently in the two branches of a kernel-level `if` become `cond ? a : b`
# ---------------------------------------------------------------------------------------------------------------

def test_branch_scalar_values_merge_into_a_select():
    FS = pypto.Scalar[pypto.DT_FP32]

    @pypto.frontend.jit
    def k_sel(x: D4, out: D4, s: FS):
        if s > 0.0:
            f = s * 2.0
        elif s < -10.0:
            f = 0.25
        else:
            f = -s
        n = x.shape[0]
        if n > 3:
            m = n - 3          # int in one branch ...
        else:
            m = 1.5            # ... float in the other: the merged value is a float
        out[:] = x * f + m

    for n in (2, 5):
        x = _rand(n, 4, seed=n)
        for s in (1.5, -2.0, -12.0):
            out = torch.zeros(n, 4)
            k_sel(x, out, s)
            f = s * 2.0 if s > 0 else (0.25 if s < -10.0 else -s)
            m = float(n - 3) if n > 3 else 1.5
            torch.testing.assert_close(out, x * f + m)
    assert k_sel.cache_info()["specializations"] == 1  # one kernel serves every n and s

    ir, src = _ir_and_source(k_sel.__wrapped__, torch.zeros(5, 4), torch.zeros(5, 4), 1.0)
    assert " if " in ir and "?" in src


def test_branch_int_value_sizes_a_loop():
    @pypto.frontend.jit
    def k_steps(x: D4, out: D4):
        n = x.shape[0]
        if n > 4:
            steps = 4
        else:
            steps = n
        for i in pypto.loop(steps):       # rows [0, steps) doubled, the rest copied
            pypto.assemble(pypto.view(x, [1, 4], [i, 0]) * 2.0, [i, 0], out)
        for i in pypto.loop(steps, n):
            pypto.assemble(pypto.view(x, [1, 4], [i, 0]), [i, 0], out)

    for n in (3, 7):
        x = _rand(n, 4, seed=10 + n)
        out = torch.zeros(n, 4)
        k_steps(x, out)
        ref = x.clone()
        ref[:min(n, 4)] *= 2.0
        torch.testing.assert_close(out, ref)


# ---- a tensor bound in both branches of a kernel-level `if` ------------------------------------------------------


@pypto.frontend.jit
def k_branch_tensors(a: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
    if a.shape[0] > 4:
        t = a * 2.0
    else:
        t = a + 1.0
    out[:] = t - 3.0


@pytest.mark.parametrize("n", [3, 4, 6])
def test_tensor_bound_in_both_branches_is_usable_after_the_if(n):
    a, out = torch.randn(n, 16), torch.zeros(n, 16)
    k_branch_tensors(a, out)
    assert torch.equal(out, (a * 2 if n > 4 else a + 1) - 3)


def test_both_branches_inside_a_loop_on_element_reads():
    @pypto.frontend.jit
    def k_loop_branch(flags: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([4, 8], F32),
                      out: pypto.Tensor([4, 8], F32)):
        for r in pypto.loop(4):
            row = x[r:r + 1, :]
            if flags[r] != 0:
                y = pypto.exp(row)
            else:
                y = pypto.neg(row)
            out[r:r + 1, :] = y

    flags = torch.tensor([1, 0, 0, 1], dtype=torch.int32)
    x, out = torch.randn(4, 8), torch.zeros(4, 8)
    k_loop_branch(flags, x, out)
    ref = torch.where(flags[:, None] != 0, torch.exp(x), -x)
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)   # exp: within an ulp of torch


@pypto.frontend.jit
def k_branch_local(a: pypto.Tensor([D, 16], F32), out16: pypto.Tensor([D, 16], pypto.DT_FP16),
                   out32: pypto.Tensor([D, 16], F32)):
    """The reference's flash-attention idiom: each branch binds `o` to a tensor of its own dtype and uses it
    there only."""
    if a.shape[0] > 4:
        o = pypto.cast(a * 2.0, pypto.DT_FP16)
        out16[:] = o
    else:
        o = a + 1.0
        o = o[:, 0:8]                                          # and another shape
        out32[:, 0:8] = o


@pytest.mark.parametrize("n", [3, 6])
def test_branches_may_bind_a_name_to_different_dtypes_and_shapes_used_inside_only(n):
    a = torch.randn(n, 16, generator=torch.Generator().manual_seed(n))
    out16, out32 = torch.full((n, 16), -1.0).half(), torch.full((n, 16), -1.0)
    k_branch_local(a, out16, out32)
    if n > 4:
        assert torch.equal(out16, (a * 2.0).half()) and torch.equal(out32, torch.full((n, 16), -1.0))
    else:
        ref = torch.full((n, 16), -1.0)
        ref[:, 0:8] = a[:, 0:8] + 1.0
        assert torch.equal(out32, ref) and torch.equal(out16, torch.full((n, 16), -1.0).half())


def test_branches_must_agree_on_dtype_and_shape():
    """A name bound to tensors of different dtypes or shapes in the two branches cannot be used after the `if`:
    the use is the error, naming both."""
    @pypto.frontend.jit
    def k_dtypes(a: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
        if a.shape[0] > 4:
            t = a * 2.0
        else:
            t = pypto.cast(a, pypto.DT_FP16)
        out[:] = t

    @pypto.frontend.jit
    def k_shapes(a: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
        if a.shape[0] > 4:
            t = a[:, 0:8]
        else:
            t = a
        out[:] = t

    out = torch.full((3, 16), 1.0)
    _fails_untouched(KernelTraceError, lambda: k_dtypes(torch.ones(3, 16), out), out, "kernel 'k_dtypes'",
                     "`t` is a float32 tensor in one branch", "float16 tensor in the other")
    _fails_untouched(KernelTraceError, lambda: k_shapes(torch.ones(3, 16), out), out, "kernel 'k_shapes'",
                     "`t` has shape", "must give it the same shape")
