#!/usr/bin/env bash
# Checks the nightly units with `systemd-analyze verify`, with /opt/speedgate replaced
# by this checkout and the binary path by SPEEDGATE_BIN (default build/bin/speedgate),
# since verify insists that ExecStart= exists. Usage: scripts/systemd/verify.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${SPEEDGATE_BIN:-$root/build/bin/speedgate}
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not installed: units not verified" >&2; exit 2; }
[[ -x $bin ]] || { echo "no speedgate binary at $bin (build it, or set SPEEDGATE_BIN)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for u in speedgate-nightly.service speedgate-nightly.timer; do
  sed -e "s|/opt/speedgate/build/bin/speedgate|$bin|g" -e "s|/opt/speedgate|$root|g" \
      -e "s|^User=speedgate|User=$(id -un)|" "$here/$u" > "$tmp/$u"
done
systemd-analyze verify "$tmp/speedgate-nightly.service" "$tmp/speedgate-nightly.timer"
echo "systemd-analyze verify: speedgate-nightly.service and speedgate-nightly.timer OK"
