"""Kernels exported by the embedding tests (and their torch references)."""
import pypto

N = pypto.frontend.dynamic("N")


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def scaled_add(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               b: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
               alpha=1.0, tile=32):
    pypto.set_vec_tile_shapes(tile, tile)
    out[:] = a * alpha + b


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def rows_exp(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
             out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 15) // 16):
        v = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[pypto.min(16, n - i * 16), 64])
        pypto.assemble(pypto.exp(v), [i * 16, 0], out)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def axpy(x: pypto.Tensor([N], pypto.DT_FP32), y: pypto.Tensor([N], pypto.DT_FP32),
         out: pypto.Tensor([N], pypto.DT_FP32), s: pypto.Scalar[pypto.DT_FP32]):
    out[:] = x * s + y


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def act(x: pypto.Tensor([8, pypto.STATIC], pypto.DT_FP32), out: pypto.Tensor([8, pypto.STATIC], pypto.DT_FP32),
        mode="relu", *, shift=(0, 1)):
    if mode == "relu":
        out[:] = pypto.relu(x) + shift[1]
    else:
        out[:] = pypto.sigmoid(x) + shift[0]


def ref_scaled_add(a, b, alpha=1.0):
    return a * alpha + b
