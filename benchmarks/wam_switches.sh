#!/usr/bin/env bash
# Side-by-side benchmark of speedgate-train's switches on the wam `base` size (run on the
# GPU host, e.g. one H200). For the default, each available switch alone, and all speed
# switches together, prints samples/s, speedup vs default, MFU (model FLOPs/s / 790e12,
# the measured bf16 GEMM rate of an H200) and peak memory, and writes a markdown table to
# benchmarks/results/wam_base_<date>.md with the date, GPU and commit.
#
#   benchmarks/wam_switches.sh [BIN] [STEPS] [MICRO_BATCH]
# Repeats: each configuration runs REPEATS times interleaved (ABAB...), median reported.
# env: ONLY="NAME ..." times only those switches alone (plus the default), EXTRA="SG_A=1
# SG_B=2;SG_C=1" adds configurations (';'-separated), ALL_TOGETHER=0 leaves out "all together"
# (and its variant without the fused-kernel switches; ALL_WITHOUT_KERNELS=0 leaves out that one),
# THREADS (host threads per run, default 8), OUT (a folder that gets a copy of the table).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/bin/speedgate-train}
STEPS=${2:-12}
MICRO=${3:-8}
SIZE=${SIZE:-base}
REPEATS=${REPEATS:-2}
PEAK_FLOPS=${PEAK_FLOPS:-790e12}
OUT_DIR=$ROOT/benchmarks/results
WORK=$(mktemp -d /tmp/sg_bench.XXXXXX)
mkdir -p "$OUT_DIR"
command -v jq >/dev/null || { echo "needs jq" >&2; exit 2; }

. "$ROOT/benchmarks/lib/switch_bench.sh"
MANIFEST=$("$BIN" describe --json)
# Every available wam switch alone (SINGLE) and all speed switches together (ALL).
switch_configs wam "$MANIFEST"

# The same without the switches that run fused kernels (manifest kernel_families): issue
# #3's "all together before the fused kernels exist". Left out when it equals ALL (a build
# without CUDA kernels) or with ALL_WITHOUT_KERNELS=0.
ALL_NO_KERNELS=$(jq -r --arg all "$ALL" '
  [.kernel_families[]?.switch | "SG_" + . + "="] as $k
  | [$all | split(" ")[] | select(. as $e | all($k[]; . as $p | $e | startswith($p) | not))] | join(" ")' <<<"$MANIFEST")

if [ -n "${ONLY:-}" ]; then
  KEEP=()
  for c in "${SINGLE[@]}"; do
    for name in $ONLY; do [[ ${c##* } == SG_$name=* ]] && KEEP+=("$c"); done  # the switch is last, after its requires
  done
  SINGLE=("${KEEP[@]}")
fi
CONFIGS=("" "${SINGLE[@]}")
if [ -n "${EXTRA:-}" ]; then IFS=';' read -r -a MORE <<<"$EXTRA"; CONFIGS+=("${MORE[@]}"); fi
[ "${ALL_TOGETHER:-1}" = 1 ] && CONFIGS+=("$ALL")
[ "${ALL_TOGETHER:-1}" = 1 ] && [ "${ALL_WITHOUT_KERNELS:-1}" = 1 ] && [ "$ALL_NO_KERNELS" != "$ALL" ] &&
  CONFIGS+=("$ALL_NO_KERNELS")
run_one() {  # $1 = env string, $2 = result path
  env $1 "$BIN" run --workload wam --size "$SIZE" --steps "$STEPS" --seed 0 --micro-batch "$MICRO" \
    --grad-accum 1 --warmup-steps 3 --eval-batches 1 --threads "${THREADS:-8}" --result "$2" >/dev/null 2>"$2.err" ||
    echo $? >"$2.rc"
}
# A configuration's status: the result's, else why the trainer left none (exit code and its
# last stderr line: a refused configuration exits 2 before it writes a result).
status_of() {  # $1 = result path
  if [ -f "$1" ]; then jq -r '.status' "$1" 2>/dev/null || echo "unreadable result"
  else echo "no result (exit $(cat "$1.rc" 2>/dev/null || echo ?): $(tail -n 1 "$1.err" 2>/dev/null | tr '|' '/'))"; fi
}
for r in $(seq 1 "$REPEATS"); do
  for i in "${!CONFIGS[@]}"; do
    echo "repeat $r config $i: ${CONFIGS[$i]:-default}" >&2
    run_one "${CONFIGS[$i]}" "$WORK/c${i}_r${r}.json"
  done
done

table_provenance "$WORK/c0_r1.json" "$ROOT"
TABLE="$OUT_DIR/wam_${SIZE}_${DATE}.md"
{
  echo "# wam $SIZE switch benchmark"
  echo
  echo "date $DATE, GPU $DEVICE, commit $SHA, micro-batch $MICRO, steps $STEPS (3 warm-up), repeats $REPEATS (median)"
  echo
  echo "| configuration | status | samples/s | speedup | MFU | peak alloc GiB | peak reserved GiB |"
  echo "|---|---|---|---|---|---|---|"
} >"$TABLE"
BASE_SPS=""
for i in "${!CONFIGS[@]}"; do
  SPS=$(for f in "$WORK"/c${i}_r*.json; do jq -r 'select(.status=="ok") | .samples_per_s' "$f" 2>/dev/null || true; done | median)
  F="$WORK/c${i}_r1.json"
  STATUS=$(status_of "$F")
  FLOPS=$(jq -r '.model_flops_per_step / (.micro_batch * .grad_accum)' "$F" 2>/dev/null || echo 0)
  ALLOC=$(result_gib "$F" allocated)
  RES=$(result_gib "$F" reserved)
  [[ -z "$BASE_SPS" ]] && BASE_SPS=$SPS
  read -r SPEEDUP MFU < <(speedup_mfu "$SPS" "$BASE_SPS" "$FLOPS" "$PEAK_FLOPS" %.1f)
  printf '| %s | %s | %s | %s | %s | %.1f | %.1f |\n' "${CONFIGS[$i]:-default}" "$STATUS" "$SPS" "$SPEEDUP" "$MFU" \
    "$ALLOC" "$RES" >>"$TABLE"
done
cat "$TABLE"
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$TABLE" "$OUT/"
echo "table written to $TABLE; raw results in $WORK" >&2
