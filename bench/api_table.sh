#!/usr/bin/env bash
# The public API next to the engine, in one command: over net_memif, two
# processes pinned to one CPU each (server on CPU 0, client on CPU 1):
#   - OFED dapltest -T P through the DAT 2.0 plug-in (libdaplodpdk.so.2):
#     -m p RW 8 -p 1, RR 8 -p 1, -m b RW 8 -p 1, RW 65536 -p 16, RR 65536 -p 16
#   - dpdat-perf over libdat (uDAPL 1.2): 8 B WRITE half round trip, 64 KiB
#     WRITE bandwidth
#   - the engine-level figures (bench dpdat-engine-perf, same link, same CPUs)
#   - the CPU of an idle connected process (adaptive progress) 1 s after its
#     last packet, from /proc/<pid>/stat over a window
# Rounds are interleaved (every measure once per round); the table shows
# medians and the ratios of the API to the engine.  Writes JSON (--json).
#
#   bash bench/api_table.sh [--build DIR] [--rounds N] [--json FILE]
#                           [--progress MODE] [--idle-window S] [--logs DIR]
# (logs of every process: /tmp/dpdat-api-table-logs unless --logs)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=""
ROUNDS=3
JSON=""
PROGRESS=adaptive
IDLE_WINDOW=2
LOGS=/tmp/dpdat-api-table-logs
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --progress) PROGRESS=$2; shift 2 ;;
    --idle-window) IDLE_WINDOW=$2; shift 2 ;;
    --logs) LOGS=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "api_table.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "api_table.sh: --rounds: a positive integer" >&2; exit 2; }
[[ "$IDLE_WINDOW" =~ ^[1-9][0-9]*$ ]] || { echo "api_table.sh: --idle-window: whole seconds" >&2; exit 2; }
if [ -z "$BUILD" ]; then
  BUILD=$ROOT/build/release
  [ -x "$BUILD/tools/dpdat-perf" ] || BUILD=$ROOT/build/ci
fi
PERF=$BUILD/tools/dpdat-perf
ENGINE=$BUILD/bench/dpdat-engine-perf
LIB=$BUILD/dat_core/dat2/libdaplodpdk.so.2
for f in "$PERF" "$ENGINE" "$LIB"; do
  [ -e "$f" ] || { echo "api_table.sh: $f not built (cmake --build --preset release)" >&2; exit 1; }
done
command -v dapltest >/dev/null || { echo "api_table.sh: dapltest missing (apt-get install dapl2-utils)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "api_table.sh: needs 2 CPUs (one per process)" >&2; exit 1; }

. "$ROOT/scripts/lib/net.sh"
lib_tmpdir TMP dpdat-api-table
rm -rf "$LOGS"
mkdir -p "$LOGS"
S_IP=10.79.0.1
C_IP=10.79.0.2
memif_pair "$TMP"
SOCK=$MEMIF_SOCK
S_RUN=(taskset -c 0 timeout 120)
C_RUN=(taskset -c 1 timeout 120)

# A build that does not parse progress=adaptive yet runs the idle measure with
# progress=thread and says so.
IDLE_PROGRESS=$PROGRESS
if ! "$PERF" --progress "$PROGRESS" -s 8 -n 10 --lat >/dev/null 2>&1; then
  echo "api_table.sh: this build refuses progress=$PROGRESS; measuring with progress=thread" >&2
  IDLE_PROGRESS=thread
fi

wait_sock() {
  wait_memif_socket && return 0
  echo "api_table.sh: memif socket never appeared (see $LOGS)" >&2
  return 1
}
wait_line() {  # file, text, pid
  wait_for "grep -q '$2' '$1' 2>/dev/null || ! kill -0 $3 2>/dev/null" 30
  grep -q "$2" "$1" 2>/dev/null
}

# dapltest -T P through the plug-in; the client's raw: line into $2.
PORT=$((46000 + $$ % 1000))
dapltest_run() {  # tag, out-file, dapltest P arguments...
  local tag=$1 out=$2
  shift 2
  rm -f "$SOCK"
  printf 'dpdat u2.0 nonthreadsafe default %s dapl.2.0 "vdev=%s;ip=%s" ""\n' "$LIB" "$MEMIF_S" "$S_IP" >"$TMP/s.conf"
  printf 'dpdat u2.0 nonthreadsafe default %s dapl.2.0 "vdev=%s;ip=%s" ""\n' "$LIB" "$MEMIF_C" "$C_IP" >"$TMP/c.conf"
  DAT_OVERRIDE=$TMP/s.conf "${S_RUN[@]}" dapltest -T S -D dpdat -n "$PORT" >"$LOGS/$tag.server.log" 2>&1 &
  local spid=$!
  lib_track $spid
  wait_sock && wait_line "$LOGS/$tag.server.log" "Service Point Ready" $spid || { echo "api_table.sh: dapltest server for $tag did not start" >&2; return 1; }
  local rc=0
  DAT_OVERRIDE=$TMP/c.conf "${C_RUN[@]}" dapltest -T P -s "$S_IP" -D dpdat -n "$PORT" "$@" >"$LOGS/$tag.client.log" 2>&1 || rc=$?
  DAT_OVERRIDE=$TMP/c.conf "${C_RUN[@]}" dapltest -T Q -s "$S_IP" -D dpdat -n "$PORT" >>"$LOGS/$tag.quit.log" 2>&1 || true
  wait "$spid" || true
  [ $rc -eq 0 ] || { echo "api_table.sh: dapltest $tag exited $rc (see $LOGS/$tag.client.log)" >&2; return 1; }
  grep -m1 "raw:" "$LOGS/$tag.client.log" >"$out" || { echo "api_table.sh: no raw: line from dapltest $tag" >&2; return 1; }
}

# dpdat-perf (API) or dpdat-engine-perf, server on CPU 0, client on CPU 1;
# the client's JSON into $3.
pair_run() {  # tag, binary, json-out, extra args for both sides...
  local tag=$1 bin=$2 out=$3
  shift 3
  rm -f "$SOCK" "$TMP/oob.sock"
  "${S_RUN[@]}" "$bin" --server --vdev "$MEMIF_S" --ip "$S_IP" --oob "$TMP/oob.sock" "$@" >"$LOGS/$tag.server.log" 2>&1 &
  local spid=$!
  lib_track $spid
  local rc=0
  if [ "$bin" = "$ENGINE" ]; then wait_sock || rc=1; fi
  [ $rc -eq 0 ] && { "${C_RUN[@]}" "$bin" --client "$S_IP" --vdev "$MEMIF_C" --ip "$C_IP" --oob "$TMP/oob.sock" --json "$out" "$@" >"$LOGS/$tag.client.log" 2>&1 || rc=$?; }
  wait "$spid" || rc=1
  [ $rc -eq 0 ] || { echo "api_table.sh: $tag failed (see $LOGS/$tag.*.log)" >&2; return 1; }
}

# An idle connected pair: traffic, then the client lingers connected without
# calling anything; CPU of both processes over IDLE_WINDOW s, from 1 s after
# the last packet.  "server_pct client_pct" into $1.
idle_run() {
  local out=$1
  rm -f "$SOCK" "$TMP/oob.sock"
  local linger=$((IDLE_WINDOW + 2))
  "${S_RUN[@]}" "$PERF" --server --vdev "$MEMIF_S" --ip "$S_IP" --oob "$TMP/oob.sock" --progress "$IDLE_PROGRESS" >"$LOGS/idle.server.log" 2>&1 &
  local spid=$!
  lib_track $spid
  "${C_RUN[@]}" "$PERF" --client "$S_IP" --vdev "$MEMIF_C" --ip "$C_IP" --oob "$TMP/oob.sock" --progress "$IDLE_PROGRESS" -s 8 -n 2000 --lat --linger "$linger" >"$LOGS/idle.client.log" 2>&1 &
  local cpid=$!
  lib_track $cpid
  wait_line "$LOGS/idle.client.log" "lingering" $cpid || { echo "api_table.sh: idle pair did not reach its idle phase" >&2; return 1; }
  sleep 1
  # $! is timeout(1) (taskset execs it); the measured process is its child.
  local tck s0 c0 s1 c1 sp cp
  sp=$(pgrep -P "$spid" -n) && cp=$(pgrep -P "$cpid" -n) || { echo "api_table.sh: idle pair exited early" >&2; return 1; }
  tck=$(getconf CLK_TCK)
  ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
  s0=$(ticks "$sp"); c0=$(ticks "$cp")
  sleep "$IDLE_WINDOW"
  s1=$(ticks "$sp"); c1=$(ticks "$cp")
  wait "$cpid" || true
  wait "$spid" || true
  awk -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v t="$tck" -v w="$IDLE_WINDOW" \
    'BEGIN { printf "%.2f %.2f\n", 100 * s / t / w, 100 * c / t / w }' >"$out"
}

RES=$TMP/res
mkdir -p "$RES"
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS"
  dapltest_run "r$r.dapl_rw8_p" "$RES/r$r.dapl_rw8_p" -m p -i 20000 -p 1 RW 8
  dapltest_run "r$r.dapl_rr8_p" "$RES/r$r.dapl_rr8_p" -m p -i 20000 -p 1 RR 8
  dapltest_run "r$r.dapl_rw8_b" "$RES/r$r.dapl_rw8_b" -m b -i 20000 -p 1 RW 8
  dapltest_run "r$r.dapl_rw64k" "$RES/r$r.dapl_rw64k" -m p -i 4000 -p 16 RW 65536
  dapltest_run "r$r.dapl_rr64k" "$RES/r$r.dapl_rr64k" -m p -i 4000 -p 16 RR 65536
  pair_run "r$r.api" "$PERF" "$RES/r$r.api.json" -s 8 -s 65536
  pair_run "r$r.engine_bw" "$ENGINE" "$RES/r$r.engine_bw.json" --size 65536 --bw
  pair_run "r$r.engine_lat" "$ENGINE" "$RES/r$r.engine_lat.json" --size 8 --lat
  idle_run "$RES/r$r.idle"
done

python3 - "$RES" "$ROUNDS" "${JSON:-}" "$IDLE_PROGRESS" "$PROGRESS" <<'EOF'
import json, os, statistics, subprocess, sys
res, rounds, out, idle_progress, asked = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

def raw(path):
    # dapltest -T P "raw:" line: op, iterations, size, segments, pipeline,
    # CPU %, ops/s, MB/s, latency us, post us, reap us (ENVIRONMENT.md)
    f = [x.strip() for x in open(path).read().split("raw:")[1].split(",")]
    keys = ["op", "iterations", "size", "segments", "pipeline", "cpu_pct", "ops_per_s", "mb_per_s",
            "latency_us", "post_us", "reap_us"]
    d = dict(zip(keys, f))
    for k in keys[1:]:
        d[k] = float(d[k])
    return d

per_round = []
for r in range(1, rounds + 1):
    p = lambda n: os.path.join(res, f"r{r}.{n}")
    api = json.load(open(p("api.json")))
    ebw = json.load(open(p("engine_bw.json")))
    elat = json.load(open(p("engine_lat.json")))
    idle = open(p("idle")).read().split()
    api_bw = {b["size"]: b for b in api["bw"]}
    per_round.append({
        "dapltest_rw8_p_ops": raw(p("dapl_rw8_p"))["ops_per_s"],
        "dapltest_rr8_p_ops": raw(p("dapl_rr8_p"))["ops_per_s"],
        "dapltest_rw8_b_ops": raw(p("dapl_rw8_b"))["ops_per_s"],
        "dapltest_rw64k_mbs": raw(p("dapl_rw64k"))["mb_per_s"],
        "dapltest_rr64k_mbs": raw(p("dapl_rr64k"))["mb_per_s"],
        "api_lat8_us": api["lat"][0]["median_us"],
        "api_bw64k_mbs": api_bw[65536]["avg_mbs"],
        "engine_lat8_us": elat["lat"][0]["median_us"],
        "engine_bw64k_mbs": ebw["bw"][0]["avg_mbs"],
        "idle_server_cpu_pct": float(idle[0]),
        "idle_client_cpu_pct": float(idle[1]),
    })
med = {k: statistics.median(r[k] for r in per_round) for k in per_round[0]}
ratios = {
    "dapltest_rw8_us_per_op": 1e6 / med["dapltest_rw8_p_ops"],
    "dapltest_rr8_us_per_op": 1e6 / med["dapltest_rr8_p_ops"],
    "dapltest_rw8_blocking_us_per_op": 1e6 / med["dapltest_rw8_b_ops"],
    "dapltest_rw64k_over_engine": med["dapltest_rw64k_mbs"] / med["engine_bw64k_mbs"],
    "dapltest_rr64k_over_engine": med["dapltest_rr64k_mbs"] / med["engine_bw64k_mbs"],
    "api_lat8_over_engine": med["api_lat8_us"] / med["engine_lat8_us"],
    "api_bw64k_over_engine": med["api_bw64k_mbs"] / med["engine_bw64k_mbs"],
}
targets = {
    "dapltest_rw8_us_per_op": ("<=", 3.0),
    "dapltest_rw64k_over_engine": (">=", 0.8),
    "dapltest_rr64k_over_engine": (">=", 0.8),
    "api_lat8_over_engine": ("<=", 1.3),
    "api_bw64k_over_engine": (">=", 0.9),
    "idle_server_cpu_pct": ("<", 5.0),
    "idle_client_cpu_pct": ("<", 5.0),
}
def met(name, value):
    op, lim = targets[name]
    return value <= lim if op == "<=" else value >= lim if op == ">=" else value < lim
try:
    rev = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
except OSError:
    rev = ""
result = {"tool": "bench/api_table.sh", "git_revision": rev, "link": "net_memif, two processes, CPU 0 / CPU 1",
          "rounds": rounds, "idle_progress": idle_progress, "progress_asked": asked,
          "per_round": per_round, "median": med, "ratios": ratios,
          "targets": {k: {"op": v[0], "limit": v[1],
                          "met": met(k, ratios[k] if k in ratios else med[k])} for k, v in targets.items()}}
MB = 1048576
rows = [
    ("dapltest -T P -m p RW 8 -p 1", f"{med['dapltest_rw8_p_ops']:,.0f} ops/s = {ratios['dapltest_rw8_us_per_op']:.2f} us/op", "<= 3 us"),
    ("dapltest -T P -m p RR 8 -p 1", f"{med['dapltest_rr8_p_ops']:,.0f} ops/s = {ratios['dapltest_rr8_us_per_op']:.2f} us/op", ""),
    ("dapltest -T P -m b RW 8 -p 1", f"{med['dapltest_rw8_b_ops']:,.0f} ops/s = {ratios['dapltest_rw8_blocking_us_per_op']:.2f} us/op", ""),
    ("dapltest RW 65536 -p 16", f"{med['dapltest_rw64k_mbs'] * MB / 1e9:.2f} GB/s = {ratios['dapltest_rw64k_over_engine']:.0%} of engine", ">= 80 %"),
    ("dapltest RR 65536 -p 16", f"{med['dapltest_rr64k_mbs'] * MB / 1e9:.2f} GB/s = {ratios['dapltest_rr64k_over_engine']:.0%} of engine", ">= 80 %"),
    ("dpdat-perf (libdat) 8 B WRITE half RTT", f"{med['api_lat8_us']:.2f} us = {ratios['api_lat8_over_engine']:.2f}x engine", "<= 1.3x"),
    ("dpdat-perf (libdat) 64 KiB WRITE", f"{med['api_bw64k_mbs'] * MB / 1e9:.2f} GB/s = {ratios['api_bw64k_over_engine']:.0%} of engine", ">= 90 %"),
    ("engine level 8 B WRITE half RTT", f"{med['engine_lat8_us']:.2f} us", ""),
    ("engine level 64 KiB WRITE", f"{med['engine_bw64k_mbs'] * MB / 1e9:.2f} GB/s", ""),
    (f"idle connected process, progress={idle_progress}", f"server {med['idle_server_cpu_pct']:.1f} %, client {med['idle_client_cpu_pct']:.1f} % of a core", "< 5 %"),
]
print(f"\nmedians of {rounds} interleaved rounds (GB = 1e9 B)")
print(f"| {'measure':<44} | {'figure':<44} | target |")
print(f"|{'-' * 46}|{'-' * 46}|--------|")
for a, b, c in rows:
    print(f"| {a:<44} | {b:<44} | {c:<6} |")
if out:
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nJSON: {out}")
EOF
