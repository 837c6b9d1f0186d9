#!/bin/bash
# Starts a private single-node Slurm cluster (munged + slurmctld + slurmd) on loopback,
# for the Slurm executor's tests (tests/slurm/) and for trying `--executor slurm` on one
# machine. Usage: scripts/slurm/start-local-slurm.sh WORKDIR
# stdout: one line, `export SLURM_CONF=WORKDIR/slurm.conf`; messages go to stderr.
# Env: SPEEDGATE_SLURM_TIMEOUT  seconds to wait for the node to become idle (default 60)
#      SPEEDGATE_SLURM_PORT     first of two consecutive free TCP ports (default 16817)
# Everything (config, munge key and socket, state, spool, logs, pid files) lives under
# WORKDIR; nothing under /etc is read or changed. Stop with stop-local-slurm.sh WORKDIR.
# Packages: slurmctld slurmd slurm-client munge (scripts/install-deps.sh installs them).
# Approach (no systemd, root, CPU-only, one node; Debian's slurm-wlm 22.05 + munge 0.5):
# a munged with its own key and socket (AuthInfo=socket=...), a slurm.conf whose node
# line comes from `slurmd -C`, both daemons in the foreground (-D) in their own
# sessions with every fd redirected (so `$(start ...)` does not hang on a pipe), and a
# bounded wait for `sinfo` to say idle. MinJobAge=600 keeps finished jobs visible to
# squeue/scontrol, which the executor uses instead of an accounting daemon.
set -euo pipefail

die() { echo "start-local-slurm: $*" >&2; exit 1; }
alive() { # running and not a zombie (kill -0 says a zombie is alive)
  local st
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ]
}
[ $# -eq 1 ] || die "usage: $0 WORKDIR"
for c in slurmctld slurmd sinfo munged mungekey munge unmunge; do
  command -v "$c" >/dev/null || die "$c not found; install slurmctld slurmd slurm-client munge (scripts/install-deps.sh)"
done
mkdir -p "$1"
W=$(cd "$1" && pwd -P)
TIMEOUT=${SPEEDGATE_SLURM_TIMEOUT:-60}
DAEMONS="munged slurmctld slurmd"
for d in $DAEMONS; do
  if [ -s "$W/$d.pid" ] && alive "$(cat "$W/$d.pid")"; then die "$W has a running $d; stop it first"; fi
done

rm -rf "$W/state" "$W/spool" "$W/log" "$W/munge" "$W"/*.pid
mkdir -p "$W/state" "$W/spool" "$W/log" "$W/munge"
chmod 755 "$W/munge"

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
P=${SPEEDGATE_SLURM_PORT:-16817}
while port_busy "$P" || port_busy $((P + 1)); do
  P=$((P + 2))
  [ "$P" -lt 65000 ] || die "no two free consecutive ports"
done

spawn() { # NAME CMD...: own session, all fds redirected, pid in $W/NAME.pid
  local n=$1
  shift
  setsid "$@" </dev/null >>"$W/log/$n.out" 2>&1 &
  echo $! >"$W/$n.pid"
}

mungekey --create --keyfile="$W/munge/munge.key" --force
chmod 400 "$W/munge/munge.key"
SOCK="$W/munge/munge.sock"
spawn munged munged -F --force --key-file="$W/munge/munge.key" --socket="$SOCK" \
  --pid-file="$W/munge/munged.pid" --log-file="$W/log/munged.log" --seed-file="$W/munge/munged.seed"
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.2; done
munge -S "$SOCK" -n | unmunge -S "$SOCK" >/dev/null || die "munged is not answering; see $W/log"

NODE=$(hostname -s)
ME=$(id -un)
export SLURM_CONF="$W/slurm.conf"
HW=$(slurmd -C | head -n1 | sed -e 's/^NodeName=[^ ]* //')
cat >"$SLURM_CONF" <<CONF
ClusterName=speedgate
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$P
SlurmdPort=$((P + 1))
SlurmUser=$ME
SlurmdUser=$ME
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.daemon.pid
SlurmdPidFile=$W/slurmd.daemon.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$W/log/jobcomp.txt
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=$NODE NodeAddr=127.0.0.1 $HW State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF

spawn slurmctld slurmctld -D -f "$SLURM_CONF"
spawn slurmd slurmd -D -f "$SLURM_CONF"

fail() {
  tail -n 20 "$W"/log/*.log >&2 || true
  "$(dirname "$0")/stop-local-slurm.sh" "$W" >&2 || true
  die "$*; logs in $W/log"
}
start=$SECONDS
state=
while [ $((SECONDS - start)) -lt "$TIMEOUT" ]; do
  for d in $DAEMONS; do alive "$(cat "$W/$d.pid")" || fail "$d exited during start-up"; done
  state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
[ "$state" = idle ] || fail "node not idle after ${TIMEOUT}s (state '$state')"
echo "start-local-slurm: node $NODE idle on ports $P-$((P + 1)); SLURM_CONF=$SLURM_CONF" >&2
echo "export SLURM_CONF=$SLURM_CONF"
