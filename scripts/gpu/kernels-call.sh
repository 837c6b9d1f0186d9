#!/usr/bin/env bash
# One device call for kernel work (issue #5) on an offline CUDA host: build, the kernel GPU
# tests, speedgate-kernels-bench at micro-batch 8 and 32 (tables and JSON sweeps), then
# other GPU tests in what is left of LIMIT seconds, then EXTRA (a shell command, run with
# BUILD_DIR set and RES the results folder, cut off at the limit); everything packed into
# $OUT/kernels.tgz (a call brings back at most eight files).
#   [EXTRA='...'] [BENCH_MB='8 32'] scripts/gpu/kernels-call.sh LIMIT [KERNEL_TESTS_REGEX] [OTHER_TESTS_REGEX]
set -uo pipefail
limit=${1:-}
[[ $limit =~ ^[0-9]+$ ]] || { echo "usage: kernels-call.sh LIMIT (seconds) [KERNEL_TESTS_REGEX] [OTHER_TESTS_REGEX]" >&2; exit 2; }
kernel_tests=${2:-Kernels}
other_tests=${3:-GpuKernelTrial|GpuIdentity}
start=$(date +%s)
left() { echo $(( limit - ($(date +%s) - start) )); }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=${OUT:-/tmp/speedgate-out}
res=$(mktemp -d /tmp/kernels-call.XXXXXX)
export BUILD_DIR=${BUILD_DIR:-$root/build-gpu}
OUT=$res bash scripts/gpu/host-run.sh --no-tests | tail -3
. /opt/gpudeps/env.sh
export CUBLAS_WORKSPACE_CONFIG=:4096:8
run_tests() {  # REGEX NAME
  local t; t=$(left)
  [ "$t" -gt 30 ] || { echo "kernels-call: no time for $2"; return; }
  timeout $(( t - 20 )) ctest --test-dir "$BUILD_DIR" -L gpu -R "$1" --output-on-failure -j1 >"$res/$2.log" 2>&1
  echo "kernels-call: $2 exit $? at $(( $(date +%s) - start )) s"
  grep -E "tests passed|Failed|\*\*\*|Passed|Test #|Failure|Expected|Which is|bits" "$res/$2.log" | head -60
}
bench() {  # MICRO_BATCH
  local t; t=$(left)
  [ "$t" -gt 40 ] || { echo "kernels-call: no time for the bench at $1"; return; }
  timeout $(( t - 20 )) "$BUILD_DIR/bin/speedgate-kernels-bench" --micro-batch "$1" --json "$res/sweep$1.json" \
    >"$res/kernels_mb$1.md" 2>&1
  echo "kernels-call: bench at micro-batch $1 exit $? at $(( $(date +%s) - start )) s"
  cat "$res/kernels_mb$1.md"
}
run_tests "$kernel_tests" kernel-tests
for mb in ${BENCH_MB-8 32}; do bench "$mb"; done  # BENCH_MB='' skips the bench
run_tests "$other_tests" other-tests
if [ -n "${EXTRA:-}" ] && [ "$(left)" -gt 30 ]; then
  RES=$res timeout $(( $(left) - 15 )) bash -c "$EXTRA" >"$res/extra.log" 2>&1
  echo "kernels-call: extra exit $? at $(( $(date +%s) - start )) s"
  tail -30 "$res/extra.log"
fi
mkdir -p "$out"
tar czf "$out/kernels.tgz" -C "$res" .
echo "kernels-call: done at $(( $(date +%s) - start )) s"
