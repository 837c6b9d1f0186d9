#!/usr/bin/env bash
# One call on an offline CUDA host (e.g. the H200 device host): unpack the carried
# Debian libraries (.gpudeps, from scripts/gpu/fetch-debs.sh), build the CUDA build,
# run the GPU-labelled tests, then the benchmark scripts named as arguments (each run as
# `bash benchmarks/NAME ARGS...` with BUILD_DIR and OUT set; a benchmark's arguments follow
# its name after colons: `h200_campaign.sh:tune:8` runs `benchmarks/h200_campaign.sh tune 8`).
#   scripts/gpu/host-run.sh [--no-build] [--no-tests] [BENCH.sh[:ARG...] ...]
# The build goes to ${BUILD_DIR:-build-gpu} inside the checkout (git-ignored, so a warm
# host keeps it between calls); logs and tables go under ${OUT:-/tmp/speedgate-out}.
# GPU_TESTS=REGEX runs only the GPU tests whose names match (ctest -R), e.g. 'GpuVae|BiasAdd'.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
build_step=1 test_step=1
while [ $# -gt 0 ]; do
  case $1 in
    --no-build) build_step=0 ;;
    --no-tests) test_step=0 ;;
    *) break ;;
  esac
  shift
done
out=${OUT:-/tmp/speedgate-out}
mkdir -p "$out"
export BUILD_DIR=${BUILD_DIR:-$root/build-gpu}
bash .gpudeps/unpack-debs.sh >"$out/unpack.log" 2>&1 || { cat "$out/unpack.log"; exit 1; }
. /opt/gpudeps/env.sh
export PATH=/opt/gpudeps/usr/bin:$PATH  # carried tools (jq)
export CUBLAS_WORKSPACE_CONFIG=:4096:8
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
if [ $build_step = 1 ]; then
  start=$(date +%s)
  # shellcheck disable=SC2086
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPEEDGATE_CUDA=ON $GPUDEPS_CMAKE_FLAGS \
    >"$out/configure.log" 2>&1 || { tail -50 "$out/configure.log"; exit 1; }
  cmake --build "$BUILD_DIR" -j"$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -B2 -A12 -E "error|FAILED" "$out/build.log" | head -120; exit 1; }
  echo "host-run: built in $(( $(date +%s) - start )) s"
fi
if [ $test_step = 1 ]; then
  start=$(date +%s)
  ctest --test-dir "$BUILD_DIR" -L gpu ${GPU_TESTS:+-R "$GPU_TESTS"} --output-on-failure -j1 --timeout 600 >"$out/gpu-tests.log" 2>&1
  echo "host-run: gpu tests exit $? in $(( $(date +%s) - start )) s"
  grep -E "tests passed|Failed|\*\*\*|Passed|Test #" "$out/gpu-tests.log" | tail -60
fi
for spec in "$@"; do
  IFS=: read -r -a words <<<"$spec"
  bench=${words[0]}
  echo "host-run: benchmark $bench ${words[*]:1}"
  OUT="$out" bash "benchmarks/$bench" "${words[@]:1}" 2>&1 | tee -a "$out/${bench%.*}.log" | tail -40
done
cp benchmarks/results/*.md "$out/" 2>/dev/null || true
# The device tool brings back at most 8 files: pack the logs into one archive.
# The archive is written outside $out first: tar of a folder that holds its own output fails
# with "file changed as we read it" (and this script's exit status is this step's).
packed=$(mktemp /tmp/host-run-logs.XXXXXX.tgz)
(cd "$out" && tar czf "$packed" --exclude=logs.tgz --exclude='*.md' --exclude='*.db' . 2>/dev/null &&
  mv "$packed" logs.tgz &&
  find . -maxdepth 1 -type f ! -name logs.tgz ! -name '*.md' ! -name '*.db' ! -name gpu.txt -delete)
