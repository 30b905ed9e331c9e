#!/usr/bin/env bash
# Two processes over net_memif: rsm_peer export (memif server, node 11) and
# rsm_peer import (memif client, node 22).  Both processes see both interface
# configurations (DPDAT_IA_RSMA / DPDAT_IA_RSMB), so each side maps the other's
# address to its configured node ID; the exporter's ACL names node 22 only.
#   rsm_memif.sh PATH/TO/rsm_peer
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
PEER=$(readlink -f "$1")
lib_tmpdir TMP dpdat-rsm
memif_pair "$TMP"
lib_on_fail 'echo "--- export log"; cat "$TMP/export.log"; echo "--- import log"; cat "$TMP/import.log"'

export DPDAT_IA_RSMA="vdev=$MEMIF_S;ip=10.78.0.1;node=11"
export DPDAT_IA_RSMB="vdev=$MEMIF_C;ip=10.78.0.2;node=22"
timeout 120 "$PEER" export rsma 22 >"$TMP/export.log" 2>&1 &
EPID=$!
lib_track $EPID
wait_memif_socket || fail "memif server socket never appeared"
timeout 120 "$PEER" import rsmb 11 >"$TMP/import.log" 2>&1 &
IPID=$!
lib_track $IPID
wait "$EPID" || fail "exporter exited with $?"
wait "$IPID" || fail "importer exited with $?"
grep -q "\[export\] OK" "$TMP/export.log" || fail "exporter did not finish"
grep -q "\[import\] OK" "$TMP/import.log" || fail "importer did not finish"
grep -h "^\[" "$TMP/export.log" "$TMP/import.log"
