#!/usr/bin/env bash
# Runs a command with line-buffered output and a time limit. On the limit it prints every
# thread's stack of each process the command started (so a hang says where it is), kills
# them all and exits 124.
#
#   bash Hardware/watchdog.sh SECONDS COMMAND [ARGUMENTS...]
set -uo pipefail

limit=${1:?usage: watchdog.sh SECONDS COMMAND [ARGUMENTS...]}
shift
[ $# -gt 0 ] || { echo "usage: watchdog.sh SECONDS COMMAND [ARGUMENTS...]" >&2; exit 64; }

# A test runner writing into a pipe holds its last lines back; stdbuf makes stdio flush per line.
runner=()
command -v stdbuf >/dev/null && runner=(stdbuf -oL -eL)

# setsid puts the command and its children in their own process group, so all can be found and killed.
setsid "${runner[@]}" "$@" &
leader=$!

descendants() {
  local pid=$1 child
  for child in $(pgrep -P "$pid" 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}

waited=0
while kill -0 "$leader" 2>/dev/null; do
  if [ "$waited" -ge "$limit" ]; then
    echo "watchdog: '$*' still running after $limit s; stacks of its processes follow" >&2
    for pid in $leader $(descendants "$leader"); do
      echo "watchdog: process $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)" >&2
      if command -v gdb >/dev/null; then
        timeout 120 gdb -p "$pid" -batch -nx -ex "set pagination off" -ex "thread apply all bt 30" 2>&1 \
          | grep -E '^(Thread|#)' >&2
      fi
    done
    kill -KILL -- "-$leader" 2>/dev/null
    wait "$leader" 2>/dev/null
    exit 124
  fi
  sleep 5
  waited=$((waited + 5))
done
wait "$leader"
