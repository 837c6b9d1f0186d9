#!/usr/bin/env bash
# Presets vs the default configuration, side by side in one run (interleaved D P1 P2 D P1
# P2 ...): samples/s, speedup over the default of the same round, MFU and peak memory.
#   benchmarks/preset_pairs.sh [PRESET.env ...]   (env: BUILD_DIR, SIZE=base MICRO=32
#   STEPS=6 ROUNDS=2 THREADS=8 PEAK_FLOPS=790e12 OUT)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build}/bin/speedgate-train
SIZE=${SIZE:-base} MICRO=${MICRO:-32} STEPS=${STEPS:-6} ROUNDS=${ROUNDS:-2} THREADS=${THREADS:-8}
PEAK_FLOPS=${PEAK_FLOPS:-790e12}
command -v jq >/dev/null || { echo "preset_pairs: needs jq" >&2; exit 2; }
WORK=$(mktemp -d /tmp/sg_pairs.XXXXXX)
NAMES=(default) FILES=("")
for p in "$@"; do NAMES+=("$(basename "$p" .env)"); FILES+=("$p"); done
echo "| round | configuration | status | samples/s | vs default | MFU | peak alloc GiB | peak reserved GiB |"
echo "|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
  base=""
  for i in "${!NAMES[@]}"; do
    res=$WORK/r${r}_$i.json
    preset=(); [ -n "${FILES[$i]}" ] && preset=(--preset "${FILES[$i]}")
    "$BIN" run --workload wam --size "$SIZE" --steps "$STEPS" --seed 0 --micro-batch "$MICRO" --grad-accum 1 \
      --threads "$THREADS" --warmup-steps 2 --eval-batches 0 "${preset[@]}" --result "$res" >/dev/null 2>"$res.err"
    st=$(jq -r '.status // "none"' "$res" 2>/dev/null || echo none)
    sps=$(jq -r '.samples_per_s // 0' "$res" 2>/dev/null || echo 0)
    [ "$i" = 0 ] && base=$sps
    vs=$(awk -v a="$sps" -v b="$base" 'BEGIN{ if (b>0 && a>0) printf "%.3fx", a/b; else print "-" }')
    mfu=$(jq -r --argjson pk "$PEAK_FLOPS" '(.samples_per_s // 0) * (.model_flops_per_step // 0) / (.micro_batch * .grad_accum * (.world_size // 1)) / $pk * 1000 | round / 10' "$res" 2>/dev/null || echo -)
    pa=$(jq -r '(.memory.peak_allocated_bytes // [0] | max) / 1073741824 * 100 | round / 100' "$res" 2>/dev/null || echo -)
    pr=$(jq -r '(.memory.peak_reserved_bytes // [0] | max) / 1073741824 * 100 | round / 100' "$res" 2>/dev/null || echo -)
    echo "| $r | \`${NAMES[$i]}\` | $st | $(printf '%.2f' "$sps") | $vs | $mfu % | $pa | $pr |"
  done
done | tee "$WORK/table.md"
[ -n "${OUT:-}" ] && cp "$WORK/table.md" "$OUT/preset_pairs.md"
exit 0
