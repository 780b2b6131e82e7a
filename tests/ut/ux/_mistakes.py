"""Kernels that each make one mistake a kernel author makes; `# MISTAKE <id>` marks the line the error must name.

Decorated at import (each is a valid kernel: the mistake shows when it is traced), so every trace error's
`(at file:line)` can be compared with the marked line of this file.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

import pypto

S, D = pypto.STATIC, pypto.DYNAMIC
F32 = pypto.DT_FP32
T8 = pypto.Tensor([8, 8], F32)
TD = pypto.Tensor([D, 8], F32)
TS = pypto.Tensor([S, S], F32)
W = torch.ones(8, 8)         # a torch tensor from outside the kernel
A = np.ones((8, 8), np.float32)
jit = pypto.frontend.jit


# -- torch / numpy / math functions on kernel tensors -------------------------------------------------------------
@jit
def torch_exp(x: T8, out: T8):
    out[:] = torch.exp(x)  # MISTAKE torch_exp


@jit
def torch_sum(x: T8, out: T8):
    out[:] = torch.sum(x, 1, keepdim=True) + x  # MISTAKE torch_sum


@jit
def torch_cat(x: T8, out: pypto.Tensor([16, 8], F32)):
    out[:] = torch.cat([x, x])  # MISTAKE torch_cat


@jit
def torch_relu(x: T8, out: T8):
    out[:] = F.relu(x)  # MISTAKE torch_relu


@jit
def torch_matmul(x: T8, out: T8):
    out[:] = torch.matmul(x, x)  # MISTAKE torch_matmul


@jit
def torch_maximum(x: T8, out: T8):
    out[:] = torch.maximum(x, x * 2)  # MISTAKE torch_maximum


@jit
def torch_where(x: T8, out: T8):
    out[:] = torch.where(x > 0, x, 0.0)  # MISTAKE torch_where


@jit
def torch_global_left(x: T8, out: T8):
    out[:] = W * x  # MISTAKE torch_global_left


@jit
def torch_global_right(x: T8, out: T8):
    out[:] = x + W  # MISTAKE torch_global_right


@jit
def numpy_exp(x: T8, out: T8):
    out[:] = np.exp(x)  # MISTAKE numpy_exp


@jit
def numpy_sum(x: T8, out: T8):
    out[:] = np.sum(x)  # MISTAKE numpy_sum


@jit
def numpy_maximum(x: T8, out: T8):
    out[:] = np.maximum(x, 0.0)  # MISTAKE numpy_maximum


@jit
def numpy_concatenate(x: T8, out: pypto.Tensor([16, 8], F32)):
    out[:] = np.concatenate([x, x])  # MISTAKE numpy_concatenate


@jit
def numpy_asarray(x: T8, out: T8):
    out[:] = np.asarray(x)  # MISTAKE numpy_asarray


@jit
def numpy_global(x: T8, out: T8):
    out[:] = x * A  # MISTAKE numpy_global


@jit
def math_exp(x: T8, out: T8):
    out[:] = math.exp(x)  # MISTAKE math_exp


# -- Python control flow on tensor values --------------------------------------------------------------------
@jit
def if_on_tensor(x: T8, out: T8):
    if x > 0:  # MISTAKE if_on_tensor
        out[:] = x


@jit
def iterate_tensor(x: T8, out: T8):
    for row in x:  # MISTAKE iterate_tensor
        out[0:1, :] = row


@jit
def len_dynamic(x: TD, out: TD):
    for i in range(len(x)):  # MISTAKE len_dynamic
        out[i:i + 1, :] = x[i:i + 1, :]


@jit
def range_of_tensor(x: T8, out: T8):
    for i in range(x):  # MISTAKE range_of_tensor
        out[:] = x


@jit
def range_of_dynamic(x: TD, out: TD):
    for i in range(x.shape[0]):  # MISTAKE range_of_dynamic
        out[i:i + 1, :] = x[i:i + 1, :]


@jit
def while_on_symbolic(x: TD, out: TD):
    n = x.shape[0]
    while n > 4:  # MISTAKE while_on_symbolic
        n = n - 4
    out[:] = x


@jit
def float_of_tensor(x: T8, out: T8):
    out[:] = x * float(x)  # MISTAKE float_of_tensor


@jit
def while_on_tensor(x: T8, out: T8):
    while x.sum() > 0:  # MISTAKE while_on_tensor
        out[:] = x


# -- outputs and returns -----------------------------------------------------------------------------------------
@jit
def rebind_output(x: T8, out: T8):
    out = x + 1  # MISTAKE rebind_output  # noqa: F841


@jit
def return_value(x: T8, out: T8):
    return x + 1  # MISTAKE return_value


# -- kernel loops and branches -----------------------------------------------------------------------------------
@jit
def break_in_loop(x: TD, out: TD):
    for i in pypto.loop(x.shape[0]):
        out[i:i + 1, :] = x[i:i + 1, :]
        break  # MISTAKE break_in_loop


@jit
def continue_in_loop(x: TD, out: TD):
    for i in pypto.loop(x.shape[0]):
        continue  # MISTAKE continue_in_loop


@jit
def return_in_loop(x: TD, out: TD):
    for i in pypto.loop(x.shape[0]):
        return  # MISTAKE return_in_loop


@jit
def value_after_loop(x: TD, out: TD):
    for i in pypto.loop(x.shape[0]):
        row = x[i:i + 1, :] * 2
    out[0:1, :] = row  # MISTAKE value_after_loop


@jit
def one_branch_name(x: TD, out: TD):
    n = x.shape[0]
    if n > 4:
        y = x * 2
    out[:] = y  # MISTAKE one_branch_name


# -- shapes, dtypes and op arguments ---------------------------------------------------------------------------
@jit
def broadcast_static(a: TS, b: TS, out: TS):
    out[:] = a + b  # MISTAKE broadcast_static


@jit
def write_shape(x: T8, out: pypto.Tensor([4, 8], F32)):
    out[:] = x  # MISTAKE write_shape


@jit
def matmul_inner(x: pypto.Tensor([8, 4], F32), out: T8):
    out[:] = pypto.matmul(x, x, F32)  # MISTAKE matmul_inner


@jit
def sum_bad_dim(x: T8, out: T8):
    out[:] = x + pypto.sum(x, 5, keepdim=True)  # MISTAKE sum_bad_dim


@jit
def reshape_count(x: T8, out: T8):
    out[:] = pypto.reshape(x, [3, 7])  # MISTAKE reshape_count


@jit
def transpose_dim(x: T8, out: T8):
    out[:] = pypto.transpose(x, 0, 2)  # MISTAKE transpose_dim


@jit
def view_offsets(x: T8, out: T8):
    out[:] = pypto.view(x, [8, 8], [0, 0, 0])  # MISTAKE view_offsets


@jit
def cast_bad_dtype(x: T8, out: T8):
    out[:] = pypto.cast(x, "float32x")  # MISTAKE cast_bad_dtype


@jit
def tile_zero(x: T8, out: T8):
    pypto.set_vec_tile_shapes(0, 8)  # MISTAKE tile_zero
    out[:] = x


@jit
def tile_rank(x: T8, out: T8):
    pypto.set_vec_tile_shapes(1, 1, 1, 1, 8)  # MISTAKE tile_rank
    out[:] = x


@jit
def assemble_outside(x: T8, out: T8):
    pypto.assemble(x, [4, 0], out)  # MISTAKE assemble_outside


@jit
def invert_float(x: T8, out: T8):
    out[:] = pypto.where(~x, x, 0.0)  # MISTAKE invert_float


@jit
def concat_shapes(x: T8, out: pypto.Tensor([12, 8], F32)):
    out[:] = pypto.concat([x, x[:, 0:4]], 0)  # MISTAKE concat_shapes


@jit
def index_out_of_range(x: T8, out: pypto.Tensor([1, 8], F32)):
    out[:] = x[10:11, :]  # MISTAKE index_out_of_range


@jit
def op_outside_language(x: T8, out: T8):
    out[:] = pypto.exp("x")  # MISTAKE op_outside_language


@jit
def loop_float_bound(x: T8, out: T8):
    for i in pypto.loop(8.5):  # MISTAKE loop_float_bound
        out[:] = x


# -- call-time mistakes (the native core: kernel and parameter named, the caller's line is the traceback's) -------
@jit
def fixed_add(a: pypto.Tensor([8], F32), b: pypto.Tensor([8], F32), out: pypto.Tensor([8], F32)):
    out[:] = a + b


@jit
def named_dims(a: pypto.Tensor([pypto.frontend.dynamic("N")], F32),
               out: pypto.Tensor([pypto.frontend.dynamic("N")], F32)):
    out[:] = a


@jit
def with_constant(a: pypto.Tensor([8], F32), out: pypto.Tensor([8], F32), alpha=1.0):
    out[:] = a * alpha


@jit
def with_scalar(a: pypto.Tensor([8], F32), out: pypto.Tensor([8], F32), s: pypto.Scalar[F32] = 1.0):
    out[:] = a * s
