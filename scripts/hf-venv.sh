#!/usr/bin/env bash
# Creates .venv-hf: Hugging Face transformers + accelerate (pinned) on top of the system's
# torch (Debian's python3-torch 1.13 through --system-site-packages), for
# examples/hf_trainer and speedgate_trainer.hf. Usage: scripts/hf-venv.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv-hf}
# transformers 4.40.2 is a release whose Trainer still runs on torch 1.13; accelerate
# 0.30.1 is the matching release (needs torch >= 1.10).
TRANSFORMERS=4.40.2
ACCELERATE=0.30.1
if [ ! -x "$VENV/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "transformers==$TRANSFORMERS" "accelerate==$ACCELERATE"
"$VENV/bin/python" -c 'import torch, transformers, accelerate; print("torch", torch.__version__, "transformers", transformers.__version__, "accelerate", accelerate.__version__)'
