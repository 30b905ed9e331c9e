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
. "$ROOT/scripts/lib/compare.sh"
TIME=5
CP=
compare_opt() {
  case "$1" in
    --time) TIME=${2-}; COMPARE_TAKEN=2 ;;
    --poll) CP=-cp1; COMPARE_TAKEN=1 ;;
  esac
}
compare_args rdmacm_compare.sh 2,13 "$@"
[[ "$TIME" =~ ^[1-9][0-9]*$ ]] || { echo "rdmacm_compare.sh: --time: a positive integer" >&2; exit 2; }
command -v qperf >/dev/null || { echo "rdmacm_compare.sh: qperf not installed" >&2; exit 1; }
compare_setup rdmacm_compare.sh dpdat-rdmacm-cmp dpdat-ccmp

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
