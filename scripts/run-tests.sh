#!/usr/bin/env bash
# Builds dpdat and runs the whole test suite (what CI runs via .ci/run).
# Fresh Debian 12, as root:  bash scripts/run-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
# Each stage's line says when it began, so a run's log shows where the time
# goes (CI's budget: 30 minutes on 2 cores).
phase() { echo "== [$((SECONDS / 60))m$((SECONDS % 60))s] $*"; }
trap 'phase "end (exit status $?)"' EXIT

phase "dependencies and hugepages"
bash scripts/install-deps.sh
bash scripts/setup-hugepages.sh

phase "main build (warnings are errors)"
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$JOBS"
phase "lint: clang-format on the tree, clang-tidy on scripts/lint.sh's subset"
bash scripts/lint.sh all build/ci
# Includes the docs checks (manual pages against --help) and the package test
# (builds the .debs, installs, runs and purges them).
phase "tests (ci build)"
ctest --preset ci -j1 --timeout 600

phase "fuzz smoke (clang + libFuzzer)"
cmake --preset fuzz >/dev/null
# Six targets, ~55 s of fuzzing in all (tests/fuzz/README.md: long runs).
cmake --build --preset fuzz -j "$JOBS" --target parser_fuzz cm_fuzz config_fuzz qp_fuzz live_fuzz \
  verbs_fuzz
phase "fuzz smoke runs"
ctest --test-dir build/fuzz -L fuzz --output-on-failure --timeout 300

if [ "${DPDAT_SKIP_ASAN:-0}" != "1" ]; then
  phase "AddressSanitizer + UBSan build"
  cmake --preset asan >/dev/null
  if [ "${DPDAT_ASAN_ALL:-0}" = "1" ]; then
    cmake --build --preset asan -j "$JOBS"
    phase "tests (asan build)"
    ctest --preset asan -j1 --timeout 900 -LE 'bench|fuzz'
  else
    # CI's share (2 cores, 30 minutes): everything that runs in one process
    # or drives the library through its APIs (unit, sim, proto, api, rsm,
    # hostile, the verbs API tests).  The tools, the suites of other
    # programs (OFED dtest/dapltest, MPI, fabtests, perftest) and the DPDK
    # link tests run in the optimised build above; DPDAT_ASAN_ALL=1 runs
    # every test under the sanitizers.
    cmake --build --preset asan -j "$JOBS" --target \
      dat_headers_layout_test dpdat_unit_tests dpdat_sim_tests dpdat_proto_tests \
      api_test api_cm_test api_cm_loss_test api_progress_test api_limits_test \
      api_close_test api_pmtu_test api_self_test api_thread_churn_test udat_c_example udat_pair \
      dat rsm rsm_test rsm_map_test rsm_c_example rsm_peer rsm_map_peer \
      dpdat-hostile dpdat-hostile-victim dpdat_verbs verbs_api_test verbs_errors_test \
      verbs_ucx_test
    phase "tests (asan build)"
    ctest --preset asan -j1 --timeout 900 -L '^(unit|sim|proto|api|rsm|hostile)$'
    ctest --preset asan -j1 --timeout 900 -R '^(VerbsTest\.|verbs_symbols|verbs_api_links)'
  fi
fi
