#!/usr/bin/env bash
# A campaign's evaluations as the per-switch results table (issue #3's "default, each
# switch alone, all speed switches together"; issue #8's screen): configuration, strategy,
# gate verdict, samples/s, speedup ± spread over the paired baseline, MFU (samples/s x the
# size's model FLOPs per sample from `speedgate-train describe --json` / PEAK_FLOPS) and the
# projected peak at the campaign's target. Rows in evaluation order; single switches
# (strategy screen) show what each switch does alone. Then, when the campaign ran `finals`,
# each budget's finalists paired against the default at the target micro-batch.
#   benchmarks/campaign_table.sh DB [CAMPAIGN]   (env: SPEEDGATE=build/bin/speedgate,
#   TRAINER=speedgate-train next to it, PEAK_FLOPS=790e12)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SPEEDGATE=${SPEEDGATE:-$ROOT/build/bin/speedgate}
TRAINER=${TRAINER:-$(dirname "$SPEEDGATE")/speedgate-train}
PEAK_FLOPS=${PEAK_FLOPS:-790e12}
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: campaign_table.sh DB [CAMPAIGN] (DB must exist)" >&2; exit 2; }
command -v jq >/dev/null || { echo "campaign_table: needs jq" >&2; exit 2; }
camp=(); [ $# -ge 2 ] && camp=(--campaign "$2")
manifest=$("$TRAINER" describe --json 2>/dev/null || echo '{}')
"$SPEEDGATE" report --db "$1" "${camp[@]}" --json | jq -r --argjson pk "$PEAK_FLOPS" --argjson m "$manifest" '
  .campaign as $c
  | ([$m.workloads[]? | select(.name == $c.workload) | .sizes[] | select(.name == $c.size) | .model_flops_per_sample]
     | first // 0) as $fps
  | "# Campaign \($c.id): \($c.workload) \($c.size), micro-batch \($c.options.micro_batch // "?"), target \($c.options.target_micro_batch // "?") x \($c.options.target_world_size // 1) GPUs\n",
    "| configuration | strategy | steps | verdict | gate | samples/s | speedup ± spread | MFU | projected peak GiB |",
    "|---|---|---|---|---|---|---|---|---|",
    (.evaluations[]
     | "| \(if .config_key == "" then "(default)" else .config_key end) | \(.strategy) | \(.steps) | \(.disposition) | \(.gate_class // "-") | \(.samples_per_s // 0 | . * 100 | round / 100) | \(.speedup // 0 | . * 1000 | round / 1000)x ± \(.spread // 0 | . * 1000 | round / 1000) | \(if $fps > 0 then ((.samples_per_s // 0) * $fps / $pk * 1000 | round / 10 | tostring) + " %" else "-" end) | \((.projected_peak_bytes // 0) / 1073741824 * 100 | round / 100) |"),
    (if (.finals // []) == [] then empty else
       "\n## Finals: paired against the default at the target micro-batch\n",
       "| budget | configuration | verdict | rounds | default samples/s | samples/s | speedup ± spread | MFU |",
       "|---|---|---|---|---|---|---|---|",
       (.finals[]
        | "| \(.budget) | \(.config_key) | \(.disposition) | \(.rounds) | \(.baseline_samples_per_s // 0 | . * 100 | round / 100) | \(.samples_per_s // 0 | . * 100 | round / 100) | \(if .disposition == "accepted" then "\(.speedup // 0 | . * 1000 | round / 1000)x ± \(.spread // 0 | . * 1000 | round / 1000)" else .reason end) | \(if $fps > 0 and .disposition == "accepted" then ((.samples_per_s // 0) * $fps / $pk * 1000 | round / 10 | tostring) + " %" else "-" end) |")
     end)'
