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


def test_sweep_table_puts_both_isas_side_by_side():
    from pypto.bench.docs import sweep_table

    def run(isa, r):
        return {"isa": {"kernel_isa": isa, "target_features": "avx2 fma", "torch_cpu_capability": "AVX2"},
                "threads": [1], "geomean_sweep": {"1": r}, "geomean_five": {"1": 0.8},
                "rows": [{"kernel": "tanh fp32 4096x1024", "threads": 1, "ratio": r},
                         {"kernel": "sin fp32 4096x1024", "threads": 1, "ratio": 3.0}]}

    lines = sweep_table([run("native", 0.5), run("avx2", 0.7)])
    assert lines[0] == "| kernel | native 1T | avx2 1T |"
    assert "| tanh fp32 4096x1024 | 0.50x | 0.70x |" in lines and "| sin fp32 4096x1024 | 3.00x | 3.00x |" in lines
    assert any(ln.startswith("- avx2") and "sweep geomean 0.70x" in ln and "1 of 2 rows above 1.25x" in ln
               and "worst sin fp32 4096x1024 3.00x" in ln for ln in lines)


def test_sweep_summary_names_onednn_cap_only_when_set():
    """The summary line says when torch's oneDNN (its bf16 matmul) was capped, and says nothing when it was not."""
    from pypto.bench.docs import sweep_table

    def run(isa, cap):
        rec = {"kernel_isa": isa, "target_features": "avx2 fma", "torch_cpu_capability": "AVX2"}
        if cap:
            rec["torch_onednn_max_isa"] = cap
        return {"isa": rec, "threads": [1], "geomean_sweep": {"1": 0.7}, "geomean_five": {"1": 0.8},
                "rows": [{"kernel": "matmul bf16 1024^3", "threads": 1, "ratio": 0.1}]}

    lines = sweep_table([run("native", None), run("avx2", "AVX2")])
    native = next(ln for ln in lines if ln.startswith("- native"))
    avx2 = next(ln for ln in lines if ln.startswith("- avx2"))
    assert "oneDNN" not in native and "torch AVX2, oneDNN capped at AVX2)" in avx2


def test_isa_record_reads_onednn_cap(monkeypatch):
    from pypto.bench import kernel_speed

    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert kernel_speed.isa_record()["torch_onednn_max_isa"] == "AVX2"
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    assert kernel_speed.isa_record()["torch_onednn_max_isa"] == "unset"


def test_sweep_table_takes_each_columns_summary_from_its_own_run():
    """One run per ISA and thread count (1 thread in CPU time, 2 in wall time): each column's summary line is its
    own run's geomean."""
    from pypto.bench.docs import sweep_table

    def run(nt, r):
        return {"isa": {"kernel_isa": "native", "target_features": "avx2 fma", "torch_cpu_capability": "AVX2"},
                "threads": [nt], "geomean_sweep": {str(nt): r}, "geomean_five": {str(nt): 0.8},
                "rows": [{"kernel": "tanh fp32 4096x1024", "threads": nt, "ratio": r}]}

    lines = sweep_table([run(1, 0.5), run(2, 0.9)])
    assert lines[0] == "| kernel | native 1T | native 2T |"
    assert any(ln.startswith("- native") and "1 thread(s): sweep geomean 0.50x" in ln for ln in lines)
    assert any(ln.startswith("- native") and "2 thread(s): sweep geomean 0.90x" in ln for ln in lines)
