"""Inside a kernel, builtin min/max/abs on symbolic scalars mean pypto.min/max/abs; pypto.ceildiv."""
import pytest
import torch

import pypto

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
