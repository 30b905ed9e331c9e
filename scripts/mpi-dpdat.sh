#!/usr/bin/env bash
# Runs an Open MPI job on dpdat through libfabric (mtl ofi over the dpdat
# provider's own FI_EP_RDM endpoint, or over "dpdat;ofi_rxm"), on a topology
# this script builds on one machine and removes afterwards:
#
#   mpi-dpdat.sh [--ranks N] [--link memif|af_packet] [--provider-dir DIR]
#                [--pmtu N] [--rdm native|rxm] [--stats] -- PROGRAM [ARGS...]
#
#   memif      2 ranks, a net_memif pair (rank 0 the server end), PMTU
#              4096 by default (memif packet buffers of 4352 bytes, bsize=,
#              so that a 4170-byte frame fits one buffer; MTU 9000)
#   af_packet  N ranks, N veth pairs on a Linux bridge inside a network
#              namespace the script creates; rank k runs net_af_packet on
#              its own veth end (10.80.0.k+1); mpirun runs in that namespace
#
# Each rank finds its interface as fi<local rank> in a dpdat configuration
# file written here (DPDAT_CONF; the provider's DPDAT_FI_IA defaults to
# fi%r).  Open MPI gets no TCP or shared-memory path: pml cm with mtl ofi,
# btl self only, one-sided through osc pt2pt (the PML).  --stats makes each
# rank print its interface's frame counters at the end (DPDAT_FI_STATS).
# A rank that finds nothing to do yields its CPU (mpi_yield_when_idle) only
# when there are more ranks than CPUs: a sched_yield per idle poll costs a
# ping-pong about 0.3 us, but busy ranks sharing a CPU starve each other.
# FI_OFI_RXM_* and FI_LOG_* variables of the caller's environment reach the
# ranks (ofi_rxm's protocol limits, libfabric's log).
# --pmtu N: the RoCE path MTU (256..4096; memif only, where the default is
# 4096; af_packet keeps what its 2048-byte ring frames allow, 1024).
# --rdm: native (default) runs on the provider's reliable-datagram endpoint
# ("dpdat"); rxm on ofi_rxm over its connected endpoints ("dpdat;ofi_rxm").
# Exit status: the job's; 2 for bad arguments.
set -uo pipefail

RANKS=2
LINK=memif
PROVDIR=""
STATS=0
PMTU=""
RDM=native
usage() {
  echo "usage: mpi-dpdat.sh [--ranks N] [--link memif|af_packet] [--provider-dir DIR] [--pmtu N] [--rdm native|rxm] [--stats] -- PROGRAM [ARGS...]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=${2:-}; shift 2 || usage ;;
    --link) LINK=${2:-}; shift 2 || usage ;;
    --provider-dir) PROVDIR=${2:-}; shift 2 || usage ;;
    --pmtu) PMTU=${2:-}; shift 2 || usage ;;
    --rdm) RDM=${2:-}; shift 2 || usage ;;
    --stats) STATS=1; shift ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[ $# -ge 1 ] || usage
[[ "$RANKS" =~ ^[0-9]+$ ]] && [ "$RANKS" -ge 1 ] && [ "$RANKS" -le 16 ] || {
  echo "mpi-dpdat.sh: --ranks must be 1..16" >&2; exit 2; }
case "$LINK" in
  memif) [ "$RANKS" -eq 2 ] || { echo "mpi-dpdat.sh: memif takes exactly 2 ranks" >&2; exit 2; } ;;
  af_packet) ;;
  *) echo "mpi-dpdat.sh: --link memif|af_packet" >&2; exit 2 ;;
esac
# Open MPI takes the first provider whose name begins with its include
# list's, and libfabric lists ofi_rxm's entries over dpdat first: the
# native run keeps ofi_rxm out (FI_PROVIDER), the rxm run names it.
case "$RDM" in
  native) FIPROV=dpdat FILTER="^ofi_rxm" ;;
  rxm) FIPROV="dpdat;ofi_rxm" FILTER=dpdat ;;
  *) echo "mpi-dpdat.sh: --rdm native|rxm" >&2; exit 2 ;;
esac
case "$PMTU" in
  "") [ "$LINK" = memif ] && PMTU=4096 ;;
  256 | 512 | 1024 | 2048 | 4096)
    [ "$LINK" = memif ] || { echo "mpi-dpdat.sh: --pmtu is for --link memif" >&2; exit 2; } ;;
  *) echo "mpi-dpdat.sh: --pmtu 256|512|1024|2048|4096" >&2; exit 2 ;;
esac
if [ -z "$PROVDIR" ]; then
  here=$(dirname "$(readlink -f "$0")")
  for d in "$here/../build/release/dat_core/ofi" "$here/../build/ci/dat_core/ofi"; do
    [ -f "$d/libdpdat-fi.so" ] && { PROVDIR=$(readlink -f "$d"); break; }
  done
fi
[ -n "$PROVDIR" ] && [ -f "$PROVDIR/libdpdat-fi.so" ] || {
  echo "mpi-dpdat.sh: no libdpdat-fi.so (build it, or give --provider-dir)" >&2; exit 2; }

ID=$$
. "$(dirname "$(readlink -f "$0")")/lib/net.sh"
# Sanitizer builds: their ASan runtime first in the uninstrumented programs.
lib_asan_preload "$PROVDIR/libdpdat-fi.so"
lib_tmpdir TMP dpdat-mpi
NS=dpdat-mpi-$ID
BR=dmbr$ID

CONF=$TMP/dpdat.conf
RUN=()
if [ "$LINK" = memif ]; then
  M="net_memif0,socket=$TMP/m.sock,socket-abstract=no"
  # memif copies a frame into one packet buffer when it fits (frames
  # chained over several buffers are not safe in DPDK 22.11's memif): the
  # buffers hold the PMTU and 256 bytes of headers, and dpdat takes the
  # MTU asked for up to a buffer.
  X=""
  [ "$PMTU" -gt 1024 ] && { M="$M,bsize=$((PMTU + 256))"; X=";mtu=9000"; }
  X="$X;pmtu=$PMTU"
  echo "fi0 vdev=$M,role=server;ip=10.80.0.1$X" >"$CONF"
  echo "fi1 vdev=$M,role=client;ip=10.80.0.2$X" >>"$CONF"
else
  netns_add "$NS"
  bridge_add "$BR" "$NS"
  : >"$CONF"
  for k in $(seq 0 $((RANKS - 1))); do
    # DPDK's net_af_packet names its PACKET_FANOUT group (pid ^ ifindex) &
    # 0xffff: ifindexes 4096 apart keep the ranks' groups distinct.
    ip netns exec "$NS" ip link add "r$k" index $((4096 * (k + 1))) type veth peer name "r$k-br"
    ip netns exec "$NS" ip link set "r$k-br" master "$BR"
    ip netns exec "$NS" ip link set "r$k-br" up
    ip netns exec "$NS" ip link set "r$k" up
    echo "fi$k vdev=net_af_packet$k,iface=r$k,blocksz=4096,framesz=2048,framecnt=512,qpairs=1;ip=10.80.0.$((k + 1))" >>"$CONF"
  done
  RUN=(ip netns exec "$NS")
fi

YIELD=0
[ "$RANKS" -gt "$(nproc)" ] && YIELD=1
ENVS=(-x FI_PROVIDER_PATH="$PROVDIR" -x FI_PROVIDER="$FILTER" -x DPDAT_CONF="$CONF")
[ "$STATS" -eq 1 ] && ENVS+=(-x DPDAT_FI_STATS=1)
[ -n "${DPDAT_EAL_ARGS:-}" ] && ENVS+=(-x DPDAT_EAL_ARGS)
# ofi_rxm's settings, the native endpoint's eager limit (DPDAT_FI_EAGER)
# and libfabric's logging, when the caller sets them.
for v in $(compgen -e | grep -E '^(FI_OFI_RXM_|FI_LOG_|DPDAT_FI_EAGER$)'); do ENVS+=(-x "$v"); done
[ -n "${LIB_ASAN_RT:-}" ] && ENVS+=(-x LD_PRELOAD -x ASAN_OPTIONS)
"${RUN[@]}" mpirun --allow-run-as-root --oversubscribe -np "$RANKS" "${ENVS[@]}" \
  --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$FIPROV" \
  --mca btl self --mca osc pt2pt --mca mpi_yield_when_idle "$YIELD" "$@"
