#!/usr/bin/env bash
# Debian's own rdma_cm programs on dpdat's librdmacm.so.1 and libibverbs.so.1,
# through dpdat-run, one process per side, each with its own dpdat interface.
#   rdmacm_pair.sh MODE PATH/TO/dpdat-run
# MODE:
#   rping         rping -s / rping -c -v -V -C 1000 over net_memif: every ping's
#                 data printed and validated on both sides
#   rping-afp     the same (-C 200) over net_af_packet on a veth pair
#   ucmatose      ucmatose, 4 connections, 100 messages each way on each
#   rdma_server   rdma_server / rdma_client (synchronous ids, rdma_create_ep)
#   qperf:<test>  qperf -cm1 <test> (its control connection over kernel TCP)
#   perftest:<ib_xxx>[:args]  a perftest program with -R (rdma_cm)
# Both processes run in a network namespace of the test's own whose loopback
# carries the dpdat addresses (programs with a TCP side channel reach the
# server's address there); the memif socket is a file under a private
# directory.  Everything made here is removed on every exit.  Root only.
# CPUs: the server and its progress thread on CPU 0, the client's on CPU 1.
set -uo pipefail
MODE=$1
RUN=$(readlink -f "$2")
ID=$$
NS=dpdat-cm-$ID
NSA=dpdat-ca-$ID
NSB=dpdat-cb-$ID
SIP=10.79.0.1
CIP=10.79.0.2
PORT=7174

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
need() { command -v "$1" >/dev/null || { echo "SKIP: $1 not installed ($2)"; exit 77; }; }

. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
. "$LIB_DIR/pair.sh"
lib_tmpdir TMP dpdat-rdmacm
lib_on_fail 'echo "($MODE)"
  for f in "$TMP"/*.log; do [ -e "$f" ] && { echo "--- $(basename "$f")"; tail -30 "$f"; }; done'

# Sanitizer builds: their ASan runtime first in the uninstrumented programs.
lib_asan_preload "$(dirname "$RUN")/../lib/verbs/libibverbs.so.1"

memif_pair "$TMP"
MEMIF_S="vdev=$MEMIF_S;ip=$SIP"
MEMIF_C="vdev=$MEMIF_C;ip=$CIP"
WAIT_SOCK=
SNS=
CNS=

# One namespace whose loopback carries both addresses.
make_ns() {
  netns_add "$NS"
  ip netns exec "$NS" ip addr add $SIP/32 dev lo
  ip netns exec "$NS" ip addr add $CIP/32 dev lo
  SNS=$NS
  CNS=$NS
  SCFG=$MEMIF_S
  CCFG=$MEMIF_C
  WAIT_SOCK=$MEMIF_SOCK
}

# run_pair SERVER_CMD... -- CLIENT_CMD...: the server starts first (its
# interface is up once its memif socket exists); the client is retried while
# the server is not listening yet (REJECTED: no listener, or a side channel
# that refuses).
run_pair() {
  local scmd=() sp=() cp=() sockopt=()
  while [ "$1" != "--" ]; do scmd+=("$1"); shift; done
  shift
  [ -z "$SNS" ] || sp=(ip netns exec "$SNS")
  [ -z "$CNS" ] || cp=(ip netns exec "$CNS")
  [ -z "$WAIT_SOCK" ] || sockopt=(--sock "$WAIT_SOCK")
  pair_run "${sockopt[@]}" --settle 0.5 --split-err \
    --retry "REJECTED|Couldn't connect|Connection refused|failed to connect|rdma_connect" \
    "${sp[@]}" timeout 60 taskset -c 0 "$RUN" -i srv="$SCFG" -- "${scmd[@]}" :: \
    "${cp[@]}" timeout 60 taskset -c 1 "$RUN" -i cli="$CCFG" -- "$@" || fail "$PAIR_WHY"
}

# Every ping 0..N-1 printed by both sides, in order, with rping's own data.
check_rping() {
  local n=$1 f
  for f in "$TMP/client.log" "$TMP/server.log"; do
    local got
    got=$(grep -c 'ping data: rdma-ping-[0-9]*: ' "$f")
    [ "$got" -eq "$n" ] || fail "$(basename "$f"): $got pings of $n"
    grep -q "ping data: rdma-ping-$((n - 1)): " "$f" || fail "$(basename "$f"): no ping $((n - 1))"
    ! grep -qi "data mismatch\|error" "$f" || fail "$(basename "$f") reports an error"
  done
}

case "$MODE" in
  rping)
    need rping rdmacm-utils
    make_ns
    run_pair rping -s -a $SIP -p $PORT -v -V -- rping -c -a $SIP -p $PORT -v -V -C 1000
    check_rping 1000
    echo "PASS: rping -C 1000 over net_memif, data validated on both sides"
    ;;
  rping-afp)
    need rping rdmacm-utils
    netns_add "$NSA" "$NSB"
    veth_pair "vc$ID-a" "vc$ID-b" "$NSA" "$NSB"
    AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"
    SCFG="vdev=net_af_packet0,iface=vc$ID-a,$AF;ip=$SIP"
    CCFG="vdev=net_af_packet0,iface=vc$ID-b,$AF;ip=$CIP"
    SNS=$NSA
    CNS=$NSB
    run_pair rping -s -a $SIP -p $PORT -v -V -- rping -c -a $SIP -p $PORT -v -V -C 200
    check_rping 200
    echo "PASS: rping -C 200 over net_af_packet on a veth pair, data validated"
    ;;
  ucmatose)
    need ucmatose rdmacm-utils
    make_ns
    run_pair ucmatose -b $SIP -p $PORT -c 4 -C 100 -- ucmatose -s $SIP -p $PORT -c 4 -C 100
    for f in server client; do
      for l in "receiving data transfers" "data transfers complete" "test complete" \
        "return status 0"; do
        grep -q "$l" "$TMP/$f.log" || fail "$f: no '$l'"
      done
      ! grep -qi "fail\|error" "$TMP/$f.log" || fail "$f reports an error"
    done
    grep -q "completing sends" "$TMP/server.log" || fail "server sent nothing"
    grep -q "sending replies" "$TMP/client.log" || fail "client sent no replies"
    grep -q "disconnected" "$TMP/server.log" || fail "server saw no disconnection"
    echo "PASS: ucmatose, 4 connections, 100 messages each way"
    ;;
  rdma_server)
    need rdma_server rdmacm-utils
    make_ns
    run_pair rdma_server -s $SIP -p $PORT -- rdma_client -s $SIP -p $PORT
    grep -q "rdma_server: end 0" "$TMP/server.log" || fail "server did not end with 0"
    grep -q "rdma_client: end 0" "$TMP/client.log" || fail "client did not end with 0"
    echo "PASS: rdma_server / rdma_client"
    ;;
  qperf:*)
    need qperf qperf
    test=${MODE#qperf:}
    make_ns
    # qperf's server opens its device only when a test starts: no memif
    # socket to wait for (the memif client side keeps trying to connect).
    WAIT_SOCK=
    # The server (qperf with no test) serves the test, then `quit` (-lp: its
    # TCP control port); -t 2 keeps the test short.  The quit waits up to
    # 30 s (-to) for the server to finish with the test on a loaded machine.
    run_pair qperf -lp 19771 -- sh -c \
      "qperf $SIP -lp 19771 -cm1 -t 2 -v $test && qperf $SIP -lp 19771 -to 30 quit"
    grep -Eq '(bw|latency|msg_rate) += +[0-9.]+ ' "$TMP/client.log" || fail "no result in qperf's output"
    grep -E '^ *[a-z_]+ += ' "$TMP/client.log"
    echo "PASS: qperf -cm1 $test"
    ;;
  perftest:*)
    IFS=: read -r _ prog args <<<"$MODE"
    need "$prog" perftest
    make_ns
    run_pair "$prog" -d srv -R -F $args -- "$prog" -d cli -R -F $args $SIP
    grep -Eq '^\s*[0-9]+\s+[0-9]+\s+[0-9.]+' "$TMP/client.log" || fail "no result line"
    grep -E '^\s*#bytes|^\s*[0-9]+\s+[0-9]+\s+[0-9.]+' "$TMP/client.log"
    echo "PASS: $prog -R $args over net_memif"
    ;;
  *)
    echo "unknown mode $MODE"
    exit 2
    ;;
esac
