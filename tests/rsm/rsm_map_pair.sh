#!/usr/bin/env bash
# Load/store mappings between two processes (tests/rsm/rsm_map_peer.c):
#   rsm_map_pair.sh MODE PATH/TO/rsm_map_peer [BYTES]
# MODE: memif | af_packet-loss (net_af_packet on a veth pair in two
# namespaces, seeded 3 % receive loss at the importer and 2 % at the
# exporter) | bench-memif | bench-af_packet (the figures; not run by ctest).
# Both processes see both interface configurations (DPDAT_IA_RSMA,
# DPDAT_IA_RSMB), so each maps the other's address to its node ID (11, 22).
# Creates its own namespaces, veth pair and memif socket, removes them on exit.
set -uo pipefail
MODE=$1
PEER=$(readlink -f "$2")
BYTES=${3:-}
ID=$$
NSA=dpdat-ra-$ID
NSB=dpdat-rb-$ID
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-rsmmap
lib_on_fail 'echo "($MODE)"; echo "--- export log"; cat "$TMP/export.log" 2>/dev/null; echo "--- import log"; cat "$TMP/import.log" 2>/dev/null'
memif_pair "$TMP"
MEMIF_S="vdev=$MEMIF_S"
MEMIF_C="vdev=$MEMIF_C"
AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"
NSX="" NSI=""
case "$MODE" in
  memif|bench-memif)
    export DPDAT_IA_RSMA="$MEMIF_S;ip=10.78.0.1;node=11"
    export DPDAT_IA_RSMB="$MEMIF_C;ip=10.78.0.2;node=22"
    ;;
  af_packet-loss|bench-af_packet)
    netns_add "$NSA" "$NSB"
    veth_pair "rm$ID-a" "rm$ID-b" "$NSA" "$NSB"
    el="" il=""
    [ "$MODE" = af_packet-loss ] && el=";loss=0.02" && il=";loss=0.03"
    export DPDAT_IA_RSMA="vdev=net_af_packet0,iface=rm$ID-a,$AF;ip=10.78.0.1;node=11$el"
    export DPDAT_IA_RSMB="vdev=net_af_packet0,iface=rm$ID-b,$AF;ip=10.78.0.2;node=22$il"
    NSX="ip netns exec $NSA" NSI="ip netns exec $NSB"
    ;;
  *) echo "unknown mode $MODE"; exit 2 ;;
esac
case "$MODE" in
  bench-*) ROLE=bench; HOW=serve; BYTES=${BYTES:-$((64 << 20))} ;;
  *) ROLE=import; HOW=check; BYTES=${BYTES:-$((1 << 20))} ;;
esac

$NSX timeout 240 "$PEER" export rsma 22 "$BYTES" $HOW >"$TMP/export.log" 2>&1 &
EPID=$!
lib_track $EPID
wait_for "grep -q published '$TMP/export.log' 2>/dev/null || ! kill -0 $EPID 2>/dev/null" 20
grep -q "published" "$TMP/export.log" || fail "exporter exited or never published"
$NSI timeout 240 "$PEER" $ROLE rsmb 11 "$BYTES" >"$TMP/import.log" 2>&1 &
IPID=$!
lib_track $IPID
wait "$IPID" || fail "importer exited with $?"
wait "$EPID" || fail "exporter exited with $?"
grep -q "\[export\] OK" "$TMP/export.log" || fail "exporter did not finish"
grep -q "\[$ROLE\] OK" "$TMP/import.log" || fail "importer did not finish"
grep -h "^\[" "$TMP/export.log" "$TMP/import.log"
echo "PASS: $MODE"
