"""The op sweep of `python -m pypto.bench --kernels --sweep`: every elementwise op and reduction of the language
that torch has too, x {fp32, bf16} x {4096x1024, 1023x1000 (odd rows and width)}, plus model-shaped kernels (tanh
GELU, SwiGLU, RMSNorm, an odd softmax, single-head attention). Each case is a row of kernel_speed's table: pypto's
kernel, torch eager (out= where torch has it, so neither side allocates) and the copy of the bytes it moves."""
# no `from __future__ import annotations`: the kernels' annotations are objects made per dtype below
import math

import torch

import pypto

SHAPES = ((4096, 1024), (1023, 1000))
DTYPES = {"fp32": (pypto.DT_FP32, torch.float32), "bf16": (pypto.DT_BF16, torch.bfloat16)}

# name -> input domain: "any" (randn), "pos" (0.5 + rand: log, sqrt, ...), "unit" (|x| < 0.9), "ge1" (1 + rand)
UNARY = {"exp": "any", "log": "pos", "sqrt": "pos", "rsqrt": "pos", "tanh": "any", "sigmoid": "any", "erf": "any",
         "erfc": "any", "exp2": "any", "expm1": "any", "log2": "pos", "log10": "pos", "log1p": "pos", "sin": "any",
         "cos": "any", "tan": "unit", "asin": "unit", "acos": "unit", "atan": "any", "sinh": "any", "cosh": "any",
         "asinh": "any", "acosh": "ge1", "atanh": "unit", "abs": "any", "neg": "any", "relu": "any",
         "reciprocal": "pos", "floor": "any", "ceil": "any", "round": "any", "trunc": "any"}
BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "maximum": "maximum", "minimum": "minimum",
          "pow": "pow", "atan2": "atan2"}
REDUCE = ("sum", "amax", "amin", "prod")


def _ann(dt):
    return pypto.Tensor([pypto.STATIC, pypto.STATIC], dt)


def _kernels(dt):
    """The sweep's kernel bodies for one dtype (the op a compile-time constant)."""
    T2, T1 = _ann(dt), pypto.Tensor([pypto.STATIC], dt)

    def unary(x: T2, out: T2, fn="exp"):
        pypto.set_vec_tile_shapes(8, 1024)
        out[:] = getattr(pypto, fn)(x)

    def binary(a: T2, b: T2, out: T2, fn="add"):
        pypto.set_vec_tile_shapes(8, 1024)
        out[:] = getattr(pypto, fn)(a, b)

    def reduce(x: T2, out: T1, fn="sum"):
        pypto.set_vec_tile_shapes(8, 1024)
        out[:] = getattr(pypto, fn)(x, -1)

    return unary, binary, reduce


def _input(kind, shape, g, tdt):
    x = torch.randn(*shape, generator=g)
    if kind == "pos":
        x = 0.5 + torch.rand(*shape, generator=g)
    elif kind == "unit":
        x = 1.8 * torch.rand(*shape, generator=g) - 0.9
    elif kind == "ge1":
        x = 1 + torch.rand(*shape, generator=g)
    return x.to(tdt)


def _torch_call(tf, args, out):
    """torch eager's call of tf on args: writing `out` where torch takes out= (torch.relu does not), so that it
    allocates no more than pypto does."""
    try:
        tf(*args, out=out)
        return lambda: tf(*args, out=out)
    except TypeError:
        return lambda: tf(*args)


def _tol(dname):
    return (2e-2, 2e-2) if dname == "bf16" else (1e-4, 1e-5)


def op_cases():
    """(name, body, args, torch call, reference, output, bytes moved, (rtol, atol), constants) per sweep row."""
    g = torch.Generator().manual_seed(1)
    cases = []
    for dname, (pdt, tdt) in DTYPES.items():
        unary, binary, reduce = _kernels(pdt)
        es = torch.tensor([], dtype=tdt).element_size()
        for R, C in SHAPES:
            shape, n = (R, C), R * C
            for fn, kind in UNARY.items():
                x = _input(kind, shape, g, tdt)
                out, tout = torch.empty_like(x), torch.empty_like(x)
                tf = getattr(torch, fn)
                cases.append((f"{fn} {dname} {R}x{C}", unary, (x, out), {"fn": fn},
                              _torch_call(tf, (x,), tout), lambda tf=tf, x=x: tf(x.float()), out,
                              2 * n * es, _tol(dname)))
            for fn in BINARY:
                a = _input("pos" if fn == "pow" else "any", shape, g, tdt)
                b = _input("any", shape, g, tdt)
                out, tout = torch.empty_like(a), torch.empty_like(a)
                tf = getattr(torch, fn)
                cases.append((f"{fn} {dname} {R}x{C}", binary, (a, b, out), {"fn": fn},
                              _torch_call(tf, (a, b), tout),
                              lambda tf=tf, a=a, b=b: tf(a.float(), b.float()), out, 3 * n * es, _tol(dname)))
            for fn in REDUCE:
                x = _input("any", shape, g, tdt)
                if fn == "prod":
                    x = (1 + 0.01 * x.float()).to(tdt)
                out, tout = torch.empty(R, dtype=tdt), torch.empty(R, dtype=tdt)
                tf = getattr(torch, fn)
                call = _torch_call(tf, (x, -1), tout)
                rt = (3e-2, 3e-2) if dname == "bf16" else (1e-4, 1e-3)
                cases.append((f"{fn} {dname} {R}x{C}", reduce, (x, out), {"fn": fn}, call,
                              lambda tf=tf, x=x: tf(x.float(), -1), out, (n + R) * es, rt))
    return cases


F32 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32)
F32_1 = pypto.Tensor([pypto.STATIC], pypto.DT_FP32)
B16 = pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BF16)
B16_1 = pypto.Tensor([pypto.STATIC], pypto.DT_BF16)


def gelu_tanh(x: F32, out: F32):
    pypto.set_vec_tile_shapes(8, 1024)
    out[:] = 0.5 * x * (1.0 + pypto.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def gelu_tanh_bf16(x: B16, out: B16):
    pypto.set_vec_tile_shapes(8, 1024)
    xf = pypto.cast(x, pypto.DT_FP32)
    y = 0.5 * xf * (1.0 + pypto.tanh(0.7978845608028654 * (xf + 0.044715 * xf * xf * xf)))
    out[:] = pypto.cast(y, pypto.DT_BF16)


def swiglu_bf16(a: B16, b: B16, out: B16):
    pypto.set_vec_tile_shapes(8, 1024)
    af = pypto.cast(a, pypto.DT_FP32)
    out[:] = pypto.cast(af * pypto.sigmoid(af) * pypto.cast(b, pypto.DT_FP32), pypto.DT_BF16)


def rmsnorm_bf16(x: B16, w: B16_1, out: B16):
    pypto.set_vec_tile_shapes(8, 1024)
    xf = pypto.cast(x, pypto.DT_FP32)
    ms = pypto.mean(xf * xf, -1, keepdim=True)
    out[:] = pypto.cast(xf * pypto.rsqrt(ms + 1e-6) * pypto.cast(w, pypto.DT_FP32), pypto.DT_BF16)


def softmax_odd(x: F32, out: F32):
    pypto.set_vec_tile_shapes(8, 1024)
    out[:] = pypto.softmax(x, -1)


def attention(q: F32, k: F32, v: F32, out: F32):
    pypto.set_cube_tile_shapes([128, 128], [128, 128], [128, 128])
    s = pypto.matmul(q, k, pypto.DT_FP32, b_trans=True) * (1.0 / math.sqrt(128))
    pypto.set_vec_tile_shapes(8, 1024)
    p = pypto.softmax(s, -1)
    pypto.set_cube_tile_shapes([128, 128], [128, 128], [128, 128])
    out[:] = pypto.matmul(p, v, pypto.DT_FP32)


def model_cases():
    """The model-shaped kernels of issue 22: (name, body, args, consts, torch call, reference, out, bytes, tol)."""
    F = torch.nn.functional
    g = torch.Generator().manual_seed(2)
    R, C = 4096, 1024
    x = torch.randn(R, C, generator=g)
    xb, bb = x.bfloat16(), torch.randn(R, C, generator=g).bfloat16()
    wb = (1 + 0.1 * torch.randn(C, generator=g)).bfloat16()
    o, ob = torch.empty(R, C), torch.empty(R, C, dtype=torch.bfloat16)
    xo, oo = torch.randn(4093, 1000, generator=g), torch.empty(4093, 1000)
    q, k, v = (torch.randn(1024, 128, generator=g) for _ in range(3))
    oa = torch.empty(1024, 128)
    nb = R * C
    return [
        ("gelu(tanh) fp32 4096x1024", gelu_tanh, (x, o), {}, lambda: F.gelu(x, approximate="tanh"),
         lambda: F.gelu(x, approximate="tanh"), o, 2 * nb * 4, (1e-5, 1e-5)),
        ("gelu(tanh) bf16 4096x1024", gelu_tanh_bf16, (xb, ob), {}, lambda: F.gelu(xb, approximate="tanh"),
         lambda: F.gelu(xb.float(), approximate="tanh"), ob, 2 * nb * 2, (2e-2, 2e-2)),
        ("swiglu bf16 4096x1024", swiglu_bf16, (xb, bb, ob), {}, lambda: F.silu(xb) * bb,
         lambda: F.silu(xb.float()) * bb.float(), ob, 3 * nb * 2, (2e-2, 2e-2)),
        ("rmsnorm bf16 4096x1024", rmsnorm_bf16, (xb, wb, ob), {}, lambda: F.rms_norm(xb, (C,), wb, 1e-6),
         lambda: F.rms_norm(xb.float(), (C,), wb.float(), 1e-6), ob, 2 * nb * 2, (2e-2, 2e-2)),
        ("softmax fp32 4093x1000", softmax_odd, (xo, oo), {}, lambda: torch.softmax(xo, -1),
         lambda: torch.softmax(xo, -1), oo, 2 * 4093 * 1000 * 4, (1e-5, 1e-6)),
        ("attention fp32 1024x128", attention, (q, k, v, oa), {},
         lambda: F.scaled_dot_product_attention(q[None], k[None], v[None])[0],
         lambda: F.scaled_dot_product_attention(q[None], k[None], v[None])[0], oa, 4 * 1024 * 128 * 4, (1e-4, 1e-5)),
    ]


def cases():
    """Every sweep row in kernel_speed's case form (name, body, args, torch call, reference, out, bytes, tol)."""
    out = []
    for name, body, args, consts, tfn, ref, o, moved, tol in op_cases() + model_cases():
        out.append((name, (body, consts), args, tfn, ref, o, moved, tol))
    return out


MODEL = ("gelu(tanh)", "swiglu", "rmsnorm", "softmax fp32 4093", "attention")

__all__ = ["cases", "op_cases", "model_cases", "MODEL"]
