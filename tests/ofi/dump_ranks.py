#!/usr/bin/env python3
# Writes what a hung MPI job on dpdat shows: first, for every process given
# that is a dpdat process, its counters from its DPDK telemetry socket
# (/var/run/dpdk/dpdat<pid>/dpdk_telemetry.v2: every dpdat engine and port,
# and each port's link state), then, when gdb is installed, the thread
# stacks of those processes and of mpirun.
#   dump_ranks.py PID...
import json
import os
import shutil
import socket
import subprocess
import sys


def query(s, cmd):
    s.send(cmd.encode())
    return json.loads(s.recv(1 << 20).decode())[cmd.split(",")[0]]


def counters(pid):
    path = "/var/run/dpdk/dpdat%s/dpdk_telemetry.v2" % pid
    if not os.path.exists(path):
        return False
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(10)
        s.connect(path)
        s.recv(1 << 16)  # greeting
        for name in query(s, "/dpdat/engines") or []:
            c = query(s, "/dpdat/engine," + name)
            print("  engine %s: %s" % (name, json.dumps(c, sort_keys=True)))
        for port in query(s, "/dpdat/ports") or []:
            link = query(s, "/ethdev/link_status,%d" % port)
            c = query(s, "/dpdat/port,%d" % port)
            print("  port %d link %s: %s" % (port, json.dumps(link), json.dumps(c, sort_keys=True)))
        s.close()
    except (OSError, ValueError, KeyError) as e:
        print("  telemetry unreadable: %s" % e)
    return True


def stacks(pid):
    try:
        r = subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid), "-ex", "thread apply all bt 30"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30, text=True)
        for line in r.stdout.splitlines():
            if line.startswith("#") or line.startswith("Thread "):
                print("    " + line)
    except subprocess.TimeoutExpired:
        print("    (gdb timed out)")


def main():
    cmds = {}
    for pid in sys.argv[1:]:
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmds[pid] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
    traced = []
    for pid, cmd in cmds.items():
        print("process %s: %s" % (pid, cmd))
        if counters(pid) or cmd.startswith("mpirun"):
            traced.append(pid)
    if shutil.which("gdb") is None:
        return
    for pid in traced:
        print("stacks of %s:" % pid)
        stacks(pid)


main()
