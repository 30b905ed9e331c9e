#!/usr/bin/env bash
# UCX over dpdat next to UCX over its own transports, same CPUs: ucx_perftest
# at the transport level (UCT), server on CPU 0, client on CPU 1, in a
# network namespace of its own, over
#   dpdat   rc_verbs on the dpdat device (dpdat-run; net_memif between two
#           dpdat interfaces, both called dpdat0)
#   tcp     UCX's tcp transport on the namespace's loopback
#   posix   UCX's shared-memory transport (posix)
# Root.  bench/ucx_compare.sh [--build DIR] [--iters N] [--bw-iters N]
#                             [--rounds R] [--progress MODE]
# --iters: latency iterations (default 20000); --bw-iters: bandwidth messages
# (default 5000); --rounds: default 5; --progress: the dpdat interfaces'
# progress= (default adaptive, an interface's default).  With inline (no
# progress thread; ucx_perftest calls UCX's progress, and so ibv_poll_cq, on
# both sides) the medians are the same, but most runs had iterations that
# stalled about a millisecond (docs/ucx.md).
# Cases: put_lat 8 B (median of each run; half a round trip) and put_bw
# 64 KiB (MB/s, the run's average).  Each transport with the data layout it
# has: put_lat short on rc_verbs and posix, zcopy on tcp (tcp has no
# put_short); put_bw zcopy on rc_verbs and tcp, bcopy on posix (no zcopy).
# Rounds interleave the transports (dpdat, tcp, posix, dpdat, ...); the table
# gives each one's median over the rounds and every round's value.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib/compare.sh"
BW_ITERS_DEFAULT=5000
PROGRESS_DEFAULT=adaptive
ITERS_DEFAULT=20000
compare_rounds_args ucx_compare.sh 2,20 "$@"
command -v ucx_perftest >/dev/null || { echo "ucx_compare.sh: ucx_perftest not installed (ucx-utils)" >&2; exit 1; }

# UCX opens a verbs device only when /dev/infiniband/<name> is a character
# device: a private mount namespace with a tmpfs there holds one (as
# tests/verbs/ucx_pair.sh makes it).
if [ -z "${DPDAT_UCX_MNTNS:-}" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "ucx_compare.sh: needs root" >&2; exit 1; }
  made=0
  [ -d /dev/infiniband ] || { mkdir /dev/infiniband && made=1; }
  DPDAT_UCX_MNTNS=1 unshare -m --propagation private -- "$0" "$@"
  rc=$?
  [ $made -eq 0 ] || rmdir /dev/infiniband 2>/dev/null
  exit $rc
fi
compare_setup ucx_compare.sh dpdat-ucx-cmp dpdat-ucmp
mount -t tmpfs -o mode=0755,size=64k dpdat-ib /dev/infiniband || { echo "ucx_compare.sh: cannot mount /dev/infiniband" >&2; exit 1; }
lib_on_exit "umount /dev/infiniband 2>/dev/null"
mknod -m 0666 /dev/infiniband/dpdat0 c 1 3
PORT=$((20000 + $$ % 20000))

# one TRANSPORT TEST N ROUND: the client's "Final:" line into $TMP/TEST.TRANSPORT.ROUND
one() {
  local tr=$1 test=$2 n=$3 round=$4 sel pre_s=() pre_c=() env_=()
  case "$tr:$test" in
    dpdat:put_lat) sel="-x rc_verbs -d dpdat0:1 -s 8" ;;
    dpdat:put_bw) sel="-x rc_verbs -d dpdat0:1 -s 65536 -D zcopy" ;;
    tcp:put_lat) sel="-x tcp -d lo -s 8 -D zcopy" ;;
    tcp:put_bw) sel="-x tcp -d lo -s 65536 -D zcopy" ;;
    posix:put_lat) sel="-x posix -d memory -s 8" ;;
    posix:put_bw) sel="-x posix -d memory -s 65536 -D bcopy" ;;
  esac
  if [ "$tr" = dpdat ]; then
    pre_s=("$RUN" -i dpdat0="vdev=$MEMIF_S;ip=$S_IP;progress=$PROGRESS" --)
    pre_c=("$RUN" -i dpdat0="vdev=$MEMIF_C;ip=$C_IP;progress=$PROGRESS" --)
    env_=(UCX_NET_DEVICES=dpdat0:1)
    rm -f "$SOCK"
  fi
  # shellcheck disable=SC2086 # sel: several arguments
  pair_run --out "$TMP/$test.$tr.$round." --settle 0.3 --retry "Connection refused" \
    "${S_RUN[@]}" "${pre_s[@]}" env "${env_[@]}" ucx_perftest -p $PORT :: \
    "${C_RUN[@]}" "${pre_c[@]}" env "${env_[@]}" ucx_perftest $S_IP -p $PORT -t "$test" $sel \
    -n "$n" -w $((n / 10)) ||
    { echo "ucx_compare.sh: $tr $test: $PAIR_WHY" >&2; tail -5 "$PAIR_CLIENT_LOG" >&2; }
  grep -E '^\s*Final:' "$PAIR_CLIENT_LOG" | tail -1 >"$TMP/$test.$tr.$round"
}

TRS=(dpdat tcp posix)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
  for tr in "${TRS[@]}"; do one "$tr" put_lat "$ITERS" "$r"; done
  for tr in "${TRS[@]}"; do one "$tr" put_bw "$BW_ITERS" "$r"; done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$TMP" "$ROUNDS" "${TRS[@]}" <<'PY'
import math, os, statistics, sys
tmp, rounds, trs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
# Final: iterations, latency 50%ile, average, overall, bandwidth average, overall, rate ...
def val(test, tr, r):
    try:
        c = open(os.path.join(tmp, f"{test}.{tr}.{r}")).read().split()
        return float(c[2] if test == "put_lat" else c[6])
    except (OSError, ValueError, IndexError):
        return math.nan
print(f"{'case':22} {'transport':9} {'median':>9}  rounds")
for test, what in (("put_lat", "8 B latency (us)"), ("put_bw", "64 KiB bw (MB/s)")):
    for tr in trs:
        v = [val(test, tr, r) for r in range(1, rounds + 1)]
        ok = [x for x in v if not math.isnan(x)]
        m = statistics.median(ok) if ok else math.nan
        print(f"{test + ' ' + what:22} {tr:9} {m:9.2f}  " + " ".join(f"{x:.2f}" for x in v))
PY
