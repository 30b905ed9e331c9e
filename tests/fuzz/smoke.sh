#!/bin/sh
# One libFuzzer smoke run with its progress lines kept in a log file: a run
# prints thousands of them, and ctest keeps only the first 300 KB of a
# failing test's output, which cuts off the crash report.  Prints the final
# statistics; on failure, the end of the log (report, stack, the input in
# Base64 and the artifact's name).
# Usage: smoke.sh LOG FUZZER [libFuzzer arguments...]
log=$1
shift
"$@" >"$log" 2>&1
rc=$?
grep -E '^(stat::|Done )' "$log"
if [ "$rc" -ne 0 ]; then
  echo "fuzzer exited with status $rc; the end of $log:"
  tail -n 150 "$log"
fi
exit "$rc"
