#!/usr/bin/env python3
"""Writes crates/kapi/link-order.txt: the order crates/kapi/build.rs asks the linker to place
a release kapi's functions in at the start of the binary's text. First, between the markers
`kapi_startup_code_begin` and `kapi_startup_code_end`, the functions some start runs (until
READY=1, on a first start or a restart) and no started server does; then the others a
restart runs, before or after READY=1; then the others a first start runs; then those it
runs to serve requests; last, those only its shutdown runs.

Why: the kernel maps an executable's code in 64 KiB windows around each page it faults in.
Start-up code is spread over the whole text (19 MB), so nearly all of it ends up resident;
packed together it was about 6 MB (docs/PERFORMANCE.md, "Footprint: start-up code packed").
Once started, kapi releases the pages between the markers (crates/kapi/src/startup_code.rs),
so what stays resident is the rest of what a restart runs. The serving code follows, so
that requests run from contiguous code too: left where it was, creates measured about 8%
more CPU.

usage: tools/gen_link_order.py [--check] [BINARY]     (default target/release/kapi)

Runs BINARY under valgrind's callgrind (Debian package `valgrind`): a first start on a
fresh data directory, until READY=1 and 20 seconds more (past a lease renewal), and a
restart on it, until READY=1 and then IDLE_S seconds (default 310: past the periodic work
of up to five minutes, such as the namespace controller's resync, and several compactions,
which this run makes every 60 s; code whose first pass
runs at the start and whose next only later, such as the hourly cleaners', is released and
mapped back then), then a third start that serves apibench's creates, gets,
updates, LISTs and watches (APIBENCH, default ../shared/apibench/target/release/apibench,
over HTTP/2 and HTTP/1.1). callgrind dumps its profile at READY=1 and again before the
shutdown, which parts the functions run into those run before the server was ready, after,
and at its shutdown. It keeps the names of the functions run that are in BINARY's text.

With --check, writes nothing and prints how many of the file's names BINARY still has:
symbol names carry hashes of the toolchain and the dependency versions, so the file goes
stale when either changes, and the linker then silently ignores it.
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The restart compacts every 60 s rather than every 5 minutes: as upstream's, each
# compaction removes the history up to the revision the one before it recorded, so the
# first that removes anything (and runs the store's deletions) comes at twice the interval,
# 10 minutes into an idle server's life by default. Left out of the trace, that code was
# spread over the text and mapped about 0.6 MiB more once it ran.
RESTART_FLAGS = ("--etcd-compaction-interval=60s",)
ORDER_FILE = os.path.join(ROOT, "crates", "kapi", "link-order.txt")


def text_symbols(binary):
    """BINARY's function symbols: name -> address."""
    out = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
    return {p[2]: int(p[0], 16) for p in (line.split() for line in out.splitlines())
            if len(p) == 3 and p[1] in "tT"}


def run_under_callgrind(binary, data_dir, out_file, then, flags=()):
    """Starts BINARY under callgrind (`serve` with FLAGS), waits for READY=1, calls THEN(),
    stops it. Returns the profiles of the start (until READY=1), of what it ran once ready,
    and of its shutdown."""
    notify = tempfile.mktemp(prefix="notify-", suffix=".sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify)
    sock.settimeout(300)
    port = 20000 + os.getpid() % 20000
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out_file}",
         binary, "serve", "--secure-port", str(port), "--data-dir", data_dir, *flags],
        env=dict(os.environ, NOTIFY_SOCKET=notify),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while b"READY=1" not in sock.recv(4096):
            pass
        dump(proc.pid, out_file + ".1")
        then()
        dump(proc.pid, out_file + ".2")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        os.unlink(notify)
    # Each dump writes the next part, OUT_FILE.1 and .2, and zeroes the counts; OUT_FILE
    # itself is written at exit: the shutdown.
    return out_file + ".1", out_file + ".2", out_file


def dump(pid, part):
    """Has callgrind write the profile so far to PART, and waits until it has.
    callgrind_control exits 0 whether or not it reached callgrind."""
    subprocess.run(["callgrind_control", "--dump", str(pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(part):
        sys.exit(f"callgrind_control did not make callgrind dump {part}")


def serve_load(data_dir):
    """Runs apibench's scenarios, small, against the server on DATA_DIR."""
    apibench = os.environ.get("APIBENCH", os.path.join(
        ROOT, "..", "shared", "apibench", "target", "release", "apibench"))
    kubeconfig = os.path.join(data_dir, "admin.kubeconfig")
    scenarios = [["create", "--n", "200", "--size", "1024"], ["get", "--n", "400"],
                 ["update", "--n", "100"], ["list", "--n", "5"],
                 ["list", "--n", "5", "--limit", "50"],
                 ["watch", "--watchers", "20", "--events", "50", "--rate", "100", "--drain-s", "2"]]
    for protocol in ([], ["--http1"]):
        for scenario in scenarios:
            subprocess.run([apibench, "--kubeconfig", kubeconfig, *protocol, *scenario],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def functions_run(profile):
    """The mangled names callgrind recorded (`fn=`/`cfn=` lines), recursion marks dropped."""
    names = set()
    for line in open(profile, errors="replace"):
        m = re.match(r"c?fn=\(\d+\) (.*)", line)
        if m:
            names.add(re.sub(r"'\d+$", "", m.group(1).strip()))
    return names


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    binary = os.path.abspath(args[0] if args else os.path.join(ROOT, "target/release/kapi"))
    symbols = text_symbols(binary)
    if check:
        listed = [line.strip() for line in open(ORDER_FILE) if line.strip()]
        present = sum(1 for name in listed if name in symbols)
        print(f"{present} of {len(listed)} names in {ORDER_FILE} are in {binary}")
        begin, end = (symbols.get(f"kapi_startup_code_{m}") for m in ("begin", "end"))
        if begin is not None and end is not None:
            print(f"start-up code {begin:#x}-{end:#x}: {(end - begin) // 1024} KiB")
        sys.exit(0 if present * 10 >= len(listed) * 9 else 1)
    idle_s = float(os.environ.get("IDLE_S", "310"))
    with tempfile.TemporaryDirectory() as work:
        data_dir = os.path.join(work, "data")
        started, ready, stopped = {}, {}, set()
        for run, then, flags in (("first-start", lambda: time.sleep(20), ()),
                                 ("restart", lambda: time.sleep(idle_s), RESTART_FLAGS),
                                 ("serving", lambda: serve_load(data_dir), ())):
            profile = os.path.join(work, run + ".callgrind")
            before, after, shutdown = run_under_callgrind(binary, data_dir, profile, then,
                                                          flags)
            started[run] = functions_run(before) & symbols.keys()
            ready[run] = functions_run(after) & symbols.keys()
            stopped |= functions_run(shutdown) & symbols.keys()
    # Released once started: what any start runs and no ready server does (the release
    # itself excepted, should the first dump come late).
    ever_ready = ready["first-start"] | ready["restart"] | ready["serving"]
    startup = {name for name in
               (started["first-start"] | started["restart"] | started["serving"]) - ever_ready
               if "startup_code" not in name}
    # What a restart runs and keeps: resident while it idles.
    idle = (started["restart"] | ready["restart"]) - startup
    first_idle = (started["first-start"] | ready["first-start"]) - startup - idle
    serving = ready["serving"] - startup - idle - first_idle
    shutdown = stopped - startup - idle - first_idle - serving
    # A restart's start-up code first, then what only a first start runs.
    order = (["kapi_startup_code_begin"] + sorted(startup & started["restart"])
             + sorted(startup - started["restart"]) + ["kapi_startup_code_end"]
             + sorted(idle) + sorted(first_idle) + sorted(serving) + sorted(shutdown))
    with open(ORDER_FILE, "w") as f:
        f.write("".join(name + "\n" for name in order))
    print(f"{len(startup)} start-up, {len(idle)} restart, {len(first_idle)} first-start, "
          f"{len(serving)} serving and {len(shutdown)} shutdown functions written to "
          f"{ORDER_FILE}")


if __name__ == "__main__":
    main()
