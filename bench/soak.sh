#!/usr/bin/env bash
# Soak: two dpdat-perf processes over a net_memif pair, one CPU each, for a
# given time.  -q EPs carry verified WRITE, READ and SEND rounds of 64 KiB
# messages (new data every round, every round checked) under random loss on
# both sides, while --churn more connections connect, move 4 KiB (read back
# and compared), disconnect and are freed in a loop beside them.  Prints a
# line per interval (goodput overall and per operation, rounds, churn cycles,
# both processes' VmRSS), checks that the resident memory plateaus, and
# prints every counter of both sides at the end.  Fails on any mismatch,
# error, or growth of the resident memory.
#   bench/soak.sh [--minutes N | --seconds N] [--interval S] [--build DIR]
#                 [--loss P] [--qps N] [--churn N] [--rss-growth-kib K]
# --minutes / --seconds: how long (default 60 minutes); --interval: seconds
# between lines
# (default 60); --loss: the share of received frames each side drops
# (default 0.01); --rss-growth-kib: how far either process's VmRSS may grow
# past its value at the end of the second interval (default 16384).
# Environment: CPUS="0 1" (server, client), ITERS (messages per EP and
# round, default 300).
set -uo pipefail
SECS=3600
INTERVAL=60
BUILD=build/release
LOSS=0.01
QPS=3
CHURN=2
GROWTH=16384
usage="usage: bench/soak.sh [--minutes N | --seconds N] [--interval S] [--build DIR] [--loss P] [--qps N] [--churn N] [--rss-growth-kib K]"
bad() {
  echo "soak.sh: $*" >&2
  exit 2
}
posint() { [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] || bad "$1: not a positive whole number: '$2'"; }
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { [ "$1" = -h ] || [ "$1" = --help ]; } || bad "$1: needs a value ($usage)"
  case $1 in
    --minutes) posint "$1" "$2"; SECS=$(($2 * 60)) ;;
    --seconds) posint "$1" "$2"; SECS=$2 ;;
    --interval) posint "$1" "$2"; INTERVAL=$2 ;;
    --build) BUILD=$2 ;;
    --loss) [[ $2 =~ ^0(\.[0-9]+)?$ ]] || bad "--loss: not a share in [0, 1): '$2'"; LOSS=$2 ;;
    --qps) posint "$1" "$2"; QPS=$2 ;;
    --churn) [[ $2 =~ ^[0-9]+$ ]] || bad "--churn: not a whole number: '$2'"; CHURN=$2 ;;
    --rss-growth-kib) posint "$1" "$2"; GROWTH=$2 ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) bad "unknown argument '$1' ($usage)" ;;
  esac
  shift 2
done
PERF=$(readlink -f "$BUILD")/tools/dpdat-perf
[ -x "$PERF" ] || bad "$PERF not built"
read -r CPU_S CPU_C <<<"${CPUS:-0 1}"
ITERS=${ITERS:-300}
. "$(dirname "$(readlink -f "$0")")/../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-soak
memif_pair "$TMP"
# A host that stalls a process for up to a minute (a shared machine, the
# soak at low priority) does not break its connections; one that makes no
# progress for longer still fails the soak.
KEYS="retry_time_ms=60000"
[ "$LOSS" != 0 ] && KEYS="$KEYS;loss=$LOSS"
PARAMS=(--ia-params "$KEYS")
common=(--soak "$SECS" --interval "$INTERVAL" -q "$QPS" --churn "$CHURN" -s 65536 -n "$ITERS"
  --oob "$TMP/oob.sock" "${PARAMS[@]}")
echo "soak.sh: $SECS s over net_memif, CPUs $CPU_S/$CPU_C, loss $LOSS, $QPS EPs, $CHURN churned, $(date -u +%FT%TZ)"
# The server waits for the client out of band, then opens its interface.
taskset -c "$CPU_S" timeout $((SECS + 300)) "$PERF" --server --ip 10.78.0.1 --vdev "$MEMIF_S" \
  "${common[@]}" >"$TMP/s.log" 2>&1 &
spid=$!
lib_track "$spid"
lib_on_fail "echo '-- server:' >&2; grep -v '^EAL' '$TMP/s.log' | tail -20 >&2"
taskset -c "$CPU_C" timeout $((SECS + 240)) "$PERF" --client 10.78.0.1 --ip 10.78.0.2 \
  --vdev "$MEMIF_C" "${common[@]}" --json "$TMP/c.json" 2>&1 | grep --line-buffered -v '^EAL\|TELEMETRY' |
  tee "$TMP/c.log"
crc=${PIPESTATUS[0]}
wait "$spid"
src=$?
[ "$crc" -eq 0 ] || fail "the client exited with status $crc"
[ "$src" -eq 0 ] || fail "the server exited with status $src"
python3 - "$TMP/c.log" "$GROWTH" <<'PY' || fail "resident memory did not plateau"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith('soak ') and l.split()[1].isdigit()]
growth = int(sys.argv[2])
if not rows:
    sys.exit('no interval lines')
# The baseline: the end of the second interval (the first when there is one).
base = rows[min(1, len(rows) - 1)]
bad = False
for who, col in (('client', 9), ('server', 10)):
    b = int(base[col])
    top = max(int(r[col]) for r in rows[min(1, len(rows) - 1):])
    print(f'soak.sh: {who} VmRSS {b} KiB after interval {base[1]}, at most {top} KiB later '
          f'(bound: +{growth} KiB)')
    if top > b + growth:
        print(f'soak.sh: {who} VmRSS grew {top - b} KiB past its plateau', file=sys.stderr)
        bad = True
sys.exit(1 if bad else 0)
PY
echo "soak.sh: passed"
