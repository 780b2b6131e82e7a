"""A newcomer's entry points: `.ci/run` leaves the checkout and its environment alone and cleans up; the export CLI
works from the repository root (dotted module or file), says what to do when a module is missing, and its --help
says its first line once; the quickstart explains its numbers."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXPORT = [sys.executable, "-m", "pypto.export"]


def _run(cmd, cwd, env=None, timeout=300):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_ci_run_works_in_a_copy_and_cleans_up(tmp_path):
    """A stand-in checkout whose README blocks create `.venv` where they run: the checkout's own `.venv` and files
    stay as they were, the blocks see the tracked and untracked files, and nothing is left in TMPDIR."""
    if shutil.which("git") is None:
        pytest.fail("git is needed to run .ci/run on a checkout")
    repo, tmp = tmp_path / "repo", tmp_path / "tmp"
    (repo / ".ci").mkdir(parents=True)
    tmp.mkdir()
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (repo / "README.md").write_text("# t\n\n```bash\nmkdir -p .venv && echo made > .venv/marker && ls untracked.txt\n"
                                    "```\n\nthen\n\n```bash\ncat .venv/marker && test ! -e .venv/keep\n```\n")
    (repo / ".gitignore").write_text(".venv/\n")
    (repo / ".venv").mkdir()
    (repo / ".venv" / "keep").write_text("the user's environment")
    (repo / "untracked.txt").write_text("not committed yet")
    assert _run(["git", "init", "-q"], repo).returncode == 0
    assert _run(["git", "add", "README.md", ".ci", ".gitignore"], repo).returncode == 0
    r = _run(["bash", ".ci/run"], repo, env=dict(os.environ, TMPDIR=str(tmp)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "made" in r.stdout
    assert sorted(p.name for p in (repo / ".venv").iterdir()) == ["keep"]      # the user's .venv untouched
    assert list(tmp.iterdir()) == []                                           # the copy was removed
    (repo / "README.md").write_text("```bash\nexit 3\n```\n```bash\ntrue\n```\n")
    r = _run(["bash", ".ci/run"], repo, env=dict(os.environ, TMPDIR=str(tmp)))
    assert r.returncode == 3 and list(tmp.iterdir()) == [], r.stdout + r.stderr   # cleaned up after a failure too


def test_export_cli_from_the_repository_root(tmp_path):
    example = ["--example", "(T(4, 4),) * 3"]
    for spec in ("examples.quickstart:scaled_add", "examples/quickstart.py:scaled_add"):
        out = tmp_path / spec.replace("/", "_").replace(":", "_")
        r = _run([*EXPORT, spec, "--out", str(out), *example], ROOT,
                 env=dict(os.environ, PYPTO_CACHE_DIR=str(tmp_path / "cache")))
        assert r.returncode == 0, r.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert [k["name"] for k in manifest["kernels"]] == ["scaled_add"], manifest


@pytest.mark.parametrize("spec, parts", [
    ("quickstart:scaled_add", ["cannot import module 'quickstart'", "examples.quickstart:scaled_add",
                               "examples/quickstart.py:scaled_add"]),
    ("examples.quickstart:nope", ["has no attribute 'nope'", "scaled_add"]),
    ("examples/nope.py:k", ["no file 'examples/nope.py'"]),
])
def test_export_cli_says_what_to_do_when_the_kernel_is_not_found(spec, parts, tmp_path):
    r = _run([*EXPORT, spec, "--out", str(tmp_path / "b"), "--example", "(T(4, 4),) * 3"], ROOT)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    for p in parts:
        assert p in r.stderr, r.stderr
    assert not (tmp_path / "b").exists()


def test_export_help_says_its_first_line_once():
    r = _run([*EXPORT, "--help"], ROOT)
    assert r.returncode == 0, r.stderr
    first = "write an AOT bundle."
    assert r.stdout.count(first) == 1, r.stdout
    assert "--examples-from" in r.stdout and "examples.quickstart:scaled_add" in r.stdout


def test_quickstart_explains_its_first_call_and_hit_figures(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_TORCH_READER_WAIT"}  # as a user runs it
    r = _run([sys.executable, "examples/quickstart.py"], ROOT, env=dict(env, PYPTO_CACHE_DIR=str(tmp_path)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "matches torch: False" not in r.stdout
    assert "for this kernel (trace + C++ + g++" in r.stdout and "one-off setup (loading the fast torch tensor " \
        "reader; on an empty cache it is compiled in the background" in r.stdout, r.stdout
    assert "as the bench times it" in r.stdout, r.stdout
