#!/usr/bin/env bash
# One call on an offline CUDA host (e.g. the H200 device host): unpack the carried
# Debian libraries (.gpudeps, from scripts/gpu/fetch-debs.sh), build the CUDA build,
# run the GPU-labelled tests, then the benchmarks named as arguments
# (each a script under benchmarks/, run with the build dir and $OUT).
# Results and logs go under ${OUT:-/tmp/speedgate-out}.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=${OUT:-/tmp/speedgate-out}
mkdir -p "$out"
build=${BUILD_DIR:-/tmp/build}
bash .gpudeps/unpack-debs.sh >"$out/unpack.log" 2>&1 || { cat "$out/unpack.log"; exit 1; }
. /opt/gpudeps/env.sh
export PATH=/opt/gpudeps/usr/bin:$PATH  # carried tools (jq)
export CUBLAS_WORKSPACE_CONFIG=:4096:8
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1
start=$(date +%s)
# shellcheck disable=SC2086
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPEEDGATE_CUDA=ON $GPUDEPS_CMAKE_FLAGS \
  >"$out/configure.log" 2>&1 || { tail -50 "$out/configure.log"; exit 1; }
cmake --build "$build" -j"$(nproc)" >"$out/build.log" 2>&1 || { grep -B2 -A8 "error" "$out/build.log" | head -80; exit 1; }
echo "host-run: built in $(( $(date +%s) - start )) s"
ctest --test-dir "$build" -L gpu --output-on-failure -j1 >"$out/gpu-tests.log" 2>&1
echo "host-run: gpu tests exit $?"; tail -25 "$out/gpu-tests.log"
for bench in "$@"; do
  echo "host-run: benchmark $bench"
  BUILD_DIR="$build" OUT="$out" bash "benchmarks/$bench" 2>&1 | tee "$out/${bench%.sh}.log" | tail -40
done
