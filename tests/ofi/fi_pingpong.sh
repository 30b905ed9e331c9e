#!/usr/bin/env bash
# libfabric's own tools on the dpdat provider (libdpdat-fi.so):
#   fi_pingpong.sh MODE PROVIDER_DIR
# MODE: info  - fi_info -p dpdat / "dpdat;ofi_rxm" list the provider and its
#               capabilities; unmet hints give no entry (-FI_ENODATA)
#       msg   - fi_pingpong -p dpdat -e msg, every size up to 6 MiB, -v
#       rdm   - fi_pingpong -p "dpdat;ofi_rxm" -e rdm, same
#       rdmnative - fi_pingpong -p dpdat -e rdm (the native FI_EP_RDM
#               endpoint; FI_PROVIDER=^ofi_rxm keeps ofi_rxm out), same
#       ops   - fi_ops_check (tests/ofi/fi_ops_check.c, path as 3rd argument):
#               CM data, RMA, remote CQ data, atomics, timeouts, error paths
#       caps  - fi_caps_check (tests/ofi/fi_caps_check.c, path as 3rd argument):
#               capabilities without hints, bound source addresses, FD wait
#               objects with fi_trywait and epoll
#       rx    - fi_rx_check (tests/ofi/fi_rx_check.c, path as 3rd argument,
#               its mode as 4th): multi-receive buffers (multi), a shared
#               receive context of two endpoints (srx), a counter's FD
#               wait object in an epoll loop (cntr), remote access counters
#               (rma), a completion that precedes fi_close (close)
#       rdmcheck - fi_rdm_check (tests/ofi/fi_rdm_check.c, path as 3rd
#               argument, its mode as 4th): the native FI_EP_RDM endpoint:
#               tagged sends of every size, iovecs, injects and CQ data, tag
#               matching and order (tagged), unexpected and truncated
#               messages (unexpected), FI_PEEK / FI_CLAIM / FI_DISCARD and
#               fi_cancel (peek), untagged messages, source addresses and
#               the AV (msg), counters (cntr), poll sets (poll), FD wait
#               objects (wait: the interfaces get progress=adaptive, unless
#               FI_RDM_WAIT_INLINE=1).  FI_RDM_CHECK_PROV names another provider
#               (e.g. "dpdat;ofi_rxm") to check the program against it.
# Two processes over a net_memif pair (a socket in a directory this script
# makes and removes).  The interface of each comes from DPDAT_FI_IA.
set -uo pipefail
# shellcheck source=../../scripts/lib/net.sh
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
MODE=$1
PROVDIR=$(readlink -f "$2")
export FI_PROVIDER_PATH=$PROVDIR

# Sanitizer builds: their ASan runtime first in the uninstrumented programs.
lib_asan_preload "$PROVDIR/libdpdat-fi.so"
lib_tmpdir TMP dpdat-fipp
show_logs() {
  echo "mode $MODE" >&2
  for f in "$TMP"/*.log; do [ -f "$f" ] && { echo "--- $f"; grep -v "mp action" "$f" | tail -40; }; done
}
lib_on_fail show_logs

memif_pair "$TMP"
export DPDAT_IA_FISRV="vdev=$MEMIF_S;ip=10.79.0.1"
export DPDAT_IA_FICLI="vdev=$MEMIF_C;ip=10.79.0.2"

case "$MODE" in
  info)
    out=$(DPDAT_FI_IA=fisrv fi_info -p dpdat -v 2>&1) || fail "fi_info -p dpdat: $out"
    for want in "prov_name: dpdat" "type: FI_EP_MSG" FI_MSG FI_RMA FI_ATOMIC FI_REMOTE_READ \
      FI_REMOTE_WRITE FI_LOCAL_COMM FI_REMOTE_COMM "addr_format: FI_SOCKADDR_IN" \
      FI_MR_VIRT_ADDR FI_MR_ALLOCATED FI_MR_PROV_KEY "cq_data_size: 4" "inject_size: 256" \
      "src_addr: fi_sockaddr_in://10.79.0.1:0"; do
      grep -q -- "$want" <<<"$out" || fail "fi_info -p dpdat lacks '$want'"
    done
    # Local registration is never required (buffers without descriptors work).
    grep -q FI_MR_LOCAL <<<"$out" && fail "fi_info -p dpdat requires FI_MR_LOCAL"
    out=$(DPDAT_FI_IA=fisrv fi_info -p "dpdat;ofi_rxm" 2>&1) || fail "fi_info rxm: $out"
    grep -q "provider: dpdat;ofi_rxm" <<<"$out" || fail "no dpdat;ofi_rxm entry"
    grep -q "type: FI_EP_RDM" <<<"$out" || fail "no FI_EP_RDM over dpdat"
    # Core dpdat's own reliable datagram endpoint offers tagged messages.
    out=$(DPDAT_FI_IA=fisrv fi_info -p dpdat -t FI_EP_RDM -c FI_TAGGED -v 2>&1) ||
      fail "fi_info -p dpdat -t FI_EP_RDM -c FI_TAGGED: $out"
    grep -qx " *prov_name: dpdat" <<<"$out" || fail "no core dpdat entry for FI_EP_RDM + FI_TAGGED"
    grep -q "type: FI_EP_RDM" <<<"$out" || fail "core dpdat's FI_TAGGED entry is not FI_EP_RDM"
    grep -q "type: FI_EP_MSG" <<<"$out" && fail "an FI_EP_MSG entry for -t FI_EP_RDM"
    # Unmet hints: datagram endpoints, an unknown interface.
    DPDAT_FI_IA=fisrv fi_info -p dpdat --ep_type FI_EP_DGRAM >/dev/null 2>&1 && fail "dgram listed"
    DPDAT_FI_IA=nosuch fi_info -p dpdat >/dev/null 2>&1 && fail "unknown interface listed"
    # No interface named and none under the default name: every configured
    # one (here the built-ins and the two above), each its own domain.
    out=$(env -u DPDAT_FI_IA DPDAT_CONF=/nonexistent fi_info -p dpdat 2>&1) ||
      fail "fi_info -p dpdat without DPDAT_FI_IA: $out"
    for d in dpdat0 dpdat1 fisrv ficli; do
      grep -qx " *domain: $d" <<<"$out" || fail "fi_info without DPDAT_FI_IA lacks domain $d"
    done
    echo "fi_info: dpdat (FI_EP_MSG and FI_EP_RDM) and dpdat;ofi_rxm listed, unmet hints refused"
    ;;
  msg | rdm | rdmnative)
    EP=$MODE
    case "$MODE" in
      msg) PROV=dpdat ;;
      rdm) PROV="dpdat;ofi_rxm" ;;
      rdmnative) PROV=dpdat EP=rdm ;;
    esac
    # -p dpdat lets ofi_rxm over dpdat answer too: the native endpoint only.
    [ "$MODE" = rdmnative ] && export FI_PROVIDER=^ofi_rxm
    DPDAT_FI_IA=fisrv timeout 120 fi_pingpong -p "$PROV" -e "$EP" -S all -I 10 -v \
      >"$TMP/server.log" 2>&1 &
    spid=$!
    lib_track "$spid"
    wait_for "[ -S '$MEMIF_SOCK' ] || ! kill -0 $spid 2>/dev/null" 5
    kill -0 "$spid" 2>/dev/null || fail "server exited early"
    DPDAT_FI_IA=ficli timeout 120 fi_pingpong -p "$PROV" -e "$EP" -S all -I 10 -v 127.0.0.1 \
      >"$TMP/client.log" 2>&1 || fail "client exited with $?"
    wait "$spid" || fail "server exited with $?"
    lib_untrack "$spid"
    grep -qx " *prov_name: $PROV" "$TMP/client.log" ||
      fail "client did not run on $PROV: $(grep -m1 prov_name "$TMP/client.log")"
    grep -q "type: FI_EP_${EP^^}" "$TMP/client.log" || fail "client's endpoint is not FI_EP_${EP^^}"
    for sz in 1 64 4k 64k 1m; do
      grep -qE "^$sz +10 +=10 " "$TMP/client.log" || fail "no verified result for $sz bytes"
    done
    grep -E "^(1|64|4k|64k|1m) " "$TMP/client.log"
    echo "fi_pingpong -p '$PROV' -e $EP: all sizes verified"
    ;;
  ops | caps | rx | rdmcheck)
    PROG=$(readlink -f "$3")
    SUB=()
    [ "$MODE" = rx ] || [ "$MODE" = rdmcheck ] && SUB=("$4")
    # fi_rdm_check wait: FD wait objects sleep in poll(2) while the
    # interface's own thread moves it (progress=adaptive); with
    # FI_RDM_WAIT_INLINE=1 the interface keeps the manual progress the RDM
    # entry picks (progress=inline), where fi_cq_open(FI_WAIT_FD) must
    # either refuse (-FI_ENOSYS, FI_RDM_CHECK_FD_OPTIONAL) or work.
    if [ "$MODE" = rdmcheck ] && [ "$4" = wait ]; then
      if [ "${FI_RDM_WAIT_INLINE:-0}" = 1 ]; then
        export FI_RDM_CHECK_FD_OPTIONAL=1
      else
        DPDAT_IA_FISRV+=";progress=adaptive"
        DPDAT_IA_FICLI+=";progress=adaptive"
      fi
    fi
    NAME=$(basename "$PROG")
    NAME=${NAME#dpdat_}
    DPDAT_FI_IA=fisrv timeout 60 "$PROG" server 7471 "${SUB[@]}" >"$TMP/server.log" 2>&1 &
    spid=$!
    lib_track "$spid"
    wait_for "grep -q listening '$TMP/server.log' 2>/dev/null || ! kill -0 $spid 2>/dev/null" 10
    kill -0 "$spid" 2>/dev/null || fail "server exited early"
    DPDAT_FI_IA=ficli timeout 60 "$PROG" client 10.79.0.1 7471 "${SUB[@]}" >"$TMP/client.log" 2>&1 ||
      fail "client exited with $?"
    wait "$spid" || fail "server exited with $?"
    lib_untrack "$spid"
    grep -q "$NAME client: ok" "$TMP/client.log" || fail "client not ok"
    grep -q "$NAME server: ok" "$TMP/server.log" || fail "server not ok"
    grep -h "$NAME" "$TMP/client.log" "$TMP/server.log"
    ;;
  *)
    echo "usage: fi_pingpong.sh info|msg|rdm|rdmnative|ops|caps|rx|rdmcheck PROVIDER_DIR" \
      "[CHECK_PROGRAM [RX_MODE|RDM_MODE]]" >&2
    exit 2
    ;;
esac
