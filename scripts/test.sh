#!/usr/bin/env bash
# The test command: installs the runtime and test dependencies, builds with the tests,
# runs every CTest suite except the GPU-only ones (label gpu; run those on a CUDA host
# with `ctest -L gpu`). Services the tests need (a one-node Slurm cluster, Prometheus)
# are started by the tests under the build tree and stopped after them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/install-deps.sh" --test
# transformers + accelerate (pinned, PyPI) for the Hugging Face Trainer example's tests
bash "$root/scripts/hf-venv.sh"
bash "$root/scripts/build.sh" -DSPEEDGATE_BUILD_TESTS=ON
ctest --test-dir "${BUILD_DIR:-$root/build}" -LE gpu --output-on-failure -j"${JOBS:-$(nproc)}"
