#!/usr/bin/env bash
# Builds a uDAPL program the way a user outside this tree would: from an
# installed libdat, with nothing but the installed dat.pc.
#   build_installed.sh CMAKE BUILD_DIR OUT_DIR SOURCE.c [extra cc flags...]
# Installs BUILD_DIR into OUT_DIR/stage, moves the tree to OUT_DIR/prefix (so
# a dat.pc that names its install prefix instead of its own location fails),
# checks what pkg-config reports, and compiles SOURCE.c into OUT_DIR/<name>
# with ${CC:-cc} -std=c99 -Wall -Wextra -Wpedantic -Werror.
set -euo pipefail
CMAKE=$1
BUILD=$2
OUT=$3
SRC=$4
shift 4
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/common.sh"

rm -rf "$OUT"
mkdir -p "$OUT"
"$CMAKE" --install "$BUILD" --prefix "$OUT/stage" >"$OUT/install.log" || {
  cat "$OUT/install.log"; fail "cmake --install"; }
mv "$OUT/stage" "$OUT/prefix"
PREFIX=$OUT/prefix

PC=$(find "$PREFIX" -name dat.pc -path '*/pkgconfig/*' | head -1)
[ -n "$PC" ] || fail "no dat.pc installed"
export PKG_CONFIG_PATH=$(dirname "$PC")
pkg-config --exists dat || fail "pkg-config does not accept $PC"
CFLAGS_DAT=$(pkg-config --cflags dat)
LIBS_DAT=$(pkg-config --libs dat)
echo "pkg-config --cflags --libs dat: $CFLAGS_DAT $LIBS_DAT"
# Relocatable: every path it names lies inside the moved prefix.
for tok in $CFLAGS_DAT $LIBS_DAT; do
  case "$tok" in
    -I*|-L*)
      dir=$(readlink -f "${tok:2}") || fail "$tok: no such directory"
      case "$dir" in "$(readlink -f "$PREFIX")"/*) ;; *) fail "$tok points outside the install prefix" ;; esac ;;
  esac
done
INCDIR=$(pkg-config --variable=includedir dat)
LIBDIR=$(pkg-config --variable=libdir dat)
[ -f "$INCDIR/dat/udat.h" ] || fail "dat/udat.h not installed under $INCDIR"
[ -e "$LIBDIR/libdat.so" ] || fail "libdat.so (link name) not installed in $LIBDIR"
soname=$(objdump -p "$LIBDIR/libdat.so" | awk '/SONAME/ {print $2}')
[ "$soname" = libdat.so.1 ] || fail "soname is '$soname', expected libdat.so.1"

# shellcheck disable=SC2086  # pkg-config output is a word list
${CC:-cc} -std=c99 -Wall -Wextra -Wpedantic -Werror "$@" "$SRC" $CFLAGS_DAT $LIBS_DAT \
  -o "$OUT/$(basename "$SRC" .c)" || fail "compile"
echo "LIBDIR=$LIBDIR" >"$OUT/env"
echo "built $OUT/$(basename "$SRC" .c) against $PREFIX"
