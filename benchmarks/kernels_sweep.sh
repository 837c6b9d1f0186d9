#!/usr/bin/env bash
# Exhaustive sweep of every fused-kernel variant at wam `base` shapes on the GPU host
# (speedgate-kernels-bench): the markdown table and the JSON rows that
# speedgate-variant-gap compares a campaign's chosen variants with.
#   benchmarks/kernels_sweep.sh   (env: BUILD_DIR, OUT)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build}/bin
OUT=${OUT:-/tmp/speedgate-out}
mkdir -p "$OUT"
"$BIN/speedgate-kernels-bench" --json "$OUT/kernels_sweep.json" | tee "$OUT/kernels_sweep.md"
