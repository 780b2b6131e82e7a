"""`python -m pypto.bench --kernels --sweep`: the op sweep covers every elementwise op and reduction it names at
both dtypes and shapes, its rows run (results checked against torch before timing) and the result records the ISA."""
import pypto
from pypto.bench import kernel_speed, op_sweep


def test_sweep_names_every_op_at_both_dtypes_and_shapes():
    names = [c[0] for c in op_sweep.cases()]
    assert len(names) == len(set(names))
    for op in list(op_sweep.UNARY) + list(op_sweep.BINARY) + list(op_sweep.REDUCE):
        for dt in ("fp32", "bf16"):
            for r, c in op_sweep.SHAPES:
                assert f"{op} {dt} {r}x{c}" in names
        assert hasattr(pypto, op)
    for m in op_sweep.MODEL:
        assert any(n.startswith(m) for n in names), m


def test_a_few_sweep_rows_run_and_record_the_isa():
    res = kernel_speed.run(rounds=1, threads=[1], say=lambda *_: None, sweep=True,
                           only=["tanh fp32 1023x1000", "amax bf16 1023x1000", "swiglu"])
    got = {r["kernel"] for r in res["rows"]}
    assert {"tanh fp32 1023x1000", "amax bf16 1023x1000", "swiglu bf16 4096x1024"} <= got
    assert all(r["pypto_ms"] > 0 and r["torch_ms"] > 0 and r["copy_ms"] > 0 for r in res["rows"])
    assert res["isa"]["kernel_isa"] in ("native", "avx2", "sse4") and "sse4.2" in res["isa"]["target_features"]
    assert 1 in res["geomean_sweep"]
