#!/usr/bin/env bash
# The H200 campaign behind presets/fast.env and presets/fast_80gb.env (issue #8): wam
# `base` on one H200, presets for the reference job's target (32 samples per GPU on 8
# GPUs, ZeRO-2) under the fast (141 GiB) and fast_80gb (80 GiB) budgets. A device call is
# limited to 10 minutes, so the campaign runs in slices that resume on the same DB:
#   benchmarks/h200_campaign.sh tune MINUTES   # run or resume for at most MINUTES
#   benchmarks/h200_campaign.sh emit           # presets + report from the DB
# env: BUILD_DIR (the CUDA build), DB (default .h200db/campaign.db), OUT (copies back),
# PRESETS_DIR (where emit writes; default presets/),
# PROBE_AT_TARGET=1 (probe memory at micro-batch 32 where it fits: docs/controller.md; a
# campaign's options include it, so keep it the same across the slices of one campaign).
# The DB must travel with each call (device: carry its folder): a device machine keeps
# no ignored path that a call does not carry.
# Trial design (see benchmarks/results/h200-campaign.md for why): measured at micro-batch 8
# with the memory probe at 16 (a base trial costs ~25 s, two thirds of it model build),
# 4 steps (2 warm-up, 2 timed), one seed-band seed, one paired repeat, plan
# kernels,stack,prune,finals: first one kernel-level trial per kernel family (every variant
# timed at micro-batch 32 shapes in seconds; the fastest bitwise one verified in training
# and carried by every later candidate: docs/controller.md); then the all-switches
# combinations (their memory values are left to prune); then prune drops each of the
# stack's members once (--prune-rounds 1), compares the drops by their probes at
# micro-batch 32 (gate run + probe, no pair at 8: the pairs at 8 are host-bound and
# misjudged FUSED_ADALN), takes the harmless drops together (or the best one) and tries the
# memory values on what remains; then finals pair each budget's two leaders against the default at micro-batch
# 32, three interleaved rounds (the presets' ranking at the target: the fourth campaign's
# pairs at micro-batch 8 ranked CKPT_LAYERS=16 over =8 while at 32 =8 was 8-12 % faster,
# and a probe is one unpaired run). No greedy: it combines singles bottom-up, and here
# singles move by +-5 % a pair and stay far behind the stacks (best single 1.24x, stack
# 1.82x). No single-switch screen: ~20 evaluations (~8 min) that no preset needs; prune's
# drops measure each member's share in the combination instead.
# Where the time went: the fifth campaign (23.4 GPU-minutes, finals cut) is why stack
# defers its memory values and the gate run doubles as the first pair's candidate run; the
# sixth (23 GPU-minutes, finals cut again) spent 18.7 of them in three prune rounds whose
# drops each ran a gate run, a pair at 8 and a probe at 32 (~25 s). On the sixth's trial
# times this plan costs ~17.5 minutes: baseline 0.7, kernels 2.6, stack 0.9, one prune
# round 5.4 (18 drops at ~18 s: gate run 5.9 + probe 12.0) + 0.5 for what it takes,
# memory points ~4.5, finals ~3; the seventh campaign measured 17.1 (0.75, 2.63, 1.01,
# 5.49, 4.42, 2.81: benchmarks/results/h200-campaign.md). Since then the memory points also
# search CKPT_LAYERS between its candidates toward each budget (on the seventh's points: 6,
# then 5 or 7, and 14; ~35 s each): ~19 minutes predicted. The plan is part of the
# campaign's options: a DB started with another plan is not resumed (--resume refuses it);
# start a fresh DB.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build}/bin
DB=${DB:-$ROOT/.h200db/campaign.db}
OUT=${OUT:-/tmp/speedgate-out}
PRESETS=${PRESETS_DIR:-$ROOT/presets}  # where emit writes (a dry run: somewhere else)
mkdir -p "$(dirname "$DB")" "$OUT"
# SIZE, MICRO, TARGET and THREADS override the size, micro-batches and threads for a dry run on
# a CPU build (e.g. SIZE=tiny MICRO=1 TARGET=2 THREADS=1).
CAMPAIGN=(--workload wam --size "${SIZE:-base}" --micro-batch "${MICRO:-8}" --target-micro-batch "${TARGET:-32}"
  --target-world-size 8 --zero-stage 2
  --memory-budget fast=141GiB --memory-budget fast_80gb=80GiB --steps 4 --screen-steps 4 --seeds 0,1000
  --repeats 1 --threads "${THREADS:-8}" --plan kernels,stack,prune,finals --prune-rounds 1 --trial-timeout 300)
[ "${PROBE_AT_TARGET:-0}" = 1 ] && CAMPAIGN+=(--probe-at-target)
case ${1:-} in
  tune)
    [ -n "${2:-}" ] || { echo "h200_campaign: tune needs MINUTES" >&2; exit 2; }
    start=$(date +%s)
    code=0
    resume=()
    [ -f "$DB" ] && resume=(--resume)  # later slices continue the campaign (docs/controller.md)
    "$BIN/speedgate" tune --db "$DB" "${CAMPAIGN[@]}" "${resume[@]}" --budget-minutes "$2" --json \
      >"$OUT/tune-$start.json" || code=$?
    echo "h200_campaign: tune exit $code after $(( $(date +%s) - start )) s"
    ;;
  emit)
    code=0
    "$BIN/speedgate" presets emit --db "$DB" --out "$PRESETS" || code=$?
    "$BIN/speedgate" report --db "$DB" >"$OUT/report.txt" || true
    "$BIN/speedgate" report --db "$DB" --json >"$OUT/report.json" || true
    cp "$PRESETS"/*.env "$PRESETS/README.md" "$OUT/" 2>/dev/null || true
    echo "h200_campaign: presets emit exit $code"
    ;;
  *) echo "usage: h200_campaign.sh tune MINUTES | emit" >&2; exit 2 ;;
esac
cp "$DB" "$OUT/campaign.db"
