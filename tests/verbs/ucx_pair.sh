#!/usr/bin/env bash
# UCX (Debian ucx-utils) on dpdat's libibverbs.so.1, through dpdat-run:
# ucx_perftest between two processes over net_memif, each with a dpdat
# interface of its own (both called dpdat0: the client sends the server its
# options, the device's name with them).
#   ucx_pair.sh PATH/TO/dpdat-run "TEST [OPTIONS]"...
# TEST is a ucx_perftest test (put_lat, put_bw, get, am_lat, fadd, ...),
# OPTIONS more ucx_perftest options for it.  Transport-level (UCT) tests run
# over rc_verbs on the dpdat device (-d dpdat0:1 -x rc_verbs), or over the
# transport OPTIONS name with their own -x (ud_verbs); protocol-level (UCP)
# tests (tag_lat, ucp_am_lat, ...: UCP connects by worker address) with
# UCX_TLS=$DPDAT_UCX_TLS (default rc_verbs,ud_verbs,self: the data goes over
# rc_verbs, the wire-up messages over ud_verbs, docs/ucx.md).  The tests
# run one after the other in one server and one client process (a batch
# file, -b).  Both must exit 0, the client must print each test's final
# result line, and dpdat's frame counters (printed each time UCX closes the
# device) must have moved at least MIN_FRAMES (default 100) frames each way
# during each test: the traffic went through dpdat.
#   ucx_pair.sh PATH/TO/dpdat-run "io_demo [OPTIONS]"
# UCX's protocol layer (UCP) instead: io_demo (ucx-utils) connects by
# address through UCX's rdmacm connection manager on dpdat's librdmacm, and
# moves its data over rc_verbs on the dpdat device (UCX_TLS as above).
# OPTIONS go to the client (io_demo's -i, -o, -d, -q ...; the server gets
# the same -d and -q).  The client must exit 0 with status OK, the server
# must have taken the connection and still be serving when the client is
# done (then it is ended: it never exits by itself), and the client's frame
# counters must show at least MIN_FRAMES frames each way.
#   ucx_pair.sh PATH/TO/dpdat-run "mpi PROGRAM"
# Open MPI over UCX instead: mpirun runs PROGRAM (tests/ofi/mpi_check.c,
# which checks the data it moves) as 2 ranks with pml ucx (and osc ucx,
# btl self only: no TCP or shared-memory path), each rank through dpdat-run
# with its own end of the net_memif link as dpdat0 (rank 0 the server end,
# on CPU 0).  UCP connects by the ranks' worker addresses: wire-up over
# ud_verbs, data over rc_verbs.  mpirun must exit 0, PROGRAM must print
# "mpi_check: ok (2 ranks)", and each rank's frame counters must show at
# least MIN_FRAMES frames each way.
#
# UCX opens a verbs device only when /dev/infiniband/<device> is a character
# device it may open.  The script makes /dev/infiniband/dpdat0 (the numbers
# of /dev/null) on a tmpfs over /dev/infiniband in a private mount namespace
# of its own, so nothing of it is seen outside and all of it goes with the
# namespace (a /dev/infiniband directory it had to create for the mount
# point is removed afterwards).  Root only.
set -uo pipefail
RUN=$(readlink -f "$1")
shift
SELF=$(readlink -f "$0")

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (mount and network namespaces)"; exit 77; }
command -v ucx_perftest >/dev/null || { echo "SKIP: ucx_perftest not installed (ucx-utils)"; exit 77; }

# The private mount namespace first: the script runs itself again inside one.
if [ -z "${DPDAT_UCX_MNTNS:-}" ]; then
  made_dir=0
  if [ ! -d /dev/infiniband ]; then
    mkdir /dev/infiniband || { echo "FAIL: cannot create /dev/infiniband" >&2; exit 1; }
    made_dir=1
  fi
  DPDAT_UCX_MNTNS=1 unshare -m --propagation private -- "$SELF" "$RUN" "$@"
  rc=$?
  [ $made_dir -eq 0 ] || rmdir /dev/infiniband 2>/dev/null
  exit $rc
fi

. "$(dirname "$SELF")/../../scripts/lib/net.sh"
. "$LIB_DIR/pair.sh"
lib_tmpdir TMP dpdat-ucx
lib_on_fail 'for f in "$TMP"/*.log; do [ -e "$f" ] && { echo "--- $(basename "$f")"; grep -v "mp action" "$f" | tail -40; }; done'

# Sanitizer builds: their ASan runtime first in the uninstrumented programs.
lib_asan_preload "$(dirname "$RUN")/../lib/verbs/libibverbs.so.1"

ID=$$
NS=dpdat-ux-$ID
SIP=10.79.0.1
CIP=10.79.0.2
PORT=$((20000 + ID % 20000))
DEV=dpdat0
MIN_FRAMES=${MIN_FRAMES:-100}
TLS=${DPDAT_UCX_TLS:-rc_verbs,ud_verbs,self}
NETDEV=${DPDAT_UCX_DEVICES:-$DEV:1}

mount -t tmpfs -o mode=0755,size=64k dpdat-ib /dev/infiniband || fail "cannot mount a tmpfs on /dev/infiniband"
lib_on_exit "umount /dev/infiniband 2>/dev/null"
mknod -m 0666 /dev/infiniband/$DEV c 1 3 || fail "cannot make /dev/infiniband/$DEV"

memif_pair "$TMP"
netns_add "$NS"
ip netns exec "$NS" ip addr add $SIP/32 dev lo
ip netns exec "$NS" ip addr add $CIP/32 dev lo

if [[ "$1" == io_demo* ]]; then
  read -r _ cargs <<<"$1"
  sargs=$(grep -oE -- '-d [0-9]+:[0-9]+|-q' <<<"$cargs" | tr '\n' ' ')
  # io_demo tries once (-c 1); a client that found no listener yet is
  # started again.
  # shellcheck disable=SC2086 # cargs, sargs: several arguments
  pair_run --settle 0.5 --wait 0 --retry "connection retries exceeded" \
    ip netns exec "$NS" timeout 60 taskset -c 0 "$RUN" -s -i $DEV="vdev=$MEMIF_S;ip=$SIP" -- \
    env UCX_NET_DEVICES=$NETDEV UCX_TLS=$TLS UCX_SOCKADDR_TLS_PRIORITY=rdmacm io_demo -p $PORT $sargs :: \
    ip netns exec "$NS" timeout 60 taskset -c 1 "$RUN" -s -i $DEV="vdev=$MEMIF_C;ip=$CIP" -- \
    env UCX_NET_DEVICES=$NETDEV UCX_TLS=$TLS UCX_SOCKADDR_TLS_PRIORITY=rdmacm io_demo $SIP -p $PORT -c 1 $cargs
  [ "$PAIR_CLIENT_RC" = 0 ] || fail "io_demo client: $PAIR_WHY"
  [ "$PAIR_SERVER_RC" = 124 ] || fail "io_demo server exited with $PAIR_SERVER_RC while it should serve"
  grep -q "Client exit with status 'OK'" "$TMP/client.log" || fail "io_demo client did not end with status OK"
  grep -q "got new connection request" "$TMP/server.log" || fail "io_demo server saw no connection request"
  grep -E "Connected to server|Client exit" "$TMP/client.log" | cut -d' ' -f2-
  n=$(sed -n 's/^dpdat-verbs: [^ ]* tx_frames \([0-9]*\) rx_frames \([0-9]*\).*/\1 \2/p' "$TMP/client.log" | tail -1)
  [ -n "$n" ] || fail "no dpdat counters in the client's log: UCX did not use the dpdat device"
  set -- $n
  [ "$1" -ge "$MIN_FRAMES" ] && [ "$2" -ge "$MIN_FRAMES" ] ||
    fail "io_demo: dpdat moved tx $1 rx $2 frames (at least $MIN_FRAMES each expected): UCX did not use the dpdat device"
  echo "PASS: io_demo $cargs over UCP, rdmacm and rc_verbs on dpdat (client: tx $1 rx $2 frames)"
  exit 0
fi

if [[ "$1" == mpi\ * ]]; then
  command -v mpirun >/dev/null || { echo "SKIP: mpirun not installed (openmpi-bin)"; exit 77; }
  prog=$(readlink -f "${1#mpi }")
  [ -x "$prog" ] || fail "no program $prog"
  # Each rank finds its end of the link by its rank (mpirun starts both).
  cat >"$TMP/rank.sh" <<EOF
#!/bin/sh
case "\$OMPI_COMM_WORLD_RANK" in
  0) exec taskset -c 0 "$RUN" -s -i $DEV="vdev=$MEMIF_S;ip=$SIP" -- "\$@" ;;
  1) exec taskset -c 1 "$RUN" -s -i $DEV="vdev=$MEMIF_C;ip=$CIP" -- "\$@" ;;
esac
echo "rank.sh: rank \$OMPI_COMM_WORLD_RANK has no interface" >&2
exit 2
EOF
  chmod +x "$TMP/rank.sh"
  envs=(-x "UCX_NET_DEVICES=$NETDEV" -x "UCX_TLS=$TLS")
  [ -n "${LIB_ASAN_RT:-}" ] && envs+=(-x LD_PRELOAD -x ASAN_OPTIONS)
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --tag-output "${envs[@]}" \
    --mca pml ucx --mca osc ucx --mca btl self "$TMP/rank.sh" "$prog" >"$TMP/mpi.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail "mpirun exited with $rc"
  grep -q "mpi_check: ok (2 ranks)" "$TMP/mpi.log" || fail "no \"mpi_check: ok (2 ranks)\""
  for r in 0 1; do
    n=$(sed -n "s/^\[[0-9]*,$r\]<std[a-z]*>:dpdat-verbs: [^ ]* tx_frames \([0-9]*\) rx_frames \([0-9]*\).*/\1 \2/p" \
      "$TMP/mpi.log" | tail -1)
    [ -n "$n" ] || fail "no dpdat counters from rank $r: UCX did not use the dpdat device"
    set -- $n
    [ "$1" -ge "$MIN_FRAMES" ] && [ "$2" -ge "$MIN_FRAMES" ] ||
      fail "rank $r: dpdat moved tx $1 rx $2 frames (at least $MIN_FRAMES each expected)"
    echo "rank $r: tx $1 rx $2 frames"
  done
  echo "PASS: $(basename "$prog") over Open MPI's pml ucx, UCP by worker address on dpdat (UCX_TLS=$TLS)"
  exit 0
fi

# One batch line per test; UCT tests name the dpdat device and rc_verbs.
: >"$TMP/batch"
n=0
for spec in "$@"; do
  read -r test args <<<"$spec"
  case "$test" in
    put_* | get | am_* | add_* | fadd | swap | cswap) sel="-d $DEV:1 -x rc_verbs" ;;
    *) sel="" ;;
  esac
  # OPTIONS with their own -x TRANSPORT (ud_verbs) name it instead.
  [[ " $args " == *" -x "* ]] && [ -n "$sel" ] && sel="-d $DEV:1"
  n=$((n + 1))
  echo "t$n-$test -t $test $sel $args" >>"$TMP/batch"
done
[ $n -gt 0 ] || { echo "usage: ucx_pair.sh PATH/TO/dpdat-run \"TEST [OPTIONS]\"..." >&2; exit 2; }

# ucx_perftest opens the device once the client has sent the server its
# options, so the client's memif may start before the server's socket
# exists: dpdat's memif client waits for it.
pair_run --settle 0.3 --retry "Connection refused" \
  ip netns exec "$NS" timeout 60 taskset -c 0 "$RUN" -s -i $DEV="vdev=$MEMIF_S;ip=$SIP" -- \
  env UCX_NET_DEVICES=$NETDEV UCX_TLS=$TLS ucx_perftest -p $PORT -b "$TMP/batch" :: \
  ip netns exec "$NS" timeout 60 taskset -c 1 "$RUN" -s -i $DEV="vdev=$MEMIF_C;ip=$CIP" -- \
  env UCX_NET_DEVICES=$NETDEV UCX_TLS=$TLS ucx_perftest $SIP -p $PORT -b "$TMP/batch" ||
  fail "$PAIR_WHY"

# The client's log: each test's "Final:" line, then the counters of the
# device UCX closed after it (totals of the process's interface).
i=0 ptx=0 prx=0 finals=0
while read -r line; do
  case "$line" in
    Final:*)
      finals=$((finals + 1))
      i=$((i + 1))
      echo "$(sed -n "${i}p" "$TMP/batch" | cut -d' ' -f3-): $line"
      ;;
    dpdat-verbs:*)
      set -- $line
      [ $finals -eq $i ] || continue
      tx=$4 rx=$6
      if [ $i -gt 0 ] && { [ "$((tx - ptx))" -lt "$MIN_FRAMES" ] || [ "$((rx - prx))" -lt "$MIN_FRAMES" ]; }; then
        fail "test $i ($(sed -n "${i}p" "$TMP/batch")): dpdat moved tx $((tx - ptx)) rx $((rx - prx)) frames (at least $MIN_FRAMES each expected): UCX did not use the dpdat device"
      fi
      ptx=$tx prx=$rx
      ;;
  esac
done <"$TMP/client.log"
[ $finals -eq $n ] || fail "$finals final result lines for $n tests"
[ $ptx -gt 0 ] || fail "no dpdat counters in the client's log: UCX did not use the dpdat device"
echo "PASS: $n ucx_perftest tests on dpdat ($ptx frames sent, $prx received by the client)"
