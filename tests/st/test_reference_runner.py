"""The reference test runner's own rules (tests/st/run_reference_tests.py, a tool): which cases it lists as needing
NPU tooling, and the placement mapping it gives the processes a case starts itself. On a small suite written here."""
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("run_reference_tests", HERE / "run_reference_tests.py")
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)


def _suite(tmp_path, files: dict) -> dict:
    for rel, text in files.items():
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text))
    return {c["id"]: c for c in runner.list_cases(tmp_path)}


def test_npu_tooling_cases_are_listed_with_the_feature_and_only_while_they_name_it(tmp_path):
    cases = _suite(tmp_path, {
        "st/test_control_cores.py": """
            import pypto
            def read_prof():
                return open("out/tilefwk_L1_prof_data.json").read()
            def test_rts_device_control_cores():
                torch.npu.set_device_limit(0, 8, 16)
                pypto.frontend.jit
            def test_not_control_cores():
                read_prof()          # through a suite function
            def test_rts_renamed():
                pass                 # listed by its id, but names no core limit: run, not listed
        """,
        "st/test_other.py": """
            import pypto
            def test_plain():
                x = pypto.frontend.jit
                assert "merged_swimlane.json"   # not listed by hand: run
        """,
    })
    assert "core limits" in cases["st/test_control_cores.py::test_rts_device_control_cores"]["needs"]
    assert "tilefwk_L1_prof_data.json" in cases["st/test_control_cores.py::test_not_control_cores"]["needs"]
    assert cases["st/test_control_cores.py::test_rts_renamed"]["needs"] == ""
    assert cases["st/test_other.py::test_plain"]["needs"] == ""
    r = runner.run_case(tmp_path, cases["st/test_control_cores.py::test_not_control_cores"], 60)
    assert r["status"] == "npu_only" and r["secs"] == 0.0        # not run


def test_a_process_the_case_starts_gets_the_placement_mapping():
    code = textwrap.dedent("""
        import torch, torch_npu
        t = torch.ones(2).npu()
        m = torch.nn.Linear(2, 2).npu()
        print(t.device, next(m.parameters()).device, torch.zeros(2, device="npu:0").device)
        try:
            torch_npu.npu_format_cast
        except RuntimeError as e:
            print(e)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(HERE / "reference_child")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["cpu cpu cpu", "NPU-only torch_npu feature: torch_npu.npu_format_cast"]
    # without the runner's path, torch_npu does not exist (the hook is never on our own suite's path)
    plain = subprocess.run([sys.executable, "-c", "import torch_npu"], capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert plain.returncode != 0 and "torch_npu" in plain.stderr
