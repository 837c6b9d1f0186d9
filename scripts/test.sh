#!/usr/bin/env bash
# The test command: installs dependencies, builds, runs every CTest suite except the
# GPU-only ones (label gpu; run those on a CUDA host with `ctest -L gpu`).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
ctest --test-dir "${BUILD_DIR:-$root/build}" -LE gpu --output-on-failure -j"${JOBS:-$(nproc)}"
