#!/usr/bin/env bash
# The main job: installs the runtime dependencies (not the test-only ones: see
# scripts/test.sh), builds speedgate without its tests, runs a tuning campaign on the
# embedded default (wam at size tiny; CUDA when the build has it, else CPU) into the
# SQLite DB, emits the presets, prints the summary once and how to open the dashboard.
# Environment: DB (default results/speedgate.db), BUDGET_MINUTES (default 12),
# PRESETS_DIR (default results/presets; presets/ holds the committed H200 presets), extra
# arguments go to `speedgate tune`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
bash scripts/build.sh -DSPEEDGATE_BUILD_TESTS=OFF
bin=${BUILD_DIR:-$root/build}/bin
db=${DB:-results/speedgate.db}
presets=${PRESETS_DIR:-results/presets}
mkdir -p "$(dirname "$db")" "$presets"

# Exit 1 from tune means the gate left a memory budget without a preset: a result, not
# an error, so the other presets are still written and the summary printed. 2 and up
# are errors.
status=0
"$bin/speedgate" tune --workload wam --size tiny --db "$db" \
  --budget-minutes "${BUDGET_MINUTES:-12}" \
  --memory-budget fast=141GiB --memory-budget fast_80gb=80GiB --presets-out "$presets" "$@" || status=$?
[ "$status" -le 1 ] || exit "$status"
echo
echo "presets: $presets/fast.env $presets/fast_80gb.env ($presets/README.md explains them)"
echo "dashboard: $bin/speedgate serve --db $db   then open http://127.0.0.1:8321/"
exit "$status"
