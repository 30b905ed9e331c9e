# shellcheck shell=bash
# Links for two-process tests and benchmarks; sources common.sh. Everything made here is
# removed on exit (through common.sh's trap), also when the script fails half-way.
#
#   memif_pair DIR           sets MEMIF_SOCK=DIR/memif.sock, MEMIF_S and MEMIF_C: the server
#                            and client --vdev strings of a net_memif pair
#   wait_memif_socket [PATH] [SECONDS]
#                            wait (default 10 s) for a memif server's socket (default
#                            $MEMIF_SOCK); 1 when it never appeared
#   netns_add NAME...        create network namespaces (loopback up, IPv6 off); deleted on exit
#   veth_pair A B [NS_A NS_B]
#                            a veth pair A-B, links up; with namespaces each end moves into
#                            its own; the pair is deleted on exit
#   bridge_add NAME [NS]     a bridge, up; deleted on exit
#   in_ns NS COMMAND...      run COMMAND in namespace NS (or here when NS is empty)
#   tap_bridge NS TAP_A TAP_B  a namespace with a bridge that enslaves two net_tap interfaces

# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

memif_pair() {
  MEMIF_SOCK=$1/memif.sock
  MEMIF_S="net_memif0,role=server,socket=$MEMIF_SOCK,socket-abstract=no"
  MEMIF_C="net_memif0,role=client,socket=$MEMIF_SOCK,socket-abstract=no"
}

wait_memif_socket() {
  local sock=${1:-$MEMIF_SOCK} secs=${2:-10}
  wait_for "[ -S '$sock' ]" "$secs"
}

in_ns() {
  local ns=$1
  shift
  if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

netns_add() {
  local ns
  for ns in "$@"; do
    ip netns add "$ns" || fail "cannot create network namespace $ns"
    lib_on_exit "ip netns del '$ns' 2>/dev/null"
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
    ip netns exec "$ns" ip link set lo up
  done
}

veth_pair() {
  local a=$1 b=$2 nsa=${3:-} nsb=${4:-}
  ip link add "$a" type veth peer name "$b" || fail "cannot create veth pair $a/$b"
  # Deleting one end deletes both; in a namespace it goes with the namespace.
  lib_on_exit "ip link del '$a' 2>/dev/null"
  [ -z "$nsa" ] || ip link set "$a" netns "$nsa" || fail "cannot move $a to $nsa"
  [ -z "$nsb" ] || ip link set "$b" netns "$nsb" || fail "cannot move $b to $nsb"
  in_ns "$nsa" ip link set "$a" up
  in_ns "$nsb" ip link set "$b" up
}

bridge_add() {
  local br=$1 ns=${2:-}
  in_ns "$ns" ip link add "$br" type bridge || fail "cannot create bridge $br"
  [ -n "$ns" ] || lib_on_exit "ip link del '$br' 2>/dev/null"
  in_ns "$ns" ip link set "$br" up
}

# tap_bridge NS TAP_A TAP_B: the namespace NS (created here) with a bridge br0, and a
# background job (tracked) that enslaves the net_tap interfaces TAP_A and TAP_B once DPDK
# has made them. The taps exist only once DPDK created them, and DPDK's port start may still
# rewrite the kernel side's MAC: the job waits (30 s at most) until both are UP, gives the
# kernel sides MACs of their own (net_tap gives them the DPDK port's, and a bridge would then
# keep frames for that MAC to itself) and enslaves them.
tap_bridge() {
  local ns=$1 a=$2 b=$3
  netns_add "$ns"
  bridge_add br0 "$ns"
  (
    is_up() { ip netns exec "$ns" ip link show "$1" 2>/dev/null | grep -q "[<,]UP[,>]"; }
    wait_for "is_up '$a' && is_up '$b'" 30 || exit 1
    i=0
    for t in "$a" "$b"; do
      i=$((i + 1))
      ip netns exec "$ns" ip link set "$t" address 02:77:00:00:00:0$i
      ip netns exec "$ns" ip link set "$t" master br0
      ip netns exec "$ns" ip link set "$t" up
    done
  ) &
  lib_track $!
}
