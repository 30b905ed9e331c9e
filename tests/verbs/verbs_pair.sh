#!/usr/bin/env bash
# Debian's own verbs programs on dpdat's libibverbs.so.1, through dpdat-run.
#   verbs_pair.sh MODE PATH/TO/dpdat-run
# MODE:
#   devinfo       ibv_devices and ibv_devinfo -v list the device, its port and GID 0
#   pingpong      ibv_rc_pingpong -g 0 between two processes over net_memif
#                 (several sizes and iteration counts)
#   pingpong-afp  the same over net_af_packet on a veth pair (one netns per end)
#   perftest:<ib_xxx>[:args]  a perftest program between two processes over
#                 net_memif, checked for its result table
# Both processes run in a network namespace of the test's own whose loopback
# carries the dpdat addresses (the programs' TCP side channel goes to the
# server's address); the memif socket is a file under a private directory.
# Everything made here is removed on every exit.  Root only.
set -uo pipefail
MODE=$1
RUN=$(readlink -f "$2")
ID=$$
TMP=$(mktemp -d /tmp/dpdat-verbs-XXXXXX)
NS=dpdat-vb-$ID
NSA=dpdat-va-$ID
NSB=dpdat-vc-$ID
SIP=10.79.0.1
CIP=10.79.0.2
PIDS=()

cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  for n in "$NS" "$NSA" "$NSB"; do ip netns del "$n" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
  echo "FAIL ($MODE): $*"
  for f in "$TMP"/*.log; do
    [ -e "$f" ] || continue
    echo "--- $(basename "$f")"
    tail -40 "$f"
  done
  exit 1
}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
for p in ibv_devices ibv_devinfo ibv_rc_pingpong; do
  command -v $p >/dev/null || { echo "SKIP: $p not installed (ibverbs-utils)"; exit 77; }
done

# A sanitizer build of the library loaded into Debian's (uninstrumented)
# programs needs the ASan runtime first in the library list, as the DAT 2.0
# and libfabric suites do it.
VLIB="$(dirname "$(readlink -f "$RUN")")/../lib/verbs/libibverbs.so.1"
ASAN_RT=$(ldd "$VLIB" 2>/dev/null | awk '/libasan/ {print $3; exit}')
if [ -n "$ASAN_RT" ]; then
  export LD_PRELOAD="$ASAN_RT${LD_PRELOAD:+:$LD_PRELOAD}"
  export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi

MEMIF_S="vdev=net_memif0,role=server,socket=$TMP/memif.sock,socket-abstract=no;ip=$SIP${IA_EXTRA:+;$IA_EXTRA}"
MEMIF_C="vdev=net_memif0,role=client,socket=$TMP/memif.sock,socket-abstract=no;ip=$CIP${IA_EXTRA:+;$IA_EXTRA}"
WAIT_SOCK=

# One namespace whose loopback carries both addresses (the TCP side channel).
make_ns() {
  ip netns add "$NS" || fail "netns"
  ip netns exec "$NS" ip link set lo up
  ip netns exec "$NS" ip addr add $SIP/32 dev lo
  ip netns exec "$NS" ip addr add $CIP/32 dev lo
}

# The client's frame counters (dpdat-run -s, printed when it closes its
# device) show traffic both ways, and so do the server's where it closes its
# device at all (some perftest servers exit without).
check_counters() {
  local f n
  for f in "$TMP/server.log" "$TMP/client.log"; do
    n=$(sed -n 's/.*dpdat-verbs: [^ ]* tx_frames \([0-9]*\) rx_frames \([0-9]*\).*/\1 \2/p' "$f" | tail -1)
    if [ -z "$n" ]; then
      [ "$f" = "$TMP/server.log" ] && continue
      fail "no dpdat counters in $(basename "$f")"
    fi
    set -- $n
    [ "$1" -ge "${MIN_FRAMES:-1}" ] && [ "$2" -ge "${MIN_FRAMES:-1}" ] ||
      fail "$(basename "$f"): dpdat moved tx $1 rx $2 frames (at least ${MIN_FRAMES:-1} each expected)"
  done
}

# run_pair "server prefix" "client prefix" SERVER_CMD... -- CLIENT_CMD...
# The server starts first; the client is retried while the server's side
# channel is not listening yet.
run_pair() {
  local sp=$1 cp=$2
  shift 2
  local scmd=() ccmd=()
  while [ "$1" != "--" ]; do scmd+=("$1"); shift; done
  shift
  ccmd=("$@")
  [ -z "${WAIT_SOCK:-}" ] || rm -f "$WAIT_SOCK"  # a previous server's
  $sp timeout 120 taskset -c 0 "$RUN" -s -i srv="$SCFG" -- "${scmd[@]}" >"$TMP/server.log" 2>&1 &
  local spid=$!
  PIDS+=($spid)
  # The server's interface is up once its memif socket exists (memif modes).
  for _ in $(seq 1 300); do
    [ -z "${WAIT_SOCK:-}" ] || [ -S "$WAIT_SOCK" ] && break
    kill -0 "$spid" 2>/dev/null || fail "server exited before its interface came up"
    sleep 0.1
  done
  [ -z "${WAIT_SOCK:-}" ] || [ -S "$WAIT_SOCK" ] || fail "server's memif socket never appeared"
  sleep 0.3
  local cpid
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    $cp timeout 120 taskset -c 1 "$RUN" -s -i cli="$CCFG" -- "${ccmd[@]}" >"$TMP/client.log" 2>&1 &
    cpid=$!
    PIDS+=($cpid)
    wait "$cpid" && break
    grep -q "Couldn't connect\|Unable to open file descriptor\|Couldn't connect to" "$TMP/client.log" || fail "client exited with an error"
    kill -0 "$spid" 2>/dev/null || fail "server exited before the client connected"
    sleep 0.5
  done
  wait "$spid" || fail "server exited with an error"
  check_counters
}

case "$MODE" in
  devinfo)
    export DPDAT_IA_VDEV0="ring=0;ip=$SIP"
    out=$("$RUN" -i vdev0="ring=0;ip=$SIP" -- ibv_devices 2>&1) || fail "ibv_devices: $out"
    echo "$out"
    echo "$out" | grep -Eq '^\s+vdev0\s+[0-9a-f]{16}' || fail "ibv_devices does not list vdev0"
    out=$("$RUN" -i vdev0="ring=0;ip=$SIP" -- ibv_devinfo -v 2>&1) || fail "ibv_devinfo -v: $out"
    echo "$out"
    for pat in 'hca_id:\s+vdev0' 'transport:\s+InfiniBand \(0\)' 'state:\s+PORT_ACTIVE \(4\)' \
      'link_layer:\s+Ethernet' 'active_mtu:\s+(1024|2048|4096)' 'phys_port_cnt:\s+1' \
      'GID\[\s*0\]:\s+::ffff:10\.79\.0\.1, RoCE v2'; do
      echo "$out" | grep -Eq "$pat" || fail "ibv_devinfo -v lacks /$pat/"
    done
    # Every device the registry knows, when no -i narrows the list.
    out=$(DPDAT_VERBS_LIB=$(dirname "$RUN")/../lib/verbs LD_LIBRARY_PATH=$(dirname "$RUN")/../lib/verbs ibv_devices 2>&1)
    echo "$out" | grep -Eq '^\s+dpdat0\s' || fail "ibv_devices without -i does not list dpdat0: $out"
    echo "PASS: ibv_devices and ibv_devinfo -v list vdev0, its port and its RoCE v2 GID"
    ;;
  pingpong)
    make_ns
    SCFG=$MEMIF_S
    CCFG=$MEMIF_C
    WAIT_SOCK=$TMP/memif.sock
    # size, iterations, and -e: wait for completions on a completion channel
    for spec in "4096 500" "1 2000" "64 1000" "65536 200" "1048576 20" "4096 300 -e"; do
      set -- $spec
      MIN_FRAMES=$2
      run_pair "ip netns exec $NS" "ip netns exec $NS" \
        ibv_rc_pingpong -d srv -g 0 -s "$1" -n "$2" ${3:-} -- \
        ibv_rc_pingpong -d cli -g 0 -s "$1" -n "$2" ${3:-} $SIP
      grep -q "$2 iters in" "$TMP/client.log" || fail "client did not report $2 iterations"
      grep -q "$2 iters in" "$TMP/server.log" || fail "server did not report $2 iterations"
      echo "size $1 iters $2 ${3:-}: $(grep 'iters in' "$TMP/client.log")"
    done
    echo "PASS: ibv_rc_pingpong over net_memif"
    ;;
  pingpong-afp)
    # One veth end per namespace: dpdat's frames go through the kernel link
    # (net_af_packet); the side channel uses kernel addresses of their own on
    # the same veth (10.79.1.x), while the GIDs carry dpdat's (10.79.0.x).
    # A veth pair vv$ID-a / -b, one end in each namespace (cleanup deletes them).
    ip netns add "$NSA" && ip netns add "$NSB" || fail "cannot create namespaces"
    ip link add "vv$ID-a" type veth peer name "vv$ID-b" || fail "cannot create veth"
    ip link set "vv$ID-a" netns "$NSA"
    ip link set "vv$ID-b" netns "$NSB"
    for n in "$NSA" "$NSB"; do
      ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
      ip netns exec "$n" ip link set lo up
    done
    ip netns exec "$NSA" ip link set "vv$ID-a" up
    ip netns exec "$NSB" ip link set "vv$ID-b" up
    ip netns exec "$NSA" ip addr add 10.79.1.1/24 dev vv$ID-a
    ip netns exec "$NSB" ip addr add 10.79.1.2/24 dev vv$ID-b
    AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"
    SCFG="vdev=net_af_packet0,iface=vv$ID-a,$AF;ip=$SIP"
    CCFG="vdev=net_af_packet0,iface=vv$ID-b,$AF;ip=$CIP"
    for spec in ${AFP_SPECS:-"4096 200" "1 1000" "65536 50"}; do
      set -- $spec
      MIN_FRAMES=$2
      run_pair "ip netns exec $NSA" "ip netns exec $NSB" \
        ibv_rc_pingpong -d srv -g 0 -s "$1" -n "$2" -- \
        ibv_rc_pingpong -d cli -g 0 -s "$1" -n "$2" 10.79.1.1
      grep -q "$2 iters in" "$TMP/client.log" || fail "client did not report $2 iterations"
      grep -q "$2 iters in" "$TMP/server.log" || fail "server did not report $2 iterations"
      echo "size $1 iters $2: $(grep 'iters in' "$TMP/client.log")"
    done
    echo "PASS: ibv_rc_pingpong over net_af_packet on a veth pair"
    ;;
  perftest:*)
    IFS=: read -r _ prog args <<<"$MODE"
    command -v "$prog" >/dev/null || { echo "SKIP: $prog not installed (perftest)"; exit 77; }
    make_ns
    SCFG=$MEMIF_S
    CCFG=$MEMIF_C
    WAIT_SOCK=$TMP/memif.sock
    MIN_FRAMES=100
    run_pair "ip netns exec $NS" "ip netns exec $NS" \
      "$prog" -d srv -x 0 -F $args -- \
      "$prog" -d cli -x 0 -F $args $SIP
    grep -Eq '^\s*[0-9]+\s+[0-9]+\s+[0-9.]+' "$TMP/client.log" || fail "no result line"
    grep -E '^\s*#bytes|^\s*[0-9]+\s+[0-9]+\s+[0-9.]+' "$TMP/client.log"
    echo "PASS: $prog $args over net_memif"
    ;;
  *)
    echo "unknown mode $MODE"
    exit 2
    ;;
esac
