#!/usr/bin/env bash
# The hostile-peer test: a victim dpdat process (victim --serve) serving an
# honest peer (victim --honest: verified RDMA WRITE / READ in a loop) while
# dpdat-hostile attacks it with raw RoCEv2 frames, all three over
# net_af_packet on veth links to one bridge, each in its own namespace.
#   hostile.sh PATH/TO/dpdat-hostile-victim PATH/TO/dpdat-hostile
# The honest peer disconnects and connects again every 40 transfers, so its
# connects run beside the attacks (rkey-flood: key guesses from one address
# until the victim refuses that address's connects).
# Passes when the honest peer's transfers all verified, the victim did not
# crash, the canaries around every region it granted are intact, and the
# victim's engine counters (read from its DPDK telemetry) show each attack
# counted by reason.  Creates its namespaces, bridge and veths (only
# 10.79.0.0/24 inside namespaces it made) and removes them on every exit.
set -uo pipefail
. "$(dirname "$(readlink -f "$0")")/../../scripts/lib/net.sh"
VICTIM=$(readlink -f "$1")
HOSTILE=$(readlink -f "$2")
HERE=$(dirname "$(readlink -f "$0")")
ID=$$
NSBR=dpdat-hb-$ID
NSV=dpdat-hv-$ID
NSH=dpdat-hh-$ID
NSA=dpdat-ha-$ID
VIP=10.79.0.1
HIP=10.79.0.2
AIP=10.79.0.3

[ "$(id -u)" -eq 0 ] || { echo "hostile.sh: needs root (namespaces)"; exit 77; }
lib_tmpdir TMP dpdat-hostile
show_logs() {
  for f in victim honest hostile; do
    echo "--- $f log"
    grep -v "mp action callback" "$TMP/$f.log" 2>/dev/null | tail -40
  done
}
lib_on_fail show_logs

# One bridge in its own namespace; one veth per party, its bridge end there.
netns_add "$NSBR" "$NSV" "$NSH" "$NSA"
bridge_add br0 "$NSBR"
for p in v h a; do
  case $p in v) ns=$NSV ;; h) ns=$NSH ;; a) ns=$NSA ;; esac
  veth_pair "hp$ID$p" "hb$ID$p" "$ns" "$NSBR"
  ip netns exec "$NSBR" ip link set "hb$ID$p" master br0
done

AF="blocksz=4096,framesz=2048,framecnt=512,qpairs=1"
# The victim refuses an address's connection requests for the rest of a
# second once 16 remote keys were refused to it in that second (rkey-guess
# makes 16 guesses: its last REQ comes with 15 counted).
DPDAT_IA_VICTIM="vdev=net_af_packet0,iface=hp${ID}v,$AF;ip=$VIP;max_key_refusals_per_peer=16" \
  ip netns exec "$NSV" timeout 90 "$VICTIM" --serve victim --seconds 80 --stop "$TMP/stop-victim" \
  --max-conns 8 >"$TMP/victim.log" 2>&1 &
vpid=$!
lib_track $vpid
wait_for "grep -q listening '$TMP/victim.log' 2>/dev/null || ! kill -0 $vpid 2>/dev/null" 20
grep -q "listening" "$TMP/victim.log" || fail "victim exited or never listened"
VPID=$(sed -n 's/.*listening.*pid \([0-9]*\).*/\1/p' "$TMP/victim.log")

DPDAT_IA_HONEST="vdev=net_af_packet0,iface=hp${ID}h,$AF;ip=$HIP" \
  ip netns exec "$NSH" timeout 90 "$VICTIM" --honest honest --server $VIP --seconds 80 \
  --stop "$TMP/stop-honest" --reconnect-every 40 >"$TMP/honest.log" 2>&1 &
hpid=$!
lib_track $hpid
wait_for "grep -q connected '$TMP/honest.log' 2>/dev/null || ! kill -0 $hpid 2>/dev/null" 20
grep -q "connected" "$TMP/honest.log" || fail "honest peer exited or never connected"

# Each attack on its own, the victim's counters read before and after it.
ATTACKS="spoofed-source unknown-qpn psn-out-of-window length-mismatch huge-read misaligned-atomic
         rkey-guess rkey-flood forged-dreq cm-flood"
snap() {
  sleep 0.2  # the victim's CM handles what arrived last
  python3 "$HERE/telemetry.py" "$VPID" "$TMP/counters-$1.json" ||
    fail "cannot read the victim's counters from its telemetry"
}
start=$(date +%s%N)
snap start
for a in $ATTACKS; do
  # The attacks that have keys refused start in a second of their own, and
  # so does the one after them: the victim refuses an address's connections
  # for the rest of the second in which it refused that address its cap of
  # keys (rkey-flood reaches it), and a fast host starts the next attack
  # within that second.
  case $a in rkey-guess | rkey-flood | forged-dreq) sleep 1.5 ;; esac
  ip netns exec "$NSA" timeout 60 "$HOSTILE" --vdev "net_af_packet0,iface=hp${ID}a,$AF" \
    --ip $AIP --victim $VIP --honest $HIP --guesses 16 --flood 64 --attacks "$a" \
    >>"$TMP/hostile.log" 2>&1 || fail "dpdat-hostile $a exited with $?"
  kill -0 "$vpid" 2>/dev/null || fail "victim died during $a"
  snap "$a"
done
took=$(( ($(date +%s%N) - start) / 1000000 ))
touch "$TMP/stop-honest"
wait "$hpid" || fail "honest peer exited with $? (a transfer failed or did not verify)"
kill -0 "$vpid" 2>/dev/null || fail "victim died"
touch "$TMP/stop-victim"
wait "$vpid"
vrc=$?
[ "$vrc" -eq 0 ] || fail "victim exited with $vrc (5: a canary changed)"

grep -h "^honest: [0-9]" "$TMP/honest.log"
echo "attacks took ${took} ms"
python3 - "$TMP" "$ATTACKS" <<'PY' || fail "an attack was not counted"
import json, sys
tmp, attacks = sys.argv[1], sys.argv[2].split()
v = json.loads(next(l for l in open(tmp + "/victim.log") if l.startswith("victim-json: "))[13:])
said = {}
for l in open(tmp + "/hostile.log"):
    if l.startswith("dpdat-hostile: "):
        name, _, rest = l[15:].partition(": ")
        said[name] = json.loads(rest)
# What each attack must show in the victim's counters (its own delta).
want = {
  "spoofed-source": ["rx_foreign_src", "rx_no_qp"],
  "unknown-qpn": ["rx_no_qp"],
  "psn-out-of-window": ["psn_out_of_window"],
  "length-mismatch": ["resp_err_write_length", "resp_err_length"],
  "huge-read": ["rkey_refused_out_of_bounds"],
  "misaligned-atomic": ["resp_err_misaligned"],
  "rkey-guess": ["rkey_refused_stale_context", "resp_err_rkey"],
  "rkey-flood": ["resp_err_rkey", "reqs_refused_key_refusals"],
  "forged-dreq": ["cm_forged_ignored"],
  "cm-flood": ["cm_malformed", "cm_req_refused"],
}
# Counters that say "refused": reported whenever an attack moved them.
def refusal(k):
    return (k.startswith(("rkey_refused_", "resp_err_", "cm_", "rx_reject_", "reqs_refused"))
            or k in ("rx_foreign_src", "psn_out_of_window", "rx_no_qp", "rx_dropped_parse"))
bad = []
prev = json.load(open(tmp + "/counters-start.json"))
print("victim: canaries intact: %s; connections accepted %d, rejected over its cap %d, endings %s"
      % (v["canaries_intact"], v["accepted"], v["rejected_over_cap"], v["endings"]))
for a in attacks:
    cur = json.load(open("%s/counters-%s.json" % (tmp, a)))
    delta = {k: cur[k] - prev.get(k, 0) for k in cur if refusal(k) and cur[k] != prev.get(k, 0)}
    prev = cur
    print("  %-18s victim counted %s" % (a, json.dumps(delta, sort_keys=True)))
    print("  %-18s attacker saw   %s" % ("", json.dumps(said.get(a, {}), sort_keys=True)))
    bad += ["%s: %s" % (a, k) for k in want[a] if delta.get(k, 0) == 0]
    if "error" in said.get(a, {}): bad.append("%s: %s" % (a, said[a]["error"]))
if v["rejected_over_cap"] == 0: bad.append("cm-flood: no REQ over the victim's cap")
for a, k in (("psn-out-of-window", "in_sequence_after"), ("forged-dreq", "write_after_spoofed_dreq")):
    if said.get(a, {}).get(k) != "ack":
        bad.append("%s: the connection did not survive (%s)" % (a, said.get(a, {}).get(k)))
flood = said.get("rkey-flood", {})
if flood.get("refused", 0) == 0 or flood.get("connected", 0) == 0:
    bad.append("rkey-flood: the attacker's connects were not refused after its guesses (%s)" % flood)
honest = [l for l in open(tmp + "/honest.log") if l.startswith("honest: ") and "reconnects" in l]
if not honest or int(honest[0].split(",")[-1].split()[0]) == 0:
    bad.append("the honest peer never connected again during the attacks")
if said.get("rkey-guess", {}).get("accepted", 1) != 0:
    bad.append("rkey-guess: a guessed key was accepted")
if bad:
    print("not counted / wrong: " + "; ".join(bad)); sys.exit(1)
PY
echo "PASS: the honest peer's transfers verified, the victim's canaries are intact, every attack counted"
