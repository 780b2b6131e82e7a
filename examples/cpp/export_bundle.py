"""Export the kernels the C++ serving example calls into an AOT bundle.

    python examples/cpp/export_bundle.py /tmp/pypto_serving_bundle

(or, from a build pipeline: python -m pypto.export export_bundle:rows_exp export_bundle:scale_shift ...)
"""
import sys

import torch

import pypto

ROWS = pypto.frontend.dynamic("ROWS")


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def rows_exp(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
             out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 15) // 16):
        v = pypto.view(x, [16, 64], [i * 16, 0], valid_shape=[pypto.min(16, n - i * 16), 64])
        pypto.assemble(pypto.exp(v), [i * 16, 0], out)


@pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
def scale_shift(x: pypto.Tensor([ROWS, 64], pypto.DT_FP32), out: pypto.Tensor([ROWS, 64], pypto.DT_FP32),
                scale: pypto.Scalar[pypto.DT_FP32], shift=0.5):
    pypto.set_vec_tile_shapes(16, 64)
    out[:] = x * scale + shift


def main(directory: str) -> None:
    x = torch.zeros(16, 64)
    pypto.export([rows_exp, scale_shift], directory, examples={
        "rows_exp": [(x, x)],                                   # DYNAMIC rows: one library serves every size
        "scale_shift": [(x, x, 1.0), ((x, x, 1.0), {"shift": -1.0})],   # two constant values: two libraries
    })
    print(directory)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "pypto_serving_bundle")
