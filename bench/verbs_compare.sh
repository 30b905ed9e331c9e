#!/usr/bin/env bash
# Verbs on dpdat next to the uDAPL API on the same link and CPUs: perftest over
# dpdat's libibverbs (dpdat-run) and dpdat-perf over libdat, two processes over
# net_memif, server on CPU 0, client on CPU 1, in a network namespace of its
# own (perftest's side channel goes to the server's address).  Root.
#   bench/verbs_compare.sh [--build DIR] [--iters N] [--bw-iters N] [--rounds R]
#                          [--progress MODE]
# --iters: latency iterations (default 5000); --bw-iters: bandwidth messages
# (default 20000); --rounds: default 5.
# Runs only cases with at most one busy thread per CPU: a side whose program
# polls its CQ drives its interface itself (progress=inline); a side whose
# program sits in a socket read (a passive RDMA target) is served by its
# progress thread (progress=MODE, default busy: adaptive sleeps between
# requests, and its wake-up would be what a latency case measures).
# Rounds interleave the two APIs (verbs, DAT, verbs, DAT, ...).  Per case the
# table shows the medians over the rounds, their ratio verbs/DAT, and the
# median and quartiles of each round's own ratio ("paired"), on which the
# verdict is: on a shared machine the load changes between rounds, and a
# round's two runs, one after the other, share more of it.  Latency in
# us (perftest's t_typical, dpdat-perf's median; READ a round trip, SEND half
# of one), 64 KiB bandwidth in MB/s (perftest's BW average, dpdat-perf's
# avg_mbs).  perftest's latency tests signal every send and wait for its
# completion, so each SEND of ib_send_lat is acknowledged on its own; the
# DAT twin's sends are unsignalled, and their ACKs coalesce.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/lib/compare.sh"
BW_ITERS_DEFAULT=20000
PROGRESS_DEFAULT=busy
compare_rounds_args verbs_compare.sh 2,24 "$@"
case "$PROGRESS" in
  adaptive | busy) ;;
  *) echo "verbs_compare.sh: --progress: adaptive or busy (a passive target needs a progress thread)" >&2; exit 2 ;;
esac
compare_setup verbs_compare.sh dpdat-verbs-cmp dpdat-vcmp

# The cases: name, kind (lat or bw), the server's progress mode, perftest's
# program and size, dpdat-perf's arguments.  The client always polls.
CASES=(
  "read_lat lat $PROGRESS ib_read_lat 8 --op read -s 8 --lat"
  "send_lat lat inline ib_send_lat 8 --op send -s 8 --lat"
  "write_bw bw $PROGRESS ib_write_bw 65536 --op write -s 65536 --bw"
  "send_bw bw inline ib_send_bw 65536 --op send -s 65536 --bw"
)
LEFT_OUT="left out: ib_write_lat (its target spins on memory while its progress thread must place each write: two busy threads on each CPU of two), ib_atomic_* and ib_read_bw (not among the compared cases)"

# verbs NAME ROUND SPROG PROG SIZE N: perftest's client result line into $TMP/NAME.verbs.ROUND
verbs() {
  local name=$1 round=$2 sprog=$3 prog=$4 size=$5 n=$6
  pair_run --out "$TMP/$name.verbs.$round." --sock "$SOCK" --settle 0.3 \
    --retry "Couldn't connect|Unable to open file descriptor" \
    "${S_RUN[@]}" "$RUN" -i srv="vdev=$MEMIF_S;ip=$S_IP;progress=$sprog" -- "$prog" -d srv -x 0 -F -s "$size" -n "$n" :: \
    "${C_RUN[@]}" "$RUN" -i cli="vdev=$MEMIF_C;ip=$C_IP;progress=inline" -- "$prog" -d cli -x 0 -F -s "$size" -n "$n" $S_IP ||
    { echo "verbs_compare.sh: $prog: $PAIR_WHY" >&2; cat "$PAIR_CLIENT_LOG" >&2; }
  grep -E '^\s*[0-9]+\s+[0-9]+\s+[0-9.]+' "$PAIR_CLIENT_LOG" | tail -1 >"$TMP/$name.verbs.$round"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
  for c in "${CASES[@]}"; do
    read -r name kind sprog prog size dargs <<<"$c"
    n=$ITERS
    [ "$kind" = bw ] && n=$BW_ITERS
    verbs "$name" "$r" "$sprog" "$prog" "$size" "$n"
    # shellcheck disable=SC2086 # dargs: several arguments
    perf --server-progress "$sprog" --client-progress inline -n "$n" "$name.dat.$r" $dargs
  done
done

python3 - "$TMP" "$ROUNDS" "$LEFT_OUT" "${CASES[@]}" <<'PY'
import json, math, os, statistics, sys
tmp, rounds, left_out, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
def verbs(name, kind, r):
    try:
        c = open(os.path.join(tmp, f"{name}.verbs.{r}")).read().split()
        return float(c[4] if kind == "lat" else c[3])
    except (OSError, ValueError, IndexError):
        return math.nan
def dat(name, kind, r):
    try:
        d = json.load(open(os.path.join(tmp, f"{name}.dat.{r}.json")))
        x = d[kind][0]
        return x["median_us"] if kind == "lat" else x["avg_mbs"]
    except (OSError, ValueError, KeyError, IndexError):
        return math.nan
def median(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return statistics.median(xs) if xs else math.nan
print(f"{'case':10} {'server':9} {'verbs':>9} {'DAT':>9} {'verbs/DAT':>9} {'paired':>6} {'q1-q3':>11}  target  rounds (verbs | DAT)")
for c in cases:
    name, kind, sprog, prog, size = c.split()[:5]
    v = [verbs(name, kind, r) for r in range(1, rounds + 1)]
    d = [dat(name, kind, r) for r in range(1, rounds + 1)]
    mv, md = median(v), median(d)
    ratio = mv / md if md and not math.isnan(md) else math.nan
    # Each round's verbs run next to the DAT run that followed it: the
    # median of those ratios, less swayed by a load that changes over rounds.
    pairs = [a / b for a, b in zip(v, d) if b and not math.isnan(a) and not math.isnan(b)]
    paired = median(pairs)
    q = statistics.quantiles(pairs, n=4) if len(pairs) >= 2 else [math.nan] * 3
    if math.isnan(paired):
        verdict = "n/a"
    elif kind == "lat":
        verdict = "met" if paired <= 1.1 else "MISSED (<= 1.1)"
    else:
        verdict = "met" if paired >= 0.95 else "MISSED (>= 0.95)"
    unit = "us" if kind == "lat" else "MB/s"
    fmt = lambda xs: " ".join(f"{x:.2f}" for x in xs)
    print(f"{name:10} {sprog:9} {mv:9.2f} {md:9.2f} {ratio:9.3f} {paired:6.3f} {q[0]:5.2f}-{q[2]:5.2f}  {verdict}  {unit}: {fmt(v)} | {fmt(d)}")
print(left_out)
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
