#!/usr/bin/env bash
# The uDAPL C example across two processes: tests/api_c/udat_pair.c, built
# from an installed libdat with the installed dat.pc (build_installed.sh),
# one process --server and one --client, over a real DPDK PMD.
#   dat_pair.sh MODE PATH/TO/udat_pair LIBDIR
# MODE: memif | memif-loss | memif-pmtu | memif-jumbo | af_packet | af_packet-loss | tap |
#       kill-server | kill-client | no-server | no-client
# Creates its own network namespaces, veth pair and memif socket (only
# 10.78.0.0/24 inside namespaces it made) and removes them on every exit.
set -uo pipefail
MODE=$1
PROG=$(readlink -f "$2")
export LD_LIBRARY_PATH=$3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ID=$$
NSA=dpdat-pa-$ID
NSB=dpdat-pb-$ID
SIP=10.78.0.1
CIP=10.78.0.2
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-datpair
lib_on_fail 'echo "($MODE)"
  echo "--- server log"; grep -v "mp action callback" "$TMP/server.log" 2>/dev/null
  echo "--- client log"; grep -v "mp action callback" "$TMP/client.log" 2>/dev/null'

# Waits until the server printed that it listens (its IA, and for memif its
# socket, exist), or fails if it died first.
wait_listening() {
  local spid=$1
  wait_for "grep -q listening '$TMP/server.log' 2>/dev/null || ! kill -0 $spid 2>/dev/null" 30
  grep -q listening "$TMP/server.log" || fail "server exited or never listened"
}

# run_pair "server ns prefix" "server config" "client ns prefix" "client config" [client args]
run_pair() {
  local sp=$1 scfg=$2 cp=$3 ccfg=$4
  shift 4
  DPDAT_IA_PAIRSRV="$scfg" $sp timeout 120 "$PROG" --server pairsrv --timeout-ms 30000 \
    >"$TMP/server.log" 2>&1 &
  local spid=$!
  lib_track $spid
  wait_listening "$spid"
  DPDAT_IA_PAIRCLI="$ccfg" $cp timeout 120 "$PROG" --client paircli $SIP --timeout-ms 30000 "$@" \
    >"$TMP/client.log" 2>&1 &
  local cpid=$!
  lib_track $cpid
  wait "$cpid" || fail "client exited with $?"
  wait "$spid" || fail "server exited with $?"
  grep -q "byte-exact" "$TMP/client.log" || fail "client verified nothing"
  grep -q "byte-exact" "$TMP/server.log" || fail "server verified nothing"
  grep -h "udat_pair" "$TMP/server.log" "$TMP/client.log"
}

memif_pair "$TMP"
MEMIF_S="vdev=$MEMIF_S"
MEMIF_C="vdev=$MEMIF_C"
AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"

case "$MODE" in
  memif)
    run_pair "" "$MEMIF_S;ip=$SIP" "" "$MEMIF_C;ip=$CIP" --iters 40
    ;;
  memif-loss)
    # Seeded receive loss on both sides: CM and RC retransmissions must
    # still deliver every byte exactly once and in place.
    run_pair "" "$MEMIF_S;ip=$SIP;loss=0.02" "" "$MEMIF_C;ip=$CIP;loss=0.03" --iters 20
    ;;
  memif-pmtu)
    # Different path MTU caps: the CM agrees on the smaller (256) both ways.
    run_pair "" "$MEMIF_S;ip=$SIP;pmtu=256" "" "$MEMIF_C;ip=$CIP" --iters 10 --size 262144
    ;;
  memif-jumbo)
    # pmtu=4096 over net_memif: the configured MTU up to one packet buffer
    # (bsize less the Ethernet header).  With 2048-byte buffers the same
    # pmtu= is refused by dat_ia_open, with the reason, instead of lowered.
    DPDAT_IA_PAIRSRV="$MEMIF_S;ip=$SIP;mtu=9000;pmtu=4096" timeout 60 "$PROG" --server pairsrv \
      --timeout-ms 1000 >"$TMP/server.log" 2>&1 && fail "pmtu=4096 accepted with 2048-byte buffers"
    grep -q "pmtu=4096: the link carries at most PMTU 1024" "$TMP/server.log" ||
      fail "no reason given for the refusal"
    grep -h "dpdat: dat_ia_open" "$TMP/server.log"
    # Rounds of varying length: last packets shorter than the PMTU between full ones.
    run_pair "" "$MEMIF_S,bsize=4352;ip=$SIP;mtu=9000;pmtu=4096" \
      "" "$MEMIF_C,bsize=4352;ip=$CIP;mtu=9000;pmtu=4096" --iters 20 --size 262144
    ;;
  kill-client)
    # The client is killed mid-run: the server, waiting for its next DONE,
    # probes it and must report BROKEN (exit 4) within seconds.
    DPDAT_IA_PAIRSRV="$MEMIF_S;ip=$SIP" timeout 60 "$PROG" --server pairsrv --timeout-ms 30000 \
      >"$TMP/server.log" 2>&1 &
    spid=$!
    lib_track $spid
    wait_listening "$spid"
    DPDAT_IA_PAIRCLI="$MEMIF_C;ip=$CIP" "$PROG" --client paircli $SIP \
      --iters 100000000 --size 65536 --timeout-ms 60000 >"$TMP/client.log" 2>&1 &
    cpid=$!
    lib_track $cpid
    wait_for "grep -q 'round 200' '$TMP/client.log' 2>/dev/null" 10 || fail "client made no progress"
    kill_and_time "$cpid" "$spid" 60
    rc=$?
    took=$TOOK_MS
    [ "$rc" -ne 124 ] || fail "server hung (timeout)"
    [ "$rc" -eq 4 ] || fail "server exited with $rc, expected 4 (connection broken)"
    grep -q "DAT_CONNECTION_EVENT_BROKEN" "$TMP/server.log" || fail "no BROKEN event reported"
    [ "$took" -lt 5000 ] || fail "took ${took} ms to notice the dead client"
    grep -h "connection lost" "$TMP/server.log"
    echo "client killed: server saw BROKEN and exited after ${took} ms"
    ;;
  no-server)
    # Nobody at the address: the client gives up with a clear message and a
    # non-zero status (UNREACHABLE per attempt), never hangs.
    start=$(date +%s%N)
    DPDAT_IA_PAIRCLI="$MEMIF_S;ip=$CIP" timeout 60 "$PROG" --client paircli $SIP \
      --connect-tries 2 --timeout-ms 5000 >"$TMP/client.log" 2>&1
    rc=$?
    took=$(( ($(date +%s%N) - start) / 1000000 ))
    [ "$rc" -ne 124 ] || fail "client hung (timeout)"
    [ "$rc" -eq 4 ] || fail "client exited with $rc, expected 4 (could not connect)"
    grep -q "DAT_CONNECTION_EVENT_UNREACHABLE" "$TMP/client.log" || fail "no UNREACHABLE reported"
    grep -q "could not connect" "$TMP/client.log" || fail "no clear message"
    grep -h "udat_pair" "$TMP/client.log"
    echo "no server: client gave up after ${took} ms"
    ;;
  no-client)
    # Nobody connects: the server's wait for a connection request times out
    # (exit 3, a message saying what it waited for).
    start=$(date +%s%N)
    DPDAT_IA_PAIRSRV="$MEMIF_S;ip=$SIP" timeout 60 "$PROG" --server pairsrv --timeout-ms 1000 \
      >"$TMP/server.log" 2>&1
    rc=$?
    took=$(( ($(date +%s%N) - start) / 1000000 ))
    [ "$rc" -ne 124 ] || fail "server hung (timeout)"
    [ "$rc" -eq 3 ] || fail "server exited with $rc, expected 3 (timed out)"
    grep -q "no connection request arrived" "$TMP/server.log" || fail "no clear message"
    grep -h "udat_pair" "$TMP/server.log"
    echo "no client: server timed out after ${took} ms"
    ;;
  af_packet|af_packet-loss)
    netns_add "$NSA" "$NSB"
    veth_pair "vp$ID-a" "vp$ID-b" "$NSA" "$NSB"
    sl="" cl=""
    # Loss on the server's receive side only (memif-loss has it on both).
    [ "$MODE" = af_packet-loss ] && sl=";loss=0.03"
    run_pair "ip netns exec $NSA" "vdev=net_af_packet0,iface=vp$ID-a,$AF;ip=$SIP$sl" \
             "ip netns exec $NSB" "vdev=net_af_packet0,iface=vp$ID-b,$AF;ip=$CIP$cl" \
             --iters 20 --size 262144
    ;;
  tap)
    # net_tap, the one virtual PMD with RX interrupt descriptors: both sides
    # in the default (adaptive) progress mode, whose threads sleep on them.
    tap_bridge "$NSA" dts$ID dtc$ID
    run_pair "ip netns exec $NSA" "vdev=net_tap0,iface=dts$ID;ip=$SIP" \
             "ip netns exec $NSA" "vdev=net_tap0,iface=dtc$ID;ip=$CIP" --iters 10 --size 65536
    ;;
  kill-server)
    # The server is killed mid-run: the client must report the broken
    # connection (exit 4, DAT_CONNECTION_EVENT_BROKEN) within seconds, never
    # hang.  No `timeout` wrapper on the server: kill -9 must hit it.
    DPDAT_IA_PAIRSRV="$MEMIF_S;ip=$SIP" "$PROG" --server pairsrv --timeout-ms 60000 \
      >"$TMP/server.log" 2>&1 &
    spid=$!
    lib_track $spid
    wait_listening "$spid"
    DPDAT_IA_PAIRCLI="$MEMIF_C;ip=$CIP" timeout 60 "$PROG" --client paircli $SIP \
      --iters 100000000 --size 65536 --timeout-ms 30000 >"$TMP/client.log" 2>&1 &
    cpid=$!
    lib_track $cpid
    wait_for "grep -q 'round 200' '$TMP/client.log' 2>/dev/null" 10 || fail "client made no progress"
    kill_and_time "$spid" "$cpid" 60
    rc=$?
    took=$TOOK_MS
    [ "$rc" -ne 124 ] || fail "client hung (timeout)"
    [ "$rc" -eq 4 ] || fail "client exited with $rc, expected 4 (connection broken)"
    grep -q "DAT_CONNECTION_EVENT_BROKEN" "$TMP/client.log" || fail "no BROKEN event reported"
    [ "$took" -lt 5000 ] || fail "took ${took} ms to notice the dead server"
    grep -h "connection lost" "$TMP/client.log"
    echo "server killed: client saw BROKEN and exited after ${took} ms"
    ;;
  *)
    echo "unknown mode $MODE"; exit 2 ;;
esac
echo "PASS: $MODE"
