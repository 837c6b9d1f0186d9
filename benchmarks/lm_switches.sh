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

MANIFEST=$("$BIN" describe --json)
# Switches that apply to the workload (no "workloads" field: every workload) and run here.
APPLIES='select(.available and ((.workloads // [$w]) | index($w)))'
PICK='def pick: .effect as $eff
  | if .type == "int"
    then (.values - [.default] | map(tonumber)
          | if length == 0 then empty else (if $eff == "schedule" then max else min end | tostring) end)
    else (.values - [.default])[] end;'
mapfile -t SINGLE < <(jq -r --arg w "$WORKLOAD" "$PICK"'
  .switches[] | '"$APPLIES"' | . as $s | ($s | pick) as $v
  | ([$s.requires[] | "SG_" + .] + ["\($s.env)=\($v)"]) | join(" ")' <<<"$MANIFEST")
ALL=$(jq -r --arg w "$WORKLOAD" "$PICK"'
  [.switches[] | '"$APPLIES"' | select(.effect == "speed" or .effect == "schedule") | . as $s
   | ([$s | pick] | last) as $v | ([$s.requires[] | "SG_" + .] + ["\($s.env)=\($v)"])[]]
  + [.switches[] | '"$APPLIES"' | select(.name == "CKPT_LAYERS") | "\(.env)=0"] | unique | join(" ")' <<<"$MANIFEST")

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

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
DEVICE=$(jq -r '.fingerprint.device_name // "?"' "$WORK/c0_r1.json" 2>/dev/null || echo "?")
SHA=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DATE=$(date -u +%Y-%m-%d)
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
  ALLOC=$(jq -r '.memory.peak_allocated_bytes[0] / 1073741824' "$F" 2>/dev/null || echo nan)
  RES=$(jq -r '.memory.peak_reserved_bytes[0] / 1073741824' "$F" 2>/dev/null || echo nan)
  [[ -z "$BASE_TPS" ]] && BASE_TPS=$TPS
  read -r SPEEDUP MFU < <(awk -v s="$TPS" -v b="$BASE_TPS" -v f="$FLOPS" -v p="$PEAK_FLOPS" \
    'BEGIN {if (s=="nan" || b=="nan" || b==0) print "nan nan"; else printf "%.2fx %.3g%%\n", s/b, 100*s*f/p}')
  printf '| %s | %s | %.0f | %s | %s | %.2f | %.2f |\n' "${CONFIGS[$i]:-default}" "$STATUS" "$TPS" "$SPEEDUP" "$MFU" \
    "$ALLOC" "$RES" >>"$TABLE"
done
cat "$TABLE"
echo "table written to $TABLE; raw results in $WORK" >&2
