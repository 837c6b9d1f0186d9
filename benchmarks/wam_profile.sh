#!/usr/bin/env bash
# Where a wam step's time goes, per configuration: runs speedgate-train with
# SPEEDGATE_PROFILE=1 (device synchronised at phase boundaries, see docs/protocol.md) and
# prints, per configuration, build seconds, the share of each phase of the steady-state
# step time, and the step's peak memory; then the same configurations unprofiled for
# samples/s and MFU (syncs remove overlap, so throughput comes from unprofiled runs).
#
#   benchmarks/wam_profile.sh [BIN]     (env: SIZE=base MICRO=32 STEPS=6 CONFIGS_FILE=...)
# CONFIGS_FILE: one configuration per line, "name|SG_A=1 SG_B=2" (default: default and
# all speed switches with and without recompute). Output: a markdown table on stdout and
# in $OUT/wam_profile.md when OUT is set.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-${BUILD_DIR:-$ROOT/build}/bin/speedgate-train}
SIZE=${SIZE:-base}
MICRO=${MICRO:-32}
STEPS=${STEPS:-6}
PEAK_FLOPS=${PEAK_FLOPS:-790e12}
command -v jq >/dev/null || { echo "wam_profile: needs jq" >&2; exit 2; }
[ -x "$BIN" ] || { echo "wam_profile: no trainer at $BIN" >&2; exit 2; }
WORK=$(mktemp -d /tmp/sg_profile.XXXXXX)
FAST="SG_TEXT_CACHE=1 SG_FAST_INPUT=1 SG_VAE_FIRST=1 SG_FUSED_ROPE=1 SG_FAST_CAT=1 SG_FUSED_ADALN=1 SG_PIN_MEMORY=1 SG_DATA_WORKERS=4"
if [ -n "${CONFIGS_FILE:-}" ]; then
  mapfile -t CONFIGS <"$CONFIGS_FILE"
else
  CONFIGS=("default|" "fast_ckpt_all|$FAST" "fast_no_ckpt|$FAST SG_CKPT_LAYERS=0")
fi
PHASES=(data text vae forward backward clip optimizer)
run_one() {  # $1 env, $2 result, $3 profile 0/1
  env $1 SPEEDGATE_PROFILE="$3" "$BIN" run --workload wam --size "$SIZE" --steps "$STEPS" --seed 0 \
    --micro-batch "$MICRO" --grad-accum 1 --warmup-steps 2 --eval-batches 0 --result "$2" \
    >/dev/null 2>"$2.err" && return 0
  local code=$?
  echo "wam_profile: $(basename "$2") exit $code ($(tail -1 "$2.err"))" >&2
}
{
  echo "| configuration | status | build s | $(printf '%s %% | ' "${PHASES[@]}")profiled step s | samples/s (unprofiled) | MFU | peak alloc GiB |"
  echo "|---|---|---|$(printf -- '---|%.0s' "${PHASES[@]}")---|---|---|---|"
  for i in "${!CONFIGS[@]}"; do
    name=${CONFIGS[$i]%%|*}; envs=${CONFIGS[$i]#*|}
    echo "wam_profile: $name ($SIZE, micro $MICRO)" >&2
    run_one "$envs" "$WORK/p$i.json" 1
    run_one "$envs" "$WORK/u$i.json" 0
    p=$WORK/p$i.json u=$WORK/u$i.json
    status=$(jq -r '.status // "none"' "$u" 2>/dev/null || echo none)
    total=$(jq -r '[.extra.phase_seconds // {} | .[]] | add // 0' "$p" 2>/dev/null || echo 0)
    row="| \`$name\` | $status | $(jq -r '.extra.build_seconds // 0 | .*100|round/100' "$p" 2>/dev/null || echo -) |"
    for ph in "${PHASES[@]}"; do
      row+=" $(jq -r --arg ph "$ph" --argjson t "$total" 'if $t > 0 then ((.extra.phase_seconds[$ph] // 0) / $t * 1000 | round / 10) else "-" end' "$p" 2>/dev/null || echo -) |"
    done
    steady=$(jq -r '.steady_state_steps // 0' "$p" 2>/dev/null || echo 0)
    row+=" $(awk -v t="$total" -v n="$steady" 'BEGIN{ if (n>0) printf "%.2f", t/n; else print "-" }') |"
    row+=" $(jq -r '.samples_per_s // 0 | .*100|round/100' "$u" 2>/dev/null || echo -) |"
    row+=" $(jq -r --argjson pk "$PEAK_FLOPS" '(.samples_per_s // 0) * (.model_flops_per_step // 0) / (.micro_batch * .grad_accum * (.world_size // 1)) / $pk * 1000 | round / 10' "$u" 2>/dev/null || echo -) % |"
    row+=" $(jq -r '(.peak_allocated_bytes // [0] | max) / 1073741824 | .*10|round/10' "$u" 2>/dev/null || echo -) |"
    echo "$row"
  done
} | tee "$WORK/table.md"
[ -n "${OUT:-}" ] && cp "$WORK/table.md" "$OUT/wam_profile.md" && cp "$WORK"/*.json "$OUT/" 2>/dev/null
exit 0
