#!/usr/bin/env bash
# Two dpdat processes over a real DPDK PMD, byte-exact transfers checked by
# the engine-level tool dpdat-engine-perf --verify (every WRITE read back
# over RDMA and compared).
#   multiproc.sh MODE PATH/TO/dpdat-engine-perf
# MODE: memif | memif-client-first | memif-loss | memif-mq | memif-jumbo | af_packet | af_packet-loss | af_packet-jumbo |
#       af_packet-mq | tap | kill-peer | api-memif-engines | api-af_packet-engines | api-memif-lat
# (api-*: the public API's bench tool dpdat-perf, beside dpdat-engine-perf in
# the build tree, with two engines per interface)
# Creates its own network namespaces, veth pairs, bridge and sockets (only
# 10.77.0.0/24 inside namespaces it made) and removes them on every exit.
set -uo pipefail
MODE=$1
PERF=$(readlink -f "$2")
ID=$$
NSA=dpdat-a-$ID
NSB=dpdat-b-$ID
NS=dpdat-t-$ID
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-mp
memif_pair "$TMP"
SIZES=(--size 65536)
COMMON=(--iters 300 --bw --verify --oob "$TMP/oob.sock")
lib_on_fail 'echo "--- server log"; cat "$TMP/server.log" 2>/dev/null; echo "--- client log"; cat "$TMP/client.log" 2>/dev/null'

# veth_pair_ns PREFIX: namespaces $NSA and $NSB, a veth PREFIX-a / PREFIX-b between them.
veth_pair_ns() {
  netns_add "$NSA" "$NSB"
  veth_pair "$1-a" "$1-b" "$NSA" "$NSB"
}

# run_ops: run_pair once per operation (RDMA WRITE, RDMA READ, SEND), each verified.
run_ops() {
  for op in write read send; do
    echo "== $MODE: $op"
    run_pair "$@" --op "$op"
  done
}

# run_pair "server-prefix" "server vdev" "client-prefix" "client vdev" [extra args]
run_pair() {
  local sp=$1 sv=$2 cp=$3 cv=$4
  shift 4
  $sp timeout 120 "$PERF" --server --vdev "$sv" --ip 10.77.0.1 "${COMMON[@]}" "$@" >"$TMP/server.log" 2>&1 &
  local spid=$!
  lib_track $spid
  [ -z "${MEMIF:-}" ] || wait_memif_socket || fail "memif server socket never appeared"
  $cp timeout 120 "$PERF" --client 10.77.0.1 --vdev "$cv" --ip 10.77.0.2 "${COMMON[@]}" "${SIZES[@]}" "$@" \
    ${CLIENT_ARGS:-} >"$TMP/client.log" 2>&1 &
  local cpid=$!
  lib_track $cpid
  wait "$cpid" || fail "client exited with $?"
  wait "$spid" || fail "server exited with $?"
  grep -q "byte-exact" "$TMP/client.log" || fail "no verified transfer"
  grep -q "MISMATCH" "$TMP/client.log" && fail "data mismatch"
  cat "$TMP/client.log" | grep -v "^EAL\|TELEMETRY\|mp action"
}

# run_mq: like run_ops for --engines 2 --qps 4 (WRITE and READ; SEND is
# single-QP only; WRITE again with the client's --threads, a thread per
# engine that posts to and drives it), then each side's per-queue counters
# must show traffic in both directions on both queues: that is what proves
# the multi-queue path.
run_mq() {
  for op in write read write:--threads; do
    local CLIENT_ARGS=${op#*:}
    [ "$CLIENT_ARGS" = "$op" ] && CLIENT_ARGS=
    op=${op%%:*}
    echo "== $MODE: $op ${CLIENT_ARGS}"
    # --rto-us 20000: four engine threads and two consumers share this
    # machine's two CPUs (with whatever else runs); at the default 1 ms RTO
    # (budget ~127 ms over 7 retries) about 1 run in 40 lost a QP to
    # retry-exceeded while the peer's engine waited for a CPU.
    run_pair "$@" --engines 2 --qps 4 --rto-us 20000 --op "$op"
    for log in client server; do
      for q in 0 1; do
        grep -Eq "^ queue $q: rx [1-9][0-9]* tx [1-9]" "$TMP/$log.log" ||
          fail "$log: no traffic on queue $q"
      done
    done
    grep "^ queue" "$TMP/server.log" | sed 's/^/ server/'
  done
}

# run_api "server-prefix" "server vdev" "client-prefix" "client vdev": dpdat-perf
# through libdat with two engines per interface and four EPs, WRITE, READ
# and SEND, the WRITEs and SENDs verified on every EP (dpdat-perf --verify
# reads them back; it has no check of READs); both engines of each side must have
# carried queue-pair traffic.  Retransmission timeouts are printed, not
# refused: with two engines per side, six threads share this machine's two
# CPUs, and a peer descheduled for over a millisecond outlasts the minimum RTO.
run_api() {
  local sp=$1 sv=$2 cp=$3 cv=$4 steered=${5:-0} api
  api=$(dirname "$PERF")/../tools/dpdat-perf
  [ -x "$api" ] || fail "dpdat-perf not built at $api"
  for op in write read send; do
    echo "== $MODE: $op"
    local common=(--engines 2 -q 4 --progress adaptive --oob "$TMP/oob.sock" --op "$op")
    rm -f "$TMP/memif.sock" "$TMP/oob.sock"
    # The server opens its interface (and memif socket) once the client
    # reached it out of band; the client retries until then.
    $sp timeout 120 "$api" --server --vdev "$sv" --ip 10.77.0.1 "${common[@]}" >"$TMP/server.log" 2>&1 &
    local spid=$!
    lib_track $spid
    $cp timeout 120 "$api" --client 10.77.0.1 --vdev "$cv" --ip 10.77.0.2 "${common[@]}" \
      --bw -s 16384 -n 300 --verify --json "$TMP/r.json" >"$TMP/client.log" 2>&1 &
    local cpid=$!
    lib_track $cpid
    wait "$cpid" || fail "client exited with $?"
    wait "$spid" || fail "server exited with $?"
    python3 - "$TMP/r.json" "$op" "$steered" <<'PY' || fail "checks of the JSON result"
import json, sys
d = json.load(open(sys.argv[1]))
steered = sys.argv[3] == '1'

bw, c = d['bw'][0], d['counters']
assert sys.argv[2] == 'read' or bw['verified'], 'not verified'
assert bw['per_qp_msgs'] == [300] * 4, bw['per_qp_msgs']
for side in ('engine.', 'peer.engine.'):
    engines = {k[len(side):-len('.qp_tx_packets')] for k, v in c.items()
               if k.startswith(side) and k.endswith('.qp_tx_packets') and v > 0}
    assert len(engines) >= 2, f'{side}: queue-pair traffic on {sorted(engines)} only'
    rto = sum(v for k, v in c.items() if k.startswith(side) and k.endswith('.qp_timeouts'))
    handed = sum(v for k, v in c.items() if k.startswith(side) and k.endswith('.handed_off'))
    print(f' {side[:-1]}: traffic on engines {sorted(engines)}, {rto} retransmission timeouts,'
          f' {handed} frames handed between engines')
    # A link that delivers a frame on the queue it was sent from: each
    # connection's two ends sit on engines of one index (the passive EP
    # follows the active one), so no frame arrives on another engine's queue.
    assert not steered or handed == 0, f'{side}: {handed} frames handed between engines'

# One progress thread per engine on each side, with its CPU time.
for side in ('', 'peer.'):
    threads = {k for k in c if k.startswith(side + 'thread.dpdat-prog') and k.endswith('.cpu_us')}
    assert len(threads) == 2, f'{side or "client "}progress threads: {sorted(threads)}'
PY
    grep -q "^ engines:" "$TMP/client.log" || fail "no per-engine lines in dpdat-perf's report"
  done
}

case "$MODE" in
  api-memif-engines)
    MEMIF=1
    run_api "" "$MEMIF_S" "" "$MEMIF_C" 1
    ;;
  api-memif-lat)
    # Latency across processes with a progress thread serving the passive
    # side (busy, then adaptive): the server's answers go out from that
    # thread, its consumer only posts them.
    api=$(dirname "$PERF")/../tools/dpdat-perf
    for run in busy:write busy:send busy:read adaptive:write; do
      sp=${run%:*} op=${run#*:}
      {
        echo "== $MODE: server $sp, $op"
        rm -f "$TMP/memif.sock" "$TMP/oob.sock"
        common=(--lat -s 8 -n 2000 --op "$op" --oob "$TMP/oob.sock")
        taskset -c 0-1 timeout 60 "$api" --server --vdev "$MEMIF_S" --ip 10.77.0.1 \
          --progress "$sp" --cpus 1 "${common[@]}" >"$TMP/server.log" 2>&1 &
        spid=$!
        lib_track $spid
        # (the server opens its interface once the client reached it out of
        # band; the client retries until then)
        taskset -c 0 timeout 60 "$api" --client 10.77.0.1 --vdev "$MEMIF_C" --ip 10.77.0.2 \
          --progress adaptive --cpus 0 "${common[@]}" >"$TMP/client.log" 2>&1 ||
          fail "client exited with $?"
        wait "$spid" || fail "server exited with $?"
        grep -E '^ +8 +2000 ' "$TMP/client.log" || fail "no latency line"
      }
    done
    ;;
  api-af_packet-engines)
    veth_pair_ns vd$ID
    AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=2"
    run_api "ip netns exec $NSA" "net_af_packet0,iface=vd$ID-a,$AF" \
            "ip netns exec $NSB" "net_af_packet0,iface=vd$ID-b,$AF"
    ;;
  memif)
    MEMIF=1
    run_ops "" "$MEMIF_S" "" "$MEMIF_C"
    ;;
  memif-client-first)
    # The client's process opens its end a second before the server's
    # exists (qperf's server opens its device only when the client's request
    # came): the client's open waits for the server's socket, and the pair
    # then moves verified data.
    timeout 120 "$PERF" --client 10.77.0.1 --vdev "$MEMIF_C" --ip 10.77.0.2 "${COMMON[@]}" \
      "${SIZES[@]}" --op write >"$TMP/client.log" 2>&1 &
    cpid=$!
    lib_track $cpid
    sleep 1
    kill -0 $cpid 2>/dev/null || fail "the client gave up before its server came"
    timeout 120 "$PERF" --server --vdev "$MEMIF_S" --ip 10.77.0.1 "${COMMON[@]}" --op write \
      >"$TMP/server.log" 2>&1 &
    spid=$!
    lib_track $spid
    wait "$cpid" || fail "client exited with $?"
    wait "$spid" || fail "server exited with $?"
    grep -q "byte-exact" "$TMP/client.log" || fail "no verified transfer"
    grep -v "^EAL\|TELEMETRY\|mp action" "$TMP/client.log"
    ;;
  memif-loss)
    MEMIF=1
    run_ops "" "$MEMIF_S" "" "$MEMIF_C" --loss 0.02
    ;;
  memif-mq)
    # Two RX/TX queue pairs each side (the memif client negotiates the ring
    # count with the server), two engine threads with idle back-off each.
    MEMIF=1
    run_mq "" "$MEMIF_S" "" "$MEMIF_C"
    ;;
  memif-jumbo)
    # PMTU 4096 over net_memif: DPDK 22.11's memif has no MTU operation, so
    # dpdat takes the MTU asked for up to one packet buffer (bsize less the
    # Ethernet header; a frame never spans chained descriptors, see
    # dpdk/port.cpp).  A PMTU the buffers cannot carry is refused, not lowered.
    MEMIF=1
    S="$MEMIF_S"
    C="$MEMIF_C"
    timeout 60 "$PERF" --server --vdev "$S" --ip 10.77.0.1 --oob "$TMP/oob.sock" --mtu 9000 \
      --pmtu 4096 >"$TMP/server.log" 2>&1 && fail "--pmtu 4096 accepted with 2048-byte buffers"
    grep -q "carries at most PMTU 1024" "$TMP/server.log" || fail "no reason given for the refusal"
    echo "default bsize: $(grep -o -- '--pmtu 4096: .*' "$TMP/server.log")"
    for op in write read send; do
      echo "== $MODE: $op"
      run_pair "" "$S,bsize=4352" "" "$C,bsize=4352" --mtu 9000 --pmtu 4096 --op "$op"
      grep -q ", PMTU 4096, " "$TMP/client.log" || fail "PMTU 4096 not in use"
      # The data frames on the wire: WRITE / SEND requests leave the client,
      # READ responses the server.  Largest: 4096 B of payload and headers;
      # average: nearly all of them so (PMTU 1024 frames are 1098 B at most).
      [ "$op" = read ] && log=server || log=client
      read -r frames bytes largest < <(awk '/^ wire:/ {print $3, $5, $8}' "$TMP/$log.log")
      [ -n "$largest" ] || fail "$log: no wire counters"
      [ "$largest" -gt 4096 ] || fail "$log: largest frame $largest B, not a 4 KiB-payload one"
      [ $((bytes / frames)) -gt 3000 ] || fail "$log: $frames frames of $((bytes / frames)) B on average"
      echo " $log sent $frames frames, $((bytes / frames)) B on average, largest $largest B"
    done
    # Small buffers: the MTU follows bsize down (PMTU 512 at bsize=1024), so no
    # frame spans two descriptors, and frames of mixed sizes (5000-byte WRITEs,
    # the read-back requests) arrive as sent: as many as were sent (give or
    # take ARP), where chained ones made the receiver count phantom frames.
    echo "== $MODE: bsize=1024"
    run_pair "" "$S,bsize=1024" "" "$C,bsize=1024" --op write --size 5000
    grep -q ", PMTU 512, " "$TMP/client.log" || fail "PMTU 512 not in use at bsize=1024"
    sent=$(awk '/^ wire:/ {print $3}' "$TMP/client.log")
    got=$(awk '/^ wire:/ {print $10}' "$TMP/server.log")
    [ -n "$sent" ] && [ -n "$got" ] && [ "$got" -ge "$sent" ] && [ $((got - sent)) -le 4 ] ||
      fail "client sent ${sent:-?} frames, server received ${got:-?}"
    echo " client sent $sent frames, server received $got"
    ;;
  af_packet-mq)
    # qpairs=2: two AF_PACKET sockets in a fanout group; the kernel hashes
    # flows onto them, dpdat hands frames to the owning engine in software.
    veth_pair_ns vd$ID
    AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=2"
    run_mq "ip netns exec $NSA" "net_af_packet0,iface=vd$ID-a,$AF" \
           "ip netns exec $NSB" "net_af_packet0,iface=vd$ID-b,$AF"
    ;;
  af_packet|af_packet-loss)
    veth_pair_ns vd$ID
    extra=()
    if [ "$MODE" = af_packet-loss ]; then
      # The engine's own seeded drop hook, plus netem on the veth where the kernel has it.
      extra=(--loss 0.02)
      if ip netns exec "$NSA" tc qdisc add dev vd$ID-a root netem loss 2% 2>/dev/null; then
        echo "netem: 2% loss on vd$ID-a"
      else
        echo "netem: not available in this kernel; engine drop hook only"
      fi
    fi
    AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"
    run_ops "ip netns exec $NSA" "net_af_packet0,iface=vd$ID-a,$AF" \
             "ip netns exec $NSB" "net_af_packet0,iface=vd$ID-b,$AF" "${extra[@]}"
    ;;
  af_packet-jumbo)
    # PMTU 4096: veth MTU 9000, ring frames big enough for a 9000-byte MTU
    # (blocksz a multiple of framesz); dpdat reads the kernel MTU, since
    # DPDK 22.11's af_packet refuses rte_eth_dev_set_mtu above 1500.
    veth_pair_ns vd$ID
    ip netns exec "$NSA" ip link set vd$ID-a mtu 9000 || fail "veth MTU 9000"
    ip netns exec "$NSB" ip link set vd$ID-b mtu 9000 || fail "veth MTU 9000"
    AF="blocksz=36864,framesz=9216,framecnt=512,qpairs=1"
    run_ops "ip netns exec $NSA" "net_af_packet0,iface=vd$ID-a,$AF" \
             "ip netns exec $NSB" "net_af_packet0,iface=vd$ID-b,$AF" --mtu 9000 --pmtu 4096
    grep -q ", PMTU 4096, " "$TMP/client.log" || fail "PMTU 4096 not in use"
    ;;
  tap)
    tap_bridge "$NS" dt$ID-a dt$ID-b
    SIZES=(--size 4096)  # net_tap is slow (~0.07 Mpps): keep it short
    run_pair "ip netns exec $NS" "net_tap0,iface=dt$ID-a" "ip netns exec $NS" "net_tap0,iface=dt$ID-b"
    # net_tap offers IPv4 checksum offload: the frames went out with the
    # checksum left to the device and came in verified by it (a wrong one
    # would have been dropped as bad and the transfer would not verify).
    ck=$(grep "IPv4 checksum by the device" "$TMP/client.log") || fail "no checksum counters"
    echo "$ck" | awk '{exit !($7 > 0 && $10 > 0 && $13 == 0)}' || fail "checksum offload unused: $ck"
    ;;
  kill-peer)
    # A long transfer; the server is killed mid-way; the client's queue pair
    # must break within the retry budget and say so, never hang.
    # No `timeout` wrapper here: kill -9 must hit dpdat-perf itself.
    "$PERF" --server --vdev "$MEMIF_S" --ip 10.77.0.1 \
      --oob "$TMP/oob.sock" >"$TMP/server.log" 2>&1 &
    spid=$!
    lib_track $spid
    wait_memif_socket || fail "memif server socket never appeared"
    timeout 60 "$PERF" --client 10.77.0.1 --vdev "$MEMIF_C" \
      --ip 10.77.0.2 --oob "$TMP/oob.sock" --bw --size 65536 --iters 10000000 >"$TMP/client.log" 2>&1 &
    cpid=$!
    lib_track $cpid
    wait_for "grep -q '#bytes' '$TMP/client.log' 2>/dev/null" 10
    sleep 0.5
    kill_and_time "$spid" "$cpid" 60
    rc=$?
    took=$TOOK_MS
    [ "$rc" -ne 0 ] || fail "client reported success after its peer died"
    [ "$rc" -ne 124 ] || fail "client hung (timeout)"
    grep -q "retry-exceeded" "$TMP/client.log" || fail "no retry-exceeded completion"
    [ "$took" -lt 5000 ] || fail "took ${took} ms to notice the dead peer"
    echo "peer killed: client broke with retry-exceeded after ${took} ms"
    ;;
  *)
    echo "unknown mode $MODE"; exit 2 ;;
esac
echo "PASS: $MODE"
