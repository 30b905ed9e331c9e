#!/usr/bin/env bash
# Reserves 2 MiB hugepages and mounts hugetlbfs if absent (idempotent).
# Never fails the caller: where hugepages cannot be had, dpdat falls back to
# `--no-huge --no-shconf` by itself, and this script says so.
set -uo pipefail

WANT=${DPDAT_HUGEPAGES:-512}
NR=/proc/sys/vm/nr_hugepages
MNT=/dev/hugepages

have=$(cat "$NR" 2>/dev/null || echo 0)
if [ "$have" -lt "$WANT" ]; then
  echo "$WANT" > "$NR" 2>/dev/null || true
  have=$(cat "$NR" 2>/dev/null || echo 0)
fi
if ! grep -qs " $MNT hugetlbfs " /proc/mounts; then
  mkdir -p "$MNT" 2>/dev/null || true
  mount -t hugetlbfs nodev "$MNT" 2>/dev/null || true
fi
if [ "$have" -gt 0 ] && grep -qs " $MNT hugetlbfs " /proc/mounts; then
  echo "hugepages: $have x 2 MiB reserved, hugetlbfs on $MNT"
else
  echo "hugepages: not available here; dpdat will run DPDK with --no-huge --no-shconf"
fi
exit 0
