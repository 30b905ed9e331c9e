#!/usr/bin/env bash
# dpdat's libibverbs.so.1 (or librdmacm.so.1) exports exactly the symbols and
# version nodes of the system's (rdma-core 44, Debian 12): every name with the
# same version, the default (@@) and compatibility (@) bindings alike, and the
# same SONAME.  dpdat's own node DPDAT_PRIVATE_1 (libibverbs's entry points
# for dpdat's librdmacm) is left out of the comparison.
#   symbols.sh PATH/TO/dpdat/LIB.so.1 [SYSTEM LIB.so.1 [MINIMUM COUNT]]
set -euo pipefail
# shellcheck source=../../scripts/lib/common.sh
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/common.sh"
OURS=$1
SYS=${2:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1}
MIN=${3:-140}
[ -e "$SYS" ] || { echo "SKIP: no system $SYS"; exit 77; }

# "name@VERSION" / "name@@VERSION" of every defined global symbol, and the
# version definitions.
exports() {
  readelf --dyn-syms -W "$1" |
    awk 'NR > 3 && $7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") && $8 ~ /@/ { print $4, $8 }' |
    grep -v '@DPDAT_PRIVATE_1$' | sort -u
}
versions() {
  readelf -V -W "$1" | sed -n '/Version definition/,/Version needs/p' | grep -o 'Name: [^ ]*' |
    grep -v 'Name: DPDAT_PRIVATE_1$' | sort -u
}
soname() { readelf -d "$1" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p'; }

lib_tmpdir TMP dpdat-symbols
exports "$SYS" >"$TMP/sys"
exports "$OURS" >"$TMP/ours"
status=0
if ! diff -u "$TMP/sys" "$TMP/ours"; then
  echo "FAIL: exported symbols differ from $SYS (- system, + dpdat)"
  status=1
fi
if ! diff -u <(versions "$SYS") <(versions "$OURS"); then
  echo "FAIL: version definitions differ"
  status=1
fi
[ "$(soname "$OURS")" = "$(soname "$SYS")" ] || { echo "FAIL: SONAME $(soname "$OURS")"; status=1; }
n=$(wc -l <"$TMP/ours")
[ "$n" -ge "$MIN" ] || { echo "FAIL: only $n symbols compared"; status=1; }
[ $status -eq 0 ] && echo "PASS: $n symbols and $(versions "$OURS" | wc -l) version nodes match $SYS"
exit $status
