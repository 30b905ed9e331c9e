#!/usr/bin/env bash
# Builds dpdat and runs the whole test suite (what CI runs via .ci/run).
# Fresh Debian 12, as root:  bash scripts/run-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

bash scripts/install-deps.sh
bash scripts/setup-hugepages.sh

echo "== main build (warnings are errors)"
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$JOBS"
echo "== lint: clang-format on the tree, clang-tidy on scripts/lint.sh's subset"
bash scripts/lint.sh all build/ci
# Includes the docs checks (manual pages against --help) and the package test
# (builds the .debs, installs, runs and purges them).
ctest --preset ci -j1 --timeout 600

echo "== fuzz smoke (clang + libFuzzer)"
cmake --preset fuzz >/dev/null
# Four targets, ~60 s of fuzzing in all (tests/fuzz/README.md: long runs).
cmake --build --preset fuzz -j "$JOBS" --target parser_fuzz cm_fuzz config_fuzz qp_fuzz
ctest --test-dir build/fuzz -L fuzz --output-on-failure --timeout 300

if [ "${DPDAT_SKIP_ASAN:-0}" != "1" ]; then
  echo "== AddressSanitizer + UBSan build"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$JOBS"
  ctest --preset asan -j1 --timeout 900 -LE 'bench|fuzz'
fi
