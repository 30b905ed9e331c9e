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
# The main job: the bench tool on its default link (client and server in one
# process over the in-process net_ring link, inline progress).
exec ./build/release/tools/dpdat-perf "$@"
