# shellcheck shell=bash
# The shell library every dpdat test, bench and set-up script sources:
#
#   . "$(dirname "$(readlink -f "$0")")/../scripts/lib/common.sh"   # path relative to the script
#
#   fail MESSAGE...           print "FAIL: MESSAGE" on stderr, run the lib_on_fail commands
#                             (to show logs), exit 1
#   lib_on_fail COMMAND       run COMMAND when fail is called (in the order registered)
#   lib_tmpdir VAR [PREFIX]   a fresh directory /tmp/PREFIX.XXXXXX in VAR, removed on exit
#                             (kept when LIB_KEEP_TMP=1, for a look after a failure)
#   lib_track PID...          processes to end on exit: CONT and TERM, 2 s grace, then KILL,
#                             reaped
#   lib_untrack PID...        no longer to end on exit (a tracked process already reaped)
#   lib_on_exit COMMAND       run COMMAND on exit (last registered, first run), after the
#                             tracked processes ended and before the temporary directory goes
#   wait_for 'CONDITION' SECONDS
#                             evaluate CONDITION every 50 ms until it is true (status 0) or
#                             SECONDS passed (status 1); never loops forever
#   wait_exit PID SECONDS     wait for a child to exit: its status, or 124 after SECONDS
#   kill_and_time VICTIM SURVIVOR [SECONDS]
#                             kill -9 VICTIM, then wait (at most SECONDS, default 60) for
#                             SURVIVOR to exit: its status (124: still running), and the
#                             milliseconds it took in TOOK_MS
#   now_ms                    a monotonic-enough clock in milliseconds
#   lib_asan_preload LIBRARY  when LIBRARY (a dpdat library loaded into uninstrumented
#                             programs) is a sanitizer build, put its ASan runtime first in
#                             LD_PRELOAD and turn leak checks off (the programs' own leaks
#                             are not dpdat's business); LIB_ASAN_RT names that runtime
#
# Sourcing installs one EXIT trap (and INT/TERM ones that exit through it); a script
# adds its own clean-up with lib_on_exit rather than a trap of its own.

[ -n "${_DPDAT_LIB_COMMON:-}" ] && return 0
_DPDAT_LIB_COMMON=1

LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIB_ROOT=$(cd "$LIB_DIR/../.." && pwd)
LIB_TMPDIRS=()
LIB_PIDS=()
LIB_EXIT_CMDS=()
LIB_FAIL_CMDS=()

fail() {
  local c
  echo "FAIL: $*" >&2
  set +e
  for c in "${LIB_FAIL_CMDS[@]}"; do eval "$c"; done
  exit 1
}

lib_on_fail() { LIB_FAIL_CMDS+=("$*"); }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

lib_tmpdir() {
  local var=$1 prefix=${2:-dpdat} dir
  dir=$(mktemp -d "/tmp/$prefix.XXXXXX") || fail "cannot create a temporary directory"
  LIB_TMPDIRS+=("$dir")
  printf -v "$var" '%s' "$dir"
}

lib_track() { LIB_PIDS+=("$@"); }

lib_untrack() {
  local p q keep=()
  for p in "${LIB_PIDS[@]}"; do
    for q in "$@"; do [ "$p" = "$q" ] && continue 2; done
    keep+=("$p")
  done
  LIB_PIDS=("${keep[@]}")
}

lib_on_exit() { LIB_EXIT_CMDS+=("$*"); }

# Starts N busy-looping CPU hogs, ended on exit (a loaded host, for loops
# that look for races).
lib_cpu_hogs() {
  local _
  for _ in $(seq 1 "$1"); do
    bash -c 'while :; do :; done' >/dev/null 2>&1 &
    lib_track $!
  done
}

# Ends the tracked processes: TERM, up to 2 s for them to go, then KILL; reaps them.
lib_end_tracked() {
  local p alive i
  [ ${#LIB_PIDS[@]} -gt 0 ] || return 0
  for p in "${LIB_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  for i in $(seq 1 40); do
    alive=0
    for p in "${LIB_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.05
  done
  for p in "${LIB_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${LIB_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  LIB_PIDS=()
}

lib_cleanup() {
  local rc=$? i d
  trap - EXIT INT TERM
  set +e
  lib_end_tracked
  for ((i = ${#LIB_EXIT_CMDS[@]} - 1; i >= 0; i--)); do eval "${LIB_EXIT_CMDS[$i]}"; done
  if [ "${LIB_KEEP_TMP:-0}" = 1 ]; then
    [ ${#LIB_TMPDIRS[@]} -eq 0 ] || echo "kept: ${LIB_TMPDIRS[*]}" >&2
  else
    for d in "${LIB_TMPDIRS[@]}"; do rm -rf "$d"; done
  fi
  exit "$rc"
}
trap lib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

lib_asan_preload() {
  local rt
  rt=$(ldd "$1" 2>/dev/null | awk '/libasan/ {print $3; exit}')
  [ -n "$rt" ] || return 0
  LIB_ASAN_RT=$rt
  export LD_PRELOAD="$rt${LD_PRELOAD:+:$LD_PRELOAD}"
  export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
}

wait_for() {
  local cond=$1 secs=$2 end
  end=$(($(now_ms) + secs * 1000))
  until eval "$cond"; do
    [ "$(now_ms)" -lt "$end" ] || return 1
    sleep 0.05
  done
  return 0
}

wait_exit() {
  local pid=$1 secs=$2
  wait_for "! kill -0 $pid 2>/dev/null" "$secs" || return 124
  wait "$pid"
}

kill_and_time() {
  local victim=$1 survivor=$2 secs=${3:-60} start rc
  kill -9 "$victim" 2>/dev/null
  start=$(now_ms)
  wait_exit "$survivor" "$secs"
  rc=$?
  TOOK_MS=$(($(now_ms) - start))
  return $rc
}
