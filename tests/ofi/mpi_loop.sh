#!/usr/bin/env bash
# Runs one mpi_run.sh job many times in a row beside busy-looping CPU hogs,
# to shake out start-up races that a quiet machine hides (a memif client
# that reached its server before the server's port started hung the job).
#   mpi_loop.sh [--runs N] [--hogs K] [--keep DIR] MODE PROVIDER_DIR [MPI_CHECK]
# Defaults: 50 runs, 2 hogs; a failed run's output is kept under
# ./mpi_loop-keep (run-N.log), where mpi_run.sh also keeps a failed job's
# output and a hung job's counters and stacks.  Prints one
# line per run and "passed P of N"; exit status 0 only when every run passed.
set -uo pipefail
RUNS=50
HOGS=2
KEEP=$PWD/mpi_loop-keep
usage() {
  echo "usage: mpi_loop.sh [--runs N] [--hogs K] [--keep DIR] MODE PROVIDER_DIR [MPI_CHECK]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=${2:-}; shift 2 || usage ;;
    --hogs) HOGS=${2:-}; shift 2 || usage ;;
    --keep) KEEP=${2:-}; shift 2 || usage ;;
    -*) usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
[[ "$RUNS" =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || { echo "mpi_loop.sh: --runs must be a positive number" >&2; exit 2; }
[[ "$HOGS" =~ ^[0-9]+$ ]] || { echo "mpi_loop.sh: --hogs must be a number" >&2; exit 2; }
HERE=$(dirname "$(readlink -f "$0")")
# shellcheck source=../../scripts/lib/common.sh
. "$HERE/../../scripts/lib/common.sh"
lib_cpu_hogs "$HOGS"
pass=0
for i in $(seq 1 "$RUNS"); do
  start=$SECONDS
  out=$(DPDAT_KEEP_DIR="$KEEP" "$HERE/mpi_run.sh" "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ]; then
    pass=$((pass + 1))
    echo "run $i: ok ($((SECONDS - start)) s)"
  else
    mkdir -p "$KEEP" && printf '%s\n' "$out" >"$KEEP/run-$i.log"
    echo "run $i: FAILED, exit status $rc ($((SECONDS - start)) s), output in $KEEP/run-$i.log"
    echo "$out" | grep -E "^(FAIL|kept in)"
  fi
done
echo "passed $pass of $RUNS"
[ "$pass" -eq "$RUNS" ]
