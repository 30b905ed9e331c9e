#!/usr/bin/env bash
# Lossless 64 KiB RDMA WRITE throughput over net_memif between two processes,
# congestion control off and on (--cc off / both), alternating, ROUNDS times
# each, one pinned CPU per process where the machine has two:
#   bench/cc_memif.sh PATH/TO/dpdat-engine-perf [ROUNDS] [ITERS]
# (MODES="off both dcqcn delay" in the environment picks other --cc modes.)
# Prints one line per run ("cc <mode> run <k>: <Gb/s average>", or failed
# with the client's log) and the median per mode; exit status 1 when a run
# failed.  Root (memif socket, hugepages as the EAL wants them).
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PATH/TO/dpdat-engine-perf [ROUNDS] [ITERS]" >&2; exit 2; }
PERF=$(readlink -f "$1")
ROUNDS=${2:-3}
ITERS=${3:-20000}
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $ITERS =~ ^[1-9][0-9]*$ ]] ||
  { echo "$0: ROUNDS and ITERS are positive integers" >&2; exit 2; }
[ -x "$PERF" ] || { echo "$0: $PERF is not executable" >&2; exit 2; }
. "$(dirname "$(readlink -f "$0")")/../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-ccm
memif_pair "$TMP"
PIN_S=() PIN_C=()
if [ "$(nproc)" -ge 2 ]; then PIN_S=(taskset -c 0) PIN_C=(taskset -c 1); fi

# One run: prints the average Gb/s of the 64 KiB line, or fails.
run_one() {
  local mode=$1
  rm -f "$TMP/memif.sock"
  "${PIN_S[@]}" timeout 120 "$PERF" --server --vdev "$MEMIF_S" \
    --ip 10.77.0.1 --bw --oob "$TMP/oob.sock" --cc "$mode" >"$TMP/server.log" 2>&1 &
  local spid=$!
  lib_track "$spid"
  wait_memif_socket
  "${PIN_C[@]}" timeout 120 "$PERF" --client 10.77.0.1 --vdev "$MEMIF_C" \
    --ip 10.77.0.2 --bw --size 65536 --iters "$ITERS" --oob "$TMP/oob.sock" --cc "$mode" >"$TMP/client.log" 2>&1
  local rc=$?
  wait "$spid"
  [ $rc -eq 0 ] || { echo "client ($mode) exited with $rc" >&2; cat "$TMP/client.log" >&2; return 1; }
  awk '$1 == 65536 { print $4 }' "$TMP/client.log"
  grep "cc $mode" "$TMP/client.log" | sed 's/^/   /' >&2
}

read -r -a MODE_LIST <<<"${MODES:-off both}"
for mode in "${MODE_LIST[@]}"; do
  case $mode in off | dcqcn | delay | both) ;; *) echo "$0: unknown mode '$mode' in MODES" >&2; exit 2 ;; esac
done
declare -A RES
for mode in "${MODE_LIST[@]}"; do RES[$mode]=; done
FAILED=0
for k in $(seq 1 "$ROUNDS"); do
  for mode in "${MODE_LIST[@]}"; do
    if g=$(run_one "$mode"); then
      echo "cc $mode run $k: $g Gb/s"
      RES[$mode]+="$g "
    else
      echo "cc $mode run $k: failed (log above)"
      FAILED=1
    fi
  done
done
for mode in "${MODE_LIST[@]}"; do
  med=$(tr ' ' '\n' <<<"${RES[$mode]}" | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "cc $mode: median ${med:-none} Gb/s over $(wc -w <<<"${RES[$mode]}") good runs of $ROUNDS"
done
exit $FAILED
