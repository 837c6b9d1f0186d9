#!/usr/bin/env bash
# Installs the Debian packages speedgate needs. Idempotent: packages already present are
# left alone. Run as root (or with sudo). No service is left enabled or running: apt is
# kept from starting the daemons the test group brings (munge, slurmd, slurmctld,
# prometheus), and any that are enabled or running afterwards are disabled and stopped.
# The tests start their own instances under the build tree and stop them.
# Usage: scripts/install-deps.sh              # runtime: build speedgate and run campaigns
#        scripts/install-deps.sh --test       # also what the tests need (scripts/test.sh)
#        scripts/install-deps.sh --cuda-venv  # also the torch==2.11.0 venv for the CUDA compile check
set -euo pipefail

runtime=(
  build-essential cmake ninja-build ccache git pkg-config python3
  libtorch-dev libgloo-dev
  libsqlitecpp-dev libsqlite3-dev sqlite3
  libboost-dev libboost-filesystem-dev
  prometheus-cpp-dev libcivetweb-dev
  libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libjs-chart.js
)
test_only=(
  googletest libgtest-dev libgmock-dev
  python3-torch python3-venv
  # python/tests: schemas/ also checked by the jsonschema package (a stdlib subset otherwise)
  python3-jsonschema
  # dashboard tests: promtool + a real Prometheus server, headless Chromium
  prometheus chromium
  # Slurm executor tests: a real single-node cluster (scripts/slurm/start-local-slurm.sh)
  slurmctld slurmd slurm-client munge
  # fuzzing (scripts/fuzz.sh): clang with the libFuzzer runtime
  clang libclang-rt-14-dev
  # scripts/check-format.sh: the sources against .clang-format
  clang-format
)
services=(munge slurmd slurmctld prometheus)

packages=("${runtime[@]}")
for arg in "$@"; do
  case "$arg" in
    --test) packages+=("${test_only[@]}") ;;
    --cuda-venv) packages+=(python3-venv) ;;
    *) echo "install-deps: unknown option $arg (--test, --cuda-venv)" >&2; exit 2 ;;
  esac
done

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  $sudo_cmd apt-get update -q
  # policy-rc.d exit 101 = "action forbidden": maintainer scripts do not start daemons.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo_cmd tee "$policy" > /dev/null
    $sudo_cmd chmod 755 "$policy"
    own_policy=1
  fi
  status=0
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 \
    apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
  [ "$own_policy" -eq 0 ] || $sudo_cmd rm -f "$policy"
  [ "$status" -eq 0 ] || exit "$status"
else
  echo "install-deps: all Debian packages present" >&2
fi

# Whatever apt or an earlier install enabled: disabled and stopped.
for s in "${services[@]}"; do
  dpkg-query -W -f='${Status}' "$s" 2>/dev/null | grep -q "install ok installed" || continue
  if [ -d /run/systemd/system ]; then
    $sudo_cmd systemctl disable --now "$s" > /dev/null 2>&1 || true
  else
    $sudo_cmd service "$s" stop > /dev/null 2>&1 || true
    command -v update-rc.d > /dev/null && $sudo_cmd update-rc.d "$s" disable > /dev/null 2>&1 || true
  fi
done

if [[ " $* " == *" --cuda-venv "* ]]; then
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  venv=$root/.venv-cuda
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import torch,sys; sys.exit(torch.__version__.split("+")[0]!="2.11.0")' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch==2.11.0
  fi
  echo "install-deps: CUDA torch at $("$venv/bin/python" -c 'import torch;print(torch.utils.cmake_prefix_path)')" >&2
fi
