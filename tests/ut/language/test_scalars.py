"""Scalars inside a kernel: builtin min/max/abs on symbolic scalars mean pypto.min/max/abs; pypto.ceildiv; an
integer tensor's element is a runtime scalar (loop bound, offset, size, `if` condition), read on each
iteration and checked against the tensor — the verify interpreter agrees."""
import pytest
import torch

import pypto
from pypto.errors import KernelTraceError

from callpath._util import fails_untouched as _fails_untouched

TILE = 8


@pypto.frontend.jit
def rows_double(x: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32),
                out: pypto.Tensor([pypto.DYNAMIC, 16], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(TILE, 16)
    n = x.shape[0]
    for i in pypto.loop(pypto.ceildiv(n, TILE)):
        rows = min(TILE, n - i * TILE)            # builtin min on a symbolic scalar
        v = pypto.view(x, [TILE, 16], [i * TILE, 0], valid_shape=[rows, 16])
        pypto.assemble(v * 2.0, [i * TILE, 0], out)


@pytest.mark.parametrize("n", [1, 8, 13, 24])
def test_builtin_min_in_tail_tile(n):
    x = torch.randn(n, 16)
    out = torch.zeros(n, 16)
    rows_double(x, out)
    assert torch.equal(out, x * 2.0)
    assert rows_double.cache_info()["specializations"] == 1


@pypto.frontend.jit
def scaled_by_gap(x: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32), y: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32),
                  out: pypto.Tensor([1], pypto.DT_FP32)):
    gap = abs(x.shape[0] - y.shape[0])            # builtin abs on a symbolic int
    top = max(x.shape[0], y.shape[0], 3)          # builtin max, three arguments
    out[:] = pypto.full([1], 1.0, pypto.DT_FP32) * (gap * 100 + top)
    plain = min([4, 2, 9])                        # plain Python min still works on concrete values
    assert plain == 2 and max(range(3)) == 2 and min([], default=5) == 5


@pytest.mark.parametrize("n,m", [(5, 2), (2, 5), (4, 4), (1, 9)])
def test_builtin_abs_and_max(n, m):
    out = torch.zeros(1)
    scaled_by_gap(torch.ones(n), torch.ones(m), out)
    assert out.item() == abs(n - m) * 100 + max(n, m, 3)


def test_ceildiv_concrete_and_errors():
    assert [pypto.ceildiv(a, 4) for a in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]
    with pytest.raises(TypeError, match="pypto.ceildiv expects ints"):
        pypto.ceildiv(1.5, 2)


def test_module_global_min_is_respected():
    import types
    mod = types.ModuleType("user_mod")
    exec("import pypto\n"
         "def min(*a):\n    return 3\n"
         "@pypto.frontend.jit\n"
         "def k(a: pypto.Tensor([4], pypto.DT_FP32), out: pypto.Tensor([4], pypto.DT_FP32)):\n"
         "    out[:] = a * min(1, 2)\n", mod.__dict__)
    # no source for exec'd code -> the kernel runs unrewritten; the user's own `min` wins either way
    a, out = torch.ones(4), torch.zeros(4)
    mod.k(a, out)
    assert torch.equal(out, a * 3)


def test_get_tile_shapes_inside_and_after_a_kernel():
    seen = {}

    @pypto.frontend.jit
    def k_tiles(a: pypto.Tensor([16, 16], pypto.DT_FP32), out: pypto.Tensor([16, 16], pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(8, 4)
        pypto.set_cube_tile_shapes([16, 16], [16, 32], [16, 16])
        seen["vec"], seen["cube"] = pypto.get_vec_tile_shapes(), pypto.get_cube_tile_shapes()
        out[:] = a + 1.0
    a, out = torch.randn(16, 16), torch.zeros(16, 16)
    k_tiles(a, out)
    assert torch.equal(out, a + 1.0)
    assert seen["vec"] == [8, 4] and seen["cube"] == ([16, 16], [16, 32], [16, 16], False)
    assert pypto.get_vec_tile_shapes() == [8, 4]          # read back after the call, as the reference's tests do
    assert pypto.get_cube_tile_shapes() == ([16, 16], [16, 32], [16, 16], False)


# ---- t[i] of an integer tensor is a runtime scalar ---------------------------------------------------------------

F32, D = pypto.DT_FP32, pypto.DYNAMIC


@pypto.frontend.jit
def k_counts(cnt: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([8, 16], F32), out: pypto.Tensor([8, 16], F32)):
    n = cnt[0]
    off = cnt[1]
    assert isinstance(n, pypto.SymbolicScalar)
    for i in pypto.loop(n):                               # a loop bound
        out[i:i + 1, :] = x[off + i:off + i + 1, :] * 2.0  # an offset
    if cnt[2] > 0:                                        # an `if` condition
        out[7:8, :] = x[0:1, :] + 100.0
    else:
        out[7:8, :] = x[0:1, :] - 100.0


@pytest.mark.parametrize("n,off,flag", [(3, 2, 1), (0, 0, 0), (5, 3, -4)])
def test_element_of_an_int_tensor_is_a_loop_bound_offset_and_condition(n, off, flag):
    cnt = torch.tensor([n, off, flag, 0], dtype=torch.int32)
    x, out = torch.randn(8, 16), torch.zeros(8, 16)
    k_counts(cnt, x, out)
    ref = torch.zeros(8, 16)
    ref[0:n] = x[off:off + n] * 2
    ref[7] = x[0] + 100 if flag > 0 else x[0] - 100
    assert torch.equal(out, ref)


@pypto.frontend.jit
def k_seq_lens(lens: pypto.Tensor([2, 3], pypto.DT_INT64), x: pypto.Tensor([D, 16], F32),
               out: pypto.Tensor([D, 16], F32), b: int, j: int):
    n = lens[b, j]
    rows = (n - 1).max(1)                                  # the reference's idiom on the scalar
    v = pypto.view(x, [8, 16], [0, 0], valid_shape=[rows, 16])   # a size
    out[:] = x * 0.0
    pypto.assemble(v + 1.0, [0, 0], out)


def test_two_index_element_read_gives_a_size():
    lens = torch.tensor([[0, 0, 0], [0, 0, 6]])
    x, out = torch.randn(8, 16), torch.full((8, 16), 3.0)
    k_seq_lens(lens, x, out, 1, 2)
    ref = torch.zeros(8, 16)
    ref[:5] = x[:5] + 1
    assert torch.equal(out, ref)


def test_element_read_inside_a_loop_reads_each_iteration():
    @pypto.frontend.jit
    def k_ragged(starts: pypto.Tensor([4], pypto.DT_INT64), x: pypto.Tensor([4, 8], F32),
                 out: pypto.Tensor([4, 8], F32)):
        out[:] = x * 0.0
        for r in pypto.loop(4):
            s = starts[r]
            out[r:r + 1, s:8] = x[r:r + 1, s:8]

    starts = torch.tensor([0, 3, 8, 5])
    x, out = torch.randn(4, 8), torch.zeros(4, 8)
    k_ragged(starts, x, out)
    ref = torch.zeros(4, 8)
    for r, s in enumerate(starts.tolist()):
        ref[r, s:] = x[r, s:]
    assert torch.equal(out, ref)


def test_element_read_out_of_range_fails_and_writes_nothing():
    @pypto.frontend.jit
    def k_oob(cnt: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([8, 16], F32), out: pypto.Tensor([8, 16], F32),
              i: int):
        n = cnt[i]
        out[:] = x * 0.0
        out[0:n, :] = x[0:n, :]

    out = torch.full((8, 16), 4.0)
    _fails_untouched(KernelTraceError, lambda: k_oob(torch.ones(4, dtype=torch.int32), torch.ones(8, 16), out, 4),
                     out, "kernel 'k_oob'", "getitem")


def test_element_of_a_float_tensor_stays_a_tensor():
    @pypto.frontend.jit
    def k_float_elem(x: pypto.Tensor([4], F32), out: pypto.Tensor([4], F32)):
        out[:] = x * x[2]

    x, out = torch.randn(4), torch.zeros(4)
    k_float_elem(x, out)
    assert torch.equal(out, x * x[2])


# ---- the verify interpreter runs the same semantics --------------------------------------------------------------

def _verified_body(cnt: pypto.Tensor([4], pypto.DT_INT32), x: pypto.Tensor([D, 8], F32), idx: pypto.Tensor([D, 3],
                   pypto.DT_INT64), out: pypto.Tensor([D, 8], F32)):
    n = x.shape[0]
    t = pypto.scatter(x, 1, idx, x[:, 0:3], reduce="add")
    t[0:1, :] = 0.0                                       # an op result written
    if cnt[0] > 1:                                        # an element read as a condition
        y = t * 2.0
    else:
        y = t - 1.0                                       # merged after the if
    for i in pypto.loop(0, (n + 2) // 3):
        out[i * 3:(i + 1) * 3, :] = y[i * 3:(i + 1) * 3, :]   # the last block clamps


@pytest.mark.parametrize("flag,n", [(2, 7), (0, 6)])
def test_the_verify_interpreter_agrees(flag, n):
    k = pypto.frontend.jit(_verified_body, verify_options={"enable_pass_verify": True})
    g = torch.Generator().manual_seed(n)
    cnt, x = torch.tensor([flag, 0, 0, 0], dtype=torch.int32), torch.randn(n, 8, generator=g)
    idx = torch.randint(0, 8, (n, 3), generator=g)
    out = torch.zeros(n, 8)
    k(cnt, x, idx, out)
    t = x.scatter_reduce(1, idx, x[:, 0:3], "sum", include_self=True)
    t[0] = 0
    assert torch.equal(out, t * 2 if flag > 1 else t - 1)
    assert [(r.stage, r.status) for r in k.last_verify] == [("TENSOR_GRAPH", "ok"), ("CODEGEN_BINARY", "ok")]
