#!/usr/bin/env bash
# Connection set-up rate across two processes through the public uDAPL API:
# dpdat-scale-conn --server and --client over a net_memif link between them
# (a socket in a private temporary directory; no namespaces, no root).
#   bench/scale/scale_conn2.sh PATH/TO/dpdat-scale-conn [CONNS] [BATCH]
set -uo pipefail
PROG=$(readlink -f "${1:?usage: scale_conn2.sh PATH/TO/dpdat-scale-conn [CONNS] [BATCH]}")
CONNS=${2:-10000}
BATCH=${3:-256}
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-scaleconn
memif_pair "$TMP"
lib_on_fail 'cat "$TMP/server.log"'
export DPDAT_IA_SCALESRV="vdev=$MEMIF_S;ip=10.79.0.1"
export DPDAT_IA_SCALECLI="vdev=$MEMIF_C;ip=10.79.0.2"
timeout 300 "$PROG" --server scalesrv --conns "$CONNS" >"$TMP/server.log" 2>&1 &
SPID=$!
lib_track $SPID
wait_for "grep -q listening '$TMP/server.log' 2>/dev/null || ! kill -0 $SPID 2>/dev/null" 30
grep -q listening "$TMP/server.log" || fail "server exited or never listened"
timeout 300 "$PROG" --client scalecli 10.79.0.1 --conns "$CONNS" --batch "$BATCH" >"$TMP/client.log" 2>&1
rc=$?
wait "$SPID"
src=$?
grep -h "dpdat-scale-conn" "$TMP/server.log" "$TMP/client.log" | grep -v "mp action"
[ $rc -eq 0 ] && [ $src -eq 0 ] || { echo "client exit $rc, server exit $src"; exit 1; }
