#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan) into ${BUILD_DIR:-build-fuzz}
# and runs each for SECONDS_EACH (default 60) or RUNS executions, whichever is set, from
# its seed corpus in fuzz/corpus/<name>/. New inputs go to a scratch corpus in the build
# dir, never into the repository. A crash, leak, sanitizer report or failed property
# exits non-zero and leaves the input as <build>/fuzz/artifacts/<name>-crash-*.
# Usage: scripts/fuzz.sh                 # CI smoke: 60 s each (TARGETS="preset result" picks)
#        RUNS=1000000 scripts/fuzz.sh    # the long run recorded in docs/reliability.md
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-$(nproc)}
cxx=${FUZZ_CXX:-$(command -v clang++ || command -v clang++-14)}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DSPEEDGATE_FUZZ=ON -DSPEEDGATE_BUILD_TRAINER=OFF -DSPEEDGATE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target preset_fuzz result_fuzz manifest_fuzz

limit=(-max_total_time="${SECONDS_EACH:-60}")
[ -n "${RUNS:-}" ] && limit=(-runs="$RUNS")
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p "$build/fuzz/artifacts"
for name in ${TARGETS:-preset result manifest}; do
  scratch=$build/fuzz/corpus-$name
  mkdir -p "$scratch"
  start=$(date +%s)
  "$build/fuzz/${name}_fuzz" "${limit[@]}" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build/fuzz/artifacts/$name-" -print_final_stats=1 \
    "$scratch" "$root/fuzz/corpus/$name" 2> "$build/fuzz/$name.log" || {
      tail -60 "$build/fuzz/$name.log"; echo "fuzz: $name FAILED" >&2; exit 1; }
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz/$name.log" | grep -o '[0-9]*$')
  echo "fuzz: $name ok: $execs executions in $(( $(date +%s) - start )) s"
done
