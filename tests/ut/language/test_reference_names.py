"""The reference namespace's names that were missing: each with the reference's meaning (against torch for the
ops), or a 'not supported yet' error naming it."""
import logging

import pytest
import torch

import pypto
from pypto.errors import FeError, UnsupportedFeatureError


@pypto.frontend.jit
def sign_ops(a: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
             b: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
             cs: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_FP32),
             gt: pypto.Tensor([pypto.STATIC, pypto.STATIC], pypto.DT_BOOL)):
    pypto.set_vec_tile_shapes(8, 8)
    cs[:] = pypto.copysign(a, b)
    gt[:] = pypto.greater(a, b)


def test_copysign_and_greater_match_torch():
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(5, 9, generator=g), torch.randn(5, 9, generator=g)
    a[0, :4] = torch.tensor([0.0, -0.0, float("inf"), -2.0])
    b[0, :4] = torch.tensor([-0.0, 0.0, -1.0, float("inf")])
    cs, gt = torch.zeros(5, 9), torch.zeros(5, 9, dtype=torch.bool)
    sign_ops(a, b, cs, gt)
    want = torch.copysign(a, b)
    assert torch.equal(cs, want) and torch.equal(torch.signbit(cs), torch.signbit(want))
    assert torch.equal(gt, torch.gt(a, b))


def test_copysign_refuses_integers():
    @pypto.frontend.jit
    def cs_int(a: pypto.Tensor([4], pypto.DT_INT32), out: pypto.Tensor([4], pypto.DT_INT32)):
        out[:] = pypto.copysign(a, a)

    out = torch.full((4,), 5, dtype=torch.int32)
    with pytest.raises(FeError, match=r"kernel 'cs_int': copysign: input must be a float tensor, got int32"):
        cs_int(torch.arange(4, dtype=torch.int32), out)
    assert torch.equal(out, torch.full((4,), 5, dtype=torch.int32))


def test_logging_api(caplog):
    assert [int(v) for v in pypto.LogLevel] == list(range(7))
    before = pypto.get_log_level()
    try:
        pypto.set_log_level(pypto.LogLevel.INFO)
        assert pypto.get_log_level() is pypto.LogLevel.INFO
        with caplog.at_level(logging.DEBUG, logger="pypto"):
            pypto.log_debug("dropped")
            pypto.log_info("kept info")
            pypto.log_error("kept error")
        assert [r.getMessage() for r in caplog.records] == ["kept info", "kept error"]
        with pytest.raises(TypeError, match="set_log_level: expected a pypto.LogLevel, got 'x'"):
            pypto.set_log_level("x")
    finally:
        pypto.set_log_level(before)
    pypto.check(True, "fine")
    with pytest.raises(ValueError, match="^width must be > 0$"):
        pypto.check(False, "width must be > 0")
    with pytest.raises(pypto.InternalError, match="^broken invariant$"):
        pypto.internal_check(False, "broken invariant")
    with pytest.raises(KeyError):
        pypto.raise_error("KeyError", "k")
    with pytest.raises(ValueError, match="unknown error type 'Nope'"):
        pypto.raise_error("Nope", "m")


def test_config_names():
    pypto.set_print_options(edgeitems=2, precision=6, threshold=100, linewidth=80)
    assert pypto.get_print_options() == {"edgeitems": 2, "precision": 6, "threshold": 100, "linewidth": 80}
    with pytest.raises(FeError, match="precision must be an int >= 0, got -1"):
        pypto.set_print_options(precision=-1)
    pypto.set_global_config("simulation.accuracy_level", 2)
    assert pypto.get_global_config("simulation.accuracy_level") == 2
    with pytest.raises(KeyError, match="never.set"):
        pypto.get_global_config("never.set")
    t = pypto.CubeTile([16, 32], [64, 128], [16, 32])
    assert t.k == [64, 128, 128] and t.enable_split_k is False
    with pytest.raises(FeError, match=r"CubeTile: m must be a list of 2 ints > 0, got \[16\]"):
        pypto.CubeTile([16], [64, 128], [16, 32])
    l1 = pypto.TileL1Info(tileHin=1, tileHout=1, tileWin=16, tileWout=16, tileCinFmap=16, tileCinWeight=16,
                          tileN=16, tileBatch=1)
    l0 = pypto.TileL0Info(tileH=1, tileW=16, tileK=16, tileN=16)
    ct = pypto.ConvTile(l1, l0, True)
    assert ct.tile_l1_info is l1 and ct.tile_l0_info is l0 and ct.set_l0_tile
    with pytest.raises(FeError, match="ConvTile: expected"):
        pypto.ConvTile(l0, l1)


def test_enums_and_aliases():
    assert [m.name for m in pypto.AtomicRMWMode] == ["ADD", "MAX", "MIN"]
    assert [m.name for m in pypto.SatStatus] == ["SAT", "UNSAT", "UNKNOWN"]
    assert pypto.StatusType.DYNAMIC is pypto.DYNAMIC and pypto.StatusType.STATIC is pypto.STATIC
    assert pypto.StatusType.DYN is pypto.DYN
    assert pypto.element is pypto.Element


@pytest.mark.parametrize("call,name", [
    (lambda: pypto.sort32(None), "pypto.sort32"), (lambda: pypto.mrgsort(None, 32), "pypto.mrgsort"),
    (lambda: pypto.ConvParams(), "pypto.ConvParams"), (lambda: pypto.Function(), "pypto.Function"),
    (pypto.get_last_function, "pypto.get_last_function"),
    (pypto.get_current_function, "pypto.get_current_function"), (lambda: pypto.ConfigScope(), "pypto.ConfigScope"),
    (pypto.get_current_scope, "pypto.get_current_scope"), (pypto.get_options_tree, "pypto.get_options_tree")])
def test_not_supported_yet_names(call, name):
    with pytest.raises(UnsupportedFeatureError, match=rf"^{name} .*is not supported yet"):
        call()


def test_verify_error_is_exported_as_in_the_reference():
    # the reference's namespace carries it (star-imported from its operation modules); it is pypto.error's class
    assert pypto.VerifyError is pypto.error.VerifyError
    assert issubclass(pypto.VerifyError, pypto.error.PyptoGeneralError)
