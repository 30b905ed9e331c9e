#!/usr/bin/env bash
# Connection set-up rate across two processes through the public uDAPL API:
# dpdat-scale-conn --server and --client over a net_memif link between them
# (a socket in a private temporary directory; no namespaces, no root).
#   bench/scale/scale_conn2.sh PATH/TO/dpdat-scale-conn [CONNS] [BATCH]
set -uo pipefail
PROG=$(readlink -f "${1:?usage: scale_conn2.sh PATH/TO/dpdat-scale-conn [CONNS] [BATCH]}")
CONNS=${2:-10000}
BATCH=${3:-256}
TMP=$(mktemp -d /tmp/dpdat-scaleconn-XXXXXX)
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
export DPDAT_IA_SCALESRV="vdev=net_memif0,role=server,socket=$TMP/memif.sock,socket-abstract=no;ip=10.79.0.1"
export DPDAT_IA_SCALECLI="vdev=net_memif0,role=client,socket=$TMP/memif.sock,socket-abstract=no;ip=10.79.0.2"
timeout 300 "$PROG" --server scalesrv --conns "$CONNS" >"$TMP/server.log" 2>&1 &
SPID=$!
for _ in $(seq 1 600); do
  grep -q "listening" "$TMP/server.log" 2>/dev/null && break
  kill -0 "$SPID" 2>/dev/null || { cat "$TMP/server.log"; echo "server exited"; exit 1; }
  sleep 0.05
done
timeout 300 "$PROG" --client scalecli 10.79.0.1 --conns "$CONNS" --batch "$BATCH" >"$TMP/client.log" 2>&1
rc=$?
wait "$SPID"
src=$?
SPID=
grep -h "dpdat-scale-conn" "$TMP/server.log" "$TMP/client.log" | grep -v "mp action"
[ $rc -eq 0 ] && [ $src -eq 0 ] || { echo "client exit $rc, server exit $src"; exit 1; }
