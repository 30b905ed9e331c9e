# shellcheck shell=bash
# What the benchmarks that set another API beside dpdat-perf share (bench/verbs_compare.sh,
# bench/rdmacm_compare.sh): their common options, the tools and root checks, and one
# net_memif link, server on CPU 0, client on CPU 1, in a network namespace of its own (the
# other program's side channel goes to the server's address).  Sources net.sh and pair.sh.
#
#   compare_args NAME HELP_LINES ARGS...
#                 parses --build DIR (default build/ci), --iters N (default $ITERS_DEFAULT,
#                 else 5000), --progress
#                 MODE (default $PROGRESS_DEFAULT, else adaptive) into BUILD, ITERS, PROGRESS; -h/--help prints lines
#                 HELP_LINES (sed's N,M) of $0 and exits 0.  An option it does not know goes
#                 to the caller's compare_opt (when defined), which sets COMPARE_TAKEN to the
#                 arguments it took (0: not its own).  An unknown option, an option without
#                 its value or an --iters that is not a positive integer: one line
#                 "NAME: ..." on stderr, exit 2.
#   compare_rounds_args NAME HELP_LINES ARGS...
#                 compare_args with two more options: --bw-iters N (BW_ITERS, default
#                 $BW_ITERS_DEFAULT, else 5000) and --rounds R (ROUNDS, default
#                 $ROUNDS_DEFAULT, else 5), both positive integers (else one line, exit 2).
#   compare_setup NAME TMP_PREFIX NS_PREFIX
#                 PERF and RUN (dpdat-perf, dpdat-run) built, root; then TMP (removed on
#                 exit), the namespace (deleted on exit) with S_IP and C_IP on its loopback,
#                 MEMIF_S / MEMIF_C / SOCK of a net_memif pair, and S_RUN / C_RUN: the command
#                 prefixes of the server (CPU 0) and client (CPU 1), 120 s each.  Exit 1 with
#                 one line when a tool is missing or not root.
#   perf [--server-progress MODE] [--client-progress MODE] [-n N] TAG ARGS...
#                 dpdat-perf's server and client over that link with ARGS, the server with
#                 --progress MODE, the client with --progress MODE and -n N (defaults:
#                 PROGRESS, PROGRESS and ITERS); the client's JSON into $TMP/TAG.json, the
#                 logs into $TMP/TAG.{server,client}.log (the client waits for the server's
#                 out-of-band socket itself).  A failed pair is reported on stderr ("NAME:
#                 dpdat-perf TAG: why" and the client's log).

[ -n "${_DPDAT_LIB_COMPARE:-}" ] && return 0
_DPDAT_LIB_COMPARE=1

# shellcheck source=net.sh
. "$(dirname "${BASH_SOURCE[0]}")/net.sh"
# shellcheck source=pair.sh
. "$(dirname "${BASH_SOURCE[0]}")/pair.sh"

COMPARE_NAME=
COMPARE_TAKEN=0

compare_args() {
  COMPARE_NAME=$1
  local help=$2
  shift 2
  BUILD=$ROOT/build/ci
  ITERS=${ITERS_DEFAULT:-5000}
  PROGRESS=${PROGRESS_DEFAULT:-adaptive}
  while [ $# -gt 0 ]; do
    case "$1" in
      --build | --iters | --progress)
        [ $# -ge 2 ] || { echo "$COMPARE_NAME: $1 needs a value" >&2; exit 2; } ;;
    esac
    case "$1" in
      --build) BUILD=$2; shift 2 ;;
      --iters) ITERS=$2; shift 2 ;;
      --progress) PROGRESS=$2; shift 2 ;;
      -h | --help) sed -n "${help}p" "$0"; exit 0 ;;
      *)
        COMPARE_TAKEN=0
        if declare -F compare_opt >/dev/null; then compare_opt "$@"; fi
        [ "$COMPARE_TAKEN" -gt 0 ] || { echo "$COMPARE_NAME: unknown option $1" >&2; exit 2; }
        [ $# -ge "$COMPARE_TAKEN" ] || { echo "$COMPARE_NAME: $1 needs a value" >&2; exit 2; }
        shift "$COMPARE_TAKEN"
        ;;
    esac
  done
  [[ "$ITERS" =~ ^[1-9][0-9]*$ ]] || { echo "$COMPARE_NAME: --iters: a positive integer" >&2; exit 2; }
}

compare_rounds_args() {
  BW_ITERS=${BW_ITERS_DEFAULT:-5000}
  ROUNDS=${ROUNDS_DEFAULT:-5}
  compare_opt() {
    case "$1" in
      --bw-iters) BW_ITERS=${2-}; COMPARE_TAKEN=2 ;;
      --rounds) ROUNDS=${2-}; COMPARE_TAKEN=2 ;;
    esac
  }
  compare_args "$@"
  local v
  for v in BW_ITERS ROUNDS; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || {
      echo "$COMPARE_NAME: --$(tr 'A-Z_' 'a-z-' <<<"$v"): a positive integer" >&2
      exit 2
    }
  done
}

compare_setup() {
  local tmp_prefix=$2 ns_prefix=$3 f
  PERF=$BUILD/tools/dpdat-perf
  RUN=$BUILD/bin/dpdat-run
  for f in "$PERF" "$RUN"; do
    [ -x "$f" ] || { echo "$COMPARE_NAME: $f not built" >&2; exit 1; }
  done
  [ "$(id -u)" -eq 0 ] || { echo "$COMPARE_NAME: needs root (network namespace)" >&2; exit 1; }
  lib_tmpdir TMP "$tmp_prefix"
  NS=$ns_prefix-$$
  S_IP=10.79.0.1
  C_IP=10.79.0.2
  memif_pair "$TMP"
  SOCK=$MEMIF_SOCK
  netns_add "$NS"
  ip netns exec "$NS" ip addr add $S_IP/32 dev lo
  ip netns exec "$NS" ip addr add $C_IP/32 dev lo
  S_RUN=(ip netns exec "$NS" taskset -c 0 timeout 120)
  C_RUN=(ip netns exec "$NS" taskset -c 1 timeout 120)
}

perf() {
  local s_progress=$PROGRESS c_progress=$PROGRESS n=$ITERS tag
  while [ $# -gt 0 ]; do
    case "$1" in
      --server-progress) s_progress=$2; shift 2 ;;
      --client-progress) c_progress=$2; shift 2 ;;
      -n) n=$2; shift 2 ;;
      *) break ;;
    esac
  done
  tag=$1
  shift
  rm -f "$SOCK" "$TMP/oob.sock" # a previous server's
  pair_run --out "$TMP/$tag." \
    "${S_RUN[@]}" "$PERF" --server --vdev "$MEMIF_S" --ip "$S_IP" --oob "$TMP/oob.sock" \
    --progress "$s_progress" "$@" :: \
    "${C_RUN[@]}" "$PERF" --client "$S_IP" --vdev "$MEMIF_C" --ip "$C_IP" --oob "$TMP/oob.sock" \
    --progress "$c_progress" --json "$TMP/$tag.json" -n "$n" "$@" ||
    { echo "$COMPARE_NAME: dpdat-perf $tag: $PAIR_WHY" >&2; cat "$PAIR_CLIENT_LOG" >&2; }
}
