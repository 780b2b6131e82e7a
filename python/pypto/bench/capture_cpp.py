"""The capture set's C++ figure: the bench step exported (`g.export`) and run by `pypto::runtime::Sequence` from a
small C++ driver, compiled once per cache directory against the installed runtime (needs g++; skipped with a
reason otherwise). The driver loads fp32 buffers from a file, runs the step once (its result is checked against
the Python replay), then times `Sequence::run` in 7 loops and reports the median ns per step."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

DRIVER = r"""
#include <pypto/runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>
using namespace pypto::runtime;
int main(int argc, char** argv) {
  if (argc != 5) return 2;
  Bundle b;
  Status s = Bundle::open(argv[1], &b);
  const Sequence* seq = nullptr;
  if (s.ok()) s = b.sequence(argv[2], &seq);
  if (!s.ok()) { std::printf("{\"error\": \"%s\"}\n", s.to_string().c_str()); return 0; }
  std::vector<std::vector<float>> mem;
  std::vector<TensorRef> refs;
  std::ifstream in(argv[3], std::ios::binary);
  for (const BufferInfo& bi : seq->buffers()) {
    if (bi.dtype != PYPTO_DT_FP32) { std::printf("{\"error\": \"fp32 buffers only\"}\n"); return 0; }
    size_t n = 1;
    for (int64_t d : bi.shape) n *= size_t(d);
    mem.emplace_back(n);
    in.read(reinterpret_cast<char*>(mem.back().data()), std::streamsize(n * 4));
  }
  for (size_t i = 0; i < mem.size(); ++i)
    refs.push_back(TensorRef{mem[i].data(), seq->buffers()[i].shape.data(),
                             int32_t(seq->buffers()[i].shape.size()), PYPTO_DT_FP32, nullptr});
  std::vector<Arg> args(refs.begin(), refs.end());
  s = seq->run(args.data(), args.size());
  if (!s.ok()) { std::printf("{\"error\": \"%s\"}\n", s.to_string().c_str()); return 0; }
  std::ofstream out(argv[3], std::ios::binary | std::ios::trunc);
  for (auto& m : mem) out.write(reinterpret_cast<const char*>(m.data()), std::streamsize(m.size() * 4));
  out.close();
  const int rounds = std::atoi(argv[4]);
  std::vector<double> loops;
  for (int l = 0; l < 7; ++l) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < rounds; ++r) (void)seq->run(args.data(), args.size());
    loops.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / rounds);
  }
  std::sort(loops.begin(), loops.end());
  std::printf("{\"ns_per_run\": %.1f}\n", loops[3]);
}
"""


def _driver() -> Path:
    from ..native import core as _core
    from ..compiler import toolchain
    from ..compiler.cache import cache_dir

    root = Path(_core.__file__).resolve().parent  # the installed package: lib/ and include/
    lib = root / "lib"
    h = hashlib.sha256(DRIVER.encode() + (lib / "libpypto_runtime.so").read_bytes()).hexdigest()[:16]
    exe = Path(cache_dir()) / "bench" / f"capture_driver-{h}"
    if not exe.exists():
        exe.parent.mkdir(parents=True, exist_ok=True)
        src = exe.with_suffix(".cpp")
        src.write_text(DRIVER)
        tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
        subprocess.run([toolchain.CXX, "-std=c++17", "-O2", "-o", str(tmp), str(src), "-I", str(root / "include"),
                        "-L", str(lib), "-lpypto_runtime", f"-Wl,-rpath,{lib}"], check=True, capture_output=True,
                       timeout=300)
        os.replace(tmp, exe)
    return exe


def cpp_step_ns(graph, expected: list, rounds: int) -> dict:
    """{"ns": median ns per Sequence::run} or {"skipped": why}; the C++ result must equal `expected` (the
    captured tensors after one Python replay from the same inputs)."""
    import numpy as np

    try:
        exe = _driver()
    except (OSError, subprocess.SubprocessError) as e:
        return {"skipped": f"cannot build the C++ driver: {type(e).__name__}: {e}"}
    with tempfile.TemporaryDirectory(prefix="pypto-bench-capture-") as d:
        graph.export(Path(d) / "bundle", "step")
        data = Path(d) / "buffers.bin"
        data.write_bytes(b"".join(np.ascontiguousarray(t.numpy()).tobytes() for t in graph.tensors))
        r = subprocess.run([str(exe), str(Path(d) / "bundle"), "step", str(data), str(rounds)], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            return {"skipped": f"the C++ driver failed ({r.returncode}): {r.stderr[-300:]}"}
        res = json.loads(r.stdout.strip().splitlines()[-1])
        if "error" in res:
            raise RuntimeError(f"pypto.bench: the C++ sequence failed: {res['error']}")
        got = np.frombuffer(data.read_bytes(), dtype=np.float32)
        want = np.concatenate([np.asarray(e, dtype=np.float32).ravel() for e in expected])
        if not np.array_equal(got, want):
            raise RuntimeError("pypto.bench: the C++ sequence computed another result than the Python replay")
    return {"ns": res["ns_per_run"]}
