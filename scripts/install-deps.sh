#!/usr/bin/env bash
# Installs everything dpdat needs on a fresh Debian 12 machine (run as root).
# Idempotent: packages already present are not touched, and apt is only
# contacted when something is missing.  Never prompts (DEBIAN_FRONTEND).
set -euo pipefail

PKGS=(
  build-essential g++ clang cmake pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
  libdpdk-dev dpdk dpdk-dev libnuma-dev
  libdapl-dev dapl2-utils
  tshark iproute2 procps
  clang-format clang-tidy
  # manual pages (groff checks them) and the Debian packages (cpack's DEB generator
  # computes dependencies with dpkg-shlibdeps, which needs file; the package test
  # checks them with lintian)
  groff-base man-db dpkg-dev file lintian
  # bench tools: option parser, JSON, plots (dpdat-plot), the JSON schema
  # check of the tools tests, peers for bench/compare
  libcli11-dev nlohmann-json3-dev gnuplot-nox python3 python3-jsonschema
  # ISA-L: its CRC-32 measured against the hand-written ICRC kernels (bench/wire_bench)
  libisal-dev
  ucx-utils sockperf
  # the libfabric provider and what runs on it (fi_pingpong, Open MPI, NetPIPE, HPCC)
  libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev netpipe-openmpi hpcc
  # the verbs front (dpdat's libibverbs.so.1 is built against Debian's headers)
  # and the verbs programs its tests run on it
  libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils perftest qperf
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: must run as root (apt-get, hugepages)" >&2
  exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer "no" up front.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
