#!/usr/bin/env bash
# Installs every Debian package speedgate needs to build and test (CPU build).
# Idempotent: packages already present are left alone. Run as root (or with sudo).
# Usage: scripts/install-deps.sh            # CPU build + tests (what CI needs)
#        scripts/install-deps.sh --cuda-venv  # also the torch==2.11.0 venv for the CUDA compile check
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git pkg-config python3 python3-venv
  libtorch-dev libgloo-dev
  libsqlitecpp-dev libsqlite3-dev sqlite3
  libboost-dev libboost-filesystem-dev
  prometheus-cpp-dev libcivetweb-dev
  googletest libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libjs-chart.js
  python3-torch
  # python/tests: schemas/ also checked by the jsonschema package (a stdlib subset otherwise)
  python3-jsonschema
  # dashboard tests: promtool + a real Prometheus server, headless Chromium
  prometheus chromium
  # Slurm executor tests: a real single-node cluster (scripts/slurm/start-local-slurm.sh)
  slurmctld slurmd slurm-client munge
  # fuzzing (scripts/fuzz.sh): clang with the libFuzzer runtime
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  echo "install-deps: installing ${missing[*]}" >&2
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all Debian packages present" >&2
fi

if [ "${1:-}" = "--cuda-venv" ]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  venv=$root/.venv-cuda
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import torch,sys; sys.exit(torch.__version__.split("+")[0]!="2.11.0")' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch==2.11.0
  fi
  echo "install-deps: CUDA torch at $("$venv/bin/python" -c 'import torch;print(torch.utils.cmake_prefix_path)')" >&2
fi
