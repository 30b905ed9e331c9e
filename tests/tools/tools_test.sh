#!/usr/bin/env bash
# The bench tools (ctest label "tools"):
#   tools_test.sh CASE BUILD_DIR SOURCE_DIR
# CASE: parser | json | ia_params | lossless | duration | bidir_qps | remote | remote_inline | plot |
#       info | engine_parser | atomics | atomics_remote
# (remote_inline: remote with progress=inline on both sides, where nothing but
# the consumer's own calls moves a side, e.g. the CM's RTU after CONNECTED)
set -uo pipefail
CASE=$1
BUILD=$2
SRC=$3
PERF=$BUILD/tools/dpdat-perf
ENGINE=$BUILD/bench/dpdat-engine-perf
PLOT=$SRC/tools/plot/dpdat-plot
SCHEMA=$SRC/tools/perf/result.schema.json
. "$SRC/scripts/lib/common.sh"
lib_tmpdir TMP dpdat-tools-test
lib_on_fail 'echo "(case $CASE)"'

# expect_usage_error "what the line must name" args...: exit 2, one stderr line.
expect_usage_error() {
  local names=$1
  shift
  "$PERF" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "dpdat-perf $* exited $rc, expected 2"
  [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "dpdat-perf $*: stderr is not one line: $(cat "$TMP/err")"
  grep -q -- "$names" "$TMP/err" || fail "dpdat-perf $*: the error does not name $names: $(cat "$TMP/err")"
  [ ! -s "$TMP/out" ] || fail "dpdat-perf $*: printed on stdout"
  echo "ok: dpdat-perf $* -> 2: $(cat "$TMP/err")"
}

# json_check FILE PYTHON-EXPR...: validates against the schema, then asserts
# each expression over the document `d`.
json_check() {
  local f=$1
  shift
  python3 - "$SCHEMA" "$f" "$@" <<'EOF' || fail "JSON check of $f failed"
import json, sys, jsonschema
schema, path, exprs = sys.argv[1], sys.argv[2], sys.argv[3:]
d = json.load(open(path))
jsonschema.validate(d, json.load(open(schema)))
for e in exprs:
    if not eval(e):
        print(f"assertion failed: {e}")
        sys.exit(1)
print(f"ok: {path} validates against the schema; {len(exprs)} assertions hold")
EOF
}

case "$CASE" in
  parser)
    expect_usage_error "--size" --size abc
    expect_usage_error "--size" -s 0
    expect_usage_error "--bogus" --bogus
    expect_usage_error "--qps" -q 65
    expect_usage_error "--op" --op atomic
    expect_usage_error "--duration" -D x
    expect_usage_error "--iters" -n -5
    expect_usage_error "--progress" --progress fast
    expect_usage_error "--bidirectional" --client 10.0.0.1 --vdev net_null0 --ip 10.0.0.2 -b --progress inline
    expect_usage_error "--pmtu" --pmtu 1000
    expect_usage_error "--vdev" --server
    expect_usage_error "--client" --client 10.0.0.300 --vdev net_memif0 --ip 10.0.0.1
    expect_usage_error "--iters and --duration" -n 10 -D 1
    expect_usage_error "--bidirectional" -b --lat
    expect_usage_error "--size: atomics move 8 bytes" --op atomic-fadd -s 64
    expect_usage_error "--all: atomics" --op atomic-cswap -a
    expect_usage_error "--inline-size: dpdat has no inline sends" --inline-size 64
    expect_usage_error "--inline-size" --inline-size -1
    "$PERF" --help >"$TMP/help" 2>&1 || fail "--help exited $?"
    for opt in --op --all --size --iters --duration --qps --bidirectional --tx-depth --post-list \
      --cq-mod --report-gbits --lat --bw --histogram --json --csv --progress --server --client \
      --vdev --ip --oob --mtu --pmtu --ia-params --verify --linger --inline-size atomic-fadd atomic-cswap; do
      grep -q -- "$opt" "$TMP/help" || fail "--help does not list $opt"
    done
    grep -q "=128" "$TMP/help" || fail "--help does not show the defaults (tx-depth 128)"
    echo "ok: --help lists every option with defaults"
    ;;
  json)
    timeout 60 "$PERF" -s 64 -s 65536 -n 2000 --json "$TMP/r.json" --csv "$TMP/r.csv" \
      --histogram "$TMP/h.csv" >"$TMP/out" 2>&1 || fail "dpdat-perf exited $?: $(cat "$TMP/out")"
    json_check "$TMP/r.json" \
      "[b['size'] for b in d['bw']] == [64, 65536]" \
      "all(b['iters'] == 2000 for b in d['bw'])" \
      "all(b['peak_mbs'] >= b['avg_mbs'] > 0 for b in d['bw'])" \
      "len(d['lat']) == 1 and d['lat'][0]['size'] == 8 and d['lat'][0]['iters'] == 2000" \
      "len(d['lat'][0]['samples_us']) == 2000" \
      "d['lat'][0]['min_us'] <= d['lat'][0]['median_us'] <= d['lat'][0]['p99_us'] <= d['lat'][0]['p999_us'] <= d['lat'][0]['max_us']" \
      "d['config']['mode'] == 'one-process' and d['config']['op'] == 'write'" \
      "d['config']['port_mtu'] >= 1500 and d['config']['pmtu'] in (1024, 2048, 4096)" \
      "d['config']['argv'][0].endswith('dpdat-perf')" \
      "any(k.endswith('.qp_tx_packets') and v > 0 for k, v in d['counters'].items())" \
      "any(k.endswith('.qp_retransmits') for k in d['counters'])"
    [ "$(grep -c '^bw,' "$TMP/r.csv")" -eq 2 ] && [ "$(grep -c '^lat,' "$TMP/r.csv")" -eq 1 ] ||
      fail "CSV lacks rows: $(cat "$TMP/r.csv")"
    head -1 "$TMP/h.csv" | grep -q "us,count" || fail "histogram file has no header"
    echo "ok: CSV and histogram written"
    ;;
  ia_params)
    # Interface keys for both IAs: 1 % loss on each side's receive path; the
    # data still verifies, the drops and the resends show in the counters.
    timeout 60 "$PERF" --ia-params "loss=0.01" --verify --bw -s 65536 -n 300 \
      --json "$TMP/r.json" >"$TMP/out" 2>&1 || fail "dpdat-perf exited $?: $(cat "$TMP/out")"
    json_check "$TMP/r.json" "d['config']['ia_params'] == 'loss=0.01'" \
      "sum(v for k, v in d['counters'].items() if k.endswith('rx_injected_drops')) > 0" \
      "sum(v for k, v in d['counters'].items() if k.endswith('.qp_retransmits')) > 0"
    "$PERF" --ia-params "bogus=1" -s 64 -n 10 --bw >"$TMP/out" 2>&1 &&
      fail "an unknown interface key was accepted: $(cat "$TMP/out")"
    grep -q "dat_ia_open" "$TMP/out" || fail "no dat_ia_open error for bogus=1: $(cat "$TMP/out")"
    echo "ok: --ia-params reaches both IAs; an unknown key fails the open"
    ;;
  lossless)
    # One process, inline progress: one thread drives both interfaces over
    # net_ring, which never drops.  A retransmission timeout here is
    # spurious, also when the thread is descheduled mid-transfer (the
    # timers that fall due while it is away wait for the peer's first turn
    # back, however long it was away).
    timeout 60 "$PERF" --progress inline --verify --bw -s 65536 -s 64 -n 3000 -q 2 \
      --json "$TMP/r.json" >"$TMP/out" 2>&1 || fail "dpdat-perf exited $?: $(cat "$TMP/out")"
    json_check "$TMP/r.json" "all(b['verified'] for b in d['bw'])" \
      "sum(v for k, v in d['counters'].items() if k.endswith('.qp_tx_packets')) > 0" \
      "sum(v for k, v in d['counters'].items() if k.endswith('.qp_timeouts')) == 0"
    echo "ok: no retransmission timeout on a lossless link (tail probes:" \
      "$(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['counters']; print(sum(v for k, v in c.items() if k.endswith('.qp_tlp_probes')))" "$TMP/r.json"))"
    ;;
  duration)
    start=$(date +%s%N)
    timeout 60 "$PERF" -D 1 -s 4096 --bw --json "$TMP/r.json" >"$TMP/out" 2>&1 ||
      fail "dpdat-perf -D 1 exited $?: $(cat "$TMP/out")"
    took=$((($(date +%s%N) - start) / 1000000))
    # 1 s measured after a 0.2 s warm-up margin.
    [ $took -ge 1200 ] || fail "-D 1 returned after $took ms"
    json_check "$TMP/r.json" "0.95 <= d['bw'][0]['secs'] <= 1.5" "d['config']['duration_s'] == 1"
    echo "ok: -D 1 measured for the duration (process ran $took ms)"
    ;;
  bidir_qps)
    for op in write send; do
      timeout 60 "$PERF" --op $op -b -q 3 --verify --bw -s 4096 -n 500 --json "$TMP/$op.json" \
        >"$TMP/out" 2>&1 || fail "dpdat-perf --op $op -b -q 3 exited $?: $(cat "$TMP/out")"
      # Six flows (3 EPs, both directions), each with all its messages, and
      # the landed bytes read back in both directions.
      json_check "$TMP/$op.json" "d['bw'][0]['per_qp_msgs'] == [500] * 6" "d['bw'][0]['verified']" \
        "d['bw'][0]['iters'] == 3000"
    done
    timeout 60 "$PERF" --op read -q 2 --lat -s 64 -n 200 --json "$TMP/lat.json" >"$TMP/out" 2>&1 ||
      fail "latency on 2 QPs exited $?: $(cat "$TMP/out")"
    json_check "$TMP/lat.json" "d['lat'][0]['half_round_trip'] is False" "d['lat'][0]['iters'] == 200"
    ;;
  remote | remote_inline)
    PROG=()
    [ "$CASE" = remote_inline ] && PROG=(--progress inline)
    SOCK=$TMP/m.sock
    S="net_memif0,role=server,socket=$SOCK,socket-abstract=no"
    C="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
    timeout 60 "$PERF" --server --vdev "$S" --ip 10.81.0.1 --oob "$TMP/oob" -q 2 "${PROG[@]}" >"$TMP/s.log" 2>&1 &
    SPID=$!
    lib_track $SPID
    BIDIR=(-b)
    [ "$CASE" = remote_inline ] && BIDIR=()  # refused: see the parser case
    timeout 60 "$PERF" --client 10.81.0.1 --vdev "$C" --ip 10.81.0.2 --oob "$TMP/oob" -q 2 \
      "${BIDIR[@]}" "${PROG[@]}" --verify --bw -s 4096 -n 300 --json "$TMP/r.json" >"$TMP/c.log" 2>&1 ||
      fail "client exited $?: $(cat "$TMP/c.log") / server: $(cat "$TMP/s.log")"
    wait "$SPID" || fail "server exited $?: $(cat "$TMP/s.log")"
    NMSGS=4
    [ "$CASE" = remote_inline ] && NMSGS=2
    json_check "$TMP/r.json" "d['bw'][0]['per_qp_msgs'] == [300] * $NMSGS" "d['bw'][0]['verified']" \
      "d['bw'][0]['cpu_peer_pct'] >= 0" "d['config']['mode'] == 'client'" \
      "any(k.startswith('peer.engine.') and k.endswith('.qp_rx_packets') and v > 0 for k, v in d['counters'].items())" \
      "any(k.startswith('engine.') and k.endswith('.qp_tx_packets') and v > 0 for k, v in d['counters'].items())"
    ;;
  plot)
    "$PLOT" -o "$TMP/p" "$SRC/tests/tools/data/recorded_result.json" >"$TMP/out" 2>&1 ||
      fail "dpdat-plot exited $?: $(cat "$TMP/out")"
    for k in bw lat; do
      [ "$(head -c 4 "$TMP/p-$k.png" | od -An -tx1 | tr -d ' ')" = "89504e47" ] || fail "$k PNG is not a PNG"
      grep -q "<svg" "$TMP/p-$k.svg" || fail "$k SVG is not an SVG"
      grep -q "net_ring" "$TMP/p-$k.svg" || fail "$k SVG lacks the series label"
    done
    echo "ok: PNG and SVG of bandwidth and latency CDF"
    "$PLOT" "$TMP/none.json" 2>"$TMP/err"
    [ $? -eq 2 ] || fail "dpdat-plot of a missing file did not exit 2"
    ;;
  info)
    INFO=$BUILD/tools/dpdat-info
    printf '# test file\ngood vdev=net_memif0,role=server,socket=%s/m.sock,socket-abstract=no;ip=10.83.0.1;mtu=1500\n\nbroken ring=0;ip=10.83.0.2;pmtu=77\n' \
      "$TMP" >"$TMP/dpdat.conf"
    DPDAT_CONF=$TMP/dpdat.conf DPDAT_IA_ENVBAD="ring=1;ip=10.83.0.3;bogus=1" "$INFO" --no-open \
      >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ $rc -eq 1 ] || fail "dpdat-info with bad configurations exited $rc, expected 1"
    grep -q "$TMP/dpdat.conf:4: broken: .*pmtu" "$TMP/err" || fail "file line and key not named: $(cat "$TMP/err")"
    grep -q "DPDAT_IA_ENVBAD: envbad: .*bogus" "$TMP/err" || fail "variable and key not named: $(cat "$TMP/err")"
    grep -q "pmd: net_memif .*ipv4: 10.83.0.1 .*mtu: 1500" "$TMP/out" || fail "good entry not shown: $(cat "$TMP/out")"
    echo "ok: bad configurations named with their source and key"
    "$INFO" -d dpdat0 >"$TMP/out" 2>&1 || fail "dpdat-info -d dpdat0 exited $?: $(cat "$TMP/out")"
    grep -q "limits: max_eps=" "$TMP/out" && grep -q "link=UP" "$TMP/out" ||
      fail "dpdat0 opened without limits or port: $(cat "$TMP/out")"
    echo "ok: dpdat0 opened: port and limits shown"
    "$INFO" --bogus 2>/dev/null
    [ $? -eq 2 ] || fail "dpdat-info --bogus did not exit 2"
    ;;
  atomics)
    # Through dpdat-perf, which starts dpdat-perf-dat2 (DAT 2.0, IB extensions).
    [ -x "$BUILD/tools/dpdat-perf-dat2" ] || fail "dpdat-perf-dat2 not built"
    touch "$TMP/start"
    timeout 60 "$PERF" --op atomic-fadd -q 2 -n 1000 --json "$TMP/fadd.json" >"$TMP/out" 2>&1 ||
      fail "--op atomic-fadd exited $?: $(cat "$TMP/out")"
    grep -q "full round trip" "$TMP/out" || fail "the latency header does not say full round trip"
    json_check "$TMP/fadd.json" "d['api'].startswith('DAT 2.0')" "d['config']['op'] == 'atomic-fadd'" \
      "d['bw'][0]['size'] == 8 and d['bw'][0]['per_qp_msgs'] == [1000] * 2" "d['bw'][0]['verified']" \
      "d['bw'][0]['msg_rate_mpps'] > 0" \
      "d['lat'][0]['half_round_trip'] is False and d['lat'][0]['iters'] == 1000"
    timeout 60 "$PERF" --op atomic-cswap -b -q 2 -n 1000 --json "$TMP/cswap.json" >"$TMP/out" 2>&1 ||
      fail "--op atomic-cswap -b exited $?: $(cat "$TMP/out")"
    json_check "$TMP/cswap.json" "d['config']['op'] == 'atomic-cswap'" \
      "d['bw'][0]['per_qp_msgs'] == [1000] * 4" "d['bw'][0]['verified']" \
      "d['lat'][0]['iters'] == 1000"
    # No registry of the user's: the program writes its own and removes it.
    left=$(find /tmp -maxdepth 1 -name 'dpdat-perf-dat.conf.*' -newer "$TMP/start" 2>/dev/null)
    [ -z "$left" ] || fail "left its dat.conf behind: $left"
    # A user's DAT_OVERRIDE is used as it is: an IA it does not name is not found.
    printf 'other u2.0 nonthreadsafe default libdaplodpdk.so.2 dapl.2.0 "ring=0;ip=10.0.0.1" ""\n' \
      >"$TMP/dat.conf"
    DAT_OVERRIDE=$TMP/dat.conf timeout 60 "$PERF" --op atomic-fadd --lat -n 10 >"$TMP/out" 2>&1
    [ $? -eq 1 ] && grep -q "dat_ia_open(dpdat0).*NOT_REGISTERED" "$TMP/out" ||
      fail "DAT_OVERRIDE without dpdat0: $(cat "$TMP/out")"
    echo "ok: a user's DAT_OVERRIDE is honoured"
    ;;
  atomics_remote)
    SOCK=$TMP/m.sock
    S="net_memif0,role=server,socket=$SOCK,socket-abstract=no"
    C="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
    timeout 60 "$PERF" --op atomic-cswap --server --vdev "$S" --ip 10.82.0.1 --oob "$TMP/oob" -q 2 \
      >"$TMP/s.log" 2>&1 &
    SPID=$!
    lib_track $SPID
    timeout 60 "$PERF" --op atomic-cswap --client 10.82.0.1 --vdev "$C" --ip 10.82.0.2 \
      --oob "$TMP/oob" -q 2 -b -n 500 --json "$TMP/r.json" >"$TMP/c.log" 2>&1 ||
      fail "client exited $?: $(cat "$TMP/c.log") / server: $(cat "$TMP/s.log")"
    wait "$SPID" || fail "server exited $?: $(cat "$TMP/s.log")"
    json_check "$TMP/r.json" "d['bw'][0]['per_qp_msgs'] == [500] * 4" "d['bw'][0]['verified']" \
      "d['config']['mode'] == 'client' and d['config']['op'] == 'atomic-cswap'" \
      "d['lat'][0]['half_round_trip'] is False and d['lat'][0]['iters'] == 500"
    # A uDAPL 1.2 server has no atomics: the client says what to do.
    rm -f "$SOCK"
    timeout 60 "$PERF" --server --vdev "$S" --ip 10.82.0.1 --oob "$TMP/oob2" >"$TMP/s.log" 2>&1 &
    SPID=$!
    lib_track $SPID
    timeout 60 "$PERF" --op atomic-fadd --client 10.82.0.1 --vdev "$C" --ip 10.82.0.2 \
      --oob "$TMP/oob2" -n 10 >"$TMP/c.log" 2>&1
    [ $? -eq 1 ] && grep -q "start the server with --op atomic-fadd" "$TMP/c.log" ||
      fail "atomics against a 1.2 server: $(cat "$TMP/c.log")"
    wait "$SPID"
    echo "ok: a uDAPL 1.2 server is named as the reason"
    ;;
  engine_parser)
    "$ENGINE" --size abc 2>"$TMP/err"
    [ $? -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "dpdat-engine-perf --size abc"
    echo "ok: dpdat-engine-perf --size abc -> 2"
    ;;
  *)
    echo "unknown case $CASE"
    exit 2
    ;;
esac
echo "PASS: $CASE"
