# Sourced by the bench scripts that run two processes over a net_memif pair
# (loss_api.sh, loss_memif.sh, cc_memif.sh):
#   memif_pair_init NAME   a temporary directory in $TMP, removed on exit
#                          together with every process listed in PIDS;
#   memif_vdev ROLE        the --vdev string of the server / client side;
#   memif_wait             waits (10 s at most) for the server's socket.
memif_pair_init() {
  TMP=$(mktemp -d "/tmp/dpdat-$1-XXXXXX")
  PIDS=()
  trap memif_pair_cleanup EXIT
}
memif_pair_cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$TMP"
}
memif_vdev() {
  echo "net_memif0,role=$1,socket=$TMP/memif.sock,socket-abstract=no"
}
memif_wait() {
  for _ in $(seq 1 200); do [ -S "$TMP/memif.sock" ] && return 0; sleep 0.05; done
  return 1
}
