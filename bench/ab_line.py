#!/usr/bin/env python3
"""One line of a bench/device16.sh table (ab.txt, ot.txt) from a dpdat-perf client JSON:
LABEL, the figure (message rate and MB/s, or the median latency), and the
retransmission timeouts, tail probes, consumer-driven engine steps,
deferred control passes and the time waited for them summed over both sides.  usage: ab_line.py JSON LABEL"""
import json
import sys

d = json.load(open(sys.argv[1]))
c = d.get('counters', {})


def total(suffix):
    return sum(v for k, v in c.items() if k.endswith(suffix))


if d.get('bw'):
    b = d['bw'][0]
    fig = f"{b['msg_rate_mpps']:.3f} Mmsg/s {b['avg_mbs']:.0f} MB/s"
else:
    lat = d['lat'][0]
    fig = f"{lat['median_us']:.2f} us median, p99 {lat['p99_us']:.2f}"
print(sys.argv[2], fig, f"rto={total('.qp_timeouts')} tlp={total('.qp_tlp_probes')}",
      f"consumer_steps={total('.consumer_steps')}",
      f"control_deferred={total('.control_deferred')}",
      f"control_wait_us={total('.control_wait_ns') // 1000}")
