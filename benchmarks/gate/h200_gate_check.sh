#!/usr/bin/env bash
# The speed gate's evidence for the committed presets on a GPU host, in one device call:
# interleaved rounds of the default twice (an A/A pair: the host's noise) and each preset
# at the target micro-batch, then A/A rounds at the campaign's micro-batch. Keeps every
# run's result (per-step seconds) in $OUT/runs.tgz; `benchmarks/gate/pairs_from_runs.py`
# turns them into recordings that `speedgate-speed-replay` judges with the campaign's rule.
#   benchmarks/gate/h200_gate_check.sh PRESET.env ...
# A device call brings back at most eight files: build with
# `OUT=$OUT/build bash scripts/gpu/host-run.sh --no-tests` (it copies the results tables
# into its OUT) and leave only runs.tgz and a log directly in $OUT.
# env: BUILD_DIR, SIZE=base, TARGET=32 ROUNDS=4, MICRO=8 AA_ROUNDS=4, STEPS=6, THREADS=8, OUT,
# DEADLINE (seconds from the start after which no run starts; default none).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build}/bin/speedgate-train
SIZE=${SIZE:-base} TARGET=${TARGET:-32} ROUNDS=${ROUNDS:-4} MICRO=${MICRO:-8} AA_ROUNDS=${AA_ROUNDS:-4}
STEPS=${STEPS:-6} THREADS=${THREADS:-8} OUT=${OUT:-/tmp/speedgate-out}
RUNS=$OUT/runs
mkdir -p "$RUNS"
start=$(date +%s)
run() {  # NAME MICRO ROUND [PRESET]
  if [ -n "${DEADLINE:-}" ] && [ $(( $(date +%s) - start )) -ge "$DEADLINE" ]; then
    echo "gate_check: mb $2 round $3 $1 skipped: past the deadline"; return
  fi
  local preset=()
  [ -n "${4:-}" ] && preset=(--preset "$4")
  "$BIN" run --workload wam --size "$SIZE" --steps "$STEPS" --seed 0 --micro-batch "$2" --grad-accum 1 \
    --threads "$THREADS" --warmup-steps 2 --eval-batches 0 "${preset[@]}" \
    --result "$RUNS/mb$2_r$3_$1.json" >/dev/null 2>"$RUNS/mb$2_r$3_$1.err"
  echo "gate_check: mb $2 round $3 $1 exit $? at $(date +%T)"
}
for r in $(seq 1 "$ROUNDS"); do
  run default "$TARGET" "$r"
  run default_again "$TARGET" "$r"
  for p in "$@"; do run "$(basename "$p" .env)" "$TARGET" "$r" "$p"; done
done
for r in $(seq 1 "$AA_ROUNDS"); do
  run default "$MICRO" "$r"
  run default_again "$MICRO" "$r"
done
(cd "$OUT" && tar czf runs.tgz runs && rm -rf runs)
