#!/usr/bin/env bash
# How throughput grows with cores: for N = 1, 2, 4, ... engines per side (up
# to half the CPUs minus one, or MAX_N), two processes over one net_memif link
# with N queues, server engines on CPUs 0..N-1 and client engines on CPUs
# H..H+N-1 (H = half the CPUs):
#   api     dpdat-perf over the public uDAPL API (libdat), --engines N -q N,
#           busy progress: 64 KiB RDMA WRITE and READ bandwidth, 64 B WRITE
#           message rate (aggregate over the N EPs) from one posting thread
#           (write64) and from a posting thread per engine that drives it
#           (write64t: the client --progress inline --threads N)
#   engine  dpdat-engine-perf --engines N --qps N (below the API): 64 KiB and
#           64 B WRITE; N > 1 runs N engine threads beside the posting thread,
#           on N + 1 CPUs; and 64 B WRITE with a client thread per engine
#           that posts to and drives it (write64t: --threads, N CPUs)
#   testpmd txonly -> rxonly with N queues and N forwarding cores on the same
#           link, 1098 B frames (a PMTU-1024 WRITE's size): the link's own rate
# Rounds are interleaved (ROUNDS, default 1: every N once, then again).
# Prints a table, writes JSON (JSON=file, default scale_cores.json) and, when
# gnuplot is installed, a plot of throughput against cores (PLOT=file.png).
# A benchmark, not a test.  Needs root (hugepages) and a release build:
#   cmake --preset release && cmake --build --preset release
#   bash bench/scale_cores.sh build/release
set -uo pipefail
BUILD=$(readlink -f "${1:-build/release}")
PERF=$BUILD/tools/dpdat-perf
EPERF=$BUILD/bench/dpdat-engine-perf
TESTPMD=${TESTPMD:-dpdk-testpmd}
for b in "$PERF" "$EPERF"; do
  [ -x "$b" ] || { echo "scale_cores.sh: $b not built" >&2; exit 2; }
done
NCPU=$(nproc)
HALF=$((NCPU / 2))
MAX_N=${MAX_N:-$((HALF > 1 ? HALF - 1 : 1))}
ROUNDS=${ROUNDS:-1}
ITERS_BIG=${ITERS_BIG:-20000}
ITERS_SMALL=${ITERS_SMALL:-400000}
JSON=${JSON:-scale_cores.json}
PLOT=${PLOT:-scale_cores.png}
TESTPMD_SECS=${TESTPMD_SECS:-5}
NS=()
for ((n = 1; n <= MAX_N; n *= 2)); do NS+=("$n"); done
[ "${NS[-1]}" -ne "$MAX_N" ] && NS+=("$MAX_N")
. "$(dirname "$(readlink -f "$0")")/../scripts/lib/net.sh"
lib_tmpdir TMP dpdat-scale-cores
memif_pair "$TMP"
memif_vdev() { [ "$1" = server ] && echo "$MEMIF_S" || echo "$MEMIF_C"; }
memif_wait() { wait_memif_socket; }
RES=$TMP/results.txt
: >"$RES"

cpus() { # first count -> "a-b"
  echo "$1-$(($1 + $2 - 1))"
}

api_case() { # n op size iters key round [client progress args...]
  local n=$1 op=$2 size=$3 iters=$4 key=$5 r=$6 out=$TMP/api-$5-$1-$6.json
  shift 6
  local cprog=("$@")
  [ ${#cprog[@]} -eq 0 ] && cprog=(--progress busy)
  rm -f "$TMP/memif.sock" "$TMP/oob.sock"
  local common=(--bw -s "$size" -n "$iters" --op "$op" -q "$n" --engines "$n"
    --oob "$TMP/oob.sock")
  timeout 300 "$PERF" --server --ip 10.79.0.1 --vdev "$(memif_vdev server)" \
    --cpus "$(cpus 0 "$n")" --progress busy "${common[@]}" >"$TMP/s.log" 2>&1 &
  local spid=$!
  lib_track "$spid"
  # (dpdat-perf's server opens its interface once the client reached it out
  # of band; the client retries until then: no socket to wait for)
  timeout 300 "$PERF" --client 10.79.0.1 --ip 10.79.0.2 --vdev "$(memif_vdev client)" \
    --cpus "$(cpus "$HALF" "$n")" --json "$out" "${cprog[@]}" "${common[@]}" >"$TMP/c.log" 2>&1
  local crc=$?
  wait "$spid"
  local src=$?
  if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ ! -s "$out" ]; then
    echo "FAIL api $key N=$n: $(grep -v '^EAL\|TELEMETRY' "$TMP/c.log" | tail -2 | tr '\n' ' ')"
    return
  fi
  python3 - "$out" "$key" "$n" "$size" >>"$RES" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); key, n, size = sys.argv[2], sys.argv[3], int(sys.argv[4])
bw = d['bw'][0]
mbs = bw['avg_mbs']
c = d.get('counters', {})
rto = sum(v for k, v in c.items() if k.endswith('.qp_timeouts'))
tlp = sum(v for k, v in c.items() if k.endswith('.qp_tlp_probes'))
print(f"api_{key} {n} {mbs if size > 64 else mbs * 2**20 / size / 1e6} {rto} {tlp}")
EOF
}

engine_case() { # n size iters key round [client args...]
  local n=$1 size=$2 iters=$3 key=$4 r=$5 out=$TMP/engine-$4-$1-$5.json
  shift 5
  rm -f "$TMP/memif.sock" "$TMP/oob.sock"
  # --iters is the total over the QPs there (dpdat-perf's -n is per EP):
  # N times as many, so both levels run as long at every N.
  local common=(--bw --size "$size" --iters "$((iters * n))" --engines "$n" --qps "$n"
    --oob "$TMP/oob.sock")
  # N > 1: N engine threads and the thread that posts and reaps, a CPU each
  # (with N CPUs one engine thread shares its CPU and stalls its queue pairs).
  # The client with --threads: N threads, each driving its engine, N CPUs.
  local c=$((n > 1 ? n + 1 : 1))
  local cc=$c
  [ $# -gt 0 ] && cc=$n
  taskset -c "$(cpus 0 "$c")" timeout 300 "$EPERF" --server --vdev "$(memif_vdev server)" \
    --ip 10.79.0.1 "${common[@]}" >"$TMP/es.log" 2>&1 &
  local spid=$!
  lib_track "$spid"
  memif_wait
  taskset -c "$(cpus "$HALF" "$cc")" timeout 300 "$EPERF" --client 10.79.0.1 \
    --vdev "$(memif_vdev client)" --ip 10.79.0.2 --json "$out" "${common[@]}" "$@" >"$TMP/ec.log" 2>&1
  local crc=$?
  wait "$spid"
  if [ $crc -ne 0 ] || [ ! -s "$out" ]; then
    echo "FAIL engine $key N=$n: $(tail -2 "$TMP/ec.log" | tr '\n' ' ')"
    return
  fi
  python3 - "$out" "$key" "$n" "$size" >>"$RES" <<'EOF2'
import json, sys
d = json.load(open(sys.argv[1])); key, n, size = sys.argv[2], sys.argv[3], int(sys.argv[4])
bw = d['bw'][0]
print(f"engine_{key} {n} {bw['avg_mbs'] if size > 64 else bw['avg_mbs'] * 2**20 / size / 1e6} - -")
EOF2
}

testpmd_case() { # n
  local n=$1
  command -v "$TESTPMD" >/dev/null || return
  rm -f "$TMP/memif.sock"
  local app=(--total-num-mbufs=$((8192 * n)) --mbuf-size=2176 --nb-cores="$n" --rxq="$n"
    --txq="$n" --stats-period=1)
  # Without hugepages (a container that cannot mount hugetlbfs) the EAL runs
  # on ordinary memory, as dpdat's own EAL set-up does.
  local eal=(--in-memory)
  [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge 256 ] 2>/dev/null ||
    eal=(--no-huge --no-shconf -m 1024)
  "$TESTPMD" -l "$(cpus 0 $((n + 1)))" --no-pci "${eal[@]}" --file-prefix "sc-tx-$$" \
    --vdev "$(memif_vdev server)" -- --forward-mode=txonly --txpkts=1098 "${app[@]}" \
    >"$TMP/tx.log" 2>&1 &
  local tpid=$!
  lib_track "$tpid"
  memif_wait
  "$TESTPMD" -l "$(cpus "$HALF" $((n + 1)))" --no-pci "${eal[@]}" --file-prefix "sc-rx-$$" \
    --vdev "$(memif_vdev client)" -- --forward-mode=rxonly "${app[@]}" >"$TMP/rx.log" 2>&1 &
  local rpid=$!
  lib_track "$rpid"
  sleep "$TESTPMD_SECS"
  kill -INT "$rpid" "$tpid" 2>/dev/null
  sleep 1
  kill -9 "$rpid" "$tpid" 2>/dev/null
  wait "$rpid" "$tpid" 2>/dev/null
  local pps
  pps=$(grep -o 'Rx-pps: *[0-9]*' "$TMP/rx.log" | awk '$2 > 0 {print $2}' | tail -n +2 |
    sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR + 1) / 2)] / 1e6}')
  [ -n "$pps" ] && echo "testpmd_mpps $n $pps - -" >>"$RES"
}

echo "scale_cores: N = ${NS[*]}, $NCPU CPUs (server 0.., client $HALF..), $ROUNDS round(s)"
for r in $(seq 1 "$ROUNDS"); do
  for n in "${NS[@]}"; do
    api_case "$n" write 65536 "$ITERS_BIG" write64k "$r"
    api_case "$n" read 65536 "$ITERS_BIG" read64k "$r"
    api_case "$n" write 64 "$ITERS_SMALL" write64 "$r"
    api_case "$n" write 64 "$ITERS_SMALL" write64t "$r" --progress inline --threads "$n"
    engine_case "$n" 65536 "$ITERS_BIG" write64k "$r"
    engine_case "$n" 64 "$ITERS_SMALL" write64 "$r"
    engine_case "$n" 64 "$ITERS_SMALL" write64t "$r" --threads
    testpmd_case "$n"
  done
done

python3 - "$RES" "$JSON" "$PLOT" "$TMP" <<'EOF'
import json, statistics, sys, subprocess, shutil, os
res, out, plot, tmp = sys.argv[1:5]
rows = {}
for line in open(res):
    key, n, v, rto, tlp = line.split()
    r = rows.setdefault(key, {}).setdefault(int(n), {'v': [], 'rto': 0, 'tlp': 0})
    r['v'].append(float(v))
    if rto != '-':
        r['rto'] += int(rto)
        r['tlp'] += int(tlp)
units = {'api_write64k': 'MB/s', 'api_read64k': 'MB/s', 'api_write64': 'Mmsg/s',
         'api_write64t': 'Mmsg/s',
         'engine_write64k': 'MB/s', 'engine_write64': 'Mmsg/s', 'engine_write64t': 'Mmsg/s',
         'testpmd_mpps': 'Mpps'}
table = []
ns = sorted({n for k in rows for n in rows[k]})
print(f"{'figure':18} {'unit':7} " + " ".join(f"{'N=' + str(n):>10}" for n in ns) + "   x(N)/x(1) at max N   RTOs  TLPs")
for key in units:
    if key not in rows:
        continue
    med = {n: statistics.median(rows[key][n]['v']) for n in rows[key]}
    cells = " ".join(f"{med[n]:10.2f}" if n in med else f"{'-':>10}" for n in ns)
    top = max(med)
    ratio = med[top] / med[1] if 1 in med and med[1] else float('nan')
    rto = sum(rows[key][n]['rto'] for n in rows[key])
    tlp = sum(rows[key][n]['tlp'] for n in rows[key])
    print(f"{key:18} {units[key]:7} {cells}   {ratio:6.2f} (ideal {top})   {rto:5} {tlp:5}")
    for n in med:
        table.append({'figure': key, 'unit': units[key], 'engines': n, 'median': med[n],
                      'rounds': rows[key][n]['v'], 'per_core_of_one': med[n] / med[1] / n if 1 in med and med[1] else None,
                      'rto': rows[key][n]['rto'], 'tlp': rows[key][n]['tlp']})
json.dump({'table': table}, open(out, 'w'), indent=1)
print(f"JSON: {out}")
if shutil.which('gnuplot') and table:
    dat = os.path.join(tmp, 'plot.dat')
    keys = [k for k in units if k in rows]
    with open(dat, 'w') as f:
        for n in ns:
            f.write(f"{n} " + " ".join(
                str(statistics.median(rows[k][n]['v']) / statistics.median(rows[k][1]['v']))
                if n in rows[k] and 1 in rows[k] else 'NaN' for k in keys) + "\n")
    cmds = [f"set terminal pngcairo size 800,500; set output '{plot}';",
            "set xlabel 'engines (cores) per side'; set ylabel 'throughput / throughput at 1';",
            "set key left top; set grid;",
            "plot x title 'linear' dt 2, " + ", ".join(
                f"'{dat}' using 1:{i + 2} with linespoints title '{k}'" for i, k in enumerate(keys))]
    if subprocess.run(['gnuplot', '-e', " ".join(cmds)]).returncode == 0:
        print(f"plot: {plot}")
EOF
