#!/usr/bin/env bash
# The test command: installs the runtime and test dependencies, checks the sources'
# formatting (scripts/check-format.sh), builds with the tests, runs every CTest suite
# except the GPU-only ones (label gpu; run those on a CUDA host with `ctest -L gpu`).
# Services the tests need (a one-node Slurm cluster, Prometheus) are started by the
# tests under the build tree and stopped after them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/install-deps.sh" --test
# Formatting first: a source that .clang-format would change fails before the build.
bash "$root/scripts/check-format.sh"
# transformers + accelerate (pinned, PyPI) for the Hugging Face Trainer example's tests
bash "$root/scripts/hf-venv.sh"
bash "$root/scripts/build.sh" -DSPEEDGATE_BUILD_TESTS=ON
ctest --test-dir "${BUILD_DIR:-$root/build}" -LE gpu --output-on-failure -j"${JOBS:-$(nproc)}"
