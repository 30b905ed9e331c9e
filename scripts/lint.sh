#!/usr/bin/env bash
# Lint, as CI runs it (scripts/run-tests.sh); each check fails the run on a finding.
#   bash scripts/lint.sh [format|tidy|all] [BUILD_DIR]
#
# format: clang-format --dry-run -Werror (the project's .clang-format) on every C and C++
#         file git tracks.
# tidy:   clang-tidy (the project's .clang-tidy) with BUILD_DIR's compile_commands.json
#         (default build/ci) on the checked subset below. The whole tree takes tens of
#         minutes on CI's two cores, so CI checks the pure wire layer, which every other
#         layer builds on, and the tools' small programs: about half a minute. Grow the
#         subset as files are made clean; check a file of your own with
#         `clang-tidy -p build/ci FILE`.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/lib/common.sh"
cd "$LIB_ROOT"
WHAT=${1:-all}
BUILD=${2:-build/ci}
TIDY_SUBSET=(dpdk_transport/wire/*.cpp tools/wiredump.cpp tools/info/main.cpp)

lint_format() {
  local files out
  mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp')
  out=$(clang-format --dry-run -Werror "${files[@]}" 2>&1) ||
    { echo "$out" | grep -E '(warning|error):' | head -40; fail "clang-format: the files above need clang-format -i"; }
  echo "ok: clang-format, ${#files[@]} files"
}

lint_tidy() {
  [ -f "$BUILD/compile_commands.json" ] || fail "no $BUILD/compile_commands.json (configure $BUILD first)"
  local f i=0 bad=0 out
  lib_tmpdir out dpdat-tidy
  # One clang-tidy per CPU at a time (each file takes seconds).
  for f in "${TIDY_SUBSET[@]}"; do
    [ "$(jobs -rp | wc -l)" -lt "$(nproc)" ] || wait -n || true
    { clang-tidy -p "$BUILD" --quiet --warnings-as-errors='*' "$f" >"$out/$i.log" 2>/dev/null ||
        touch "$out/$i.bad"; } &
    i=$((i + 1))
  done
  wait
  for ((i = 0; i < ${#TIDY_SUBSET[@]}; i++)); do
    [ -e "$out/$i.bad" ] || continue
    grep -A3 -E '(warning|error):' "$out/$i.log"
    bad=1
  done
  [ $bad -eq 0 ] || fail "clang-tidy: findings above"
  echo "ok: clang-tidy, ${#TIDY_SUBSET[@]} files"
}

case "$WHAT" in
  format) lint_format ;;
  tidy) lint_tidy ;;
  all) lint_format; lint_tidy ;;
  *) echo "usage: lint.sh [format|tidy|all] [BUILD_DIR]" >&2; exit 2 ;;
esac
