"""Builds and runs the manifest fuzzer (tests/cpp/fuzz_manifest.cpp) — libFuzzer when clang++ has it, else the
seeded mutator tests/cpp/fuzz_driver.cpp under g++ — always with ASan and UBSan, against a bundle exported here.

The suite runs it for a few seconds (test_fuzz_manifest.py); the long run is a command (docs/security.md):

    nice -n 15 python tests/ut/security/_fuzzing.py --seconds 600
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
REGRESSIONS = ROOT / "tests" / "cpp" / "fuzz_regressions"
SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]


def _clang() -> str | None:
    """clang++ when it can link -fsanitize=fuzzer here, else None."""
    for cxx in ("clang++", "clang++-14", "clang++-15", "clang++-16"):
        exe = shutil.which(cxx)
        if not exe:
            continue
        with tempfile.TemporaryDirectory() as d:
            src = Path(d) / "t.cpp"
            src.write_text('#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput('
                           'const uint8_t*, size_t) { return 0; }\n')
            r = subprocess.run([exe, "-fsanitize=fuzzer", str(src), "-o", str(Path(d) / "t")], capture_output=True)
            if r.returncode == 0:
                return exe
    return None


def build(engine: str | None = None) -> tuple[Path, str]:
    """(the fuzzer binary, 'libfuzzer' or 'mutator'); cached by content in $TMPDIR."""
    import pypto

    clang = _clang() if engine in (None, "libfuzzer") else None
    if engine == "libfuzzer" and clang is None:
        raise RuntimeError("no clang++ with -fsanitize=fuzzer here (apt-get install clang libclang-rt-dev)")
    kind = "libfuzzer" if clang else "mutator"
    cxx = clang or os.environ.get("CXX", "g++")
    nlohmann = Path(importlib.util.find_spec("nlohmann_json").submodule_search_locations[0]) / "include"
    sources = [ROOT / "tests/cpp/fuzz_manifest.cpp", *sorted((ROOT / "src/runtime").glob("*.cpp")),
               *sorted((ROOT / "src/core").glob("*.cpp"))]
    if kind == "mutator":
        sources.append(ROOT / "tests/cpp/fuzz_driver.cpp")
    headers = [*(ROOT / "src").rglob("*.h"), *(ROOT / "include/pypto").glob("*.h")]
    flags = ["-std=c++17", "-O1", "-g", *SAN, f"-I{ROOT / 'src'}", f"-I{ROOT / 'include'}", f"-isystem{nlohmann}",
             f'-DPYPTO_VERSION="{pypto.__version__}"']
    if kind == "libfuzzer":
        flags[3] = "-fsanitize=fuzzer,address,undefined"
    h = hashlib.sha256((cxx + " ".join(flags)).encode())
    for p in sorted(sources) + sorted(headers):
        h.update(p.read_bytes())
    out = Path(tempfile.gettempdir()) / f"pypto-fuzz-{os.getuid()}" / h.hexdigest()[:20] / "fuzz_manifest"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"fuzz_manifest.{os.getpid()}.tmp")
        r = subprocess.run([cxx, *flags, *map(str, sources), "-ldl", "-pthread", "-o", str(tmp)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"building the fuzzer failed:\n{r.stderr[-4000:]}")
        os.replace(tmp, out)
    return out, kind


def make_bundle(directory: Path) -> Path:
    """The embedding tests' bundle (four kernels, real libraries), exported into `directory`."""
    sys.path.insert(0, str(ROOT / "tests" / "ut"))
    from embed._bundle import export_test_bundle

    export_test_bundle(directory)
    return directory


def run(binary: Path, kind: str, bundle: Path, seconds: float, seed: int = 1, runs: int | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess:
    """Fuzz for `seconds` (or `runs` inputs) from the bundle's manifest and the regression inputs as seeds."""
    seeds = [bundle / "seed_manifest.json", *sorted(REGRESSIONS.glob("*.json"))]
    if not seeds[0].exists():
        shutil.copy(bundle / "manifest.json", seeds[0])
    env = dict(os.environ, PYPTO_FUZZ_BUNDLE=str(bundle), ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    if kind == "libfuzzer":
        corpus = bundle / "corpus"
        corpus.mkdir(exist_ok=True)
        seed_dir = bundle / "seeds"
        seed_dir.mkdir(exist_ok=True)
        for s in seeds:
            shutil.copy(s, seed_dir / s.name)
        cmd = [str(binary), f"-seed={seed}", "-max_len=262144", f"-artifact_prefix={bundle}/",
               "-print_final_stats=1", str(corpus), str(seed_dir)]
        cmd.insert(1, f"-runs={runs}" if runs is not None else f"-max_total_time={int(seconds)}")
    else:
        cmd = [str(binary), "--seed", str(seed), *(["--runs", str(runs)] if runs is not None else
                                                   ["--seconds", str(seconds)]), *map(str, seeds)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout or seconds * 3 + 120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--engine", choices=["libfuzzer", "mutator"], default=None)
    a = ap.parse_args()
    binary, kind = build(a.engine)
    with tempfile.TemporaryDirectory(prefix="pypto-fuzz-") as d:
        bundle = make_bundle(Path(d) / "bundle")
        print(f"fuzzing {binary} ({kind}) for {a.seconds:g} s, seed {a.seed}", flush=True)
        r = run(binary, kind, bundle, a.seconds, a.seed)
        print(r.stdout[-3000:])
        print(r.stderr[-6000:], file=sys.stderr)
        if r.returncode != 0:
            crash = Path(d) / "bundle" / "manifest.json"
            keep = Path(tempfile.gettempdir()) / f"pypto-fuzz-finding-{os.getpid()}.json"
            if crash.exists():
                shutil.copy(crash, keep)
                print(f"FINDING: exit {r.returncode}; the input is saved at {keep}", file=sys.stderr)
        sys.exit(r.returncode)


if __name__ == "__main__":
    main()
