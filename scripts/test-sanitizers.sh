#!/usr/bin/env bash
# CI step: builds the controller and its tests (agent only: no LibTorch, no trainer)
# with AddressSanitizer + UndefinedBehaviorSanitizer into ${BUILD_DIR:-build-asan} and
# runs the agent suites (CTest label agent). Any report fails the step: ASan halts on
# the first error, UBSan does not recover (-fno-sanitize-recover=all). Leak reports
# from Debian's system libraries are suppressed in tests/sanitizers/lsan.supp, one
# commented entry each. Extra arguments go to CMake's configure step.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build-asan}
jobs=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.ccache}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DSPEEDGATE_BUILD_TRAINER=OFF \
  "-DCMAKE_CXX_FLAGS=-O1 $san" \
  "-DCMAKE_EXE_LINKER_FLAGS=$san" "$@"
cmake --build "$build" -j"$jobs" --target speedgate speedgate_agent_tests

supp=$root/tests/sanitizers
export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp
ctest --test-dir "$build" -L agent --output-on-failure -j"$jobs"
