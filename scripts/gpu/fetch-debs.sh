#!/usr/bin/env bash
# Fetch the Debian bookworm packages that the offline GPU host lacks into .gpudeps/
# of the current git checkout, together with unpack-debs.sh, so that a GPU-host command
# that brings .gpudeps along can unpack them there.  Run on Debian bookworm, x86_64:
#   bash scripts/gpu/fetch-debs.sh [EXTRA_DEBIAN_PACKAGE ...]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(git rev-parse --show-toplevel)
cd "$root"

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.gpudeps/' "$exclude" 2>/dev/null || echo '/.gpudeps/' >>"$exclude"

packages=(
  # sqlite3.h + libsqlite3.so link (the host has the runtime libsqlite3.so.0)
  libsqlite3-dev
  # SQLiteCpp: static library + CMake config
  libsqlitecpp-dev
  # civetweb: headers + config, shared libs, and bin/civetweb (its config checks it)
  libcivetweb-dev libcivetweb1 civetweb
  # prometheus-cpp: the config imports core, pull AND push, so all three libraries
  prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
  libprometheus-cpp-push1.0
  # prometheus-cpp's config calls find_dependency(ZLIB) and find_dependency(CURL);
  # their runtimes (libz.so.1, libcurl.so.4) are the host's own
  zlib1g-dev libcurl4-openssl-dev
  # Boost 1.74 as on Debian/CI: headers (shadow the host's 1.83) + compiled
  # filesystem/system, since Boost.Process 1.74 needs boost_filesystem
  libboost1.74-dev libboost-filesystem1.74-dev libboost-filesystem1.74.0
  libboost-system1.74-dev libboost-system1.74.0
  # fmt 9.1 (= the host's and Debian's): torch 2.11 bundles fmt 12 in torch/include,
  # which breaks spdlog; the carried headers are put first (see unpack-debs.sh)
  libfmt-dev libfmt9
  # Chart.js for the dashboard, embedded in the controller at build time
  libjs-chart.js
  # jq for the benchmark scripts (results are JSON)
  jq libjq1 libonig5
)
packages+=("$@")

mkdir -p .gpudeps
rm -f .gpudeps/*.deb
download() { (cd .gpudeps && apt-get download "${packages[@]}"); }
if ! download; then
  echo "fetch-debs: apt-get download failed; running apt-get update and retrying" >&2
  if [ "$(id -u)" -eq 0 ]; then apt-get update; else sudo apt-get update; fi
  rm -f .gpudeps/*.deb
  download
fi

cp "$here/unpack-debs.sh" .gpudeps/unpack-debs.sh
chmod +x .gpudeps/unpack-debs.sh

ls -1 .gpudeps
bytes=$(cat .gpudeps/* | wc -c)
echo "fetch-debs: $(ls .gpudeps/*.deb | wc -l) packages, $((bytes / 1024)) KiB in .gpudeps/" \
     "(brought along to the GPU host with each command)"
