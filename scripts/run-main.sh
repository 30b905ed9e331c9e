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
# Until the bench tool lands (DPDK transport issue), the main job is the wire
# layer demonstration: one frame of every RC opcode, built and decoded.
exec ./build/release/tools/dpdat-wiredump "$@"
