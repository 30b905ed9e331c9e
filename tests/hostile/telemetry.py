#!/usr/bin/env python3
# Reads a dpdat process's engine counters from its DPDK telemetry socket
# (/var/run/dpdk/dpdat<pid>/dpdk_telemetry.v2, /dpdat/engine,<name>) and
# writes them as one JSON object.
#   telemetry.py PID OUT.json
import json
import socket
import sys


def query(s, cmd):
    s.send(cmd.encode())
    reply = json.loads(s.recv(1 << 16).decode())
    return reply[cmd.split(",")[0]]


def main():
    pid, out = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect("/var/run/dpdk/dpdat%s/dpdk_telemetry.v2" % pid)
    s.recv(1 << 16)  # greeting
    names = query(s, "/dpdat/engines")
    if not names:
        sys.exit("no dpdat engine in process %s" % pid)
    with open(out, "w") as f:
        json.dump(query(s, "/dpdat/engine," + names[0]), f)


main()
