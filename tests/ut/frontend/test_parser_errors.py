"""The reference parser's error contract for kernel bodies (issue 23): rebinding an input tensor, `return` statements,
`pypto.loop` with a symbolic step (a golden case of the reference that its parser accepts), and signatures that
pack arguments (`*args` / `**kwargs`: refused at the call, as the reference's parser reads the signature there)."""
import pytest
import torch

import pypto
from pypto.error import ParserError
from pypto.errors import KernelRuntimeError, KernelSignatureError, KernelTraceError, OptionError

F32 = pypto.DT_FP32
S2 = pypto.Tensor([pypto.STATIC, pypto.STATIC], F32)
D2 = pypto.Tensor([pypto.DYNAMIC, pypto.STATIC], F32)


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


# ---- rebinding an input tensor -------------------------------------------------------------------------------------

def test_rebinding_an_output_parameter_is_a_parser_error():
    @pypto.frontend.jit
    def k_rebind_out(a: S2, b: S2, c: S2):
        c = a + b  # noqa: F841

    a, b, c = _rand(4, 8), _rand(4, 8, seed=1), torch.zeros(4, 8)
    with pytest.raises(ParserError, match="Input tensor 'c' cannot be reassigned") as e:
        k_rebind_out(a, b, c)
    msg = str(e.value)
    assert isinstance(e.value, KernelTraceError) and "k_rebind_out" in msg
    assert "use c[:] = ... or c.move(...)" in msg and "test_parser_errors.py:" in msg
    assert torch.equal(c, torch.zeros(4, 8))       # nothing was written


def test_rebinding_the_first_input_is_a_parser_error():
    @pypto.frontend.jit
    def k_rebind_in(a: S2, b: S2, c: S2):
        a = b + c  # noqa: F841

    a, b, c = _rand(4, 8), _rand(4, 8, seed=1), torch.zeros(4, 8)
    a0 = a.clone()
    with pytest.raises(ParserError, match="Input tensor 'a' cannot be reassigned"):
        k_rebind_in(a, b, c)
    assert torch.equal(a, a0) and torch.equal(c, torch.zeros(4, 8))


def test_rebinding_that_reads_the_parameter_still_computes():
    # ours, as the reference's default front end: `x = f(x)` rebinds the name to a new value (no error)
    @pypto.frontend.jit
    def k_reads(a: S2, out: S2):
        a = a * 2.0
        out[:] = a + 1.0

    a, out = _rand(4, 8), torch.zeros(4, 8)
    k_reads(a, out)
    torch.testing.assert_close(out, a * 2.0 + 1.0)


# ---- return statements ---------------------------------------------------------------------------------------------

def test_return_inside_an_if_on_a_tensor_is_refused_before_the_body_runs():
    # the reference's parser checks every `return` first: the `if` on a tensor is never evaluated
    @pypto.frontend.jit
    def k_ret_if(x: pypto.Tensor([4, 4], F32), flag: pypto.Tensor([], pypto.DT_INT32),
                 out: pypto.Tensor([4, 4], F32)):
        out[:] = x
        if flag > 0:
            return out
        return out

    x, flag, out = _rand(4, 4), torch.tensor(1, dtype=torch.int32), torch.zeros(4, 4)
    with pytest.raises(ParserError, match="Return statements are not allowed") as e:
        k_ret_if(x, flag, out)
    msg = str(e.value)
    assert "k_ret_if" in msg and "returns nothing" in msg and "out[:] = ..." in msg
    assert torch.equal(out, torch.zeros(4, 4))


def test_a_return_value_that_is_never_reached_is_refused_too():
    @pypto.frontend.jit
    def k_ret_dead(x: S2, out: S2, flag=False):
        out[:] = x + 1.0
        if flag:
            return x

    x, out = _rand(2, 8), torch.zeros(2, 8)
    with pytest.raises(ParserError, match="Return statements are not allowed") as e:
        k_ret_dead(x, out)
    assert "k_ret_dead" in str(e.value) and torch.equal(out, torch.zeros(2, 8))


def test_a_bare_return_is_allowed():
    @pypto.frontend.jit
    def k_bare(x: S2, out: S2):
        out[:] = x + 1.0
        return

    x, out = _rand(2, 8), torch.zeros(2, 8)
    k_bare(x, out)
    torch.testing.assert_close(out, x + 1.0)


# ---- pypto.loop with a symbolic step ------------------------------------------------------------------------------

@pypto.frontend.jit
def _k_sym_step(x: D2, out: D2):
    m = x.shape[0]
    pypto.set_vec_tile_shapes(1, 16)
    for b in pypto.loop(0, m, 8):
        if pypto.cond(b < m // 2):
            step, stop = 1, b + 8
        else:
            step, stop = 3, b + 7
        for s in pypto.loop(b, stop, step):
            out[s:s + 1, :] = x[s:s + 1, :] + 1.0


def _sym_step_ref(x):
    m = x.shape[0]
    out = torch.zeros_like(x)
    for b in range(0, m, 8):
        step, stop = (1, b + 8) if b < m // 2 else (3, b + 7)
        for s in range(b, stop, step):
            out[s] = x[s] + 1.0
    return out


@pytest.mark.parametrize("m", [16, 32])
def test_loop_with_a_step_set_in_a_kernel_branch(m):
    x, out = _rand(m, 16, seed=m), torch.zeros(m, 16)
    _k_sym_step(x, out)
    torch.testing.assert_close(out, _sym_step_ref(x))


@pypto.frontend.jit
def _k_neg_step(x: D2, out: D2, flag: pypto.Tensor([1], pypto.DT_INT32)):
    n = x.shape[0]
    pypto.set_vec_tile_shapes(1, 16)
    step = flag[0]                           # a runtime scalar: -2, 1, or 0
    for i in pypto.loop(n - 1, -1, step):
        out[i:i + 1, :] = x[i:i + 1, :] + 2.0
        if pypto.cond(pypto.is_loop_end(i)):
            out[i:i + 1, :] = x[i:i + 1, :] - 5.0


def _neg_ref(x, step):
    n = x.shape[0]
    out = torch.zeros_like(x)
    idx = list(range(n - 1, -1, step))
    for i in idx:
        out[i] = x[i] + 2.0
    if idx:
        out[idx[-1]] = x[idx[-1]] - 5.0
    return out


@pytest.mark.parametrize("step", [-2, -3, 1])
def test_symbolic_step_of_either_sign_and_is_loop_end(step):
    x, out = _rand(7, 16, seed=3), torch.zeros(7, 16)
    _k_neg_step(x, out, torch.tensor([step], dtype=torch.int32))
    torch.testing.assert_close(out, _neg_ref(x, step))


def test_symbolic_step_zero_fails_the_kernel():
    x, out = _rand(7, 16, seed=3), torch.full((7, 16), 9.0)
    with pytest.raises(KernelRuntimeError, match="step must not be 0"):
        _k_neg_step(x, out, torch.tensor([0], dtype=torch.int32))
    assert torch.equal(out, torch.full((7, 16), 9.0))


def test_symbolic_step_with_unroll_list_is_an_error():
    @pypto.frontend.jit
    def k_unroll_sym(x: D2, out: D2, flag: pypto.Tensor([1], pypto.DT_INT32)):
        for i in pypto.loop(0, x.shape[0], flag[0], unroll_list=[2]):
            out[i:i + 1, :] = x[i:i + 1, :]

    x, out = _rand(4, 16), torch.zeros(4, 16)
    with pytest.raises(KernelTraceError, match=r"k_unroll_sym.*unroll_list needs a static step, got the symbolic"):
        k_unroll_sym(x, out, torch.tensor([1], dtype=torch.int32))
    assert torch.equal(out, torch.zeros(4, 16))


# ---- reshape with valid_shape= and inplace=True -------------------------------------------------------------------

def _k_tile_reshape(inplace):
    @pypto.frontend.jit
    def k_tile_reshape(q: pypto.Tensor([pypto.DYNAMIC, 4, 8], F32), out: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
        pypto.set_vec_tile_shapes(4, 8)
        for i in pypto.loop(q.shape[0]):
            v = pypto.view(q, [1, 4, 8], [i, 0, 0], valid_shape=[1, 4, 8])
            r = pypto.reshape(v, [4, 8], valid_shape=[4, 8], inplace=inplace)
            pypto.assemble(r * 2.0, [i * 4, 0], out)
    return k_tile_reshape


def test_reshape_with_valid_shape_and_inplace_is_refused():
    q, out = _rand(2, 4, 8), torch.zeros(8, 8)
    with pytest.raises(KernelTraceError, match=r"k_tile_reshape.*Reshape\(Inplace=true\) is not supported for "
                                               r"tensors derived from dynamic view") as e:
        _k_tile_reshape(True)(q, out)
    assert "set inplace=False or do not pass valid_shape" in str(e.value)
    assert torch.equal(out, torch.zeros(8, 8))


def test_reshape_with_valid_shape_copies_without_inplace():
    q, out = _rand(2, 4, 8), torch.zeros(8, 8)
    _k_tile_reshape(False)(q, out)
    torch.testing.assert_close(out, q.reshape(8, 8) * 2.0)


# ---- signatures that pack arguments: decorating succeeds, every call raises ---------------------------------------

def _varargs_kernel():
    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def k_varargs(x: S2, out: S2, *rest):
        out[:] = x * 2.0
    return k_varargs


def _kwargs_kernel():
    @pypto.frontend.jit
    def k_kwargs(x: S2, out: S2, **extra):
        out[:] = x * 2.0
    return k_kwargs


@pytest.mark.parametrize("make, phrase, param", [
    (_varargs_kernel, "Variable-length arguments (*args) are not supported", "'*rest'"),
    (_kwargs_kernel, "Keyword argument packing (**kwargs) is not supported", "'**extra'"),
])
def test_a_packing_signature_decorates_and_every_call_raises(make, phrase, param):
    k = make()                                   # no error at decoration
    assert k.__name__ in ("k_varargs", "k_kwargs") and callable(k)
    x, out = _rand(4, 8), torch.full((4, 8), -7.0)
    for _ in range(2):                           # every call, not only the first
        with pytest.raises(ParserError) as e:
            k(x, out)
        msg = str(e.value)
        assert isinstance(e.value, KernelSignatureError) and isinstance(e.value, NotImplementedError)
        assert phrase in msg and param in msg and f"kernel '{k.__name__}'" in msg
        assert msg.startswith("ErrCode: F00005, ") and e.value.err_code == 0xF00005   # the reference's code
        assert "test_parser_errors.py:" in msg   # where the kernel is defined
        assert torch.equal(out, torch.full((4, 8), -7.0))   # nothing ran
    for method in ("compile", "explain"):
        with pytest.raises(KernelSignatureError, match="packing|Variable-length"):
            getattr(k, method)(x, out)
    assert torch.equal(out, torch.full((4, 8), -7.0))


def test_args_are_reported_before_kwargs_and_options_still_checked_at_decoration():
    @pypto.frontend.jit
    def k_both(x: S2, out: S2, *rest, **extra):
        out[:] = x

    with pytest.raises(KernelSignatureError, match=r"'\*rest': Variable-length arguments"):
        k_both(_rand(4, 8), torch.zeros(4, 8))
    with pytest.raises(OptionError, match="run_mod"):
        @pypto.frontend.jit(runtime_options={"run_mod": pypto.RunMode.SIM})
        def k_bad_option(x: S2, out: S2, *rest):
            out[:] = x


def test_keyword_only_parameters_still_compile():
    # ours accepts keyword-only constants (the reference's parser refuses them): not a packing signature
    @pypto.frontend.jit
    def k_kwonly(x: S2, out: S2, *, alpha=2.0):
        out[:] = x * alpha

    x, out = _rand(4, 8), torch.zeros(4, 8)
    k_kwonly(x, out, alpha=3.0)
    torch.testing.assert_close(out, x * 3.0)


# ---- break / continue under new_ir=False ---------------------------------------------------------------------------

def _loop_with(stmt, new_ir):
    """A kernel whose Python loop skips (continue) or stops at (break) row 2, decorated with `new_ir`."""
    if stmt == "break":
        def k_jump(x: S2, out: S2):
            for i in range(4):
                if i == 2:
                    break
                out[i, :] = x[i, :]
    else:
        def k_jump(x: S2, out: S2):
            for i in range(4):
                if i == 2:
                    continue
                out[i, :] = x[i, :]
    return pypto.frontend.jit(k_jump) if new_ir is None else pypto.frontend.jit(k_jump, new_ir=new_ir)


@pytest.mark.parametrize("stmt", ["break", "continue"])
def test_break_and_continue_are_refused_at_every_call_under_the_old_parser(stmt):
    k = _loop_with(stmt, False)                    # decorating succeeds, as in the reference
    x, out = _rand(4, 8), torch.full((4, 8), 7.0)
    for _ in range(2):
        with pytest.raises(ParserError, match=f"{stmt.capitalize()} is not supported by the PTO parser") as e:
            k(x, out)
        msg = str(e.value)
        assert "k_jump" in msg and "new_ir=False" in msg and "test_parser_errors.py" in msg
    assert torch.equal(out, torch.full((4, 8), 7.0))   # nothing ran
    assert "refused at every call" in repr(k)


@pytest.mark.parametrize("new_ir", [None, True])
@pytest.mark.parametrize("stmt", ["break", "continue"])
def test_break_and_continue_run_under_the_default_ir(stmt, new_ir):
    k = _loop_with(stmt, new_ir)
    x, out = _rand(4, 8), torch.full((4, 8), 7.0)
    k(x, out)
    want = torch.full((4, 8), 7.0)
    rows = [0, 1] if stmt == "break" else [0, 1, 3]
    want[rows] = x[rows]
    assert torch.equal(out, want)
