#!/bin/bash
# The capture/replay tests under AddressSanitizer: pypto._core and libpypto_runtime built with -fsanitize=address
# into a temporary directory, the Python package staged beside them, and tests/ut/capture run against that build
# (libasan preloaded into python and every child it starts, with libstdc++ so that ASan's __cxa_throw interceptor
# finds the real one when torch throws; leak detection off: CPython and torch keep their
# allocations until exit). A read of freed memory by a replay (a tensor resized or freed since capture) would abort
# the run with ASan's report. Not part of the default suite (a separate build, a few minutes on 2 cores).
#   usage: tests/asan/run_capture.sh [PYTEST ARGS...]   (from the repository root, in the project's venv)
#   PYPTO_ASAN_BUILD=DIR keeps the sanitized build in DIR (reused by the next run) instead of a temporary one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=$(command -v python)
build=${PYPTO_ASAN_BUILD:-$work/build}
cmake -S "$root" -B "$build" -DPYPTO_BUILD_PYTHON=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DPython_EXECUTABLE="$py" -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer" >"$work/cmake.log" \
  || { cat "$work/cmake.log"; exit 1; }
cmake --build "$build" --target _core pypto_runtime -j 2 >"$work/build.log" || { tail -50 "$work/build.log"; exit 1; }
pkg="$work/pkg/pypto"
mkdir -p "$work/pkg"
cp -r "$root/python/pypto" "$pkg"
cp "$build"/_core*.so "$pkg/"
mkdir -p "$pkg/lib/cmake/pypto" "$pkg/_sources"
cp "$build/libpypto_runtime.so" "$pkg/lib/"
cp "$build"/pyptoConfig*.cmake "$pkg/lib/cmake/pypto/"
cp -r "$root/include" "$pkg/include"
cp "$root/src/python/torch_reader/torch_reader.cpp" "$pkg/_sources/"
cache=$(mktemp -d)
trap 'rm -rf "$work" "$cache"' EXIT
cd "$root"
PYTHONPATH="$work/pkg" PYPTO_CACHE_DIR="$cache" LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)" \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$work/asan" \
  python -m pytest -q -n 0 -p no:cacheprovider tests/ut/capture "$@" && rc=0 || rc=$?
# pytest captures the tests' stderr: ASan writes its reports to files, shown here
if compgen -G "$work/asan*" >/dev/null; then cat "$work"/asan*; echo "ASan reported an error" >&2; exit 1; fi
exit $rc
