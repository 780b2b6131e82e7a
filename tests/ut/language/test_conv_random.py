"""pypto.conv (vs torch conv1d/2d/3d), pypto.uniform / pypto.normal (Philox4x32-10,
deterministic per seed/counter whatever the thread count; distribution checks), pypto.ceil_div and
isinstance(x, pypto.Tensor) for kernel tensors. Errors name the kernel, the op, the parameter, expected and got,
and leave the outputs untouched."""
import math
import re

import pytest
import torch
import torch.nn.functional as F

import pypto
from pypto.errors import KernelTraceError, UnsupportedFeatureError

T = pypto.Tensor
DTS = {torch.float32: pypto.DT_FP32, torch.float16: pypto.DT_FP16, torch.bfloat16: pypto.DT_BF16}


# ---- conv -------------------------------------------------------------------------------------------------------
def _conv_ref(x, w, st, pd, dl, groups, bias, relu, dt):
    nd = x.dim() - 2
    pads = []
    for i in reversed(range(nd)):
        pads += [pd[2 * i], pd[2 * i + 1]]
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    r = fn(F.pad(x.double(), pads), w.double(), None if bias is None else bias.double(), stride=st, dilation=dl,
           groups=groups)
    return (r.relu() if relu else r).to(dt)


CONV_CASES = [  # (x shape, w shape, strides, paddings, dilations, groups, bias, relu)
    ((2, 4, 11), (6, 4, 3), [1], [1, 2], [1], 1, False, False),
    ((1, 6, 17), (4, 3, 4), [2], [0, 3], [2], 2, True, True),
    ((2, 3, 9, 10), (5, 3, 3, 3), [1, 1], [1, 1, 1, 1], [1, 1], 1, True, False),
    ((1, 4, 12, 9), (8, 2, 3, 2), [2, 1], [2, 0, 0, 1], [1, 2], 2, False, True),
    ((1, 4, 7, 7), (4, 1, 3, 3), [1, 2], [1, 2, 2, 1], [2, 1], 4, True, True),   # depthwise, asymmetric pads
    ((1, 32, 8, 16), (32, 32, 1, 1), [1, 1], [0, 0, 0, 0], [1, 1], 1, False, False),   # the doc's example
    ((2, 2, 5, 6, 7), (3, 2, 2, 3, 2), [1, 2, 1], [1, 0, 0, 2, 1, 1], [1, 1, 2], 1, True, False),
]


def _conv_kernel(st, pd, dl, groups, has_bias, relu, dt):
    ext = {"relu_type": pypto.ReLuType.RELU if relu else pypto.ReLuType.NO_RELU}

    if has_bias:
        def k(x: T, w: T, b: T, o: T):
            o[:] = pypto.conv(x, w, dt, st, pd, dl, groups=groups, extend_params=dict(ext, bias_tensor=b))
    else:
        def k(x: T, w: T, o: T):
            o[:] = pypto.conv(x, w, dt, st, pd, dl, groups=groups, extend_params=ext)
    return pypto.frontend.jit(k)


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv_matches_torch(case, dt):
    xs, ws, st, pd, dl, groups, has_bias, relu = CONV_CASES[case]
    g = torch.Generator().manual_seed(case)
    x = torch.randn(xs, generator=g).to(dt)
    w = torch.randn(ws, generator=g).to(dt)
    b = torch.randn(ws[0], generator=g).to(dt) if has_bias else None
    ref = _conv_ref(x, w, st, pd, dl, groups, b, relu, dt)
    out = torch.full(ref.shape, float("nan"), dtype=dt)
    k = _conv_kernel(st, pd, dl, groups, has_bias, relu, DTS[dt])
    k(*([x, w] + ([b] if has_bias else []) + [out]))
    # float32 sums in another order than the float64 reference: fp32 within 1e-5; fp16/bf16 within an ulp
    tol = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dt]
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol * 4)


def test_conv_dynamic_batch_bias_fp32_and_verify():
    """A DYNAMIC batch dim (one specialization for batches 1..3), an FP32 bias with bf16 data, and the IR
    interpreter (verify_options) agreeing with the compiled kernel."""
    def k(x: T([pypto.DYNAMIC, 3, 8, 8], pypto.DT_BF16), w: T, b: T, o: T([pypto.DYNAMIC, 4, 4, 4], pypto.DT_BF16)):
        o[:] = pypto.conv(x, w, pypto.DT_BF16, [2, 2], [1, 0, 1, 0], [1, 1], extend_params={"bias_tensor": b})
    kern = pypto.frontend.jit(k, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [1e-2, 1e-2]})
    w = torch.randn(4, 3, 3, 3).bfloat16()
    b = torch.randn(4)
    for n in (1, 3, 2):
        x = torch.randn(n, 3, 8, 8).bfloat16()
        out = torch.zeros(n, 4, 4, 4, dtype=torch.bfloat16)
        kern(x, w, b, out)
        torch.testing.assert_close(out, _conv_ref(x, w, [2, 2], [1, 0, 1, 0], [1, 1], 1, b, False, torch.bfloat16),
                                   rtol=8e-3, atol=3e-2)
        assert [(r.stage, r.status) for r in kern.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    assert kern.cache_info()["specializations"] == 1


def test_conv_dynamic_spatial_dims_and_verify():
    """A DYNAMIC H and W (one specialization for every size): the output's size along them is symbolic; the IR
    interpreter agrees with the compiled kernel."""
    def k(x: T([1, 4, pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32), w: T([6, 4, 3, 3], pypto.DT_FP32),
          o: T([1, 6, pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP32)):
        o[:] = pypto.conv(x, w, pypto.DT_FP32, [1, 2], [1, 1, 0, 2], [1, 1])
    kern = pypto.frontend.jit(k, verify_options={"enable_pass_verify": True})
    w = torch.randn(6, 4, 3, 3, generator=torch.Generator().manual_seed(3))
    for h, wd in ((5, 9), (12, 4), (3, 3)):
        x = torch.randn(1, 4, h, wd, generator=torch.Generator().manual_seed(h))
        ref = _conv_ref(x, w, [1, 2], [1, 1, 0, 2], [1, 1], 1, None, False, torch.float32)
        out = torch.full(ref.shape, float("nan"))
        kern(x, w, out)
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        assert [(r.stage, r.status) for r in kern.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
    assert kern.cache_info()["specializations"] == 1


@pypto.frontend.jit
def k_conv_h_tiles(x: T([1, 4, pypto.DYNAMIC, 10], pypto.DT_FP16), w: T([8, 4, 3, 3], pypto.DT_FP16),
                   o: T([1, 8, pypto.DYNAMIC, 8], pypto.DT_FP16)):
    """The reference's dynamic-H idiom (st/test_conv.py::test_conv2d_dynamic_hout_relu): H tiles of 4 output rows
    read overlapping input views of 6 rows whose valid size shrinks at the end."""
    hin, hout = x.shape[2], o.shape[2]
    pypto.set_conv_tile_shapes(pypto.TileL1Info(tileHin=6, tileHout=4, tileWin=10, tileWout=16, tileN=16),
                               pypto.TileL0Info(tileH=4, tileW=16, tileK=16, tileN=16))
    for i in pypto.loop(0, (hout + 3) // 4, 1):
        xv = pypto.view(x, [1, 4, 6, 10], [0, 0, i * 4, 0], valid_shape=[1, 4, (hin - i * 4).min(6), 10])
        r = pypto.conv(xv, w, pypto.DT_FP16, [1, 1], [0, 0, 0, 0], [1, 1],
                       extend_params={"relu_type": pypto.ReLuType.RELU})
        pypto.assemble(r, [0, 0, i * 4, 0], o)


@pytest.mark.parametrize("h", [6, 11, 14])
def test_conv_over_h_tiles_of_a_dynamic_dim(h):
    g = torch.Generator().manual_seed(h)
    x, w = torch.rand(1, 4, h, 10, generator=g).half(), torch.rand(8, 4, 3, 3, generator=g).half()
    ref = _conv_ref(x, w, [1, 1], [0, 0, 0, 0], [1, 1], 1, None, True, torch.float16)
    out = torch.full(ref.shape, -1.0).half()
    k_conv_h_tiles(x, w, out)
    torch.testing.assert_close(out, ref, rtol=1e-3, atol=4e-3)


@pypto.frontend.jit
def k_conv_cout_tiles(x: T([1, 4, 12], pypto.DT_BF16), w: T([pypto.DYNAMIC, 4, 3], pypto.DT_BF16),
                      o: T([1, pypto.DYNAMIC, 12], pypto.DT_BF16)):
    """Cout tiles of a DYNAMIC weight, the tile size a SymbolicScalar (st/test_conv.py::test_conv1d_dynamic_cout)."""
    tile = pypto.symbolic_scalar(16)
    pypto.set_conv_tile_shapes(pypto.TileL1Info(tileWin=12, tileWout=16, tileN=tile),
                               pypto.TileL0Info(tileW=16, tileN=tile))
    for i in pypto.loop(0, (w.shape[0] + tile - 1) // tile, 1):
        r = pypto.conv(x, w[i * tile:i * tile + tile, :, :], pypto.DT_BF16, [1], [1, 1], [1])
        pypto.assemble(r, [0, i * tile, 0], o)


@pytest.mark.parametrize("cout", [16, 40])
def test_conv_over_cout_tiles_with_a_symbolic_tile_size(cout):
    g = torch.Generator().manual_seed(cout)
    x, w = torch.randn(1, 4, 12, generator=g).bfloat16(), torch.randn(cout, 4, 3, generator=g).bfloat16()
    ref = _conv_ref(x, w, [1], [1, 1], [1], 1, None, False, torch.bfloat16)
    out = torch.full(ref.shape, -1.0).bfloat16()
    k_conv_cout_tiles(x, w, out)
    torch.testing.assert_close(out, ref, rtol=8e-3, atol=3e-2)
    assert pypto.TileL1Info(tileN=pypto.symbolic_scalar(32)).tileN == 32


def k_conv_tile_sym(x: T([pypto.DYNAMIC, 4], pypto.DT_FP32), o: T([pypto.DYNAMIC, 4], pypto.DT_FP32)):
    pypto.set_conv_tile_shapes(pypto.TileL1Info(tileN=x.shape[0]))
    o[:] = x + 1.0


def k_conv_cout_groups(x: T([1, 4, 12], pypto.DT_FP32), w: T([pypto.DYNAMIC, 2, 3], pypto.DT_FP32),
                       o: T([1, pypto.DYNAMIC, 10], pypto.DT_FP32)):
    o[:] = pypto.conv(x, w, pypto.DT_FP32, [1], [0, 0], [1], groups=2)


def test_conv_symbolic_sizes_errors():
    _expect(KernelTraceError, k_conv_tile_sym, [torch.zeros(2, 4), torch.full((2, 4), 3.0)],
            ["set_conv_tile_shapes: TileL1Info.tileN must be an int >= 1, got"])
    _expect(UnsupportedFeatureError, k_conv_cout_groups, [torch.zeros(1, 4, 12), torch.zeros(4, 2, 3),
                                                          torch.full((1, 4, 10), 3.0)],
            ["conv: a dynamic dim 0 of weight", "Cout when groups=1", "not supported yet"])


def _expect(exc, fn, args, parts):
    k = pypto.frontend.jit(fn)
    before = [a.clone() for a in args]
    with pytest.raises(exc) as ei:
        k(*args)
    msg = str(ei.value)
    assert f"kernel '{fn.__name__}'" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)
    assert re.search(r"\(at .*test_conv_random\.py:\d+\)", msg), msg
    for a, b in zip(args, before):
        assert torch.equal(a, b)


def _conv_call(**kw):
    base = dict(out_dtype=pypto.DT_FP32, strides=[1, 1], paddings=[0, 0, 0, 0], dilations=[1, 1])
    base.update(kw)
    return base


def k_conv_groups(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(groups=3))


def k_conv_cin(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call())


def k_conv_rank(x: T, w: T, o: T):
    o[:] = pypto.conv(x[0], w, **_conv_call())


def k_conv_strides(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(strides=[1]))


def k_conv_stride_range(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(strides=[64, 1]))


def k_conv_pad_kernel(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(paddings=[0, 3, 0, 0]))


def k_conv_out_dtype(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(out_dtype=pypto.DT_FP16))


def k_conv_int(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(out_dtype=pypto.DT_INT32))


def k_conv_bias_shape(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(extend_params={"bias_tensor": pypto.zeros(5)}))


def k_conv_ext_key(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(extend_params={"bias": 1}))


def k_conv_transposed(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(transposed=True))


def k_conv_scale(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(extend_params={"scale": 0.5}))


def k_conv_too_small(x: T, w: T, o: T):
    o[:] = pypto.conv(x, w, **_conv_call(dilations=[4, 1]))


def _f(*s, dt=torch.float32):
    return torch.zeros(s, dtype=dt)


@pytest.mark.parametrize("fn,args,parts", [
    (k_conv_groups, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["conv:", "divisible by groups (3)"]),
    (k_conv_cin, [_f(1, 4, 5, 5), _f(4, 2, 3, 3), _f(1, 4, 3, 3)], ["conv:", "weight Cin (2) * groups (1)",
                                                                     "input_conv Cin (4)"]),
    (k_conv_rank, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["conv:", "weight must have the rank"]),
    (k_conv_strides, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["strides must have 2 entries", "got 1"]),
    (k_conv_stride_range, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["strides entries must be in [1, 63]",
                                                                             "[64, 1]"]),
    (k_conv_pad_kernel, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["paddings [0, 3, 0, 0]",
                                                                           "below the kernel size"]),
    (k_conv_out_dtype, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["out_dtype must equal the input dtype "
                                                                          "DT_FP32, got DT_FP16"]),
    (k_conv_int, [_f(1, 4, 5, 5, dt=torch.int32), _f(4, 4, 3, 3, dt=torch.int32), _f(1, 4, 3, 3)],
     ["input_conv dtype must be DT_FP16, DT_BF16 or DT_FP32, got DT_INT32"]),
    (k_conv_bias_shape, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["bias_tensor'] must have shape [4]",
                                                                           "got [5]"]),
    (k_conv_ext_key, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["unsupported key(s) ['bias']"]),
    (k_conv_too_small, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)], ["output spatial dim 0 would be"]),
])
def test_conv_errors(fn, args, parts):
    _expect(KernelTraceError, fn, args, parts)


@pytest.mark.parametrize("fn,part", [(k_conv_transposed, "transposed=True"), (k_conv_scale, "extend_params['scale']")])
def test_conv_unsupported(fn, part):
    _expect(UnsupportedFeatureError, fn, [_f(1, 4, 5, 5), _f(4, 4, 3, 3), _f(1, 4, 3, 3)],
            ["conv:", part, "not supported yet"])


# ---- uniform / normal -------------------------------------------------------------------------------------------
# Philox4x32-10 known-answer vectors (Random123 kat_vectors): (counter, key) -> 4 words
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD))]


def _rand_kernel(dist, shape, key, counter, dt, threads=None):
    fn = getattr(pypto, dist)

    def k(o: T):
        o[:] = fn(shape, [key], [0, counter], [1], dt)
    opts = {} if threads is None else {"runtime_options": {"sim_threads": threads}}
    return pypto.frontend.jit(k, **opts)


def _draw(dist, shape, key, counter, dt=pypto.DT_FP32, tdt=torch.float32, threads=None):
    out = torch.full(shape, float("nan"), dtype=tdt)
    _rand_kernel(dist, shape, key, counter, dt, threads)(out)
    return out


def test_uniform_known_answer():
    """Elements 0..3 of uniform(key=k1:k0, counter=c) are Philox4x32-10 of counter (0, 0, c_lo, c_hi), top 24 bits."""
    for ctr, key, words in KAT:
        seed = key[0] | key[1] << 32
        c = ctr[2] | ctr[3] << 32
        if ctr[0] or ctr[1]:        # the low counter words are the element index // 4: only block 0 is drawn here
            continue
        out = _draw("uniform", [4], seed, c)
        assert out.tolist() == [(w >> 8) * 2.0 ** -24 for w in words]
    from pypto.verify.conv_random import philox4x32_10
    for ctr, key, words in KAT:
        assert tuple(int(x) for x in philox4x32_10(ctr, key)) == words


@pytest.mark.parametrize("dist", ["uniform", "normal"])
def test_random_deterministic_across_threads_and_seeds(dist):
    shape = [3, 5, 8]
    a = _draw(dist, shape, 1234, 1, threads=1)
    b = _draw(dist, shape, 1234, 1, threads=2)
    assert torch.equal(a.view(torch.int32), b.view(torch.int32))      # same bits
    assert not torch.equal(a, _draw(dist, shape, 1235, 1))             # another seed
    assert not torch.equal(a, _draw(dist, shape, 1234, 2))             # another counter
    # counter[0] is ignored (the reference hard-codes it to 0)
    def k(o: T):
        o[:] = getattr(pypto, dist)(shape, [1234], [99, 1], [3], pypto.DT_FP32)
    c = torch.zeros(shape)
    pypto.frontend.jit(k)(c)
    assert torch.equal(a, c)


@pytest.mark.parametrize("dist", ["uniform", "normal"])
def test_random_matches_interpreter(dist):
    def k(o: T):
        o[:] = getattr(pypto, dist)([7, 9], [42], [0, 5], [1], pypto.DT_FP32)
    kern = pypto.frontend.jit(k, verify_options={"enable_pass_verify": True, "pass_verify_error_tol": [1e-6, 1e-6]})
    kern(torch.zeros(7, 9))
    assert [(r.stage, r.status) for r in kern.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]


def _ks(sample: torch.Tensor, cdf) -> float:
    xs = sample.double().flatten().sort().values
    n = xs.numel()
    f = cdf(xs)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    return float(torch.maximum(i / n - f, f - (i - 1) / n).max())


@pytest.mark.parametrize("dt,tdt", [(pypto.DT_FP32, torch.float32), (pypto.DT_FP16, torch.float16),
                                    (pypto.DT_BF16, torch.bfloat16)])
def test_uniform_distribution(dt, tdt):
    u = _draw("uniform", [64, 256], 7, 3, dt, tdt)
    assert u.dtype == tdt and list(u.shape) == [64, 256]
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    n = u.numel()
    assert abs(float(u.double().mean()) - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(float(u.double().std()) - math.sqrt(1 / 12)) < 0.01
    step = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}[tdt]
    assert _ks(u, lambda x: (x + step / 2).clamp(0, 1)) < 1.63 / math.sqrt(n) + step   # KS at 1 %
    assert len(torch.unique(u)) > min(n, 1 / step) * 0.5


@pytest.mark.parametrize("dt,tdt", [(pypto.DT_FP32, torch.float32), (pypto.DT_FP16, torch.float16),
                                    (pypto.DT_BF16, torch.bfloat16)])
def test_normal_distribution(dt, tdt):
    z = _draw("normal", [128, 128], 2024, 0, dt, tdt)
    assert z.dtype == tdt and torch.isfinite(z).all()
    n = z.numel()
    assert abs(float(z.double().mean())) < 5 / math.sqrt(n)
    assert abs(float(z.double().std()) - 1.0) < 0.02
    assert float(z.abs().max()) < 6.5
    bound = 1.63 / math.sqrt(n) + (0.004 if tdt == torch.bfloat16 else 0.0005)
    assert _ks(z, lambda x: 0.5 * torch.erfc(-x / math.sqrt(2))) < bound


def k_rand_key(o: T):
    o[:] = pypto.uniform([4], [1, 2], [0, 0], [1], pypto.DT_FP32)


def k_rand_counter(o: T):
    o[:] = pypto.normal([4], [1], [0], [1], pypto.DT_FP32)


def k_rand_alg(o: T):
    o[:] = pypto.uniform([4], [1], [0, 0], [2], pypto.DT_FP32)


def k_rand_dtype(o: T):
    o[:] = pypto.normal([4], [1], [0, 0], [1], pypto.DT_INT32)


def k_rand_shape(o: T):
    o[:] = pypto.uniform([1, 1, 1, 1, 4], [1], [0, 0], [1], pypto.DT_FP32)


@pytest.mark.parametrize("fn,parts", [
    (k_rand_key, ["uniform:", "key must be a list of 1 static int(s), got [1, 2]"]),
    (k_rand_counter, ["normal:", "counter must be a list of 2 static int(s), got [0]"]),
    (k_rand_alg, ["uniform:", "alg must be [1] (Philox) or [3]", "got [2]"]),
    (k_rand_dtype, ["normal:", "dtype must be DT_FP32, DT_FP16 or DT_BF16, got DT_INT32"]),
    (k_rand_shape, ["uniform:", "shape must be a list of 1 to 4 static positive ints"]),
])
def test_random_errors(fn, parts):
    _expect(KernelTraceError, fn, [torch.zeros(4)], parts)


# ---- ceil_div ---------------------------------------------------------------------------------------------------
def test_ceil_div_tensors_ints_and_negatives():
    def k(a: T, b: T, o1: T, o2: T):
        o1[:] = pypto.ceil_div(a, b)
        o2[:] = pypto.ceil_div(a, -3)
    a = torch.tensor([[2, 4, 6, -7, 7, -7, 0, 16777216]], dtype=torch.int32).repeat(3, 1) + \
        torch.arange(3, dtype=torch.int32)[:, None]
    b = torch.tensor([4, 2, 5, 2, -2, -2, 3, 7], dtype=torch.int32)
    o1, o2 = torch.zeros_like(a), torch.zeros_like(a)
    pypto.frontend.jit(k)(a, b, o1, o2)
    ref = lambda x, y: torch.ceil(x.double() / y.double()).to(torch.int32)   # noqa: E731
    assert torch.equal(o1, ref(a, b.expand_as(a)))
    assert torch.equal(o2, ref(a, torch.full_like(a, -3)))
    assert o1[0, :3].tolist() == [1, 2, 2]           # the doc's example


def test_ceil_div_scalars_is_ceildiv():
    assert pypto.ceil_div(7, 2) == pypto.ceildiv(7, 2) == 4
    assert pypto.ceil_div(-7, 2) == -3


def k_ceil_div_float(a: T, o: T):
    o[:] = pypto.ceil_div(a, 2)


def k_ceil_div_zero(a: T, o: T):
    o[:] = pypto.ceil_div(a, 0)


@pytest.mark.parametrize("fn,parts", [(k_ceil_div_float, ["ceil_div:", "self must be a DT_INT32 tensor, got DT_FP32"]),
                                      (k_ceil_div_zero, ["ceil_div:", "other must not be 0"])])
def test_ceil_div_errors(fn, parts):
    dt = torch.float32 if fn is k_ceil_div_float else torch.int32
    _expect(KernelTraceError, fn, [torch.ones(4, dtype=dt), torch.zeros(4, dtype=dt)], parts)


# ---- pypto.Tensor as a class --------------------------------------------------------------------------------------
def test_kernel_tensors_are_pypto_tensors():
    seen = []

    def k(a: T, o: T):
        t = a * 2
        seen.extend([isinstance(a, pypto.Tensor), isinstance(t, pypto.Tensor), isinstance(a[0:1], pypto.Tensor),
                     isinstance(3, pypto.Tensor), isinstance(a.shape[0], pypto.Tensor)])
        o[:] = t
    a = torch.arange(4.0)
    o = torch.zeros(4)
    pypto.frontend.jit(k)(a, o)
    assert seen == [True, True, True, False, False]
    assert torch.equal(o, a * 2)
    assert isinstance(pypto.Tensor([4], pypto.DT_FP32), pypto.Tensor)    # annotations still are
    assert not isinstance(torch.zeros(2), pypto.Tensor)
