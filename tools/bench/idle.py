#!/usr/bin/env python3
"""Memory of an idle kapi over time (issue 20): a first start on a fresh data directory for
4 s, stopped, then a restart left idle with no client connected, its RSS, anonymous and
file-backed memory sampled every STEP_S seconds for MINUTES minutes. Periodic work (lease
renewals, resyncs, the collectors) maps code and fills caches only minutes after a start,
which a sample 3 s after READY=1 does not see.
usage: [MINUTES=<m>] [STEP_S=<s>] [PORT=<port>] idle.py <kapi binary> [extra flags...]"""
import os, shutil, socket, subprocess, sys, tempfile, time

if len(sys.argv) < 2:
    sys.exit(__doc__)
binary, *flags = sys.argv[1:]
minutes = float(os.environ.get("MINUTES", "10"))
step = float(os.environ.get("STEP_S", "60"))
port = int(os.environ.get("PORT", 20000 + os.getpid() % 20000))
data_dir = tempfile.mkdtemp(prefix="kapi-idle-")


def start():
    """Starts the server and waits for READY=1 (sd_notify)."""
    sock_path = tempfile.mktemp(prefix="notify-", suffix=".sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(1)
    proc = subprocess.Popen(
        [binary, "serve", "--secure-port", str(port), "--data-dir", data_dir, *flags],
        env=dict(os.environ, NOTIFY_SOCKET=sock_path),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            if "READY=1" in sock.recv(4096).decode():
                break
        except socket.timeout:
            if proc.poll() is not None:
                shutil.rmtree(data_dir)
                sys.exit(f"the server exited ({proc.returncode}) before it was ready")
    sock.close()
    os.unlink(sock_path)
    return proc


def memory(pid):
    """VmRSS, RssAnon and RssFile in MiB."""
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["RssAnon"], fields["RssFile"]


first = start()
time.sleep(4)
first.terminate()
first.wait()
server = start()
began = time.monotonic()
print("minutes  RSS MiB  anon MiB  file MiB")
try:
    while True:
        elapsed = time.monotonic() - began
        if server.poll() is not None:
            sys.exit(f"the server exited ({server.returncode}) after {elapsed / 60:.1f} minutes")
        rss, anon, file_backed = memory(server.pid)
        print(f"{elapsed / 60:7.1f}  {rss:7.2f}  {anon:8.2f}  {file_backed:8.2f}", flush=True)
        if elapsed >= minutes * 60:
            break
        time.sleep(step)
finally:
    server.terminate()
    server.wait()
    shutil.rmtree(data_dir)
