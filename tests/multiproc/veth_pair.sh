# Sourced by the two-process test scripts: one veth pair PREFIX-a / PREFIX-b,
# one end in each of the namespaces $NSA and $NSB (created here; the caller's
# cleanup deletes them), IPv6 off, links up.  Needs the caller's fail().
#   veth_pair PREFIX
veth_pair() {
  local pfx=$1
  ip netns add "$NSA" && ip netns add "$NSB" || fail "cannot create namespaces"
  ip link add "$pfx-a" type veth peer name "$pfx-b" || fail "cannot create veth"
  ip link set "$pfx-a" netns "$NSA"
  ip link set "$pfx-b" netns "$NSB"
  for n in "$NSA" "$NSB"; do
    ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip netns exec "$n" ip link set lo up
  done
  ip netns exec "$NSA" ip link set "$pfx-a" up
  ip netns exec "$NSB" ip link set "$pfx-b" up
}
