#!/bin/bash
# Instructions per cache hit of one call shape, with the per-function split (exclusive): the figure to re-measure after every
# change to the hit path (`python -m pypto.bench --callgrind` reports the same kind of figure for its own kernel).
#   usage: benchmarks/callgrind_hit.sh [HITS] [DIMS]   (needs valgrind; kernels built for x86-64-v3 so valgrind runs them)
#   DIMS: fixed (default: the annotation fixes the size, [16]), static (pypto.STATIC: keyed), dynamic (pypto.DYNAMIC)
#   or named (pypto.frontend.dynamic("N"), shared by the four tensors): the same kernel and call with only the
#   annotation's dim changed, to compare binder costs.
#
# One process, well under a minute: valgrind starts with instrumentation off (--instr-atstart=no), so importing
# torch runs at translation speed; the child switches it on after its warm-up calls (callgrind_control -i on), runs
# HITS calls and exits. Only code inside jit_vectorcall is counted (--toggle-collect), so the total divided by
# HITS is the cost of one hit (warm-up and the miss happen before instrumentation starts and are not counted).
# Needs the pypto build to keep its symbols (CMakeLists.txt: NOSTRIP; pyproject.toml: install.strip = false).
set -euo pipefail
hits=${1:-2000}
dims=${2:-fixed}
case $dims in
  fixed) dim=16 ;; static) dim=pypto.STATIC ;; dynamic) dim=pypto.DYNAMIC ;; named) dim='pypto.frontend.dynamic("N")' ;;
  *) echo "DIMS must be fixed, static, dynamic or named, got '$dims'" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/child.py" <<PY
import os, subprocess, sys, torch, pypto
T = pypto.Tensor([$dim], pypto.DT_FP32)
@pypto.frontend.jit
def main_k(a: T, b: T, c: T, out: T, m=2, n=3):
    out[:] = a + b + c
a, b, c, out = (torch.rand(16) for _ in range(4))
main_k.compile(a, b, c, out, m=2, n=3)
for _ in range(10):  # warm-up: learns the call site's layout
    main_k(a, b, c, out, m=2, n=3)
if len(sys.argv) > 2:  # under callgrind: switch instrumentation on; callgrind polls for the command while we spin
    ctl = subprocess.Popen(["callgrind_control", "-i", "on", str(os.getpid())], stdout=subprocess.DEVNULL)
    while ctl.poll() is None:
        pass
    assert ctl.returncode == 0, "callgrind_control failed"
for _ in range(int(sys.argv[1])):
    main_k(a, b, c, out, m=2, n=3)
torch.testing.assert_close(out, a + b + c)
PY
export PYPTO_TORCH_READER_WAIT=1 PYPTO_MARCH=x86-64-v3 PYTHONHASHSEED=0 PYPTO_CACHE_DIR="${PYPTO_CACHE_DIR:-$work/cache}"
python "$work/child.py" 10  # builds (or loads) the kernel outside valgrind
valgrind --tool=callgrind --instr-atstart=no --toggle-collect='*jit_vectorcall*' \
  --callgrind-out-file="$work/out" python "$work/child.py" "$hits" cg 2>"$work/valgrind.log" ||
  { tail -20 "$work/valgrind.log"; exit 1; }
# the totals line: "12,345,678 (100.0%)  PROGRAM TOTALS" (valgrind >= 3.21) or "12,345,678  PROGRAM TOTALS"
total=$(callgrind_annotate "$work/out" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
case $total in '' | *[!0-9]*) echo "callgrind_annotate: no PROGRAM TOTALS line" >&2; exit 1 ;; esac
echo "instructions per hit: $((total / hits))  ($total over $hits hits)"
callgrind_annotate "$work/out" | sed -n '/file:function/,/^$/p' | head -16 | cut -c1-160
