#!/bin/bash
# Stops a cluster started by start-local-slurm.sh WORKDIR: cancels its jobs, stops
# slurmd, slurmctld and munged by their recorded pids, and kills any slurmstepd of this
# cluster left behind (job processes are not children of slurmd and outlive it).
# WORKDIR (logs) is kept. Exit 1 if a process of this cluster is still alive after.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 WORKDIR" >&2; exit 2; }
[ -d "$1" ] || exit 0  # never started
W=$(cd "$1" && pwd -P)
export SLURM_CONF="$W/slurm.conf"

uses_w() { # does process $1 hold a file under $W open? (guards against pid reuse)
  local fd
  for fd in "/proc/$1"/fd/*; do
    case "$(readlink "$fd" 2>/dev/null)" in "$W"/*) return 0 ;; esac
  done
  return 1
}
pid_of() {
  local p
  [ -s "$W/$1.pid" ] || return 0
  p=$(cat "$W/$1.pid")
  if uses_w "$p"; then echo "$p"; fi
}
alive() {
  local st
  [ -n "$1" ] && st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ]
}
session_of() {
  local st sid
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  read -r _ _ _ sid _ <<<"${st##*) }"
  echo "$sid"
}
stop_pid() { # PID NAME: SIGTERM, up to 10 s, then SIGKILL
  alive "$1" || return 0
  kill -TERM "$1" 2>/dev/null || true
  for _ in $(seq 1 50); do alive "$1" || return 0; sleep 0.2; done
  echo "stop-local-slurm: $2 ($1) ignored SIGTERM; SIGKILL" >&2
  kill -KILL "$1" 2>/dev/null || true
  sleep 0.2
}

# 1. Cancel every job while both daemons still run, so slurmstepd ends the jobs.
if alive "$(pid_of slurmctld)" && alive "$(pid_of slurmd)"; then
  jobs=$(squeue -h -o %A 2>/dev/null || true)
  if [ -n "$jobs" ]; then
    # shellcheck disable=SC2086
    scancel $jobs 2>/dev/null || true
    for _ in $(seq 1 100); do
      [ -z "$(squeue -h -o %A 2>/dev/null || true)" ] && break
      sleep 0.2
    done
  fi
fi

# 2. The daemons.
for n in slurmd slurmctld munged; do stop_pid "$(pid_of "$n")" "$n"; done

# 3. Leftover slurmstepd of this cluster (it keeps $W/log/slurmd.log open) and its session.
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$(cat "$d/comm" 2>/dev/null)" = slurmstepd ] || continue
  uses_w "$p" || continue
  sid=$(session_of "$p")
  echo "stop-local-slurm: killing leftover slurmstepd $p and its session $sid" >&2
  kill -KILL "$p" 2>/dev/null || true
  if [ -n "$sid" ] && [ "$sid" != "$(session_of $$)" ]; then
    for q in /proc/[0-9]*; do
      [ "$(session_of "${q#/proc/}")" = "$sid" ] && kill -KILL "${q#/proc/}" 2>/dev/null || true
    done
  fi
done

left=0
for n in slurmd slurmctld munged; do
  if alive "$(pid_of "$n")"; then
    echo "stop-local-slurm: $n still alive" >&2
    left=1
  else
    rm -f "$W/$n.pid"
  fi
done
exit "$left"
