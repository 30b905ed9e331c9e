#!/usr/bin/env bash
# Two processes over net_memif: rsm_peer export (memif server, node 11) and
# rsm_peer import (memif client, node 22).  Both processes see both interface
# configurations (DPDAT_IA_RSMA / DPDAT_IA_RSMB), so each side maps the other's
# address to its configured node ID; the exporter's ACL names node 22 only.
#   rsm_memif.sh PATH/TO/rsm_peer
set -uo pipefail
PEER=$(readlink -f "$1")
TMP=$(mktemp -d /tmp/dpdat-rsm-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- export log"; cat "$TMP/export.log"; echo "--- import log"; cat "$TMP/import.log"; exit 1; }

export DPDAT_IA_RSMA="vdev=net_memif0,role=server,socket=$TMP/memif.sock,socket-abstract=no;ip=10.78.0.1;node=11"
export DPDAT_IA_RSMB="vdev=net_memif0,role=client,socket=$TMP/memif.sock,socket-abstract=no;ip=10.78.0.2;node=22"
timeout 120 "$PEER" export rsma 22 >"$TMP/export.log" 2>&1 &
EPID=$!
PIDS+=($EPID)
for _ in $(seq 1 200); do [ -S "$TMP/memif.sock" ] && break; sleep 0.05; done
[ -S "$TMP/memif.sock" ] || fail "memif server socket never appeared"
timeout 120 "$PEER" import rsmb 11 >"$TMP/import.log" 2>&1 &
IPID=$!
PIDS+=($IPID)
wait "$EPID" || fail "exporter exited with $?"
wait "$IPID" || fail "importer exited with $?"
grep -q "\[export\] OK" "$TMP/export.log" || fail "exporter did not finish"
grep -q "\[import\] OK" "$TMP/import.log" || fail "importer did not finish"
grep -h "^\[" "$TMP/export.log" "$TMP/import.log"
