"""The catalogue of a kernel author's mistakes: each message names the kernel, the line and what to do instead.

Three tables, one per moment an error is found:
  * TRACE: the kernel body misuses the language (first call of a specialization). The message must read
    `kernel '<name>': ... (at <file>:<line>)` with the line marked `# MISTAKE <id>` in _mistakes.py, and carry the
    hint. No output may be written.
  * CALL: the arguments do not fit the signature (the native core, every call). The message names the kernel and
    the parameter, what was expected and what was given; the line is the caller's own (the traceback's last frame).
  * DEFINE: the decorated function or its options are invalid (at decoration): kernel (or option) named, and the fix.
"""
from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import pypto
from pypto.errors import KernelDefinitionError, KernelTraceError, OptionError

from . import _mistakes as M

SOURCE = Path(M.__file__)
MARKED = {m.group(1): i + 1 for i, line in enumerate(SOURCE.read_text().splitlines())
          if (m := re.search(r"  # MISTAKE (\w+)", line))}

# id -> the parts the message must hold beyond the kernel name and the line (the hint: what to do instead)
TRACE = {
    "torch_exp": ["torch.exp", "use pypto.exp("],
    "torch_sum": ["torch.sum", "use pypto.sum("],
    "torch_cat": ["torch.cat", "use pypto.concat("],
    "torch_relu": ["torch.nn.functional.relu", "use pypto.relu("],
    "torch_matmul": ["torch.matmul", "use pypto.matmul("],
    "torch_maximum": ["torch.maximum", "use pypto.maximum("],
    "torch_where": ["torch.where", "use pypto.where("],
    "torch_global_left": ["torch tensor from outside the kernel", "pass it as a tensor parameter"],
    "torch_global_right": ["torch Tensor of shape [8, 8]", "pass it as a tensor parameter"],
    "numpy_exp": ["np.exp", "use pypto.exp("],
    "numpy_sum": ["np.sum", "use pypto.sum("],
    "numpy_maximum": ["np.maximum", "use pypto.maximum("],
    "numpy_concatenate": ["np.concatenate", "use pypto.concat("],
    "numpy_asarray": ["numpy cannot convert it", "use the pypto ops"],
    "numpy_global": ["numpy ndarray of shape [8, 8]", "pass it as a tensor parameter"],
    "math_exp": ["math module cannot read it", "pypto.exp(x)"],
    "if_on_tensor": ["only known when the kernel runs", "pypto.where(mask, a, b)"],
    "while_on_tensor": ["only known when the kernel runs", "pypto.where(mask, a, b)"],
    "iterate_tensor": ["cannot be iterated", "pypto.loop(x.shape[0])"],
    "len_dynamic": ["len() of a tensor whose first dim is symbolic", "use x.shape[0]"],
    "range_of_tensor": ["cannot be used as a Python int", "pypto.loop(n)"],
    "range_of_dynamic": ["x.shape[0]", "concrete int", "use pypto.loop(...)"],
    "while_on_symbolic": ["only known when the kernel runs", "pypto.cond"],
    "float_of_tensor": ["float()", "use the pypto ops"],
    "rebind_output": ["writes nothing", "use out[:] = ... or out.move(...)"],
    "return_value": ["returns nothing", "out[:] = ...", "pypto.assemble"],
    "break_in_loop": ["`break` inside a pypto.loop body", "compute a mask/valid shape instead"],
    "continue_in_loop": ["`continue` inside a pypto.loop body", "compute a mask/valid shape instead"],
    "return_in_loop": ["`return` inside a pypto.loop body", "compute a mask/valid shape instead"],
    "value_after_loop": ["values do not survive a kernel loop", "write it into a tensor"],
    "one_branch_name": ["`y` is assigned in only one branch", "assign it before the `if`"],
    "broadcast_static": ["[4, 8] is parameter 'a'", "[3, 8] is parameter 'b'", "call with shapes"],
    "write_shape": ["shape mismatch", "[8, 8]", "[4, 8]"],
    "matmul_inner": ["inner dims differ", "[8, 4]"],
    "sum_bad_dim": ["dim 5 is out of range", "rank 2"],
    "reshape_count": ["cannot reshape", "[3, 7]", "element count differs"],
    "transpose_dim": ["dim 2 is out of range", "rank 2"],
    "view_offsets": ["one entry per dim", "offsets [0, 0, 0]"],
    "cast_bad_dtype": ["pypto.DT_FP32", "'float32x'"],
    "tile_zero": ["set_vec_tile_shapes", "must be > 0", "got 0"],
    "tile_rank": ["set_vec_tile_shapes", "1 to 4", "got 5"],
    "assemble_outside": ["assemble", "offset 4 + size 8 exceeds"],
    "invert_float": ["needs a bool mask", "use pypto.logical_not(x)"],
    "concat_shapes": ["concat", "[8, 4]", "incompatible with [8, 8]"],
    "index_out_of_range": ["shape mismatch", "[0, 8]"],
    "op_outside_language": ["exp", "must be a pypto tensor", "'x'"],
    "loop_float_bound": ["loop", "8.5"],
}
CALL_LINE = next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                 if line.endswith("kernel(*args, **kwargs)  # the call"))
ARGS = {"broadcast_static": lambda: [torch.ones(4, 8), torch.ones(3, 8), torch.full((4, 8), -7.0)]}


def _args(kernel) -> list:
    """One tensor per parameter, shaped by the annotation (8 for STATIC / DYNAMIC dims), filled with a sentinel."""
    out = []
    for p in kernel.params:
        shape = [d if isinstance(d, int) else 8 for d in p.annotation.shape]
        out.append(torch.full(shape, -7.0))
    return out


def test_the_catalogue_is_large_and_every_entry_marks_its_line():
    assert len(TRACE) + len(CALL) + len(DEFINE) >= 40
    assert set(TRACE) == set(MARKED), set(TRACE) ^ set(MARKED)


@pytest.mark.parametrize("name", sorted(TRACE))
def test_trace_mistake(name):
    kernel = getattr(M, name)
    args = ARGS[name]() if name in ARGS else _args(kernel)
    before = [a.clone() for a in args]
    with pytest.raises(KernelTraceError) as ei:
        kernel(*args)
    msg = str(ei.value)
    assert msg.startswith(f"kernel '{name}': "), msg
    assert f"{SOURCE}:{MARKED[name]}" in msg, f"expected line {MARKED[name]} of {SOURCE.name} in: {msg}"
    for part in TRACE[name]:
        assert part in msg, f"expected {part!r} in: {msg}"
    for a, b in zip(args, before):
        assert torch.equal(a, b), "an argument was written by a call that raised"


def test_a_numpy_scalar_operand_still_computes():
    """`np.float32(2) * x` reaches numpy's ufunc hook but is the operator: it must compute, as with a float."""
    @pypto.frontend.jit
    def np_scalar(x: M.T8, out: M.T8):
        out[:] = np.float32(2) * x + np.float64(1)

    x, out = torch.randn(8, 8), torch.zeros(8, 8)
    np_scalar(x, out)
    torch.testing.assert_close(out, x * 2 + 1)


# -- call time ------------------------------------------------------------------------------------------------
def _t(*shape, dtype=torch.float32):
    return torch.full(shape, 3, dtype=dtype)


CALL = {  # id -> (kernel, args, kwargs, exception, parts beyond the kernel name)
    "dtype": (M.fixed_add, (_t(8, dtype=torch.float64), _t(8), _t(8)), {}, TypeError,
              ["parameter 'a'", "float32", "float64"]),
    "fixed_dim": (M.fixed_add, (_t(8), _t(7), _t(8)), {}, ValueError, ["parameter 'b'", "8", "7"]),
    "rank": (M.fixed_add, (_t(2, 4), _t(8), _t(8)), {}, ValueError, ["parameter 'a'", "dimension"]),
    "non_contiguous": (M.fixed_add, (_t(16)[::2], _t(8), _t(8)), {}, ValueError, ["parameter 'a'", "contiguous"]),
    "meta_tensor": (M.fixed_add, (torch.empty(8, device="meta"), _t(8), _t(8)), {}, (TypeError, ValueError),
                    ["parameter 'a'", "meta"]),
    "list_for_tensor": (M.fixed_add, ([1.0] * 8, _t(8), _t(8)), {}, TypeError, ["parameter 'a'", "expected a tensor"]),
    "missing_argument": (M.fixed_add, (_t(8), _t(8)), {}, TypeError, ["out"]),
    "too_many_arguments": (M.fixed_add, (_t(8), _t(8), _t(8), _t(8)), {}, TypeError, ["argument"]),
    "unknown_keyword": (M.with_constant, (_t(8), _t(8)), {"beta": 2.0}, TypeError, ["beta"]),
    "named_dims_disagree": (M.named_dims, (_t(8), _t(6)), {}, ValueError, ["'N'", "8", "6"]),
    # objects are keyed by value (dataclass fields, or what pickle rebuilds them from); one with neither is refused
    "unsupported_constant": (M.with_constant, (_t(8), _t(8)), {"alpha": threading.Lock()}, TypeError,
                             ["parameter 'alpha'", "lock", "compile-time constant"]),
    "tensor_for_scalar": (M.with_scalar, (_t(8), _t(8)), {"s": _t(1)}, TypeError, ["parameter 's'"]),
}


@pytest.mark.parametrize("name", sorted(CALL))
def test_call_mistake(name):
    kernel, args, kwargs, exc, parts = CALL[name]
    outs = [a for a in args if isinstance(a, torch.Tensor) and a.device.type == "cpu"]
    before = [a.clone() for a in outs]
    with pytest.raises(exc) as ei:
        kernel(*args, **kwargs)  # the call
    msg = str(ei.value)
    assert f"kernel '{kernel.__name__}'" in msg, msg
    for part in parts:
        assert part in msg, f"expected {part!r} in: {msg}"
    # the caller's line: the innermost Python frame of the traceback is the call above (no pypto frame below it)
    assert (Path(ei.traceback[-1].path), ei.traceback[-1].lineno + 1) == (Path(__file__), CALL_LINE)
    for a, b in zip(outs, before):
        assert torch.equal(a, b), "an argument was written by a call that raised"


# -- decoration -----------------------------------------------------------------------------------------------
def _tensor_after_constant():
    @pypto.frontend.jit
    def tensor_after_constant(alpha, x: M.T8):
        pass


def _generator():
    @pypto.frontend.jit
    def generator_kernel(x: M.T8):
        yield x


def _unknown_option():
    @pypto.frontend.jit(runtime_options={"run_mod": 1})
    def unknown_option(x: M.T8):
        pass


def _option_range():
    @pypto.frontend.jit(runtime_options={"device_sched_parallelism": 99})
    def option_range(x: M.T8):
        pass


def _tensor_default():
    @pypto.frontend.jit
    def tensor_default(x: M.T8 = torch.zeros(8, 8)):
        pass


def _bad_ready_on_host():
    @pypto.frontend.jit(runtime_options={"ready_on_host_tensors": ["y"]})
    def bad_ready(x: M.T8):
        pass


DEFINE = {  # id -> (decorating function, exception, parts)
    "tensor_after_constant": (_tensor_after_constant, KernelDefinitionError, ["tensor_after_constant", "'x'"]),
    "generator": (_generator, KernelDefinitionError, ["generator_kernel", "generator"]),
    "unknown_option": (_unknown_option, OptionError, ["unknown_option", "run_mod", "run_mode"]),
    "option_range": (_option_range, OptionError, ["option_range", "device_sched_parallelism", "99"]),
    "tensor_default": (_tensor_default, KernelDefinitionError, ["tensor_default", "'x'"]),
    "ready_on_host": (_bad_ready_on_host, OptionError, ["bad_ready", "'y'"]),
}


@pytest.mark.parametrize("name", sorted(DEFINE))
def test_definition_mistake(name):
    fn, exc, parts = DEFINE[name]
    with pytest.raises(exc) as ei:
        fn()
    msg = str(ei.value)
    for part in parts:
        assert part in msg, f"expected {part!r} in: {msg}"
