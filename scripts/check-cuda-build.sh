#!/usr/bin/env bash
# Configures and compiles (does not run) the CUDA build against pip's torch==2.11.0
# (the GPU host's LibTorch) and this machine's CUDA toolkit, so GPU-path compile errors
# are caught without a GPU. The torch venv lives in .venv-cuda/ (git-ignored).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/scripts/install-deps.sh" --test --cuda-venv  # it compiles the tests too
prefix=$("$root/.venv-cuda/bin/python" -c 'import torch;print(torch.utils.cmake_prefix_path)')
site=$(cd "$prefix/../../.." && pwd)
nccl_inc=""
for d in "$site/nvidia/nccl/include" "$site"/nvidia/*/include; do
  [ -e "$d/nccl.h" ] && { nccl_inc=$d; break; }
done
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
export TORCH_CUDA_ARCH_LIST=9.0
BUILD_DIR=${BUILD_DIR:-$root/build-cuda} bash "$root/scripts/build.sh" \
  -DSPEEDGATE_CUDA=ON -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DCMAKE_CUDA_ARCHITECTURES=90 ${nccl_inc:+-DNCCL_INCLUDE_DIR=$nccl_inc}
echo "check-cuda-build: CUDA build compiled in ${BUILD_DIR:-$root/build-cuda}"
