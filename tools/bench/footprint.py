#!/usr/bin/env python3
"""Footprint of a kapi binary: time from exec to READY=1 (sd_notify) and the CPU time spent
by then, RSS when idle.
usage: [IDLE_S=<seconds>] [PORT=<port>] footprint.py <kapi binary> <data dir> [extra flags...]"""
import os, socket, subprocess, sys, time, tempfile

binary, data_dir, *flags = sys.argv[1:]
sock_path = tempfile.mktemp(prefix="notify-", suffix=".sock")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sock_path)
env = dict(os.environ, NOTIFY_SOCKET=sock_path)
# $PORT keeps the port from run to run (a restart as a service manager makes it: no Endpoints
# to rewrite); otherwise each run takes a new one.
port = int(os.environ.get("PORT", 20000 + os.getpid() % 20000))
start = time.monotonic()
proc = subprocess.Popen([binary, "serve", "--secure-port", str(port), "--data-dir", data_dir, *flags],
                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sock.settimeout(30)
ready = None
while ready is None:
    msg = sock.recv(4096).decode()
    if "READY=1" in msg:
        ready = time.monotonic() - start
# Bytes the start read from disk: a VM that dropped the binary from its page cache makes a
# restart read it back, which is not the restart's own cost.
disk_kib = next(int(l.split()[1]) for l in open(f"/proc/{proc.pid}/io") if l.startswith("read_bytes")) // 1024
# CPU time of the threads alive at READY=1 (schedstat's nanoseconds): how much work the start
# was, apart from how long it waited for the two cores. A lower bound: threads that already
# ended are missed.
cpu_ns = 0
for task in os.listdir(f"/proc/{proc.pid}/task"):
    try:
        cpu_ns += int(open(f"/proc/{proc.pid}/task/{task}/schedstat").read().split()[0])
    except OSError:
        pass
time.sleep(float(os.environ.get("IDLE_S", "5")))
status = open(f"/proc/{proc.pid}/status").read()
rss = next(l for l in status.splitlines() if l.startswith("VmRSS")).split()[1]
anon = next(l for l in status.splitlines() if l.startswith("RssAnon")).split()[1]
fileb = next(l for l in status.splitlines() if l.startswith("RssFile")).split()[1]
print(f"ready {ready*1000:.1f} ms (CPU {cpu_ns/1e6:.1f} ms, {disk_kib} KiB read from disk); RSS {int(rss)/1024:.1f} MiB (anon {int(anon)/1024:.1f}, file {int(fileb)/1024:.1f})")
proc.terminate(); proc.wait()
os.unlink(sock_path)
