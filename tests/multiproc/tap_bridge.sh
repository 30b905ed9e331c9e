# Sourced by the two-process test scripts: the namespace NS (created here;
# the caller's cleanup deletes it) with IPv6 off and a bridge br0, and a
# background job that bridges the two net_tap interfaces TAP_A and TAP_B once
# DPDK has made them.  Its pid is appended to the caller's PIDS.  Needs the
# caller's fail().
#   tap_bridge NS TAP_A TAP_B
tap_bridge() {
  local ns=$1 a=$2 b=$3
  ip netns add "$ns" || fail "cannot create namespace"
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
  ip netns exec "$ns" ip link add br0 type bridge
  ip netns exec "$ns" ip link set br0 up
  # The taps exist only once DPDK created them, and DPDK's port start may
  # still rewrite the kernel side's MAC: wait until both are UP (started),
  # then give them their own MACs and enslave them.
  (
    is_up() { ip netns exec "$ns" ip link show "$1" 2>/dev/null | grep -q "[<,]UP[,>]"; }
    for _ in $(seq 1 600); do
      if is_up "$a" && is_up "$b"; then
        i=0
        for t in "$a" "$b"; do
          # net_tap gives the kernel side the DPDK port's MAC; a bridge would
          # then keep frames for that MAC to itself. Give the kernel side its
          # own address before enslaving.
          i=$((i + 1))
          ip netns exec "$ns" ip link set "$t" address 02:77:00:00:00:0$i
          ip netns exec "$ns" ip link set "$t" master br0
          ip netns exec "$ns" ip link set "$t" up
        done
        exit 0
      fi
      sleep 0.05
    done
    exit 1
  ) &
  PIDS+=($!)
}
