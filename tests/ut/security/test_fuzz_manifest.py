"""The bundle manifest parser under a fuzzer (tests/cpp/fuzz_manifest.cpp, ASan + UBSan): a short budget in the
suite, from the exported test bundle's manifest and the saved regression inputs; the ten-minute run is
`nice -n 15 python tests/ut/security/_fuzzing.py --seconds 600` (docs/security.md)."""
from __future__ import annotations

import shutil

import pytest

import _fuzzing


@pytest.fixture(scope="module")
def fuzzer():
    if not shutil.which("g++") and _fuzzing._clang() is None:
        pytest.fail("no C++ compiler to build the fuzzer")
    return _fuzzing.build()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return _fuzzing.make_bundle(tmp_path_factory.mktemp("fuzz") / "bundle")


def test_regression_inputs_and_a_short_fuzzing_run_find_nothing(fuzzer, bundle):
    binary, kind = fuzzer
    r = _fuzzing.run(binary, kind, bundle, seconds=15, seed=20261206, timeout=600)
    assert r.returncode == 0, f"the fuzzer found a problem ({kind}); input in {bundle}/manifest.json:\n" \
                              f"{r.stdout[-2000:]}\n{r.stderr[-6000:]}"
    if kind == "mutator":
        assert "no finding" in r.stdout, r.stdout
        ran = int(r.stdout.split("fuzz_driver: ")[1].split()[0])
    else:
        ran = int(r.stderr.split("stat::number_of_executed_units:")[1].split()[0])
    assert ran >= 50, f"only {ran} inputs ran"
    assert "runtime error" not in r.stderr and "AddressSanitizer" not in r.stderr
