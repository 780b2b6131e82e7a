"""Views, slices and writes, valid_shape, reshape (inplace=True, valid_shape=), expand_clone, unsqueeze/squeeze,
clone, transpose, permute, concat, local tensors (pypto.tensor / full(valid_shape=) / zeros), arange, one_hot —
against torch for fp32/fp16/bf16/int32 with DYNAMIC row counts 1, 7, 33, 130 (tail tiles), plus their errors.
A write of a tile with a smaller valid_shape writes only its valid region; a slice stop past the end clamps;
an op's result is writable."""
import pytest
import torch

import pypto
from pypto.errors import KernelRuntimeError, KernelTraceError

from _multi import ALL4, rand
from callpath._util import fails_untouched as _fails_untouched

D = pypto.DYNAMIC
F32 = pypto.DT_FP32
ROWS = [1, 7, 33, 130]


def _kernel(pdt):
    def X(*dims):
        return pypto.Tensor(list(dims), pdt)

    @pypto.frontend.jit
    def k(x: X(D, 8), tiled: X(D, 8), flat: X(D), e: X(3, 8), u: X(D, 8), sq: X(D), t: X(8, D), p: X(4, D, 2),
          c: X(D, 11), loc: X(3, 8), cl: X(2, 8), aliased: X(D, 8), rowmax: X(D, 1)):
        n = x.shape[0]
        # tiles of 4 rows; the last one holds n % 4 valid rows: valid_shape on view and on reshape
        for i in pypto.loop(0, (n + 3) // 4):
            m = pypto.min(4, n - i * 4)
            v = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[m, 8])
            r = pypto.reshape(v, [4, 2, 4], valid_shape=[m, 2, 4])
            back = pypto.reshape(r * 2, [4, 8], valid_shape=[m, 8])
            pypto.assemble(back, [i * 4, 0], tiled)
            pypto.assemble(pypto.amax(v, 1, keepdim=True), [i * 4, 0], rowmax)   # reduces the valid rows only
        flat[:] = pypto.reshape(x, [-1], inplace=True) + 1
        e[:] = pypto.expand_clone(x[0:1, :], [3, 8])
        u[:] = pypto.unsqueeze(x[:, 0], 1) + pypto.unsqueeze(x[0, :], 0)
        sq[:] = pypto.squeeze(x[:, 2:3], 1)
        t[:] = pypto.transpose(x, 0, 1)
        p[:] = pypto.permute(pypto.reshape(x, [n, 2, 4]), [2, 0, 1])
        c[:] = pypto.concat([x, x[:, 0:3]], 1)
        acc = pypto.tensor([3, 8], pdt)                     # zero-initialised local tensor
        acc[0:1, :] = x[0:1, :]
        acc[2, :] = pypto.full([8], 3, pdt)
        loc[:] = acc
        ones = pypto.full([2, 8], 1, pdt)
        keep = pypto.clone(ones)
        ones[:] = pypto.zeros([2, 8], pdt)                 # clone is a copy: keep still holds ones
        cl[:] = keep + ones
        aliased[:] = x
        a = pypto.reshape(aliased, [n * 8], inplace=True)  # a view: writing it writes `aliased`
        a[0:3] = pypto.full([3], 5, pdt)

    return k


@pytest.mark.parametrize("dt", ALL4)
def test_shape_ops(dt):
    k = _kernel(pypto.vocab.dtypes.from_torch(dt))
    for n in ROWS:
        x = rand((n, 8), dt, seed=n)
        outs = dict(tiled=(n, 8), flat=(n * 8,), e=(3, 8), u=(n, 8), sq=(n,), t=(8, n), p=(4, n, 2), c=(n, 11),
                    loc=(3, 8), cl=(2, 8), aliased=(n, 8), rowmax=(n, 1))
        got = {name: torch.full(s, 99, dtype=dt) for name, s in outs.items()}
        k(x, *got.values())
        acc = torch.zeros(3, 8, dtype=dt)
        acc[0] = x[0]
        acc[2] = 3
        aliased = x.clone().reshape(-1)
        aliased[0:3] = 5
        want = dict(tiled=x * 2, flat=x.reshape(-1) + 1, e=x[0:1].expand(3, 8), u=x[:, 0:1] + x[0:1, :],
                    sq=x[:, 2], t=x.t(), p=x.reshape(n, 2, 4).permute(2, 0, 1), c=torch.cat([x, x[:, 0:3]], 1),
                    loc=acc, cl=torch.ones(2, 8, dtype=dt), aliased=aliased.reshape(n, 8),
                    rowmax=x.amax(1, keepdim=True))
        for name in outs:
            assert torch.equal(got[name], want[name]), (n, name, got[name], want[name])


def test_reshape_copies_strided_input_and_inplace_refuses():
    @pypto.frontend.jit
    def k(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = pypto.reshape(pypto.transpose(x, 0, 1), [15])

    x = rand((3, 5), torch.float32, seed=1)
    out = torch.zeros(15)
    k(x, out)
    assert torch.equal(out, x.t().reshape(15))

    @pypto.frontend.jit
    def k_inplace_t(x: pypto.Tensor, out: pypto.Tensor):      # a transpose result: copied, as k above
        out[:] = pypto.reshape(pypto.transpose(x, 0, 1), [15], inplace=True)

    out = torch.zeros(15)
    k_inplace_t(x, out)
    assert torch.equal(out, x.t().reshape(15))

    @pypto.frontend.jit
    def k_inplace(x: pypto.Tensor, out: pypto.Tensor):        # a strided window: refused, as the reference
        out[:] = pypto.reshape(x[:, 1:4], [9], inplace=True)

    out = torch.full((9,), 4.0)
    with pytest.raises(KernelTraceError) as ei:
        k_inplace(x, out)
    msg = str(ei.value)
    assert "k_inplace" in msg and "reshape" in msg and "inplace=True needs a contiguous input" in msg
    assert torch.equal(out, torch.full((9,), 4.0))


def test_reshape_errors():
    @pypto.frontend.jit
    def k_count(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = pypto.reshape(x, [4, 4])

    x, out = torch.zeros(3, 5), torch.full((4, 4), 2.0)
    with pytest.raises(KernelTraceError, match=r"k_count': reshape: cannot reshape a tensor of shape \[3, 5\] "
                                               r"into \[4, 4\] \(element count differs\)"):
        k_count(x, out)
    assert torch.equal(out, torch.full((4, 4), 2.0))

    @pypto.frontend.jit
    def k_dyn(x: pypto.Tensor([D, 4], pypto.DT_FP32), out: pypto.Tensor([2, 6], pypto.DT_FP32)):
        out[:] = pypto.reshape(x, [2, 6], inplace=True)

    out = torch.full((2, 6), 2.0)
    k_dyn(torch.arange(12.0).reshape(3, 4), out)
    assert torch.equal(out, torch.arange(12.0).reshape(2, 6))
    out = torch.full((2, 6), 2.0)
    with pytest.raises(KernelRuntimeError, match=r"k_dyn': reshape: cannot reshape a tensor of shape \[.*, 4\] "
                                                 r"into \[2, 6\]"):
        k_dyn(torch.zeros(2, 4), out)
    assert torch.equal(out, torch.full((2, 6), 2.0))


def test_view_valid_shape_errors():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([D, 4], pypto.DT_FP32), out: pypto.Tensor([D, 4], pypto.DT_FP32)):
        n = x.shape[0]
        v = pypto.view(x, [2, 4], [0, 0], valid_shape=[n, 4])
        out[0:2, :] = v

    x, out = torch.zeros(3, 4), torch.full((3, 4), 1.0)
    with pytest.raises(KernelRuntimeError, match=r"kernel 'k': view: valid_shape .* of dim 0 exceeds the tile shape 2"):
        k(x, out)
    assert torch.equal(out, torch.full((3, 4), 1.0))

    @pypto.frontend.jit
    def k_rank(x: pypto.Tensor, out: pypto.Tensor):
        out[:] = pypto.view(x, [2, 4], [0, 0], valid_shape=[2])

    with pytest.raises(KernelTraceError, match=r"k_rank': view: valid_shape must have 2 entries, got \[2\]"):
        k_rank(torch.zeros(3, 4), torch.zeros(2, 4))


@pytest.mark.parametrize("dt", [torch.int32, torch.int64, torch.float32])
def test_arange_one_hot(dt):
    pdt = pypto.vocab.dtypes.from_torch(dt)

    @pypto.frontend.jit
    def k(x: pypto.Tensor([D], pypto.DT_INT32), r: pypto.Tensor([D], pdt), oh: pypto.Tensor([D, 7], pypto.DT_INT64)):
        r[:] = pypto.arange(3, 3 + x.shape[0], dtype=pdt)
        oh[:] = pypto.one_hot(x, 7)

    for n in (1, 7, 33):
        x = torch.randint(0, 7, (n,), dtype=torch.int32)
        r, oh = torch.zeros(n, dtype=dt), torch.zeros(n, 7, dtype=torch.int64)
        k(x, r, oh)
        assert torch.equal(r, torch.arange(3, 3 + n, dtype=dt))
        assert torch.equal(oh, torch.nn.functional.one_hot(x.long(), 7))


# ---- views, writes, shape ops, local tensors ---------------------------------------------------------------------

T = pypto.Tensor


def _rand(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-50, 51, shape, generator=g, dtype=dtype)


def test_slices_views_and_writes():
    x = _rand((10, 12), torch.float32, seed=6)

    @pypto.frontend.jit
    def k(x: T, out: T):
        out[:] = 0.0
        out[0:3, :] = x[7:10, :]                 # slice read + slice write
        out[3, 2:5] = x[0, 0:3] * 2.0            # int index drops a dim
        out[4:6, -2:] = x[..., -2:][0:2, :].transpose(0, 1)[0:2, 0:2]  # negative bounds, ellipsis
        t = pypto.view(x, [2, 4], [5, 6])
        pypto.assemble(t + 1.0, [6, 0], out)
        out[8:10, 0:12:3] = x[0:2, 1::3]         # steps
        out[9, :] += 100.0                       # in-place update through a view

    out = torch.zeros(10, 12)
    k(x, out)
    ref = torch.zeros(10, 12)
    ref[0:3, :] = x[7:10, :]
    ref[3, 2:5] = x[0, 0:3] * 2.0
    ref[4:6, -2:] = x[..., -2:][0:2, :].transpose(0, 1)[0:2, 0:2]
    ref[6:8, 0:4] = x[5:7, 6:10] + 1.0
    ref[8:10, 0:12:3] = x[0:2, 1::3]
    ref[9, :] += 100.0
    assert torch.equal(out, ref)


def test_reshape_transpose_unsqueeze_expand_concat_clone():
    x = _rand((4, 6), torch.float32, seed=7)
    y = _rand((4, 2), torch.float32, seed=8)

    @pypto.frontend.jit
    def k(x: T, y: T, r: T, t: T, u: T, e: T, c: T, cl: T):
        r[:] = pypto.reshape(x, [3, -1])
        t[:] = pypto.transpose(x, 0, 1)
        u[:] = pypto.unsqueeze(x[:, 0], 1) + pypto.unsqueeze(x[0, :], 0)
        e[:] = pypto.expand_clone(x[0:1, :], [3, 6])
        c[:] = pypto.concat([x, y, x[:, 0:1]], 1)
        cl[:] = pypto.reshape(pypto.transpose(x, 0, 1), [4, 6]).clone()

    outs = [torch.zeros(s) for s in ((3, 8), (6, 4), (4, 6), (3, 6), (4, 9), (4, 6))]
    k(x, y, *outs)
    refs = [x.reshape(3, -1), x.t(), x[:, 0:1] + x[0:1, :], x[0:1].expand(3, 6),
            torch.cat([x, y, x[:, 0:1]], 1), x.t().reshape(4, 6)]
    for o, r in zip(outs, refs):
        assert torch.equal(o, r)


def test_full_and_local_tensor():
    @pypto.frontend.jit
    def k(out: T, acc_out: T):
        out[:] = pypto.full([3, 5], 2.5, pypto.DT_FP32) * 2
        acc = pypto.tensor([2, 5], pypto.DT_FP32)
        for i in pypto.loop(3):
            acc[:] = acc + out[i:i + 1, :] * (i + 1)
        acc_out[:] = acc

    out, acc = torch.zeros(3, 5), torch.zeros(2, 5)
    k(out, acc)
    assert torch.equal(out, torch.full((3, 5), 5.0))
    assert torch.equal(acc, torch.full((2, 5), 30.0))


def test_arange_and_one_hot():
    @pypto.frontend.jit
    def k(x: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT32), r1: T, r2: pypto.Tensor([pypto.DYNAMIC], pypto.DT_INT64),
          oh: pypto.Tensor([pypto.DYNAMIC, 5], pypto.DT_INT64)):
        r1[:] = pypto.arange(0.5, 3.0, 0.25)
        r2[:] = pypto.arange(x.shape[0] - 1, -1, -1)
        oh[:] = pypto.one_hot(x, 5)

    x = torch.tensor([0, 4, 2, 2, 1, 3, 0], dtype=torch.int32)
    r1, r2, oh = torch.zeros(10), torch.zeros(7, dtype=torch.int64), torch.zeros(7, 5, dtype=torch.int64)
    k(x, r1, r2, oh)
    assert torch.equal(r1, torch.arange(0.5, 3.0, 0.25))
    assert torch.equal(r2, torch.arange(6, -1, -1))
    assert torch.equal(oh, torch.nn.functional.one_hot(x.long(), 5))


# ---- full(valid_shape=), sym.min / sym.max -----------------------------------------------------------------------


@pypto.frontend.jit
def relu_tiles(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), out: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
    n = x.shape[0]
    for i in pypto.loop(0, pypto.ceildiv(n, 4), 1):
        rows = (n - i * 4).min(4)  # the reference's spelling of pypto.min(n - i * 4, 4)
        tile = pypto.view(x, [4, 8], [i * 4, 0], valid_shape=[rows, 8])
        zero = pypto.full([4, 8], 0.0, F32, valid_shape=[rows, 8])
        out[i * 4:i * 4 + rows, :] = pypto.maximum(tile, zero)


@pypto.frontend.jit
def whole(x: pypto.Tensor([pypto.DYNAMIC, 8], F32), out: pypto.Tensor([pypto.DYNAMIC, 8], F32)):
    ones = pypto.full(x.shape, 1.0, F32, valid_shape=x.shape)  # a symbolic shape: the valid region is the tensor
    out[:] = x + ones * (x.shape[0].max(3))


def test_full_with_valid_shape_and_sym_min_match_torch():
    for n in (8, 10, 3):
        x = torch.randn(n, 8)
        out = torch.zeros(n, 8)
        relu_tiles(x, out)
        torch.testing.assert_close(out, torch.relu(x))


def test_full_with_a_symbolic_shape_and_sym_max():
    for n in (2, 5):
        x = torch.randn(n, 8)
        out = torch.zeros(n, 8)
        whole(x, out)
        torch.testing.assert_close(out, x + max(n, 3))


def test_full_valid_shape_rank_mismatch_is_refused():
    @pypto.frontend.jit
    def bad_full(x: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 8], F32)):
        out[:] = x + pypto.full([4, 8], 1.0, F32, valid_shape=[4])

    out = torch.full((4, 8), 2.0)
    with pytest.raises(KernelTraceError) as e:
        bad_full(torch.ones(4, 8), out)
    assert "bad_full" in str(e.value) and "valid_shape" in str(e.value) and "[4]" in str(e.value)
    torch.testing.assert_close(out, torch.full((4, 8), 2.0))


# ---- a write of a tile with a smaller valid_shape ----------------------------------------------------------------

@pypto.frontend.jit
def k_view_valid(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32), shape: list, offsets: list, valid_shape: list):
    pypto.set_vec_tile_shapes(*([8] * len(x.shape)))
    out[:] = pypto.view(x, shape, offsets, valid_shape=valid_shape)


@pypto.frontend.jit
def k_view_valid_expr(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
    t = pypto.view(x, [4, 8], [1, 0], valid_shape=[3, 5])
    out[:] = pypto.exp(t) * 2.0 + 1.0


def _ref_write(out, src):
    want = out.clone()
    want[tuple(slice(0, d) for d in src.shape)] = src
    return want


def test_reference_example_writes_the_valid_rows_and_leaves_the_rest():
    x = torch.tensor([[1, 1, 2, 2, 3, 3, 4, 4], [1, 1, 2, 2, 3, 3, 4, 4], [1, 1, 2, 2, 5, 5, 6, 6],
                      [1, 1, 2, 2, 5, 5, 6, 6]], dtype=torch.float32)
    out = torch.zeros(4, 4)
    k_view_valid(x, out, [4, 4], [2, 4], [2, 4])
    torch.testing.assert_close(out, _ref_write(torch.zeros(4, 4), x[2:4, 4:8]), rtol=0, atol=0)


@pytest.mark.parametrize("offsets,valid", [([0, 3], [5, 2]), ([2, 1], [1, 7]), ([1, 0], [6, 8])])
def test_valid_region_on_both_dims_keeps_the_prefilled_rest(offsets, valid):
    x = torch.randn(7, 9)
    out = torch.full((6, 8), -3.0)
    k_view_valid(x, out, [6, 8], offsets, valid)
    src = x[offsets[0]:offsets[0] + valid[0], offsets[1]:offsets[1] + valid[1]]
    torch.testing.assert_close(out, _ref_write(torch.full((6, 8), -3.0), src), rtol=0, atol=0)


def test_an_expression_of_a_valid_tile_writes_its_valid_region():
    x = torch.randn(5, 8)
    out = torch.full((4, 8), 9.0)
    k_view_valid_expr(x, out)
    src = torch.exp(x[1:4, 0:5]) * 2.0 + 1.0
    torch.testing.assert_close(out, _ref_write(torch.full((4, 8), 9.0), src), rtol=1e-6, atol=1e-6)


def test_a_plain_smaller_slice_is_still_a_shape_mismatch_and_outputs_stay():
    @pypto.frontend.jit
    def short_write(x: pypto.Tensor([], F32), out: pypto.Tensor([], F32)):
        out[:] = x[0:2, :]                 # a [2, 4] slice is a whole [2, 4] tile, not a [4, 4] tile

    out = torch.full((4, 4), 5.0)
    with pytest.raises(KernelTraceError) as e:
        short_write(torch.ones(4, 4), out)
    msg = str(e.value)
    assert "short_write" in msg and "shape mismatch" in msg and "[2, 4]" in msg and "[4, 4]" in msg, msg
    torch.testing.assert_close(out, torch.full((4, 4), 5.0), rtol=0, atol=0)


# ---- slice stops past the end clamp ------------------------------------------------------------------------------


@pypto.frontend.jit
def k_blocks(x: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
    n = x.shape[0]
    for i in pypto.loop(0, (n + 3) // 4):
        out[i * 4:(i + 1) * 4, :] = x[i * 4:(i + 1) * 4, :] * 3.0


@pytest.mark.parametrize("n", [4, 6, 9])
def test_symbolic_slice_stop_past_the_end_clamps(n):
    x, out = torch.randn(n, 16), torch.zeros(n, 16)
    k_blocks(x, out)
    assert torch.equal(out, x * 3)


def test_static_slice_stop_past_the_end_clamps():
    @pypto.frontend.jit
    def k_tail(x: pypto.Tensor([6, 16], F32), out: pypto.Tensor([2, 16], F32)):
        out[:] = x[4:100, :] * 3.0

    x, out = torch.randn(6, 16), torch.zeros(2, 16)
    k_tail(x, out)
    assert torch.equal(out, x[4:100] * 3)


def test_a_symbolic_stop_outside_a_loop_is_still_checked():
    @pypto.frontend.jit
    def k_bad_start(x: pypto.Tensor([D, 16], F32), out: pypto.Tensor([D, 16], F32)):
        n = x.shape[0]
        out[:] = x * 1.0
        out[0:1, :] = x[n + 1:n + 2, :]

    out = torch.full((3, 16), 2.0)
    _fails_untouched(KernelTraceError, lambda: k_bad_start(torch.ones(3, 16), out), out,
                     "kernel 'k_bad_start'", "getitem: slice stop (x.shape[0] + 2) exceeds dim 0 of size "
                                             "x.shape[0]")


# ---- an op's result is writable ----------------------------------------------------------------------------------

@pypto.frontend.jit
def k_write_result(a: pypto.Tensor([4, 16], F32), b: pypto.Tensor([4, 16], F32), out: pypto.Tensor([4, 16], F32)):
    t = pypto.add(a, b)
    t[1:2, :] = a[1:2, :] * 0.0
    t[:, 0:2] = 5.0
    out[:] = t * 2.0


def test_op_result_is_writable():
    a, b, out = torch.randn(4, 16), torch.randn(4, 16), torch.zeros(4, 16)
    k_write_result(a, b, out)
    ref = a + b
    ref[1] = 0
    ref[:, 0:2] = 5
    assert torch.equal(out, ref * 2)


def test_writing_an_op_result_leaves_its_operands_alone():
    @pypto.frontend.jit
    def k_keep(a: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 8], F32), out2: pypto.Tensor([4, 8], F32)):
        t = pypto.exp(a)
        u = t + 1.0
        t[:] = 0.0
        out[:] = u
        out2[:] = t + a

    a, out, out2 = torch.randn(4, 8), torch.zeros(4, 8), torch.zeros(4, 8)
    k_keep(a, out, out2)
    torch.testing.assert_close(out, torch.exp(a) + 1, rtol=1e-6, atol=1e-6)
    assert torch.equal(out2, a)


# ---- reshape(valid_shape=) of a padded view ----------------------------------------------------------------------

@pypto.frontend.jit
def k_reshape_valid(a: pypto.Tensor([D, 8], F32), out: pypto.Tensor([D, 2, 4], F32)):
    n = a.shape[0]
    v = pypto.view(a, [16, 8], [0, 0], valid_shape=[n, 8])
    r = pypto.reshape(v, [16, 2, 4], valid_shape=[n, 2, 4])
    out[:] = r * 1.0


@pytest.mark.parametrize("n", [1, 5, 16])
def test_reshape_with_valid_shape_reshapes_the_valid_data(n):
    a, out = torch.randn(n, 8), torch.zeros(n, 2, 4)
    k_reshape_valid(a, out)
    assert torch.equal(out, a.reshape(n, 2, 4))


# ---- a view past the tensor's end (the reference infers the valid shape) ---------------------------------------

@pypto.frontend.jit
def k_split_past_end(a: pypto.Tensor([16, 192], F32), b: pypto.Tensor([192, 32], F32),
                     out: pypto.Tensor([16, 32], F32), rows: pypto.Tensor([16, 192], F32)):
    acc = pypto.full([16, 32], 0.0, F32)
    for k0 in (0, 128):                                    # the second K tile, [.., 128], holds only 64
        av = pypto.view(a, [16, 128], [0, k0])
        bv = pypto.view(b, [128, 32], [k0, 0])
        acc = acc + pypto.matmul(av, bv, F32)
        pypto.assemble(av * 2.0, [0, k0], rows)            # writes only the valid 64 columns of the last tile
    out[:] = acc


def test_view_past_the_end_holds_the_remaining_elements():
    g = torch.Generator().manual_seed(11)
    a, b = torch.randn(16, 192, generator=g), torch.randn(192, 32, generator=g)
    out, rows = torch.zeros(16, 32), torch.full((16, 192), -3.0)
    k_split_past_end(a, b, out, rows)
    torch.testing.assert_close(out, a @ b, rtol=1e-5, atol=1e-4)
    assert torch.equal(rows, a * 2.0)


def test_view_starting_past_the_end_is_still_an_error():
    @pypto.frontend.jit
    def k_past(a: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 4], F32)):
        out[:] = pypto.view(a, [4, 4], [0, 9])

    out = torch.full((4, 4), 5.0)
    with pytest.raises(KernelTraceError, match=r"kernel 'k_past': view: dim 1: offset 9 \+ size 4 exceeds"):
        k_past(torch.zeros(4, 8), out)
    assert torch.equal(out, torch.full((4, 4), 5.0))


@pypto.frontend.jit
def k_loop_view_past_end(x: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16),
                         y: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16),
                         out: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP16)):
    rows, cols = x.shape
    for i in pypto.loop((rows + 63) // 64):
        for j in pypto.loop((cols + 63) // 64):                 # the last tiles hold rows % 64, cols % 64
            a = pypto.view(x, [64, 64], [i * 64, j * 64])
            b = pypto.view(y, [64, 64], [i * 64, j * 64])
            pypto.set_vec_tile_shapes(32, 32)
            pypto.assemble(a * b + a, [i * 64, j * 64], out)


@pytest.mark.parametrize("shape", [(72, 144), (64, 128), (5, 70)])
def test_view_moving_with_a_loop_past_the_end_holds_the_remaining_elements(shape):
    """A loop offset whose last tile runs past the end (64 * j over 144 columns): the tile's valid size is
    min(64, 144 - 64 * j), as the reference infers it (reference: test_verify_frontend_jit.py::test_verify_dyn)."""
    g = torch.Generator().manual_seed(5)
    x, y = torch.rand(*shape, generator=g).half(), torch.rand(*shape, generator=g).half()
    out = torch.full(shape, -1.0).half()
    k_loop_view_past_end(x, y, out)
    torch.testing.assert_close(out, x * y + x, rtol=1e-3, atol=1e-3)


def test_view_moving_with_a_loop_past_the_end_every_time_is_still_an_error():
    @pypto.frontend.jit
    def k_past_loop(a: pypto.Tensor([4, 8], F32), out: pypto.Tensor([4, 4], F32)):
        for j in pypto.loop(2):
            pypto.assemble(pypto.view(a, [4, 4], [0, j * 4 + 8]), [0, 0], out)   # starts at 8, 12 of 8

    out = torch.full((4, 4), 5.0)
    with pytest.raises((KernelTraceError, KernelRuntimeError), match=r"kernel 'k_past_loop': view: dim 1: offset "
                                                                     r"\(4\*\w+ \+ 8\) \+ size 4 exceeds"):
        k_past_loop(torch.zeros(4, 8), out)
    assert torch.equal(out, torch.full((4, 4), 5.0))


@pypto.frontend.jit
def k_inplace_of_transpose(x: pypto.Tensor([pypto.DYNAMIC, 4, 4], F32), out: pypto.Tensor([pypto.DYNAMIC, 4, 4], F32)):
    """The reference's mhc-sinkhorn idiom (ut/interpreter/test_mhc_sinkhorn.py): reshape(inplace=True) of a
    transposed row tile, whose transpose the reference computes into a new tensor."""
    t = x.shape[0]
    flat = pypto.reshape(x, [t, 16], inplace=True)
    for i in pypto.loop(0, (t + 7) // 8):
        rows = (t - i * 8).min(8)
        tile = pypto.transpose(pypto.view(flat, [8, 16], [i * 8, 0], valid_shape=[rows, 16]), 1, 0)
        cube = pypto.reshape(tile, [4, 4, rows], inplace=True)       # [j, k, row]
        cube = cube / pypto.sum(cube, 1, True)                    # over k
        back = pypto.transpose(pypto.reshape(cube, [16, rows]), 1, 0)
        out[i * 8:, :, :] = pypto.reshape(back, [rows, 4, 4])


@pytest.mark.parametrize("n", [8, 3, 19])
def test_reshape_inplace_of_a_transposed_tile_copies_it(n):
    x = torch.rand(n, 4, 4, generator=torch.Generator().manual_seed(n)) + 0.5
    out = torch.full((n, 4, 4), -1.0)
    k_inplace_of_transpose(x, out)
    torch.testing.assert_close(out, x / x.sum(2, keepdim=True), rtol=1e-6, atol=1e-6)
    assert torch.equal(x, torch.rand(n, 4, 4, generator=torch.Generator().manual_seed(n)) + 0.5)   # input intact
