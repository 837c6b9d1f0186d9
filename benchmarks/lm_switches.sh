#!/usr/bin/env bash
# Benchmark of speedgate-train's lm workload: tokens/s and MFU at the largest size that
# fits, default vs each available lm switch alone vs all speed switches together (with
# no activation recompute). Sizes are probed largest first (3b, 1b, small, tiny) with the
# all-switches configuration for 2 steps; the first that runs (not exit 3, OOM) is used.
# On a CPU build only tiny is probed (SIZE=... overrides the probe). MFU = real tokens/s
# x model FLOPs per token (the result's extra.lm.flops_per_token) / PEAK_FLOPS (default
# 790e12, the measured bf16 GEMM rate of an H200; on a CPU it is only a ratio).
# Writes a markdown table to benchmarks/results/lm_<size>_<date>.md.
#
#   benchmarks/lm_switches.sh [BIN] [STEPS] [MICRO_BATCH]
#   e.g. on CPU: SIZE=tiny REPEATS=1 benchmarks/lm_switches.sh build/bin/speedgate-train 4 2
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/bin/speedgate-train}
STEPS=${2:-10}
MICRO=${3:-0}  # 0: the size's default micro-batch
REPEATS=${REPEATS:-2}
PEAK_FLOPS=${PEAK_FLOPS:-790e12}
WORKLOAD=${WORKLOAD:-lm}
THREADS=${THREADS:-2}
OUT_DIR=${OUT_DIR:-$ROOT/benchmarks/results}
WORK=$(mktemp -d /tmp/sg_lm_bench.XXXXXX)
mkdir -p "$OUT_DIR"
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }
[[ -x "$BIN" ]] || { echo "no trainer at $BIN" >&2; exit 2; }

. "$ROOT/benchmarks/lib/switch_bench.sh"
MANIFEST=$("$BIN" describe --json)
switch_configs "$WORKLOAD" "$MANIFEST"

run_one() {  # $1 size, $2 env string, $3 result path, $4 steps
  env $2 "$BIN" run --workload "$WORKLOAD" --size "$1" --steps "$4" --seed 0 --micro-batch "$MICRO" \
    --grad-accum 1 --warmup-steps 2 --eval-batches 1 --threads "$THREADS" --result "$3" >/dev/null 2>"$3.err"
}

if [[ -z "${SIZE:-}" ]]; then
  if [[ $(jq -r '.build.cuda' <<<"$MANIFEST") == true ]]; then CANDIDATES="3b 1b small tiny"; else CANDIDATES="tiny"; fi
  for s in $CANDIDATES; do
    echo "probing size $s with: ${ALL:-default}" >&2
    rc=0
    run_one "$s" "$ALL" "$WORK/probe_$s.json" 2 || rc=$?
    if [[ $rc -eq 0 ]]; then SIZE=$s; break; fi
    [[ $rc -eq 3 ]] || { echo "size $s failed with exit $rc (see $WORK/probe_$s.json.err)" >&2; exit 1; }
  done
  [[ -n "${SIZE:-}" ]] || { echo "no size fits" >&2; exit 1; }
fi

CONFIGS=("" "${SINGLE[@]}" "$ALL")
for r in $(seq 1 "$REPEATS"); do
  for i in "${!CONFIGS[@]}"; do
    echo "repeat $r config $i: ${CONFIGS[$i]:-default}" >&2
    run_one "$SIZE" "${CONFIGS[$i]}" "$WORK/c${i}_r${r}.json" "$STEPS" || true
  done
done

table_provenance "$WORK/c0_r1.json" "$ROOT"
TABLE="$OUT_DIR/${WORKLOAD}_${SIZE}_${DATE}.md"
{
  echo "# $WORKLOAD $SIZE switch benchmark"
  echo
  echo "date $DATE, device $DEVICE, commit $SHA, micro-batch ${MICRO/#0/default}, steps $STEPS (2 warm-up)," \
       "repeats $REPEATS (median), MFU against $PEAK_FLOPS FLOP/s"
  echo
  echo "| configuration | status | tokens/s (real) | speedup | MFU | peak alloc GiB | peak reserved GiB |"
  echo "|---|---|---|---|---|---|---|"
} >"$TABLE"
BASE_TPS=""
for i in "${!CONFIGS[@]}"; do
  TPS=$(for f in "$WORK"/c${i}_r*.json; do jq -r 'select(.status=="ok") | .tokens_per_s' "$f" 2>/dev/null; done | median)
  F="$WORK/c${i}_r1.json"
  STATUS=$(jq -r '.status' "$F" 2>/dev/null || echo crash)
  FLOPS=$(jq -r '.extra.lm.flops_per_token // 0' "$F" 2>/dev/null || echo 0)
  ALLOC=$(result_gib "$F" allocated)
  RES=$(result_gib "$F" reserved)
  [[ -z "$BASE_TPS" ]] && BASE_TPS=$TPS
  read -r SPEEDUP MFU < <(speedup_mfu "$TPS" "$BASE_TPS" "$FLOPS" "$PEAK_FLOPS" %.3g)
  printf '| %s | %s | %.0f | %s | %s | %.2f | %.2f |\n' "${CONFIGS[$i]:-default}" "$STATUS" "$TPS" "$SPEEDUP" "$MFU" \
    "$ALLOC" "$RES" >>"$TABLE"
done
cat "$TABLE"
echo "table written to $TABLE; raw results in $WORK" >&2
