#!/usr/bin/env bash
# Which ops and kernels a wam step's time goes to, per configuration: runs speedgate-train
# with SPEEDGATE_PROFILE_OPS (LibTorch's Kineto profiler over the steady-state steps, see
# docs/protocol.md section 6) and prints, per configuration, the top device kernels by
# total time (CUDA builds) and the top CPU ops by self time, per step.
#
#   benchmarks/wam_ops.sh [PRESET.env ...]   (env: BUILD_DIR, SIZE=base MICRO=32 STEPS=5
#   THREADS=8 TOP=25 FROM=12 OUT)
# Configurations: the default, then each PRESET file. Output: a markdown section per
# configuration on stdout, and with OUT set $OUT/wam_ops.md plus each configuration's op
# profile ($OUT/wam_ops_NAME.json); under the kernel table, the CPU ops that launched the
# top FROM kernel rows (op_profile.hpp, "from"). Profiling slows the run (per-op callbacks): read the
# shares, and take samples/s from unprofiled runs (benchmarks/preset_pairs.sh).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BUILD_DIR:-$ROOT/build}/bin/speedgate-train
SIZE=${SIZE:-base} MICRO=${MICRO:-32} STEPS=${STEPS:-5} THREADS=${THREADS:-8} TOP=${TOP:-25} FROM=${FROM:-12}
command -v jq >/dev/null || { echo "wam_ops: needs jq" >&2; exit 2; }
[ -x "$BIN" ] || { echo "wam_ops: no trainer at $BIN" >&2; exit 2; }
WORK=$(mktemp -d /tmp/sg_ops.XXXXXX)
NAMES=(default) FILES=("")
for p in "$@"; do
  [ -r "$p" ] || { echo "wam_ops: cannot read preset $p" >&2; exit 2; }
  NAMES+=("$(basename "$p" .env)"); FILES+=("$p")
done

# $1 op profile, $2 kind regex, $3 sort key (total_us | self_us), $4 row label: the group's
# top $TOP rows per step, then one row for the rest.
render() {
  jq -r --argjson top "$TOP" --arg kind "$2" --arg key "$3" --arg what "$4" '
    .steps as $n
    | ($key == "self_us") as $self
    | def ms: . / $n / 1000 * 100 | round / 100;
      def cell: gsub("\\|"; "\\|") | if length > 100 then .[0:97] + "..." else . end | "`" + . + "`";
      def row($i; $name): "| \($i) | \($name) | \(.calls / $n * 10 | round / 10) | \(.[$key] | ms) |"
        + (if $self then " \(.total_us | ms) |" else "" end) + " \(.avg_us * 10 | round / 10) | \(.percent) % |";
    [.ops[] | select(.kind | test($kind))] as $rows
    | if ($rows | length) == 0 then "(no \($what) events)" else
        "| # | \($what) | calls/step | " + (if $self then "self ms/step | total ms/step" else "ms/step" end) + " | avg µs | % |",
        "|---|---|---|---|" + (if $self then "---|" else "" end) + "---|---|",
        ($rows[:$top] | to_entries[] | (.key + 1) as $i | .value
         | row($i; (.name | cell) + (if .kind == "cpu_op" or .kind == "cuda_kernel" then "" else " (" + .kind + ")" end))),
        (if ($rows | length) > $top then
           $rows[$top:] | {calls: (map(.calls) | add), total_us: (map(.total_us) | add), self_us: (map(.self_us) | add),
                           percent: (map(.percent) | add * 100 | round / 100)}
           | .avg_us = (if .calls > 0 then .total_us / .calls else 0 end)
           | row(""; "the other \(($rows | length) - $top) rows")
         else empty end)
      end' "$1"
}

# $1 op profile: for the top $FROM kernel rows, the CPU ops that launched them (the
# profile's "from" paths: launching op and what encloses it, with its inputs), per step.
render_from() {
  jq -r --argjson top "$FROM" '
    .steps as $n
    | [.ops[] | select(.kind | test("^cuda_")) | select(.name != "(other)")][:$top] | to_entries[]
    | select(.value.from != null)
    | "- \(.key + 1) `\(.value.name | if length > 60 then .[0:57] + "..." else . end)`: "
      + ([.value.from[] | "\(.calls / $n * 10 | round / 10)/step, \(.total_us / $n / 1000 * 100 | round / 100) ms: `\(.path | gsub("`"; "'"'"'"))`"]
         | join("; "))' "$1"
}

{
  for i in "${!NAMES[@]}"; do
    name=${NAMES[$i]} res=$WORK/$name.json ops=$WORK/wam_ops_$name.json
    preset=(); [ -n "${FILES[$i]}" ] && preset=(--preset "${FILES[$i]}")
    echo "wam_ops: $name ($SIZE, micro $MICRO)" >&2
    SPEEDGATE_PROFILE_OPS=$ops "$BIN" run --workload wam --size "$SIZE" --steps "$STEPS" --seed 0 \
      --micro-batch "$MICRO" --grad-accum 1 --threads "$THREADS" --warmup-steps 2 --eval-batches 0 \
      "${preset[@]}" --result "$res" >/dev/null 2>"$res.err"
    code=$?
    echo "### \`$name\` (wam $SIZE, micro-batch $MICRO)"
    echo
    if [ $code -ne 0 ] || [ ! -s "$ops" ]; then
      echo "exit $code: $(tail -1 "$res.err")"
      echo
      continue
    fi
    jq -r '"\(.steps) steady-state steps profiled on \(.device) (torch \(.torch)): \(.total_us / .steps / 1000 | round) ms/step wall, "
           + "device busy \(.device_us / .steps / 1000 | round) ms/step, CPU ops (self) \(.cpu_self_us / .steps / 1000 | round) ms/step."' "$ops"
    echo
    if jq -e '.device_us > 0' "$ops" >/dev/null; then
      render "$ops" '^cuda_' total_us kernel
      echo
      if jq -e '[.ops[] | select(.from != null)] | length > 0' "$ops" >/dev/null; then
        echo "Launched from (the CPU op that launched each kernel and the ops around it, with its inputs; top $FROM rows, up to 3 paths each):"
        echo
        render_from "$ops"
        echo
      fi
    fi
    render "$ops" '^cpu_op$' self_us "CPU op"
    echo
  done
} | tee "$WORK/wam_ops.md"
[ -n "${OUT:-}" ] && cp "$WORK/wam_ops.md" "$OUT/wam_ops.md" && cp "$WORK"/wam_ops_*.json "$OUT/" 2>/dev/null
exit 0
