#!/usr/bin/env bash
# One device call on a two-GPU host (e.g. nvidia-h200-x2) that keeps both GPUs busy: build
# once, then a slice of the H200 campaign (benchmarks/h200_campaign.sh) on GPU 0 and any
# other work on GPU 1 side by side, all of it inside LIMIT seconds (the call's limit less a
# margin). On a one-GPU host the other work runs first on that GPU and the slice after it
# (never beside it: it would disturb the campaign's timings); with OTHER_AFTER=1 it runs
# after the slice instead, in what the slice left of LIMIT (for the last call of a
# campaign that ends early: the other work gets the rest, the campaign all it needs). The campaign slice gets what is left after the build, less MARGIN seconds for its
# last trial to finish (a slice stops starting trials at its budget, not mid-trial).
#   scripts/gpu/two-gpu-call.sh LIMIT [emit] [-- GPU1 COMMAND...]
# GPU1 COMMAND is a shell command run with CUDA_VISIBLE_DEVICES=1 and OUT=$OUT/gpu1 under
# `timeout` (e.g. 'bash scripts/gpu/host-run.sh --no-build'); `emit` emits the presets after
# the slice. What comes back under $OUT is at most four files (the device tool brings
# back eight): campaign.db (and its -wal if a slice was cut off), presets.tgz (after emit)
# and logs.tgz with everything else.
# env: PROBE_AT_TARGET (passed to the campaign), MARGIN (default 90), DB (.h200db/campaign.db),
# OTHER_AFTER=1 (one-GPU host: the other work after the slice).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
limit=${1:?usage: two-gpu-call.sh LIMIT [emit] [-- GPU1 COMMAND...]}
shift
emit=0
[ "${1:-}" = emit ] && { emit=1; shift; }
[ "${1:-}" = -- ] && shift
gpu1=$*
start=$(date +%s)
out=${OUT:-/tmp/speedgate-out}
mkdir -p "$out"
elapsed() { echo $(( $(date +%s) - start )); }

OUT=$out/build bash scripts/gpu/host-run.sh --no-tests >"$out/build.txt" 2>&1
build_rc=$?
echo "two-gpu-call: build exit $build_rc after $(elapsed) s"
tail -5 "$out/build.txt"
if [ $build_rc = 0 ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  # The other work on GPU $1 for at most $2 seconds, its output in gpu1.txt, $3 naming it there.
  other_work() {
    [ "$2" -ge 30 ] || { echo "two-gpu-call: $3 skipped: $2 s left" >>"$out/gpu1.txt"; return; }
    (export CUDA_VISIBLE_DEVICES=$1 OUT=$out/gpu1; mkdir -p "$OUT"
     timeout -k 10 "$2" bash -c "$gpu1" >"$out/gpu1.txt" 2>&1
     echo "two-gpu-call: $3 exit $? after $(elapsed) s" >>"$out/gpu1.txt")
  }
  g1_pid=
  one_gpu_other=
  [ -n "$gpu1" ] && [ "$gpus" -lt 2 ] && one_gpu_other=${OTHER_AFTER:-0}
  if [ "$one_gpu_other" = 0 ]; then
    other_work 0 $(( limit - $(elapsed) - ${MARGIN:-90} - 60 )) "other work (one GPU, before the slice)"
  fi
  left=$(( limit - $(elapsed) ))
  if [ -n "$gpu1" ] && [ "$gpus" -ge 2 ]; then
    other_work 1 $(( left - 15 )) "GPU 1" &
    g1_pid=$!
  fi
  minutes=$(awk -v s=$(( left - ${MARGIN:-90} )) 'BEGIN { printf "%.1f", s / 60 }')
  echo "two-gpu-call: campaign slice of $minutes min on GPU 0 ($gpus GPU(s) on this host)"
  benches=("h200_campaign.sh:tune:$minutes")
  [ $emit = 1 ] && benches+=(h200_campaign.sh:emit)
  CUDA_VISIBLE_DEVICES=0 OUT=$out/gpu0 PRESETS_DIR=$out/presets \
    timeout -k 10 $(( left - 10 )) bash scripts/gpu/host-run.sh --no-build --no-tests "${benches[@]}" \
    >"$out/gpu0.txt" 2>&1
  echo "two-gpu-call: GPU 0 exit $? after $(elapsed) s"
  grep -E "h200_campaign|host-run" "$out/gpu0.txt" | tail -8
  [ -n "$g1_pid" ] && wait "$g1_pid"
  if [ "$one_gpu_other" = 1 ]; then
    other_work 0 $(( limit - $(elapsed) - 15 )) "other work (one GPU, after the slice)"
  fi
  [ -n "$gpu1" ] && tail -40 "$out/gpu1.txt"
fi
db=${DB:-$root/.h200db/campaign.db}
cp "$db" "$out/campaign.db" 2>/dev/null
[ -f "$db-wal" ] && cp "$db-wal" "$out/campaign.db-wal"  # a slice cut off by timeout leaves its WAL
rm -f "$out/gpu0/campaign.db"
[ -d "$out/presets" ] && (cd "$out" && tar czf presets.tgz presets && rm -rf presets)
(cd "$out" && tar czf /tmp/two-gpu-logs.tgz --exclude='campaign.db*' --exclude=presets.tgz . && mv /tmp/two-gpu-logs.tgz logs.tgz &&
  find . -mindepth 1 -maxdepth 1 ! -name logs.tgz ! -name 'campaign.db*' ! -name presets.tgz -exec rm -rf {} +)
echo "two-gpu-call: done after $(elapsed) s"
