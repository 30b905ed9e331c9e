#!/usr/bin/env bash
# Builds dpdat (optimised) and runs the main job.
# Fresh Debian 12, as root:  bash scripts/run-main.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

bash scripts/install-deps.sh
bash scripts/setup-hugepages.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS"
# The main job: the bench tool over the public uDAPL 1.2 API (libdat), on its
# default link: client and server in one process, IAs dpdat0 and dpdat1 (the
# in-process net_ring link), no configuration.
exec ./build/release/tools/dpdat-perf "$@"
