#!/usr/bin/env bash
# Goodput under random loss, relative to the lossless run: 64 KiB RDMA
# WRITE, READ and SEND between two dpdat-engine-perf processes over a
# net_memif pair, one CPU each (taskset), with --loss P dropping P of the
# frames each side receives (so both directions), in one run side by side.
#   bench/loss_memif.sh PATH/TO/dpdat-engine-perf [extra engine-perf args, e.g. --gbn]
# Environment: LOSSES="0.001 0.01 0.05", OPS="write read send", ITERS=3000,
#   CPUS="0 1" (server, client).
# Prints per op and loss: goodput, % of the lossless run, and both sides' QP
# counters (retransmits = go-back-N rewinds + selective resends).
set -uo pipefail
PERF=$(readlink -f "${1:?usage: loss_memif.sh PATH/TO/dpdat-engine-perf [args]}")
shift
EXTRA=("$@")
LOSSES=${LOSSES:-0.001 0.01 0.05}
OPS=${OPS:-write read send}
ITERS=${ITERS:-3000}
read -r CPU_S CPU_C <<<"${CPUS:-0 1}"
. "$(dirname "$(readlink -f "$0")")/../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-loss
memif_pair "$TMP"

# run OP LOSS: prints "Gb/s|client QP line|server QP line" or "FAIL".
run() {
  local op=$1 loss=$2
  rm -f "$TMP/memif.sock" "$TMP/oob.sock"
  local common=(--bw --iters "$ITERS" --op "$op" --oob "$TMP/oob.sock" --loss "$loss" "${EXTRA[@]}")
  taskset -c "$CPU_S" timeout 120 "$PERF" --server --ip 10.78.0.1 \
    --vdev "$MEMIF_S" \
    "${common[@]}" >"$TMP/s.log" 2>&1 &
  local spid=$!
  lib_track "$spid"
  wait_memif_socket
  taskset -c "$CPU_C" timeout 120 "$PERF" --client 10.78.0.1 --ip 10.78.0.2 \
    --vdev "$MEMIF_C" \
    --size 65536 "${common[@]}" >"$TMP/c.log" 2>&1
  local crc=$?
  wait "$spid"
  local src=$?
  if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
    echo "FAIL (client $crc, server $src): $(grep -v '^EAL\|TELEMETRY' "$TMP/c.log" | tail -2 | tr '\n' ' ')"
    return
  fi
  local bw cq sq
  bw=$(awk '$1 == 65536 { print $4; exit }' "$TMP/c.log")
  cq=$(grep -m1 '^ QP 0:' "$TMP/c.log" | sed 's/^ QP 0: //')
  sq=$(grep -m1 '^ QP 0:' "$TMP/s.log" | sed 's/^ QP 0: //')
  echo "$bw|$cq|$sq"
}

echo "dpdat-engine-perf 64 KiB over net_memif, CPUs $CPU_S/$CPU_C, $ITERS iterations, args: ${EXTRA[*]:-(none)}"
printf "%-6s %-7s %12s %7s\n" op loss "Gb/s" "% base"
for op in $OPS; do
  base=$(run "$op" 0)
  b=${base%%|*}
  printf "%-6s %-7s %12s %7s\n" "$op" 0 "$b" 100
  for loss in $LOSSES; do
    r=$(run "$op" "$loss")
    g=${r%%|*}
    if [[ $r == FAIL* ]] || [[ $b == FAIL* ]] || [ -z "$g" ] || [ -z "$b" ]; then
      printf "%-6s %-7s %s\n" "$op" "$loss" "$r"
      continue
    fi
    rest=${r#*|}
    pct=$(awk -v g="$g" -v b="$b" 'BEGIN { printf "%.0f", 100 * g / b }')
    printf "%-6s %-7s %12s %7s\n" "$op" "$loss" "$g" "$pct"
    printf "         client: %s\n         server: %s\n" "${rest%%|*}" "${rest#*|}"
  done
done
