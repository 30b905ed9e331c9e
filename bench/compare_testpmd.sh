#!/usr/bin/env bash
# The transport next to testpmd (engine level: dpdat-engine-perf drives the RC
# engine directly; bench/compare puts the API-level tool beside its peers).
# Side-by-side figures in one run: dpdat RDMA WRITE bandwidth (4 KiB,
# 64 KiB) and 8 B half-round-trip latency over net_ring (one process, inline
# progress) and, across two processes (one busy-polling CPU each), over
# net_memif and over net_af_packet on a veth pair between two network
# namespaces; next to each link, the raw packet rate dpdk-testpmd reaches on
# the same link with the same devargs and frame size (txonly -> rxonly), and
# the ratio dpdat packets/s : testpmd packets/s.  A benchmark, not a test: not
# in ctest.
#
#   bench/compare_testpmd.sh          # after: cmake --preset release &&
#                                     #   cmake --build --preset release --target dpdat-engine-perf
# Environment (all optional):
#   BUILD=build/release   where bench/dpdat-engine-perf lives
#   LINKS="memif af_packet"  the cross-process links to measure
#   REPS=5                rounds; every figure is the median over the rounds,
#                         rounds interleave the cases so load bursts spread out
#   PMTU=1024             dpdat PMTU; the frame is a WRITE Only with RETH:
#                         14+20+8+12+16 + PMTU + 4 bytes (1098 at PMTU 1024,
#                         4170 at 4096).  Above 1024 the links are set up for
#                         larger frames, for dpdat and testpmd alike: net_memif
#                         gets packet buffers of PMTU+256 bytes (bsize=; dpdat
#                         keeps a frame in one buffer) and dpdat --mtu 9000;
#                         the veth pair gets MTU 9000 and net_af_packet ring
#                         frames of 9216 bytes
#   CPU_A=0 CPU_B=1       server / testpmd txonly on A, client / rxonly and the
#                         in-process run on B
#   TESTPMD_SECS=8        length of each testpmd run (from its first packets)
#   QUIET_WAIT=120        before each case wait up to this long for both CPUs
#                         to be >= 90 % idle over one second (0: do not wait)
#   KEEP=1                keep the logs (path printed at the end)
#   DPDAT_CRC32=name      passed through: force a CRC-32 path in dpdat
# Needs root (hugepages, namespaces), dpdk-testpmd (Debian dpdk), iproute2 and
# two free CPUs.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build/release}
PERF=$BUILD/bench/dpdat-engine-perf
TESTPMD=${TESTPMD:-dpdk-testpmd}
REPS=${REPS:-5}
PMTU=${PMTU:-1024}
CPU_A=${CPU_A:-0}
CPU_B=${CPU_B:-1}
TESTPMD_SECS=${TESTPMD_SECS:-8}
LINKS=${LINKS:-memif af_packet}
QUIET_WAIT=${QUIET_WAIT:-120}
PIDFILE=/tmp/dpdat-compare.pids       # our children, so a later run can end leftovers
MARK=dpdat-cmp                        # every child's command line names $TMP, which holds this

. "$ROOT/scripts/lib/net.sh"
die() { fail "compare: $*"; }
[ -x "$PERF" ] || die "no $PERF (build it: cmake --build --preset release --target dpdat-engine-perf)"
PERF=$(cd "$(dirname "$PERF")" && pwd)/dpdat-engine-perf # absolute: the run happens in its own directory
command -v "$TESTPMD" >/dev/null || die "no $TESTPMD (apt-get install dpdk)"
command -v taskset >/dev/null || die "no taskset"

# Leftovers of an earlier, interrupted run: only the PIDs it recorded, and only
# if the process still carries this script's marker in its command line.
if [ -f "$PIDFILE" ]; then
  while read -r pid; do
    [ -n "$pid" ] && grep -qs "$MARK" "/proc/$pid/cmdline" && kill -9 "$pid" 2>/dev/null
  done <"$PIDFILE"
  rm -f "$PIDFILE"
fi

[ "${KEEP:-0}" = 1 ] && LIB_KEEP_TMP=1
lib_tmpdir TMP "$MARK"
memif_pair "$TMP"
RES=$TMP/results.txt # "key value disturbed" per case and round
cd "$TMP" || die "cannot enter $TMP"
lib_on_exit 'rm -f "$PIDFILE"'
started() {
  lib_track "$1"
  echo "$1" >>"$PIDFILE"
}

bash "$ROOT/scripts/setup-hugepages.sh" >/dev/null

# ---------------------------------------------------------------- load
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]; else print "nan"}'; }
span() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "%s..%s", lo, hi}'; }
# Idle percentage of the whole machine over one second.
idle_pct() {
  local a b k tot=0
  read -r -a a </proc/stat # cpu user nice system idle iowait irq softirq steal ...
  sleep 1
  read -r -a b </proc/stat
  for k in 1 2 3 4 5 6 7 8; do tot=$((tot + b[k] - a[k])); done
  echo $((100 * (b[4] - a[4] + b[5] - a[5]) / (tot > 0 ? tot : 1)))
}
# Whether CPU_A and CPU_B are really two CPUs right now: the time of a fixed
# awk loop on CPU_A while the same loop runs on CPU_B, over the time alone, in
# per cent (100: independent; up to 200 when the hypervisor runs both virtual
# CPUs on one physical one, which this VM does at times, for seconds).
ms_of() {
  local t0
  t0=$(date +%s%N)
  "$@" >/dev/null
  echo $((($(date +%s%N) - t0) / 1000000))
}
share_pct() {
  local loop='BEGIN { for (i = 0; i < 1e7; i++) x += i }' alone both p
  alone=$(ms_of taskset -c "$CPU_A" awk "$loop")
  taskset -c "$CPU_B" awk "$loop" &
  p=$!
  both=$(ms_of taskset -c "$CPU_A" awk "$loop")
  wait "$p"
  echo $((100 * both / (alone > 0 ? alone : 1)))
}
LOADLOG=$TMP/load.txt
# Before a case: waits (up to QUIET_WAIT s) for a quiet machine, then samples
# the number of runnable tasks every 0.2 s while the case runs.  More than the
# case's own busy threads (+1, the sampler) means someone else wanted a CPU.
SAMPLER=
quiet() { # name own_busy_threads
  local p t=0
  p=$(idle_pct)
  while [ "$p" -lt 90 ] && [ "$t" -lt "$QUIET_WAIT" ]; do
    p=$(idle_pct)
    t=$((t + 1))
  done
  printf '%s before=%s waited=%ss loadavg=%s share=%s' "$1" "$p" "$t" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$(share_pct)" >>"$LOADLOG"
  OWN=$2
  (while :; do
    read -r _ _ _ run _ </proc/loadavg
    echo "${run%/*}"
    sleep 0.2
  done) >"$TMP/$1.runnable" &
  SAMPLER=$!
  started "$SAMPLER"
  CASE=$1
}
after() {
  kill "$SAMPLER" 2>/dev/null
  wait "$SAMPLER" 2>/dev/null
  local f
  # The first sample sees the case's own start-up (fork, EAL threads): skipped.
  f=$(awk -v own="$OWN" 'NR > 1 && $1 > own + 1 {n++} END {print (NR > 1 ? int(100 * n / (NR - 1)) : 0)}' \
    "$TMP/$CASE.runnable")
  echo " foreign=$f share_after=$(share_pct)" >>"$LOADLOG"
  tail -1 "$LOADLOG" | sed 's/[a-z_]*=//g' |
    awk '{print ($2 < 90 || $6 > 10 || $5 > 130 || $7 > 130)}' >"$TMP/$CASE.disturbed"
}

# ---------------------------------------------------------------- dpdat
# dpdat-engine-perf prints "... PMTU n ..." and writes its figures as JSON
# (--json): bw[].avg_mbs / peak_mbs (MB = 2^20 B), lat[].median_us.
# jget FILE EXPR: EXPR over the document d, empty when there is none.
jget() {
  python3 -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
    v = eval(sys.argv[2])
    print(f"{v:.3f}" if isinstance(v, float) else v)
except Exception:
    pass' "$1" "$2" 2>/dev/null
}

ring_case() { # name args...
  local name=$1
  shift
  quiet "$name" 1
  rm -f "$TMP/$name.json"
  taskset -c "$CPU_B" timeout 180 "$PERF" "$@" --json "$TMP/$name.json" >"$TMP/$name.log" 2>&1
  after
}

# A case whose log has no result row is run again (up to twice more): the
# cross-process latency test can lose its first ping to a start-up race in
# dpdat-perf (the server clears its buffer after the client's first WRITE
# may already have landed), which shows as "ping 0 never arrived".
with_retry() { # "case_fn [its first args]" name args...
  local fn name=$2 k
  read -ra fn <<<"$1"
  shift 2
  for k in 1 2 3; do
    "${fn[@]}" "$name" "$@"
    [ -s "$TMP/$name.json" ] && return 0
    cp "$TMP/$name.log" "$TMP/$name.failed$k.log"
    echo "  $name: no result (attempt $k), see $name.failed$k.log" >&2
  done
}

# Each cross-process link: how each side is started (a network namespace for
# af_packet) and its devargs.  link_sides LINK sets SRV_PRE/CLI_PRE (command
# prefixes) and SRV_DEV/CLI_DEV; the same devargs serve dpdat and testpmd.
NSA=dpdat-cmp-a-$$
NSB=dpdat-cmp-b-$$
VETH=dcmp$$
AF_ARGS="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"
MEMIF_ARGS=
MTU_ARGS=()
if [ "$PMTU" -gt 1024 ]; then
  AF_ARGS="blocksz=36864,framesz=9216,framecnt=512,qpairs=1"
  MEMIF_ARGS=",bsize=$((PMTU + 256))"
  MTU_ARGS=(--mtu 9000)
fi
link_sides() {
  case $1 in
    memif)
      SRV_PRE=()
      CLI_PRE=()
      SRV_DEV="net_memif0,role=server,socket=$TMP/memif.sock,socket-abstract=no$MEMIF_ARGS"
      CLI_DEV="net_memif0,role=client,socket=$TMP/memif.sock,socket-abstract=no$MEMIF_ARGS"
      ;;
    af_packet)
      SRV_PRE=(ip netns exec "$NSA")
      CLI_PRE=(ip netns exec "$NSB")
      SRV_DEV="net_af_packet0,iface=$VETH-a,$AF_ARGS"
      CLI_DEV="net_af_packet0,iface=$VETH-b,$AF_ARGS"
      ;;
    *) die "unknown link $1 (LINKS: memif af_packet)" ;;
  esac
}
# The MAC of the client side's interface (af_packet: the kernel veth's).
client_mac() { # link
  case $1 in
    af_packet) ip netns exec "$NSB" cat "/sys/class/net/$VETH-b/address" ;;
    *) echo 02:00:00:00:00:02 ;;
  esac
}
# memif's server creates the socket the client needs; af_packet has none.
wait_link() { # link
  [ "$1" = memif ] || return 0
  wait_memif_socket
}
# The veth pair $VETH-a / $VETH-b, one end in $NSA and one in $NSB (removed on exit).
links_up() {
  case " $LINKS " in *" af_packet "*) ;; *) return 0 ;; esac
  netns_add "$NSA" "$NSB"
  veth_pair "$VETH-a" "$VETH-b" "$NSA" "$NSB"
  if [ "$PMTU" -gt 1024 ]; then
    ip netns exec "$NSA" ip link set "$VETH-a" mtu 9000 || die "veth MTU 9000"
    ip netns exec "$NSB" ip link set "$VETH-b" mtu 9000 || die "veth MTU 9000"
  fi
}

link_case() { # link name client-args...
  local link=$1 name=$2
  shift 2
  local oob=$TMP/oob.sock
  rm -f "$TMP/$name.json"
  link_sides "$link"
  rm -f "$TMP/memif.sock" "$oob"
  quiet "$name" 2
  "${SRV_PRE[@]}" taskset -c "$CPU_A" timeout 180 "$PERF" --server \
    --vdev "$SRV_DEV" --ip 10.77.0.1 --oob "$oob" --pmtu "$PMTU" "${MTU_ARGS[@]}" \
    >"$TMP/$name.server.log" 2>&1 &
  local spid=$!
  started "$spid"
  wait_link "$link"
  wait_for "[ -S '$oob' ]" 10
  "${CLI_PRE[@]}" taskset -c "$CPU_B" timeout 180 "$PERF" --client 10.77.0.1 \
    --vdev "$CLI_DEV" --ip 10.77.0.2 --oob "$oob" "${MTU_ARGS[@]}" "$@" --json "$TMP/$name.json" >"$TMP/$name.log" 2>&1
  wait "$spid" 2>/dev/null
  rm -f "$TMP/memif.sock" "$oob"
  after
}

# ---------------------------------------------------------------- testpmd
# txonly (server side, CPU A) -> rxonly (client side, CPU B) on the same link
# and devargs; records the median Rx-pps of the per-second samples, the first
# (partial) one dropped.
# With "same" as 4th argument the frames carry dpdat's addresses (the
# client side's MAC, 10.77.0.1 -> 10.77.0.2, UDP to 4791) instead of
# testpmd's defaults: on net_af_packet the receiving kernel then runs the
# same IP input path for them as for dpdat's frames (a frame for the
# interface's own MAC is routed and dropped; testpmd's default destination
# MAC is dropped at once, which is cheaper), so the link's rate for exactly
# dpdat's frames is the fair base.  Results go under key <link>_testpmd or
# <link>_testpmd_same.
testpmd_case() { # link name frame_bytes [same]
  local link=$1 name=$2 frame=$3 key=${1}_testpmd hdr=()
  if [ "${4:-}" = same ]; then
    key=${1}_testpmd_same
    # shellcheck disable=SC2054 # commas belong to the option values
    hdr=(--eth-peer="0,$(client_mac "$link")" --tx-ip=10.77.0.1,10.77.0.2 --tx-udp=49152,4791)
  fi
  local mbuf=$((frame + 256 > 2176 ? frame + 256 : 2176))
  link_sides "$link"
  rm -f "$TMP/memif.sock"
  quiet "$name" 2
  local common=(--no-pci --in-memory)
  local app=(--total-num-mbufs=8192 --mbuf-size="$mbuf" --nb-cores=1 --stats-period=1)
  "${SRV_PRE[@]}" taskset -c "$CPU_A" "$TESTPMD" --lcores "0@$CPU_A,1@$CPU_A" "${common[@]}" \
    --file-prefix "$MARK-tx-$$" --vdev "$SRV_DEV" -- \
    --forward-mode=txonly --txpkts="$frame" "${hdr[@]}" "${app[@]}" >"$TMP/$name.tx.log" 2>&1 &
  local tpid=$!
  started "$tpid"
  wait_link "$link"
  "${CLI_PRE[@]}" taskset -c "$CPU_B" "$TESTPMD" --lcores "0@$CPU_B,1@$CPU_B" "${common[@]}" \
    --file-prefix "$MARK-rx-$$" --vdev "$CLI_DEV" -- \
    --forward-mode=rxonly "${app[@]}" >"$TMP/$name.rx.log" 2>&1 &
  local rpid=$!
  started "$rpid"
  # Time the run from the first non-zero per-second sample.
  wait_for "grep -q 'Rx-pps: *[1-9]' '$TMP/$name.rx.log'" 30
  sleep "$TESTPMD_SECS"
  kill -INT "$rpid" "$tpid" 2>/dev/null
  wait_for "! kill -0 $rpid 2>/dev/null && ! kill -0 $tpid 2>/dev/null" 5
  kill -9 "$rpid" "$tpid" 2>/dev/null
  wait "$rpid" "$tpid" 2>/dev/null
  rm -f "$TMP/memif.sock"
  after
  # Per-second Rx-pps samples, the first (partial) one dropped: their median is
  # the typical rate, their maximum the rate of the best second (compared with
  # dpdat-perf's peak, its best 1/20 of a run).
  local d
  d=$(cat "$TMP/$name.disturbed")
  grep -o 'Rx-pps: *[0-9]*' "$TMP/$name.rx.log" | awk '$2 > 0 {print $2}' | tail -n +2 >"$TMP/$name.pps"
  echo "${key}_pps $(median <"$TMP/$name.pps") $d" >>"$RES"
  echo "${key}_peak $(sort -g "$TMP/$name.pps" | tail -1) $d" >>"$RES"
}

# ---------------------------------------------------------------- run
# Iterations per link: about 2-8 s of traffic each at this machine's rates.
iters() { # link size
  case "$1:$2" in
    ring:4096 | memif:4096) echo 2000000 ;;
    ring:65536 | memif:65536) echo 120000 ;;
    af_packet:4096) echo 200000 ;;
    af_packet:65536) echo 12000 ;;
    af_packet:8) echo 5000 ;;
    *) echo 20000 ;;
  esac
}
links_up
# The in-process net_ring port has MTU 1500: no PMTU above 1024 there.
RING=ring
[ "$PMTU" -gt 1024 ] && RING=
echo "compare: links $RING $LINKS, $REPS rounds, PMTU $PMTU, CPUs $CPU_A/$CPU_B, CRC-32 path ${DPDAT_CRC32:-auto}"
echo "uptime: $(uptime)"
pmtu_seen=$PMTU
for r in $(seq 1 "$REPS"); do
  [ -n "$RING" ] && with_retry ring_case "ring_bw4k_$r" --size 4096 --bw --iters 500000 --pmtu "$PMTU"
  [ -n "$RING" ] && with_retry ring_case "ring_bw64k_$r" --size 65536 --bw --iters 30000 --pmtu "$PMTU"
  [ -n "$RING" ] && with_retry ring_case "ring_lat8_$r" --size 8 --lat --iters 20000 --pmtu "$PMTU"
  for l in $LINKS; do
    with_retry "link_case $l" "${l}_bw4k_$r" --size 4096 --bw --iters "$(iters "$l" 4096)" --pmtu "$PMTU"
    with_retry "link_case $l" "${l}_bw64k_$r" --size 65536 --bw --iters "$(iters "$l" 65536)" --pmtu "$PMTU"
    with_retry "link_case $l" "${l}_lat8_$r" --size 8 --lat --iters "$(iters "$l" 8)" --pmtu "$PMTU"
    p=$(grep -o 'PMTU [0-9]*' "$TMP/${l}_bw4k_$r.log" | head -1 | awk '{print $2}')
    [ -n "$p" ] && pmtu_seen=$p
    testpmd_case "$l" "${l}_testpmd_$r" $((14 + 20 + 8 + 12 + 16 + pmtu_seen + 4))
    [ "$l" = af_packet ] && testpmd_case "$l" "${l}_testpmd_same_$r" $((14 + 20 + 8 + 12 + 16 + pmtu_seen + 4)) same
  done
  for c in $RING $LINKS; do
    for s in 4k 64k; do
      d=$(cat "$TMP/${c}_bw${s}_$r.disturbed")
      j=$TMP/${c}_bw${s}_$r.json
      # MB = 10^6 B in this table (the JSON's MB is 2^20 B).
      echo "${c}_MBps_$s $(jget "$j" "d['bw'][0]['avg_mbs'] * 1.048576") $d" >>"$RES"
      echo "${c}_peak_$s $(jget "$j" "d['bw'][0]['peak_mbs'] * 1.048576") $d" >>"$RES"
    done
    echo "${c}_lat_us $(jget "$TMP/${c}_lat8_$r.json" "d['lat'][0]['median_us']")" \
      "$(cat "$TMP/${c}_lat8_$r.disturbed")" >>"$RES"
  done
  echo "  round $r of $REPS done" >&2
done
[ "$pmtu_seen" = "$PMTU" ] || echo "note: dpdat used PMTU $pmtu_seen (the port MTU caps it), not $PMTU"

# Values of one key: from the undisturbed rounds when there is one, else all.
get() {
  awk -v k="$1" '$1 == k && $2 != "" {v[++n] = $2; d[n] = $3; if (!$3) u++}
    END {for (i = 1; i <= n; i++) if (!u || !d[i]) print v[i]}' "$RES"
}
frame=$((14 + 20 + 8 + 12 + 16 + pmtu_seen + 4))
mpps() { awk -v mb="$1" -v p="$pmtu_seen" 'BEGIN {if (mb != "") printf "%.2f", mb / p; else print "-"}'; }
pct() { awk -v mb="$1" -v p="$pmtu_seen" -v t="$2" 'BEGIN {if (t ~ /^[0-9.]+$/ && t > 0 && mb != "") printf "%.0f %%", 100 * mb * 1e6 / p / t; else print "-"}'; }
row() { printf '%-40s' "$1"; shift; for c in "$@"; do printf ' %-26s' "$c"; done; echo; }

echo
hdr=("dpdat RDMA WRITE, PMTU $pmtu_seen")
[ -n "$RING" ] && hdr+=("net_ring (1 process)")
for l in $LINKS; do hdr+=("net_$l (2 processes)"); done
row "${hdr[@]}"
for s in 4k 64k; do
  avg=("$s: average MB/s (range)") pk=("$s: peak MB/s") pp=("$s: data packets Mpps, avg / peak")
  rt=("$s: ratio to testpmd, avg / peak")
  rs=("$s:   .. testpmd with dpdat's headers")
  for c in $RING $LINKS; do
    av=$(get "${c}_MBps_$s" | median)
    pv=$(get "${c}_peak_$s" | median)
    avg+=("$av ($(get "${c}_MBps_$s" | span))")
    pk+=("$pv")
    pp+=("$(mpps "$av") / $(mpps "$pv")")
    if [ "$c" = ring ]; then
      rt+=("-")
      rs+=("-")
    else
      rt+=("$(pct "$av" "$(get "${c}_testpmd_pps" | median)") / $(pct "$pv" "$(get "${c}_testpmd_peak" | median)")")
      rs+=("$(pct "$av" "$(get "${c}_testpmd_same_pps" | median)") / $(pct "$pv" "$(get "${c}_testpmd_same_peak" | median)")")
    fi
  done
  row "${avg[@]}"
  row "${pk[@]}"
  row "${pp[@]}"
  row "${rt[@]}"
  row "${rs[@]}"
done
lat=("8 B half round trip, median us")
tpr=("testpmd txonly->rxonly, $frame B, Mpps")
tps=("  (range of the round medians)")
tsr=("  .. with dpdat's headers, Mpps")
if [ -n "$RING" ]; then
  tpr+=("-")
  tps+=("")
  tsr+=("-")
fi
for c in $RING $LINKS; do lat+=("$(get "${c}_lat_us" | median) ($(get "${c}_lat_us" | span))"); done
for l in $LINKS; do
  tpr+=("$(awk -v t="$(get "${l}_testpmd_pps" | median)" -v k="$(get "${l}_testpmd_peak" | median)" \
    'BEGIN {printf "%.3f / %.3f (typ./best s)", t / 1e6, k / 1e6}')")
  tps+=("$(get "${l}_testpmd_pps" | span)")
  tsr+=("$(awk -v t="$(get "${l}_testpmd_same_pps" | median)" -v k="$(get "${l}_testpmd_same_peak" | median)" \
    'BEGIN {if (t ~ /^[0-9.]+$/ && t > 0) printf "%.3f / %.3f (typ./best s)", t / 1e6, k / 1e6; else print "-"}')")
done
row "${lat[@]}"
row "${tpr[@]}"
row "${tps[@]}"
row "${tsr[@]}"
echo
echo "Medians over $REPS rounds (disturbed rounds left out where an undisturbed one exists)."
echo "average: dpdat-perf's whole-run rate; peak: its best 1/20 of the run.  testpmd: median /"
echo "best of its per-second Rx-pps on the same link and devargs.  ratio = dpdat data packets/s"
echo "(MB/s / PMTU) / testpmd pps, average to median, peak to best second.  This VM's hypervisor"
echo "at times runs both virtual CPUs on one physical CPU for seconds (testpmd on memif then drops"
echo "from ~14 to ~2 Mpps, as two pollers on one CPU do); the probes below catch it only at the"
echo "edges of a case, so the averages mix fast and slow periods: read the peak ratio first."
echo "net_ring has no testpmd counterpart (pointer passing, ~1000 Mpps in ENVIRONMENT.md)."
echo "testpmd with dpdat's headers (af_packet): the same frames as dpdat's to the kernel (the peer"
echo "interface's MAC, IPv4, UDP to 4791), which the receiving kernel routes and drops like"
echo "dpdat's; testpmd's default frames go to a foreign MAC and are dropped earlier, for less."
echo "memif: devargs role=...,socket=...${MEMIF_ARGS}; dpdat ${MTU_ARGS[*]} --pmtu $PMTU on both sides."
echo "af_packet: veth pair $VETH-a/-b between namespaces the script made (and removes); devargs $AF_ARGS."
echo "load: before each case, waited up to ${QUIET_WAIT} s for both CPUs >= 90 % idle over 1 s;"
echo "'foreign' = % of 0.2 s samples during it with more runnable tasks than its own pollers;"
echo "'share' = awk loop time on CPU $CPU_A with CPU $CPU_B busy / alone, before and after it (100 %:"
echo "two real CPUs, 200 %: the hypervisor runs both on one).  Disturbed: idle < 90 %, foreign > 10 %"
echo "or share > 130 %:"
sed 's/[a-z_]*=//g' "$LOADLOG" | awk '{n++; if ($2 < mi || n == 1) mi = $2; if ($4 > ml) ml = $4;
    if ($6 > mf) mf = $6; s = $5 > $7 ? $5 : $7; if (s > ms) ms = s;
    if ($2 < 90 || $6 > 10 || s > 130) {d++; ds = ds " " $1}}
  END {printf "  %d cases: min idle before %s %%, max foreign %s %%, max share %s %%, max loadavg %s\n",
       n, mi, mf, ms, ml; printf "  disturbed %d:%s\n", d, ds}'
echo "uptime: $(uptime)"
