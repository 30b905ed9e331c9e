#!/usr/bin/env bash
# The Debian packages as a user meets them: build them from BUILD_DIR with
# cpack, check them with lintian (no error but the two the project has to
# decide: the copyright file, for want of a stated licence, and a real
# Maintainer address), install them with dpkg, run the installed tools
# (dpdat-perf's main job, short; dpdat-info; a DAT 2.0 dtest through the line
# the package registered in /etc/dat.conf; fi_info finding the libfabric
# provider in libfabric's own directory; ibv_devices through the installed
# dpdat-run), then purge them and check the machine is as it was:
# /etc/dat.conf byte for byte, no file of ours left. Whatever happens,
# the exit trap purges the packages and puts back /etc/dat.conf and
# /etc/dpdat.conf as they were.
#   package_test.sh BUILD_DIR        (root; the build's targets built)
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"

BUILD=$(readlink -f "${1:?build directory}")
[ "$(id -u)" -eq 0 ] || fail "needs root (dpkg -i / --purge)"
for p in cpack dpkg dpkg-deb dtest fi_info lintian; do
  command -v $p >/dev/null || fail "$p not installed"
done
lib_tmpdir TMP dpdat-pkg

# --- the machine before -------------------------------------------------------
PKGS=""
state_of() {  # what the test must leave as it found: checksums of our two /etc files
  for f in /etc/dat.conf /etc/dpdat.conf; do
    if [ -e "$f" ]; then sha256sum "$f"; else echo "absent $f"; fi
  done
}
state_of >"$TMP/before"
[ -e /etc/dat.conf ] && cp -p /etc/dat.conf "$TMP/dat.conf.orig"
# A configuration of the machine's own is kept aside, so the package's
# conffile is installed and purged cleanly, and put back on exit.
[ -e /etc/dpdat.conf ] && mv /etc/dpdat.conf "$TMP/dpdat.conf.orig"
restore() {
  local p left=""
  for p in $PKGS; do dpkg-query -W "$p" >/dev/null 2>&1 && left="$left $p"; done
  # All at once: dpkg refuses to purge a package others still depend on.
  [ -z "$left" ] || dpkg --purge $left >/dev/null 2>&1 || echo "dpkg --purge$left failed" >&2
  if [ -e "$TMP/dat.conf.orig" ] && ! cmp -s "$TMP/dat.conf.orig" /etc/dat.conf; then
    echo "restoring /etc/dat.conf from the copy taken before" >&2
    cat "$TMP/dat.conf.orig" >/etc/dat.conf
  fi
  [ -e "$TMP/dpdat.conf.orig" ] && mv -f "$TMP/dpdat.conf.orig" /etc/dpdat.conf
}
lib_on_exit restore

# --- build --------------------------------------------------------------------
start=$(now_ms)
(cd "$TMP" && cpack --config "$BUILD/CPackConfig.cmake" -B "$TMP/deb" >"$TMP/cpack.log" 2>&1) ||
  { cat "$TMP/cpack.log"; fail "cpack failed"; }
DEBS=$(ls "$TMP"/deb/*.deb 2>/dev/null)
[ -n "$DEBS" ] || fail "cpack made no package"
echo "built in $(($(now_ms) - start)) ms:"
for d in $DEBS; do
  PKGS="$PKGS $(dpkg-deb -f "$d" Package)"
  printf '  %-48s %8d bytes\n' "$(basename "$d")" "$(stat -c %s "$d")"
done
WANT="libdpdat1 libdpdat-dev dpdat-common dpdat-tools dpdat-dapl2 dpdat-libfabric"
VERBS=0
[ -e "$BUILD/lib/verbs/libibverbs.so.1" ] && { VERBS=1; WANT="$WANT dpdat-verbs"; }
for p in $WANT; do
  case " $PKGS " in *" $p "*) ;; *) fail "no package $p" ;; esac
done
for d in $DEBS; do
  p=$(dpkg-deb -f "$d" Package)
  dpkg-deb -c "$d" >"$TMP/$p.contents"
  grep -q " ./usr/share/doc/$p/changelog.gz$" "$TMP/$p.contents" || fail "$p has no changelog.gz"
  ! grep -E " ./usr/share/man/.*[^/]$" "$TMP/$p.contents" | grep -v "\.gz$" ||
    fail "$p has a manual page that is not compressed"
done
# lintian, in the background while the packages are
# installed and run (it reads only the .deb files); its verdict is taken
# before the purge.  Errors left for the project to decide: no-copyright-file
# (no licence is stated) and the placeholder Maintainer address
# (DPDAT_PACKAGE_CONTACT).
lintian --tag-display-limit 0 \
  --suppress-tags no-copyright-file,bogus-mail-host,bogus-mail-host-in-debian-changelog \
  $DEBS >"$TMP/lintian.log" 2>&1 &
LINTIAN=$!
lib_track $LINTIAN
for p in $PKGS; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "installed" &&
    { PKGS=""; fail "$p is installed already: this test would remove it"; }
done
dpkg-deb -f "$TMP"/deb/dpdat-tools_*.deb Depends | grep -q "libdpdat1 (= " ||
  fail "dpdat-tools does not depend on libdpdat1 of its version"
dpkg-deb -f "$TMP"/deb/libdpdat1_*.deb Depends | grep -q "libc6" ||
  fail "libdpdat1's dependencies were not computed from its binaries (no libc6)"
dpkg-deb -c "$TMP"/deb/libdpdat1_*.deb >"$TMP/lib.contents"
grep -q "usr/lib/[a-z0-9_]*-linux-gnu[a-z0-9_]*/libdat.so.1" "$TMP/lib.contents" ||
  fail "libdat.so.1 is not in the multiarch library directory"

# --- install ------------------------------------------------------------------
dpkg -i $DEBS >"$TMP/install.log" 2>&1 || { cat "$TMP/install.log"; fail "dpkg -i failed"; }
echo "ok: installed$PKGS"
for l in /usr/bin/dpdat-perf /usr/bin/dpdat-info /usr/bin/dpdat-plot /usr/bin/dpdat-wiredump; do
  [ -x "$l" ] || fail "$l not installed"
done
used=$(ldd /usr/bin/dpdat-perf | awk '$1 == "libdat.so.1" {print $3}')
[ -n "$used" ] && [ "$(readlink -f "$used")" = "$(readlink -f /usr/lib/*/libdat.so.1)" ] ||
  fail "installed dpdat-perf does not use the installed libdat.so.1 (it uses '$used')"
[ -e /etc/dpdat.conf ] && ! grep -qv '^#\|^$' /etc/dpdat.conf ||
  fail "/etc/dpdat.conf is not the commented default"
for m in dpdat-perf dpdat-info dpdat-plot dpdat-wiredump dpdat.conf; do
  man -w "$m" >/dev/null 2>&1 || fail "no manual page for $m"
done
grep -qx 'dpdat u2.0 nonthreadsafe default libdaplodpdk.so.2 dapl.2.0 "" ""' /etc/dat.conf ||
  fail "the DAT 2.0 provider line is not registered in /etc/dat.conf"
if [ -e "$TMP/dat.conf.orig" ]; then
  head -c "$(stat -c %s "$TMP/dat.conf.orig")" /etc/dat.conf | cmp -s - "$TMP/dat.conf.orig" ||
    fail "installing changed the lines already in /etc/dat.conf"
fi
echo "ok: /etc/dat.conf has the provider lines, the lines before are untouched"

# --- the installed tools ------------------------------------------------------
cd "$TMP"  # nothing of the build tree on the way
timeout 120 dpdat-perf -s 65536 -n 2000 >"$TMP/perf.log" 2>&1 ||
  { cat "$TMP/perf.log"; fail "installed dpdat-perf failed"; }
grep -q "^dpdat-perf: write over the uDAPL 1.2" "$TMP/perf.log" && grep -Eq "^ 65536 +2000 +[0-9.]+ +[0-9.]+" "$TMP/perf.log" ||
  { cat "$TMP/perf.log"; fail "dpdat-perf printed no RDMA WRITE bandwidth row"; }
echo "ok: installed dpdat-perf ran the main job:"
sed 's/^/    /' "$TMP/perf.log" | head -8

timeout 60 dpdat-info >"$TMP/info.log" 2>&1 || { cat "$TMP/info.log"; fail "dpdat-info exited $?"; }
grep -q "No dpdat interface is configured" "$TMP/info.log" &&
  grep -q "/etc/dpdat.conf" "$TMP/info.log" && grep -q "^dpdat0 " "$TMP/info.log" &&
  grep -q "limits: max_eps=" "$TMP/info.log" ||
  { cat "$TMP/info.log"; fail "dpdat-info does not show the built-ins and how to add an interface"; }
echo "ok: dpdat-info shows the built-in interfaces and how to add one"

# DAT 2.0 through /etc/dat.conf (no DAT_OVERRIDE): the registered line "dpdat"
# names an interface each side configures for itself.
unset DAT_OVERRIDE
memif_pair "$TMP"
DPDAT_IA_DPDAT="vdev=$MEMIF_S;ip=10.77.9.1" timeout 90 dtest -P dpdat -s -B 20 \
  >"$TMP/dtest-server.log" 2>&1 &
spid=$!
lib_track $spid
wait_memif_socket || fail "the dtest server's memif socket never appeared: $(cat "$TMP/dtest-server.log")"
wait_for "ss -Hltn 'sport = :15828' | grep -q . || ! kill -0 $spid 2>/dev/null" 30 ||
  fail "the dtest server never listened"
DPDAT_IA_DPDAT="vdev=$MEMIF_C;ip=10.77.9.2" timeout 90 dtest -P dpdat -h 127.0.0.1 -B 20 \
  >"$TMP/dtest-client.log" 2>&1 || { cat "$TMP/dtest-client.log"; fail "dtest client exited $?"; }
wait_exit $spid 30 || { cat "$TMP/dtest-server.log"; fail "dtest server exited $?"; }
for s in server client; do
  grep -q "DAPL Test Complete. PASSED" "$TMP/dtest-$s.log" ||
    { cat "$TMP/dtest-$s.log"; fail "dtest $s did not pass"; }
done
echo "ok: dtest passed through the registered /etc/dat.conf line"

env -u FI_PROVIDER_PATH fi_info -l >"$TMP/fi.log" 2>&1
grep -q "^dpdat:" "$TMP/fi.log" || { cat "$TMP/fi.log"; fail "libfabric does not find the installed provider"; }
echo "ok: fi_info -l lists the dpdat provider from libfabric's own directory"

if [ "$VERBS" = 1 ]; then
  command -v ibv_devices >/dev/null || fail "ibv_devices not installed (ibverbs-utils)"
  # dpdat-run finds the libraries installed with it; ibv_devices lists the
  # built-in interfaces through them.
  timeout 60 dpdat-run ibv_devices >"$TMP/ibv.log" 2>&1 ||
    { cat "$TMP/ibv.log"; fail "dpdat-run ibv_devices exited $?"; }
  grep -q "dpdat0" "$TMP/ibv.log" ||
    { cat "$TMP/ibv.log"; fail "the installed dpdat-run does not reach dpdat's libibverbs"; }
  echo "ok: the installed dpdat-run runs ibv_devices on dpdat's libibverbs"
fi

wait_exit $LINTIAN 240
rc=$?
lib_untrack $LINTIAN
[ "$rc" -eq 0 ] && ! grep -q "^E: " "$TMP/lintian.log" ||
  { cat "$TMP/lintian.log"; fail "lintian exited $rc (errors, or it did not finish)"; }
echo "ok: lintian reports no error but the two suppressed; its warnings:"
grep "^W: " "$TMP/lintian.log" | sed 's/^/    /'

# --- purge --------------------------------------------------------------------
cd /
dpkg --purge $PKGS >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log"; fail "dpkg --purge failed"; }
# What the machine had: the copy of a configuration of its own is put back.
[ -e "$TMP/dpdat.conf.orig" ] && mv "$TMP/dpdat.conf.orig" /etc/dpdat.conf
state_of >"$TMP/after"
diff "$TMP/before" "$TMP/after" || fail "purging did not restore /etc/dat.conf and /etc/dpdat.conf"
for f in /usr/bin/dpdat-perf /usr/bin/dpdat-run /usr/share/dpdat-dapl2 /var/lib/dpdat-dapl2; do
  [ ! -e "$f" ] || fail "$f left behind after purge"
done
ls /usr/lib/*/libdat.so.1 /usr/lib/*/libfabric/libdpdat-fi.so /usr/lib/*/dpdat 2>/dev/null | grep -q . &&
  fail "libraries left behind after purge"
echo "ok: purged; /etc/dat.conf restored byte for byte, nothing left"
