#!/usr/bin/env bash
# Debian's own verbs programs on dpdat's libibverbs.so.1, through dpdat-run.
#   verbs_pair.sh MODE PATH/TO/dpdat-run
# MODE:
#   devinfo       ibv_devices and ibv_devinfo -v list the device, its port and GID 0
#   pingpong      ibv_rc_pingpong -g 0 between two processes over net_memif
#                 (several sizes and iteration counts)
#   ud-pingpong   ibv_ud_pingpong -g 0 (UD datagrams) between two processes
#                 over net_memif
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
NS=dpdat-vb-$ID
NSA=dpdat-va-$ID
NSB=dpdat-vc-$ID
SIP=10.79.0.1
CIP=10.79.0.2

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
for p in ibv_devices ibv_devinfo ibv_rc_pingpong; do
  command -v $p >/dev/null || { echo "SKIP: $p not installed (ibverbs-utils)"; exit 77; }
done

. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
. "$LIB_DIR/pair.sh"
lib_tmpdir TMP dpdat-verbs
lib_on_fail 'echo "($MODE)"
  for f in "$TMP"/*.log; do [ -e "$f" ] && { echo "--- $(basename "$f")"; tail -40 "$f"; }; done'

# Sanitizer builds: their ASan runtime first in the uninstrumented programs.
lib_asan_preload "$(dirname "$RUN")/../lib/verbs/libibverbs.so.1"

memif_pair "$TMP"
MEMIF_S="vdev=$MEMIF_S;ip=$SIP${IA_EXTRA:+;$IA_EXTRA}"
MEMIF_C="vdev=$MEMIF_C;ip=$CIP${IA_EXTRA:+;$IA_EXTRA}"
WAIT_SOCK=

# One namespace whose loopback carries both addresses (the TCP side channel).
make_ns() {
  netns_add "$NS"
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

# run_pair SERVER_NS CLIENT_NS SERVER_CMD... -- CLIENT_CMD...  (a namespace may be "")
# The server starts first; the client is retried while the server's side
# channel is not listening yet.
run_pair() {
  local sp=() cp=() scmd=() sockopt=()
  [ -z "$1" ] || sp=(ip netns exec "$1")
  [ -z "$2" ] || cp=(ip netns exec "$2")
  shift 2
  while [ "$1" != "--" ]; do scmd+=("$1"); shift; done
  shift
  # The server's interface is up once its memif socket exists (memif modes).
  [ -z "${WAIT_SOCK:-}" ] || sockopt=(--sock "$WAIT_SOCK")
  pair_run "${sockopt[@]}" --settle 0.3 \
    --retry "Couldn't connect|Unable to open file descriptor" \
    "${sp[@]}" timeout 120 taskset -c 0 "$RUN" -s -i srv="$SCFG" -- "${scmd[@]}" :: \
    "${cp[@]}" timeout 120 taskset -c 1 "$RUN" -s -i cli="$CCFG" -- "$@" || fail "$PAIR_WHY"
  check_counters
}

# memif_pingpong PROGRAM "SIZE ITERS [-e]"...: an ibverbs-utils pingpong
# program between two processes over net_memif, once per spec; both sides
# must report the iterations, and dpdat must have carried at least that many
# frames each way.
memif_pingpong() {
  local prog=$1 spec
  shift
  make_ns
  SCFG=$MEMIF_S
  CCFG=$MEMIF_C
  WAIT_SOCK=$MEMIF_SOCK
  for spec in "$@"; do
    set -- $spec
    MIN_FRAMES=$2
    run_pair "$NS" "$NS" \
      "$prog" -d srv -g 0 -s "$1" -n "$2" ${3:-} -- \
      "$prog" -d cli -g 0 -s "$1" -n "$2" ${3:-} $SIP
    grep -q "$2 iters in" "$TMP/client.log" || fail "client did not report $2 iterations"
    grep -q "$2 iters in" "$TMP/server.log" || fail "server did not report $2 iterations"
    echo "size $1 iters $2 ${3:-}: $(grep 'iters in' "$TMP/client.log")"
  done
  echo "PASS: $prog over net_memif"
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
    # size, iterations, and -e: wait for completions on a completion channel
    memif_pingpong ibv_rc_pingpong "4096 500" "1 2000" "64 1000" "65536 200" "1048576 20" \
      "4096 300 -e"
    ;;
  ud-pingpong)
    # UD datagrams: each message one datagram (at most the path MTU).
    command -v ibv_ud_pingpong >/dev/null || { echo "SKIP: ibv_ud_pingpong not installed"; exit 77; }
    memif_pingpong ibv_ud_pingpong "1024 500" "1 1000" "512 300 -e"
    ;;
  pingpong-afp)
    # One veth end per namespace: dpdat's frames go through the kernel link
    # (net_af_packet); the side channel uses kernel addresses of their own on
    # the same veth (10.79.1.x), while the GIDs carry dpdat's (10.79.0.x).
    netns_add "$NSA" "$NSB"
    veth_pair "vv$ID-a" "vv$ID-b" "$NSA" "$NSB"
    ip netns exec "$NSA" ip addr add 10.79.1.1/24 dev vv$ID-a
    ip netns exec "$NSB" ip addr add 10.79.1.2/24 dev vv$ID-b
    AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"
    SCFG="vdev=net_af_packet0,iface=vv$ID-a,$AF;ip=$SIP"
    CCFG="vdev=net_af_packet0,iface=vv$ID-b,$AF;ip=$CIP"
    for spec in ${AFP_SPECS:-"4096 200" "1 1000" "65536 50"}; do
      set -- $spec
      MIN_FRAMES=$2
      run_pair "$NSA" "$NSB" \
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
    WAIT_SOCK=$MEMIF_SOCK
    MIN_FRAMES=100
    run_pair "$NS" "$NS" \
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
