#!/usr/bin/env bash
# Data parallel on NCCL (issue #7), on a host with >= 2 GPUs (device kind nvidia-h200-x2):
#  1. a small campaign whose trials take 2 GPUs each, started by the controller
#     (`speedgate tune --trial-world-size 2`): the ranks, the gate and the store end to end;
#  2. OVERLAP_COMM on vs off at SIZE with the same buckets, 2 ranks: bitwise (every step's
#     loss and grad-norm bits, parameter and optimizer digests);
#  3. scaling efficiency: 2-GPU samples/s / (2 x 1-GPU samples/s) at the same micro-batch
#     per GPU, interleaved 1, 2, 1, 2 ... in one run, for the default and for PRESET.
#   benchmarks/nccl_scaling.sh   (env: BUILD_DIR, SIZE=base MICRO=8 STEPS=6 ROUNDS=2
#   THREADS=8 PRESET=presets/fast_80gb.env CAMPAIGN_MINUTES=3 OUT)
# Ranks are started the way torchrun starts them (RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR, MASTER_PORT); NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build}/bin
SIZE=${SIZE:-base} MICRO=${MICRO:-8} STEPS=${STEPS:-6} ROUNDS=${ROUNDS:-2} THREADS=${THREADS:-8}
PRESET=${PRESET:-$ROOT/presets/fast_80gb.env} CAMPAIGN_MINUTES=${CAMPAIGN_MINUTES:-3}
OUT=${OUT:-/tmp/speedgate-out}
. "$ROOT/benchmarks/lib/ranks.sh"
command -v jq >/dev/null || { echo "nccl_scaling: needs jq" >&2; exit 2; }
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$gpus" -ge 2 ] || { echo "nccl_scaling: needs 2 GPUs, found $gpus" >&2; exit 2; }
WORK=$(mktemp -d /tmp/sg_nccl.XXXXXX)
mkdir -p "$OUT"
COMMON=(--workload wam --size "$SIZE" --seed 0 --micro-batch "$MICRO" --grad-accum 1 --threads "$THREADS" --eval-batches 0)

{
echo "# Data parallel on NCCL: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $gpus"
echo
echo "- Date: $(date -u +%Y-%m-%dT%H:%MZ); commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "- Workload: wam \`$SIZE\`, micro-batch $MICRO per GPU, $STEPS steps (2 warm-up), $THREADS host threads per rank."
echo

echo "## 1. A campaign whose trials take 2 GPUs (controller)"
echo
start=$(date +%s)
"$BIN/speedgate" tune --db "$WORK/dp.db" --workload wam --size small --micro-batch 4 --steps 4 --screen-steps 4 \
  --seeds 0,1000 --repeats 1 --threads "$THREADS" --trial-world-size 2 --plan stack \
  --memory-budget h200=141GiB --budget-minutes "$CAMPAIGN_MINUTES" --json >"$WORK/tune.json" 2>"$WORK/tune.err"
echo "\`speedgate tune --workload wam --size small --trial-world-size 2 --plan stack\` exit $? after $(( $(date +%s) - start )) s."
echo
echo '```'
"$BIN/speedgate" report --db "$WORK/dp.db" 2>&1 | head -40
echo '```'
echo
python3 - "$WORK/dp.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT disposition, world_size, count(*) FROM trials GROUP BY 1, 2 ORDER BY 1").fetchall()
print("| disposition | ranks per trial | trials |\n|---|---|---|")
for d, w, n in rows: print(f"| {d} | {w} | {n} |")
PY
echo

echo "## 2. OVERLAP_COMM on vs off, 2 ranks, same buckets (wam $SIZE, default switches)"
echo
# Default switches: a preset with a non-deterministic switch (ATTN_BACKEND=cudnn's backward)
# differs run to run whatever OVERLAP_COMM does, and would hide what is compared here.
run_ranks 2 "$WORK/ov0.json" "${COMMON[@]}" --steps 4 --warmup-steps 1; c0=$?
SG_OVERLAP_COMM=1 run_ranks 2 "$WORK/ov1.json" "${COMMON[@]}" --steps 4 --warmup-steps 1; c1=$?
same() { [ "$(field "$WORK/ov0.json" "$1")" = "$(field "$WORK/ov1.json" "$1")" ] && [ "$(field "$WORK/ov0.json" "$1")" != - ] && echo identical || echo DIFFERENT; }
echo "| | overlap off | overlap on |"
echo "|---|---|---|"
echo "| exit codes | $c0 | $c1 |"
echo "| dist backend | $(field "$WORK/ov0.json" .fingerprint.dist_backend) | $(field "$WORK/ov1.json" .fingerprint.dist_backend) |"
echo "| samples/s | $(field "$WORK/ov0.json" .samples_per_s) | $(field "$WORK/ov1.json" .samples_per_s) |"
echo
echo "- loss bits per step: $(same '[.step_records[].loss_bits]')"
echo "- grad-norm bits per step: $(same '[.step_records[].grad_norm_bits]')"
echo "- parameter digest: $(same .param_digest); optimizer digest: $(same .optimizer_digest); per-rank digests: $(same .rank_param_digests)"
echo "- buckets: BUCKET_MB at its default ($(field "$WORK/ov0.json" .switches.SG_BUCKET_MB) MiB) in both runs"
echo

echo "## 3. Scaling efficiency (2-GPU samples/s / (2 x 1-GPU samples/s)), interleaved"
echo
echo "| round | configuration | 1 GPU samples/s | 2 GPUs samples/s | efficiency | peak alloc GiB (max rank) |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$ROUNDS"); do
  for cfg in default preset; do
    args=(); [ $cfg = preset ] && args=(--preset "$PRESET")
    run_ranks 1 "$WORK/s1_${cfg}_$r.json" "${COMMON[@]}" --steps "$STEPS" --warmup-steps 2 "${args[@]}"
    SG_OVERLAP_COMM=1 run_ranks 2 "$WORK/s2_${cfg}_$r.json" "${COMMON[@]}" --steps "$STEPS" --warmup-steps 2 "${args[@]}"
    s1=$(field "$WORK/s1_${cfg}_$r.json" '.samples_per_s // 0')
    s2=$(field "$WORK/s2_${cfg}_$r.json" '.samples_per_s // 0')
    eff=$(efficiency "$s1" "$s2" 2)
    pk=$(peak_gib "$WORK/s2_${cfg}_$r.json" allocated)
    name=$cfg; [ $cfg = preset ] && name="$(basename "$PRESET" .env) + OVERLAP_COMM"
    echo "| $r | $name | $(printf '%.2f' "$s1") | $(printf '%.2f' "$s2") | $eff | $pk |"
  done
done
} 2>&1 | tee "$WORK/nccl_scaling.md"
finish_report nccl_scaling
exit 0
