#!/usr/bin/env bash
# Verbs on dpdat next to the uDAPL API on the same link and CPUs: perftest over
# dpdat's libibverbs (dpdat-run) and dpdat-perf over libdat, two processes over
# net_memif, server on CPU 0, client on CPU 1, in a network namespace of its
# own (perftest's side channel goes to the server's address).  Root.
#   bench/verbs_compare.sh [--build DIR] [--iters N] [--progress MODE]
# Prints one table: 8 B WRITE, READ and SEND latency (half round trip:
# perftest's t_typical, dpdat-perf's median; perftest's WRITE target polls
# memory, so dpdat-perf --poll-memory is its like) and 64 KiB WRITE and SEND bandwidth
# (perftest's BW average, MB/s as perftest prints it; dpdat-perf's avg_mbs).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib/compare.sh"
compare_args verbs_compare.sh 2,10 "$@"
compare_setup verbs_compare.sh dpdat-verbs-cmp dpdat-vcmp

# perftest PROGRAM ARGS...: the client's result line into $TMP/PROGRAM.out
perftest() {
  local prog=$1
  shift
  pair_run --out "$TMP/$prog." --sock "$SOCK" --settle 0.3 \
    --retry "Couldn't connect|Unable to open file descriptor" \
    "${S_RUN[@]}" "$RUN" -i srv="vdev=$MEMIF_S;ip=$S_IP;progress=$PROGRESS" -- "$prog" -d srv -x 0 -F "$@" :: \
    "${C_RUN[@]}" "$RUN" -i cli="vdev=$MEMIF_C;ip=$C_IP;progress=$PROGRESS" -- "$prog" -d cli -x 0 -F "$@" $S_IP ||
    { echo "verbs_compare.sh: $prog: $PAIR_WHY" >&2; cat "$PAIR_CLIENT_LOG" >&2; }
  grep -E '^\s*[0-9]+\s+[0-9]+\s+[0-9.]+' "$PAIR_CLIENT_LOG" | tail -1 >"$TMP/$prog.out"
}

perftest ib_write_lat -s 8 -n "$ITERS"
perftest ib_read_lat -s 8 -n "$ITERS"
perftest ib_send_lat -s 8 -n "$ITERS"
perftest ib_write_bw -s 65536 -n "$ITERS"
perftest ib_send_bw -s 65536 -n "$ITERS"

perf write_lat --op write -s 8 --lat
perf write_lat_mem --op write -s 8 --lat --poll-memory
perf read_lat --op read -s 8 --lat
perf send_lat --op send -s 8 --lat
perf write_bw --op write -s 65536 --bw
perf send_bw --op send -s 65536 --bw

python3 - "$TMP" <<'PY'
import json, sys, os
tmp = sys.argv[1]
def cols(prog):
    try:
        return open(os.path.join(tmp, prog + ".out")).read().split()
    except OSError:
        return []
def num(prog, i):
    c = cols(prog)
    return float(c[i]) if len(c) > i else float("nan")
def perf(tag, kind):
    try:
        d = json.load(open(os.path.join(tmp, tag + ".json")))
        x = d[kind][0]
        return x["median_us"] if kind == "lat" else x["avg_mbs"]
    except (OSError, ValueError, KeyError, IndexError):
        return float("nan")
rows = [
    ("8 B WRITE latency (us)", num("ib_write_lat", 4), perf("write_lat", "lat")),
    ("  dpdat-perf --poll-memory", float("nan"), perf("write_lat_mem", "lat")),
    ("8 B READ latency (us)", num("ib_read_lat", 4), perf("read_lat", "lat")),
    ("8 B SEND latency (us)", num("ib_send_lat", 4), perf("send_lat", "lat")),
    ("64 KiB WRITE bandwidth (MB/s)", num("ib_write_bw", 3), perf("write_bw", "bw")),
    ("64 KiB SEND bandwidth (MB/s)", num("ib_send_bw", 3), perf("send_bw", "bw")),
]
print(f"{'':32} {'verbs (perftest)':>18} {'uDAPL (dpdat-perf)':>20}")
for name, v, d in rows:
    print(f"{name:32} {v:18.2f} {d:20.2f}")
PY
