#!/usr/bin/env bash
# Open MPI jobs on dpdat (scripts/mpi-dpdat.sh), each judged by its own
# output and by every rank's frame counters (DPDAT_FI_STATS): the traffic
# went over dpdat, not a fallback.
#   mpi_run.sh MODE PROVIDER_DIR [MPI_CHECK]
# MODE: netpipe - NPopenmpi, 2 ranks over net_memif, 1 B .. 1 MiB
#       check   - MPI_CHECK (tests/ofi/mpi_check.c), 4 ranks, af_packet bridge
#                 (no hairpin: sends to self loop back in the port)
#       check-memif - MPI_CHECK, 2 ranks over a net_memif pair: its sends to
#                 self have no hairpin bridge to come back from, only the
#                 port's software loopback (every rank must loop frames)
#       hpcc    - hpcc with tests/ofi/hpccinf.txt, 4 ranks, af_packet bridge
# MPI_RDM=native (default) | rxm: the provider's own FI_EP_RDM endpoint, or
# ofi_rxm over its connected ones (mpi-dpdat.sh --rdm).
set -uo pipefail
MODE=$1
PROVDIR=$(readlink -f "$2")
HERE=$(dirname "$(readlink -f "$0")")
MPI_RDM=${MPI_RDM:-native}
case "$MPI_RDM" in native | rxm) ;; *) echo "mpi_run.sh: MPI_RDM=native|rxm" >&2; exit 2 ;; esac
RUN_SCRIPT="$HERE/../../scripts/mpi-dpdat.sh"
# shellcheck source=../../scripts/lib/common.sh
. "$HERE/../../scripts/lib/common.sh"
lib_tmpdir TMP dpdat-mpirun
# A failed job's whole output (and, for a hang, every process's dpdat
# counters and stacks) is printed and kept in $DPDAT_KEEP_DIR (default: the
# working directory, ctest's build/.../tests/ofi).
keep_job() {
  local keep
  echo "($MODE)"
  keep="${DPDAT_KEEP_DIR:-$PWD}/mpi_run-$MODE-$(date +%Y%m%d-%H%M%S)-$$"
  if mkdir -p "$keep" 2>/dev/null; then
    cp "$TMP"/*.log "$keep/" 2>/dev/null
    echo "kept in $keep"
  fi
  echo "---- job output"
  grep -v "mp action" "$TMP/out.log"
  [ -f "$TMP/hang.log" ] && { echo "---- the hung job's processes"; cat "$TMP/hang.log"; }
}
lib_on_fail keep_job
# job LIMIT_S CMD...: runs CMD in $TMP (output: $TMP/out.log) in a session
# of its own for at most LIMIT_S seconds; its exit status, or 124 when it
# ran out of time.  Before a job that ran out of time is killed, every
# process of it has its dpdat counters and thread stacks written to
# $TMP/hang.log (dump_ranks.py).
job() {
  local limit=$1 pid py pids
  shift
  (cd "$TMP" && exec setsid "$@") >"$TMP/out.log" 2>&1 &
  pid=$!
  if wait_for "! kill -0 $pid 2>/dev/null" "$limit"; then
    wait "$pid"
    return
  fi
  pids=$(ps -o pid= -s "$pid" | tr -s ' \n' ' ')
  echo "job ran past ${limit} s; its processes: $pids" >"$TMP/hang.log"
  # The system's python when there is one: a version manager's shim can
  # take minutes to start on a loaded machine.
  py=$(command -v /usr/bin/python3 || command -v python3)
  # shellcheck disable=SC2086
  timeout 120 "$py" -u "$HERE/dump_ranks.py" $pids >>"$TMP/hang.log" 2>&1
  for p in $(ps -o pid= -s "$pid"); do kill -TERM "$p" 2>/dev/null; done
  sleep 2
  for p in $(ps -o pid= -s "$pid"); do kill -KILL "$p" 2>/dev/null; done
  wait "$pid"
  return 124
}
# every rank printed its counters, with at least $2 frames each way (and at
# least $3 of them looped back to itself, when given; and its interface's
# path MTU $4, when given)
counters() {
  local ranks=$1 min=$2
  local n
  # Each rank's line, wherever it starts: a rank's stderr may land after
  # another's stdout that has no newline yet (NetPIPE prints in pieces).
  grep -oE "dpdat-fi: fi[0-9]+ tx_frames [0-9]+ rx_frames [0-9]+ looped_frames [0-9]+ pmtu [0-9]+" \
    "$TMP/out.log" >"$TMP/counters"
  n=$(awk '{print $2}' "$TMP/counters" | sort -u | wc -l)
  [ "$n" -eq "$ranks" ] || fail "$n of $ranks ranks reported dpdat counters"
  while read -r _ name _ tx _ rx _ looped _ pmtu; do
    [ "$tx" -ge "$min" ] && [ "$rx" -ge "$min" ] || fail "$name moved too few frames ($tx/$rx)"
    [ "${3:-0}" -eq 0 ] || [ "$looped" -ge "$3" ] || fail "$name looped too few frames ($looped)"
    [ -z "${4:-}" ] || [ "$pmtu" = "$4" ] || fail "$name ran at PMTU $pmtu, not $4"
  done <"$TMP/counters"
  cat "$TMP/counters"
}

case "$MODE" in
  netpipe)
    # -i: NetPIPE's integrity check (the data of every size is compared),
    # then the timed run with a fixed repeat count (short for CI).
    job 100 "$RUN_SCRIPT" --rdm "$MPI_RDM" --provider-dir "$PROVDIR" -- NPopenmpi -i -u 2097152 -n 5 ||
      fail "integrity job failed ($?)"
    grep -q "Integrity check failed" "$TMP/out.log" && fail "integrity check failed"
    ok=$(grep -c "Integrity check passed" "$TMP/out.log")
    # The ranks' output reaches mpirun through separate pipes, so a line of
    # one (its "0: host" greeting, say) can split NetPIPE's "N: 1048577
    # bytes ... Integrity check passed": count the passes instead of
    # reading them on the size's line.
    mib=$(sed -nE 's/^ *([0-9]+): +1048577 bytes.*/\1/p' "$TMP/out.log" | head -1)
    [ -n "$mib" ] && [ "$ok" -gt "$mib" ] ||
      fail "integrity not checked up to 1 MiB ($ok sizes passed)"
    job 100 "$RUN_SCRIPT" --rdm "$MPI_RDM" --provider-dir "$PROVDIR" --stats -- \
      NPopenmpi -u 1048576 -n 50 -o "$TMP/np.out" || fail "job failed ($?)"
    last=$(awk 'END {print $1}' "$TMP/np.out")
    [ "${last:-0}" -ge 1048576 ] || fail "NetPIPE stopped at ${last:-nothing} bytes"
    # memif's default path MTU is 4096 (scripts/mpi-dpdat.sh): a 1 MiB
    # message is 256 data frames, not 1024.
    counters 2 1000 0 4096
    awk '$1 == 8 || $1 == 65536 || $1 == 1048576' "$TMP/np.out"
    echo "NetPIPE: $ok sizes integrity-checked, timed 1 B .. 1 MiB on dpdat ($MPI_RDM)"
    ;;
  check)
    job 200 "$RUN_SCRIPT" --rdm "$MPI_RDM" --provider-dir "$PROVDIR" --ranks 4 --link af_packet --stats -- "$3" ||
      fail "job failed ($?)"
    grep -q "mpi_check: ok (4 ranks)" "$TMP/out.log" || fail "no ok from mpi_check"
    counters 4 500 10
    grep "mpi_check" "$TMP/out.log" | sed "s/$/ ($MPI_RDM)/"
    ;;
  check-memif)
    job 100 "$RUN_SCRIPT" --rdm "$MPI_RDM" --provider-dir "$PROVDIR" --ranks 2 --link memif --stats -- "$3" ||
      fail "job failed ($?)"
    grep -q "mpi_check: ok (2 ranks)" "$TMP/out.log" || fail "no ok from mpi_check"
    counters 2 500 10
    grep "mpi_check" "$TMP/out.log"
    ;;
  hpcc)
    cp "$HERE/hpccinf.txt" "$TMP/"
    job 280 "$RUN_SCRIPT" --rdm "$MPI_RDM" --provider-dir "$PROVDIR" --ranks 4 --link af_packet --stats -- hpcc ||
      fail "job failed ($?)"
    out="$TMP/hpccoutf.txt"
    [ -f "$out" ] || fail "no hpccoutf.txt"
    grep -q "^Success=1" "$out" || fail "HPCC summary lacks Success=1"
    grep -qi "failed residual checks" "$out" && grep -E "^ +[1-9][0-9]* tests completed and failed" "$out" &&
      fail "a residual check failed"
    grep -E "_Errors=[1-9]" "$out" && fail "RandomAccess errors"
    grep -E "^PTRANS_residual=" "$out"
    counters 4 10000
    grep -E "^(Success|HPL_Tflops|PTRANS_GBs|MPIRandomAccess_GUPs|MPIFFT_Gflops|AvgPingPongLatency_usec)=" "$out"
    ;;
  *)
    echo "usage: mpi_run.sh netpipe|check|check-memif|hpcc PROVIDER_DIR [MPI_CHECK]" >&2
    exit 2
    ;;
esac
