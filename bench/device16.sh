#!/usr/bin/env bash
# The many-core figures in one run on a lent machine with many CPUs and no
# DPDK installed (../shared/device/README.md): carry a bundle made by
#   bash ../shared/device/bundle.sh build/release .devbundle
#   cp build/release/bench/handle_bench .devbundle/bin/   (and its libraries)
#   (STEPS prof: perf and its libraries in .devbundle/perf/ and perf/lib/:
#    cp /usr/bin/perf .devbundle/perf/; and every library ldd names but the
#    C and C++ runtimes, into .devbundle/perf/lib/)
# and run this from the repository root there.  Writes everything under
# $OUT (one tarball, results.tgz):
#   machine.txt   CPUs, kernel, hugepages
#   pairs.txt     each dpdat-perf pair's outcome; NAME.server.log,
#                 NAME.client.log and NAME.json (the client's) per pair:
#   lat-*         dpdat-perf --lat across processes, each progress mode on
#                 the passive side (the busy-mode latency failure)
#   tm-*          the timer floors and the delay window (STEPS timers)
#   mr-*          64 B with one posting thread per engine (STEPS msgrate)
#   scale.txt     bench/scale_cores.sh's table (scale.json, its JSON), with
#                 every run's logs and JSON kept under scale-tmp/
#   handle.txt    bench/handle_bench up to 16 threads
#   ot-*          STEPS onethread: one engine thread against inline progress
#   prof-*        STEPS prof: system-wide profiles (perf record -a, 2 s)
#                 in the middle of long 64 B WRITE runs with PROF_N engines
#                 per side and a client thread per engine: the engine level
#                 (dpdat-engine-perf --threads) and the API (dpdat-perf
#                 --threads N --progress inline); NAME.top.txt, the hottest
#                 symbols by process (pid), thread name and library
#   ab-*          STEPS ab: a baseline build against this one, case by case
#                 and round by round (BASE=DIR holding the baseline's
#                 bin/dpdat-perf and lib/libdat.so.1); ab.txt, the table.
#                 AB_NS: engines for one posting thread; AB_THREAD_NS: for
#                 a posting thread per engine; AB_MORE=0 leaves out 64 KiB
#                 and latency
# Steps are bounded by timeouts so a hang costs one step, not the run.
set -u
HERE=$(pwd)
B=$HERE/.devbundle
R=${OUT:-/tmp/device16}/r
mkdir -p "$R"
export LD_LIBRARY_PATH=$B/lib
P=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
# Only where DPDK is not installed: beside an installed one the plug-ins
# would register twice (the EAL panics).
[ -e "$P/librte_net_memif.so.23" ] || { mkdir -p "$P" && ln -sf "$B"/pmds/* "$P"/; }
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
echo 4096 >/proc/sys/vm/nr_hugepages
FB=/tmp/devbuild
mkdir -p "$FB/tools" "$FB/bench"
ln -sf "$B/bin/dpdat-perf" "$FB/tools/dpdat-perf"
ln -sf "$B/bin/dpdat-engine-perf" "$FB/bench/dpdat-engine-perf"
{
  nproc
  uname -a
  lscpu | head -20
  grep -i huge /proc/meminfo
  command -v python3 gnuplot
} >"$R/machine.txt" 2>&1
finish() {
  tar -C "$R/.." -czf "${OUT:-/tmp/device16}/results.tgz" r
}
. "$HERE/scripts/lib/pair.sh"
. "$HERE/scripts/lib/net.sh"
lib_on_exit finish
lib_tmpdir W dpdat-device16

# perf_pair NAME SERVER_CPUS CLIENT_CPUS SERVER_ARGS... :: CLIENT_ARGS...
#   a dpdat-perf server and client over a net_memif pair of their own, each
#   process on the CPUs named ("": anywhere); logs and the client's JSON
#   under $R as NAME.*; the outcome appended to $R/pairs.txt.
perf_pair() {
  local name=$1 scpus=$2 ccpus=$3 sargs=() sw=() cw=()
  shift 3
  while [ $# -gt 0 ] && [ "$1" != "::" ]; do sargs+=("$1"); shift; done
  shift
  [ -n "$scpus" ] && sw=(taskset -c "$scpus")
  [ -n "$ccpus" ] && cw=(taskset -c "$ccpus")
  mkdir -p "$W/$name"
  memif_pair "$W/$name"
  # PB: the build whose dpdat-perf and libdat run (STEPS ab), else this one.
  local pb=${PB:-$B}
  # The server opens its interface once the client reached it out of band
  # (the client retries until then): a second's start, no socket to wait for.
  pair_run --out "$R/$name." --settle 1 --wait 60 \
    "${sw[@]}" env LD_LIBRARY_PATH="$pb/lib:$B/lib" timeout 60 "$pb/bin/dpdat-perf" --server \
    --ip 10.80.0.1 --vdev "$MEMIF_S" --oob "$W/$name/oob.sock" "${sargs[@]}" :: \
    "${cw[@]}" env LD_LIBRARY_PATH="$pb/lib:$B/lib" timeout 60 "$pb/bin/dpdat-perf" \
    --client 10.80.0.1 --ip 10.80.0.2 --vdev "$MEMIF_C" \
    --oob "$W/$name/oob.sock" --json "$R/$name.json" "$@"
  echo "$name: ${PAIR_WHY:-ok} (client $PAIR_CLIENT_RC, server $PAIR_SERVER_RC)" >>"$R/pairs.txt"
}

STEPS=${STEPS:-lat scale handle}
step() { [[ " $STEPS " == *" $1 "* ]]; }

# 1. Latency across processes, 8 B WRITE/READ/SEND, server progress mode
#    varied, client adaptive; server on CPUs 0-1, client on 8-9.
lat() { # name server-progress client-progress op
  local n=${LAT_ITERS:-20000}
  perf_pair "lat-$1" "${S_CPUS:-0-1}" "${C_CPUS:-8-9}" \
    --lat -s 8 -n "$n" --op "$4" --progress "$2" --cpus "${S_PROG:-1}" :: \
    --lat -s 8 -n "$n" --op "$4" --progress "$3" --cpus "${C_PROG:-9}"
}
if step lat; then
  lat busy-write busy adaptive write
  lat adaptive-write adaptive adaptive write
  lat inline-write inline inline write
  lat busybusy-write busy busy write
  lat busy-read busy adaptive read
  lat busy-send busy adaptive send
fi

# 1b. The recovery timers' floors on a lossless link: 64 KiB WRITE through
#     the API, N engines per side, default floors, raised ones
#     (TIMER_PARAMS) and without the delay window (cc=dcqcn), interleaved;
#     RTOs, tail probes and window cuts from the JSON.
timers() { # tag n params
  local n=$2 common=(--bw -s 65536 -n "${TM_ITERS:-30000}" -q "$2" --engines "$2" --progress busy)
  [ -n "$3" ] && common+=(--ia-params "$3")
  perf_pair "tm-$1-$n" "" "" --cpus "0-$((n - 1))" "${common[@]}" :: \
    --cpus "8-$((8 + n - 1))" "${common[@]}"
}
if step timers; then
  for n in ${TIMER_NS:-1 7}; do
    for v in ${TIMER_VARIANTS:-default: raised:rto_min_us=1000;tlp_min_us=200 nodelay:cc=dcqcn}; do
      timers "${v%%:*}" "$n" "${v#*:}"
    done
  done
fi

# 1c. 64 B WRITE message rate through the API with one posting thread per
#     engine (dpdat-perf --threads N, the active side's engines driven by
#     those threads, --progress inline, pinned; the passive side busy).
msgrate() { # n
  local n=$1 common=(--bw -s 64 -n "${MR_ITERS:-1000000}" -q "$1" --engines "$1")
  perf_pair "mr-$n" "" "" --progress busy --cpus "0-$((n - 1))" "${common[@]}" :: \
    --progress inline --threads "$n" --cpus "8-$((8 + n - 1))" "${common[@]}"
}
if step msgrate; then
  for n in 1 2 4 7; do msgrate "$n"; done
fi

# 1d. A/B: the baseline build (BASE) and this one, each case run by both in
#     turn, AB_ROUNDS rounds: 64 B WRITE with one posting thread and N busy
#     engines per side (scale_cores.sh's api_write64), 64 B WRITE with
#     four posting threads (msgrate's), 64 KiB WRITE at 4, and 8 B latency
#     with a busy server.  ab.txt: one line per run.
# table_line JSON LABEL FILE: the run's line (bench/ab_line.py) appended to
# FILE, or "LABEL FAIL" when it left no result.
table_line() {
  python3 "$HERE/bench/ab_line.py" "$1" "$2" >>"$3" 2>/dev/null || echo "$2 FAIL" >>"$3"
}
ab_case() { # name server-cpus client-cpus server-args... :: client-args...
  local name=$1 sc=$2 cc=$3
  shift 3
  for ab in base new; do
    local pb=$B
    [ $ab = base ] && pb=$BASE
    PB=$pb perf_pair "ab-$name-$ab-$ABR" "$sc" "$cc" "$@"
    table_line "$R/ab-$name-$ab-$ABR.json" "$name $ab $ABR" "$R/ab.txt"
  done
}
if step ab; then
  [ -x "${BASE:-}/bin/dpdat-perf" ] || echo "ab: BASE=${BASE:-} holds no bin/dpdat-perf" >>"$R/ab.txt"
  for ABR in $(seq 1 "${AB_ROUNDS:-2}"); do
    for n in ${AB_NS:-1 2 4 7}; do
      c=(--bw -s 64 -n "${AB_ITERS:-600000}" --op write -q "$n" --engines "$n" --progress busy)
      ab_case "mr1-$n" "" "" --cpus "0-$((n - 1))" "${c[@]}" :: --cpus "8-$((8 + n - 1))" "${c[@]}"
    done
    for n in ${AB_THREAD_NS:-4}; do
      c=(--bw -s 64 -n "${AB_ITERS:-600000}" --op write -q "$n" --engines "$n")
      ab_case "mrt-$n" "" "" --progress busy --cpus "0-$((n - 1))" "${c[@]}" :: \
        --progress inline --threads "$n" --cpus "8-$((8 + n - 1))" "${c[@]}"
    done
    [ "${AB_MORE:-1}" = 1 ] || continue
    c=(--bw -s 65536 -n 30000 --op write -q 4 --engines 4 --progress busy)
    ab_case "bw64k-4" "" "" --cpus 0-3 "${c[@]}" :: --cpus 8-11 "${c[@]}"
    for sp in busy:adaptive busy:busy; do
      c=(--lat -s 8 -n "${LAT_ITERS:-20000}" --op write)
      ab_case "lat-${sp%%:*}-${sp#*:}" 0-1 8-9 "${c[@]}" --progress "${sp%%:*}" --cpus 1 :: \
        "${c[@]}" --progress "${sp#*:}" --cpus 9
    done
  done
fi

# 1e. One engine on a thread of its own against inline progress on the
#     posting side (the goal: at least 95 % of the inline figure): 64 B and
#     64 KiB WRITE, one EP, the passive side busy on CPU 1; the active side
#     on CPUs 8-9, inline, or busy with its engine on CPU 9; OT_ROUNDS
#     interleaved rounds.  ot.txt: one line per run.
if step onethread; then
  for r in $(seq 1 "${OT_ROUNDS:-2}"); do
    for sz in ${OT_CASES:-64:1000000 65536:30000}; do
      for mode in inline busy; do
        name="ot-${sz%%:*}-$mode-$r"
        c=(--bw -s "${sz%%:*}" -n "${sz#*:}" --op write -q 1 --engines 1)
        perf_pair "$name" "${S_CPUS:-0-1}" "${C_CPUS:-8-9}" "${c[@]}" --progress busy \
          --cpus "${S_PROG:-1}" :: "${c[@]}" --progress "$mode" --cpus "${C_PROG:-9}"
        table_line "$R/$name.json" "${sz%%:*} $mode $r" "$R/ot.txt"
      done
    done
  done
fi

# 2. Scaling with cores.
step scale && MAX_N=${MAX_N:-7} ROUNDS=${ROUNDS:-1} ITERS_BIG=${ITERS_BIG:-30000} ITERS_SMALL=${ITERS_SMALL:-600000} TESTPMD=${TESTPMD:-$B/bin/dpdk-testpmd} JSON=$R/scale.json \
  PLOT=$R/scale.png LIB_KEEP_TMP=1 timeout "${SCALE_SECS:-420}" \
  bash bench/scale_cores.sh "$FB" >"$R/scale.txt" 2>&1
echo "scale_cores rc=$?" >>"$R/scale.txt"
mkdir -p "$R/scale-tmp"
for d in /tmp/dpdat-scale-cores.*; do
  [ -d "$d" ] && find "$d" -maxdepth 1 \( -name '*.json' -o -name '*.log' -o -name results.txt \) \
    -exec cp {} "$R/scale-tmp/" \;
done

# 2b. Where the time goes at PROF_N engines per side (STEPS prof).
prof_pair() { # name server-args... :: client-args...
  local name=$1 sargs=() pdir=$W/prof-$1
  shift
  while [ "$1" != "::" ]; do sargs+=("$1"); shift; done
  shift
  mkdir -p "$pdir"
  memif_pair "$pdir"
  local perf=(env LD_LIBRARY_PATH="$B/perf/lib" "$B/perf/perf")
  timeout 60 "${sargs[@]}" --vdev "$MEMIF_S" --oob "$pdir/oob.sock" >"$R/prof-$name.s.log" 2>&1 &
  local spid=$!
  sleep 1.5
  timeout 60 "$@" --vdev "$MEMIF_C" --oob "$pdir/oob.sock" >"$R/prof-$name.c.log" 2>&1 &
  local cpid=$!
  sleep "${PROF_DELAY:-2.5}"
  "${perf[@]}" record -a -g -F 999 -o "$pdir/perf.data" -- sleep 2 >/dev/null 2>&1
  wait "$cpid"
  echo "prof-$name: client $?" >>"$R/pairs.txt"
  wait "$spid"
  "${perf[@]}" report -i "$pdir/perf.data" --no-children --sort pid,comm,dso,sym --stdio -g none \
    2>/dev/null | grep -v '^#' | grep -v '^$' | head -120 >"$R/prof-$name.top.txt"
}
if step prof && [ -x "$B/perf/perf" ]; then
  n=${PROF_N:-7} c0=${PROF_C0:-8}  # server CPUs from 0, client CPUs from c0
  e=(--bw --size 64 --iters "${PROF_ITERS_E:-60000000}" --engines "$n" --qps "$n")
  prof_pair engine taskset -c "0-$((n > 1 ? n : 0))" "$B/bin/dpdat-engine-perf" --server --ip 10.79.0.1 "${e[@]}" :: \
    taskset -c "$c0-$((c0 + n - 1))" "$B/bin/dpdat-engine-perf" --client 10.79.0.1 --ip 10.79.0.2 \
    "${e[@]}" --threads
  a=(--bw -s 64 -n "${PROF_ITERS_A:-6000000}" -q "$n" --engines "$n")
  prof_pair api "$B/bin/dpdat-perf" --server --ip 10.79.0.1 "${a[@]}" --cpus "0-$((n - 1))" \
    --progress busy :: "$B/bin/dpdat-perf" --client 10.79.0.1 --ip 10.79.0.2 "${a[@]}" \
    --cpus "$c0-$((c0 + n - 1))" --progress inline --threads "$n"
fi

# 3. The handle check with many threads.
step handle && [ -x "$B/bin/handle_bench" ] &&
  timeout 60 "$B/bin/handle_bench" --benchmark_min_time=0.2 >"$R/handle.txt" 2>&1
exit 0
