#!/usr/bin/env bash
# rdma_cm on dpdat next to the uDAPL API on the same link and CPUs: qperf -cm1
# over dpdat's librdmacm and libibverbs (dpdat-run) and dpdat-perf over libdat,
# two processes over net_memif, server on CPU 0, client on CPU 1, in a network
# namespace of its own (qperf's control connection goes to the server's
# address).  Root.
#   bench/rdmacm_compare.sh [--build DIR] [--iters N] [--time S] [--poll] [--progress MODE]
# Prints one table: 8 B SEND and READ latency (half round trip: qperf's
# latency, which it reports as half the round trip, dpdat-perf's median) and
# 64 KiB SEND and WRITE bandwidth (qperf's bw, MB/s = 10^6 B/s; dpdat-perf's
# avg_mbs).  qperf runs each test for --time seconds (default 5) and, by
# default, waits for completions on a completion channel (qperf's default);
# --poll makes it poll its CQs (-cp1), as dpdat-perf does.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build/ci
ITERS=5000
PROGRESS=adaptive
TIME=5
CP=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --progress) PROGRESS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --poll) CP=-cp1; shift ;;
    -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "rdmacm_compare.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$ITERS" =~ ^[1-9][0-9]*$ ]] || { echo "rdmacm_compare.sh: --iters: a positive integer" >&2; exit 2; }
[[ "$TIME" =~ ^[1-9][0-9]*$ ]] || { echo "rdmacm_compare.sh: --time: a positive integer" >&2; exit 2; }
command -v qperf >/dev/null || { echo "rdmacm_compare.sh: qperf not installed" >&2; exit 1; }
PERF=$BUILD/tools/dpdat-perf
RUN=$BUILD/bin/dpdat-run
for f in "$PERF" "$RUN"; do
  [ -x "$f" ] || { echo "rdmacm_compare.sh: $f not built" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "rdmacm_compare.sh: needs root (network namespace)" >&2; exit 1; }

. "$ROOT/scripts/lib/net.sh"
. "$ROOT/scripts/lib/pair.sh"
lib_tmpdir TMP dpdat-rdmacm-cmp
NS=dpdat-ccmp-$$
S_IP=10.79.0.1
C_IP=10.79.0.2
memif_pair "$TMP"
SOCK=$MEMIF_SOCK
netns_add "$NS"
ip netns exec "$NS" ip addr add $S_IP/32 dev lo
ip netns exec "$NS" ip addr add $C_IP/32 dev lo
S_RUN=(ip netns exec "$NS" taskset -c 0 timeout 120)
C_RUN=(ip netns exec "$NS" taskset -c 1 timeout 120)

# qperf TEST SIZE: the client's output into $TMP/TEST.client.log.  qperf's
# server opens its device only when the test starts (no memif socket to wait
# for); the client then tells it to quit.
qperf_run() {
  local test=$1 size=$2
  rm -f "$SOCK" # a previous server's
  pair_run --out "$TMP/$test." --settle 0.5 --retry "REJECTED|Connection refused|failed to connect" \
    "${S_RUN[@]}" "$RUN" -i srv="vdev=$MEMIF_S;ip=$S_IP;progress=$PROGRESS" -- qperf -lp 19772 :: \
    "${C_RUN[@]}" "$RUN" -i cli="vdev=$MEMIF_C;ip=$C_IP;progress=$PROGRESS" -- sh -c \
    "qperf $S_IP -lp 19772 -cm1 $CP -m $size -t $TIME $test && qperf $S_IP -lp 19772 -to 30 quit" ||
    { echo "rdmacm_compare.sh: qperf $test: $PAIR_WHY" >&2; cat "$PAIR_CLIENT_LOG" >&2; }
}

qperf_run rc_lat 8
qperf_run rc_rdma_read_lat 8
qperf_run rc_bw 64K
qperf_run rc_rdma_write_bw 64K

# dpdat-perf TAG ARGS...: the client's JSON into $TMP/TAG.json (the client
# waits for the server's out-of-band socket itself)
perf() {
  local tag=$1
  shift
  rm -f "$SOCK" "$TMP/oob.sock" # a previous server's
  pair_run --out "$TMP/$tag." \
    "${S_RUN[@]}" "$PERF" --server --vdev "$MEMIF_S" --ip "$S_IP" --oob "$TMP/oob.sock" \
    --progress "$PROGRESS" "$@" :: \
    "${C_RUN[@]}" "$PERF" --client "$S_IP" --vdev "$MEMIF_C" --ip "$C_IP" --oob "$TMP/oob.sock" \
    --progress "$PROGRESS" --json "$TMP/$tag.json" -n "$ITERS" "$@" ||
    { echo "rdmacm_compare.sh: dpdat-perf $tag: $PAIR_WHY" >&2; cat "$PAIR_CLIENT_LOG" >&2; }
}

perf send_lat --op send -s 8 --lat
perf read_lat --op read -s 8 --lat
perf send_bw --op send -s 65536 --bw
perf write_bw --op write -s 65536 --bw

python3 - "$TMP" <<'PY'
import json, os, re, sys
tmp = sys.argv[1]
SCALE = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6,
         "bytes/sec": 1e-6, "KB/sec": 1e-3, "MB/sec": 1.0, "GB/sec": 1e3}
def qperf(test, key):
    # "    latency  =  180 us" / "    bw  =  242 MB/sec": in us and MB/s.
    try:
        text = open(os.path.join(tmp, test + ".client.log")).read()
    except OSError:
        return float("nan")
    m = re.search(r"^\s*" + key + r"\s*=\s*([0-9.]+)\s*(\S+)", text, re.M)
    return float(m.group(1)) * SCALE.get(m.group(2), float("nan")) if m else float("nan")
def perf(tag, kind):
    try:
        d = json.load(open(os.path.join(tmp, tag + ".json")))
        x = d[kind][0]
        return x["median_us"] if kind == "lat" else x["avg_mbs"]
    except (OSError, ValueError, KeyError, IndexError):
        return float("nan")
rows = [
    ("8 B SEND latency (us)", qperf("rc_lat", "latency"), perf("send_lat", "lat")),
    ("8 B READ latency (us)", qperf("rc_rdma_read_lat", "latency"), perf("read_lat", "lat")),
    ("64 KiB SEND bandwidth (MB/s)", qperf("rc_bw", "bw"), perf("send_bw", "bw")),
    ("64 KiB WRITE bandwidth (MB/s)", qperf("rc_rdma_write_bw", "bw"), perf("write_bw", "bw")),
]
print(f"{'':32} {'rdma_cm (qperf -cm1)':>22} {'uDAPL (dpdat-perf)':>20}")
for name, v, d in rows:
    print(f"{name:32} {v:22.2f} {d:20.2f}")
PY
