#!/bin/bash
# Instructions per cache hit of one call shape, with the per-function split (a quick check while working on the
# hit path; `python -m pypto.bench` reports the same figure for its own kernel). ~3 min.
#   usage: benchmarks/callgrind_hit.sh            (needs valgrind; kernels built for x86-64-v3 so valgrind runs them)
set -euo pipefail
work=$(mktemp -d)
cat > "$work/child.py" <<'PY'
import sys, torch, pypto
T = pypto.Tensor([16], pypto.DT_FP32)
@pypto.frontend.jit
def main_k(a: T, b: T, c: T, out: T, m=2, n=3):
    out[:] = a + b + c
a, b, c, out = (torch.rand(16) for _ in range(4))
main_k.compile(a, b, c, out, m=2, n=3)
for _ in range(int(sys.argv[1])):
    main_k(a, b, c, out, m=2, n=3)
torch.testing.assert_close(out, a + b + c)
PY
export PYPTO_MARCH=x86-64-v3 PYTHONHASHSEED=0 PYPTO_CACHE_DIR="${PYPTO_CACHE_DIR:-$work/cache}"
python "$work/child.py" 10
total() { callgrind_annotate "$1" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
for n in 1000 11000; do
  valgrind --tool=callgrind --toggle-collect='*jit_vectorcall*' --callgrind-out-file="$work/out.$n" \
    python "$work/child.py" $n 2>/dev/null
done
echo "instructions per hit: $(( ($(total "$work/out.11000") - $(total "$work/out.1000")) / 10000 ))"
callgrind_annotate "$work/out.11000" | sed -n '/file:function/,/^$/p' | head -14 | cut -c1-160
