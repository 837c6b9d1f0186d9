#!/usr/bin/env bash
# Issue #12: the presets at the reference job's target on an 8-GPU host (kind
# nvidia-h200-x8), and the same script on fewer GPUs (it uses every GPU it sees, N).
# For wam SIZES (base, wam5b), at MICRO (32) samples per GPU, ZeRO-1 + overlapped
# all-reduce (the trainer shards optimizer state; the campaign projected ZeRO-2):
#  - default, fast and fast_80gb on N GPUs side by side (interleaved rounds): samples/s,
#    speedup over the default of the same round, per-rank peak allocated/reserved;
#  - the projection for exactly that run (`speedgate presets project --world-size N
#    --zero-stage 1` from the campaign DB of that size) and its error vs the measured
#    largest-rank peak (allocated + the probe's fragmentation, as the campaign stores it);
#  - scaling 1 -> 2 -> N GPUs for each configuration (samples/s / (k x 1-GPU samples/s)).
#   benchmarks/h200x8.sh   (env: BUILD_DIR, SIZES="base wam5b", MICRO=32, STEPS=5,
#   ROUNDS=2, THREADS=8, DB_base=benchmarks/results/h200-campaign.db CAMPAIGN_base=1,
#   DB_wam5b=benchmarks/results/h200-wam5b.db CAMPAIGN_wam5b=1, OUT)
# A size without a DB is still measured; its projection column says "no campaign DB".
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build}/bin
SIZES=${SIZES:-base wam5b} MICRO=${MICRO:-32} STEPS=${STEPS:-5} ROUNDS=${ROUNDS:-2} THREADS=${THREADS:-8}
DB_base=${DB_base:-$ROOT/benchmarks/results/h200-campaign.db} CAMPAIGN_base=${CAMPAIGN_base:-1}
DB_wam5b=${DB_wam5b:-$ROOT/benchmarks/results/h200-wam5b.db} CAMPAIGN_wam5b=${CAMPAIGN_wam5b:-1}
OUT=${OUT:-/tmp/speedgate-out}
. "$ROOT/benchmarks/lib/ranks.sh"
command -v jq >/dev/null || { echo "h200x8: needs jq" >&2; exit 2; }
# RANKS overrides the GPU count (e.g. RANKS=2 SIZES=tiny MICRO=2 on a CPU host: Gloo ranks,
# a smoke run of the script itself; CUDA-only presets are then rejected by the trainer).
N=${RANKS:-$(nvidia-smi -L 2>/dev/null | wc -l)}
[ "$N" -ge 1 ] || { echo "h200x8: no GPU (set RANKS for CPU ranks)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/sg_x8.XXXXXX)
mkdir -p "$OUT"
CONFIGS=(default fast fast_80gb)
fmt2() { awk -v v="$1" 'BEGIN{ if (v + 0 > 0) printf "%.2f", v; else print "-" }'; }
preset_args() { [ "$1" = default ] || echo "--preset $ROOT/presets/$1.env"; }

# projection SIZE CONFIG: projected bytes for N GPUs at MICRO, ZeRO 1, or empty.
projection() {
  local db_var=DB_$1 camp_var=CAMPAIGN_$1 sel
  local db=${!db_var:-}
  [ -n "$db" ] && [ -f "$db" ] || return 0
  if [ "$2" = default ]; then sel=(--config ""); else sel=(--preset "$2"); fi
  "$BIN/speedgate" presets project --db "$db" --campaign "${!camp_var}" "${sel[@]}" --micro-batch "$MICRO" \
    --world-size "$N" --zero-stage 1 --json 2>/dev/null | jq -r '.peak_bytes'
}

{
echo "# Presets at the target on $N GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo CPU) x $N"
echo
echo "- Date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "- $MICRO samples per GPU, $STEPS steps (2 warm-up), ZeRO-1 + OVERLAP_COMM, $THREADS host threads per rank."
for SIZE in $SIZES; do
  echo
  echo "## wam \`$SIZE\` on $N GPUs, interleaved rounds"
  echo
  echo "| round | configuration | status | samples/s | vs default | peak alloc GiB per rank | peak reserved GiB (max) | projected GiB | error |"
  echo "|---|---|---|---|---|---|---|---|---|"
  declare -A PROJ=()  # one projection per configuration, the same in every round
  for cfg in "${CONFIGS[@]}"; do PROJ[$cfg]=$(projection "$SIZE" "$cfg"); done
  for r in $(seq 1 "$ROUNDS"); do
    base=0
    for cfg in "${CONFIGS[@]}"; do
      res=$WORK/${SIZE}_${cfg}_n${N}_$r.json
      # shellcheck disable=SC2046
      SG_ZERO1=1 SG_OVERLAP_COMM=1 run_ranks "$N" "$res" --workload wam --size "$SIZE" --seed 0 --micro-batch "$MICRO" \
        --grad-accum 1 --threads "$THREADS" --eval-batches 0 --steps "$STEPS" --warmup-steps 2 $(preset_args "$cfg")
      code=$?
      st=$(field "$res" '.status // "none"')
      [ "$st" = - ] && st="exit $code"
      sps=$(field "$res" '.samples_per_s // 0')
      [ "$cfg" = default ] && base=$sps
      vs=$(awk -v a="$sps" -v b="$base" 'BEGIN{ if (a>0 && b>0) printf "%.3fx", a/b; else print "-" }')
      per_rank=$(field "$res" '[.memory.peak_allocated_bytes[]? / 1073741824 * 100 | round / 100] | join(", ")')
      proj=${PROJ[$cfg]}
      # The stored "measured" side is allocated + fragmentation: compare with the reserved peak.
      meas=$(field "$res" '(.memory.peak_reserved_bytes // [0] | max)')
      pj=$(awk -v p="${proj:-0}" 'BEGIN{ if (p>0) printf "%.2f", p/1073741824; else print "no campaign DB" }')
      err=$(awk -v p="${proj:-0}" -v m="${meas:-0}" 'BEGIN{ if (p>0 && m>0) printf "%+.1f %%", (p-m)/m*100; else print "-" }')
      echo "| $r | \`$cfg\` | $st | $(fmt2 "$sps") | $vs | $per_rank | $(peak_gib "$res" reserved) | $pj | $err |"
    done
  done
  echo
  echo "### Scaling, wam \`$SIZE\` (samples/s; efficiency = k GPUs / (k x 1 GPU))"
  echo
  echo "| configuration | 1 GPU | 2 GPUs | eff. 2 | $N GPUs | eff. $N |"
  echo "|---|---|---|---|---|---|"
  for cfg in "${CONFIGS[@]}"; do
    row="| \`$cfg\`"
    s1=0
    for k in 1 2; do
      [ "$k" -le "$N" ] || { row="$row | - | -"; continue; }
      res=$WORK/${SIZE}_${cfg}_k$k.json
      # shellcheck disable=SC2046
      SG_ZERO1=1 SG_OVERLAP_COMM=1 run_ranks "$k" "$res" --workload wam --size "$SIZE" --seed 0 --micro-batch "$MICRO" \
        --grad-accum 1 --threads "$THREADS" --eval-batches 0 --steps "$STEPS" --warmup-steps 2 $(preset_args "$cfg")
      s=$(field "$res" '.samples_per_s // 0')
      [ "$k" = 1 ] && s1=$s
      row="$row | $(fmt2 "$s")"
      [ "$k" = 1 ] || row="$row | $(efficiency "$s1" "$s" "$k")"
    done
    sN=$(field "$WORK/${SIZE}_${cfg}_n${N}_1.json" '.samples_per_s // 0')
    row="$row | $(fmt2 "$sN") | $(efficiency "$s1" "$sN" "$N") |"
    echo "$row"
  done
done
} 2>&1 | tee "$WORK/h200x$N.md"
finish_report "h200x$N"
exit 0
