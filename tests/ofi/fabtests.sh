#!/usr/bin/env bash
# libfabric's conformance suite (fabtests, built outside this tree) over the dpdat provider:
#   fabtests.sh [--provdir DIR] [--timeout S] [--log FILE] FT_PREFIX PROVIDER [RUNFABTESTS_ARGS...]
#   fabtests.sh [--provdir DIR] [--timeout S] --loop N [--hogs K] FT_PREFIX PROVIDER TEST [ARGS...]
# FT_PREFIX: where fabtests is installed (FT_PREFIX/bin/runfabtests.sh and the fi_* binaries).
# PROVIDER: the provider string, "dpdat" or "dpdat;ofi_rxm".
# RUNFABTESTS_ARGS: more options for runfabtests.sh (default "-t quick"; e.g. "-t quick -U",
#   "-t quick -e 'dgram,rdm'").
# --provdir: the directory of libdpdat-fi.so (default build/ci/dat_core/ofi of this tree).
# --timeout: runfabtests' limit per test in seconds (default 60).
# --log: runfabtests' verbose output (every failed test's commands and output; default
#   ./fabtests-<provider>.log).
# --loop N: instead of runfabtests.sh, run one client-server test (e.g. fi_rdm_tagged_pingpong
#   -U) N times in a row, as runfabtests would (server, 1 s, client), beside K busy-looping
#   CPU hogs (--hogs, default 0); a run still going after --timeout seconds has both
#   processes' dpdat counters and thread stacks (dump_ranks.py) printed before it is killed.
#   A failed run's whole output is kept in ./fabtests-runI-{server,client}.log.
#   Prints one line per run and "passed P of N"; exit status 0 only when every run passed.
#
# Sets up what the tests need and no more: a network namespace whose loopback carries the
# server's and the client's address (the tests' own TCP control channel uses them), a
# net_memif pair with one interface per process, and one wrapper per fi_* binary that sets
# DPDAT_FI_IA to the client's interface when the arguments hold "-s <client address>" and
# to the server's otherwise (the server's wrapper also removes a memif socket a killed
# server left behind).  runfabtests.sh runs in a PID namespace of its own: after a failed
# test it kills every process whose name starts with "fi_", which then means only its own.
# Prints the failed and not-run tests and the totals; the exit status is runfabtests'
# (the number of failed tests; 0 when none failed).
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
# shellcheck source=../../scripts/lib/net.sh
. "$HERE/../../scripts/lib/net.sh"

PROVDIR=$LIB_ROOT/build/ci/dat_core/ofi
TIMEOUT=60
LOG=
LOOP=0
HOGS=0
usage() {
  echo "usage: fabtests.sh [--provdir DIR] [--timeout S] [--log FILE] FT_PREFIX PROVIDER [RUNFABTESTS_ARGS...]" >&2
  echo "       fabtests.sh [--provdir DIR] [--timeout S] --loop N [--hogs K] FT_PREFIX PROVIDER TEST [ARGS...]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --provdir) PROVDIR=${2:-}; shift 2 || usage ;;
    --timeout) TIMEOUT=${2:-}; shift 2 || usage ;;
    --log) LOG=${2:-}; shift 2 || usage ;;
    --loop) LOOP=${2:-}; shift 2 || usage ;;
    --hogs) HOGS=${2:-}; shift 2 || usage ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
FT=$(readlink -f "$1")
PROV=$2
shift 2
[ "$LOOP" -gt 0 ] || [ $# -gt 0 ] || set -- -t quick
for n in "$TIMEOUT" "$LOOP" "$HOGS"; do [[ "$n" =~ ^[0-9]+$ ]] || usage; done
[ "$LOOP" -eq 0 ] || [ $# -gt 0 ] || usage
[ -x "$FT/bin/runfabtests.sh" ] || fail "no $FT/bin/runfabtests.sh (build fabtests with --prefix=$FT)"
PROVDIR=$(readlink -f "$PROVDIR")
[ -f "$PROVDIR/libdpdat-fi.so" ] || fail "no $PROVDIR/libdpdat-fi.so (build the target dpdat-fi)"
[ -n "$LOG" ] || LOG=$PWD/fabtests-${PROV//;/_}.log
LOG=$(readlink -f "$LOG")

SRV_ADDR=10.0.0.1
CLI_ADDR=10.0.0.2
lib_tmpdir TMP dpdat-ft
memif_pair "$TMP"

# One wrapper per test binary; runfabtests.sh finds them through -p.
mkdir -p "$TMP/bin"
n=0
for exe in "$FT"/bin/fi_*; do
  if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then continue; fi
  cat >"$TMP/bin/${exe##*/}" <<EOF
#!/usr/bin/env bash
ia=ftsrv
prev=
for a in "\$@"; do
  [ "\$prev" = -s ] && [ "\$a" = "$CLI_ADDR" ] && ia=ftcli
  prev=\$a
done
if [ \$ia = ftsrv ]; then
  # A server that runfabtests left running after its client failed (it kills only the
  # "timeout" around it) polls on beside the next tests until its own timeout: end it.
  old=\$(cat "$TMP/server.pid" 2>/dev/null)
  case "\$(readlink "/proc/\$old/exe" 2>/dev/null)" in
    "$FT"/bin/fi_*) kill -KILL "\$old" ;;
  esac
  echo \$\$ >"$TMP/server.pid"
  rm -f "$MEMIF_SOCK"
fi
DPDAT_FI_IA=\$ia exec "$exe" "\$@"
EOF
  chmod +x "$TMP/bin/${exe##*/}"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no fi_* binaries in $FT/bin"

NS=dpdat-ft$$
netns_add "$NS"
ip -n "$NS" addr add "$SRV_ADDR/24" dev lo || fail "cannot add $SRV_ADDR to $NS"
ip -n "$NS" addr add "$CLI_ADDR/24" dev lo || fail "cannot add $CLI_ADDR to $NS"

export FI_PROVIDER_PATH=$PROVDIR
export DPDAT_IA_FTSRV="vdev=$MEMIF_S;ip=$SRV_ADDR"
export DPDAT_IA_FTCLI="vdev=$MEMIF_C;ip=$CLI_ADDR"
export PATH=$FT/bin:$PATH
# Sanitizer builds: their ASan runtime first in the uninstrumented test binaries.
lib_asan_preload "$PROVDIR/libdpdat-fi.so"

# one_run LIMIT_S TEST ARGS...: the server, then after 1 s the client (as runfabtests.sh
# starts them), each in a session of its own; 0 when both exited 0, 124 when they ran
# past LIMIT_S (after their counters and stacks were printed), else 1.
one_run() {
  local limit=$1 exe=$2 s c rc=0 py
  shift 2
  ip netns exec "$NS" setsid "$TMP/bin/$exe" "$@" -p "$PROV" -s "$SRV_ADDR" >"$TMP/server.log" 2>&1 &
  s=$!
  sleep 1
  ip netns exec "$NS" setsid "$TMP/bin/$exe" "$@" -p "$PROV" -s "$CLI_ADDR" "$SRV_ADDR" >"$TMP/client.log" 2>&1 &
  c=$!
  if ! wait_for "! kill -0 $s 2>/dev/null && ! kill -0 $c 2>/dev/null" "$limit"; then
    echo "ran past $limit s; server $s, client $c"
    py=$(command -v /usr/bin/python3 || command -v python3)
    timeout 120 "$py" -u "$HERE/dump_ranks.py" $s $c 2>&1
    kill -KILL $s $c 2>/dev/null
    wait $s $c 2>/dev/null
    return 124
  fi
  wait $s || rc=1
  wait $c || rc=1
  return $rc
}
if [ "$LOOP" -gt 0 ]; then
  lib_cpu_hogs "$HOGS"
  echo "fabtests $FT, provider '$PROV', $* $LOOP times beside $HOGS CPU hogs"
  pass=0
  for i in $(seq 1 "$LOOP"); do
    start=$SECONDS
    out=$(one_run "$TIMEOUT" "$@")
    rc=$?
    if [ $rc -eq 0 ]; then
      pass=$((pass + 1))
      echo "run $i: ok ($((SECONDS - start)) s)"
    else
      echo "run $i: FAILED, status $rc ($((SECONDS - start)) s)"
      [ -z "$out" ] || printf '%s\n' "$out"
      echo "---- server"; grep -v "mp action" "$TMP/server.log" | tail -20
      echo "---- client"; grep -v "mp action" "$TMP/client.log" | tail -20
      cp "$TMP/server.log" "$PWD/fabtests-run$i-server.log"
      cp "$TMP/client.log" "$PWD/fabtests-run$i-client.log"
      echo "(whole output in $PWD/fabtests-run$i-{server,client}.log)"
    fi
  done
  echo "passed $pass of $LOOP"
  [ "$pass" -eq "$LOOP" ]
  exit
fi

echo "fabtests $FT, provider '$PROV', runfabtests.sh $*, log $LOG"
# runfabtests writes its temporary output files into the current directory.
(cd "$TMP" && ip netns exec "$NS" unshare --pid --fork --mount-proc \
  "$FT/bin/runfabtests.sh" -v -T "$TIMEOUT" -p "$TMP/bin" "$@" \
  -s "$SRV_ADDR" -c "$CLI_ADDR" "$PROV") >"$LOG" 2>&1 &
pid=$!
lib_track $pid
wait $pid
rc=$?
lib_untrack $pid

# The verbose log is YAML: "- name: <command>" then "  result: <result>".
awk '/^- name: / { sub(/^- name: +/, ""); name = $0 }
     /^  result: / { r = $2; if (r ~ /^Fail/ || r == "Notrun") printf "%-8s %s\n", r, name }' "$LOG"
grep -E '^# (Total|Percentage)' "$LOG" || fail "runfabtests.sh printed no totals (exit status $rc), see $LOG"
exit "$rc"
