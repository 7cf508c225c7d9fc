#!/usr/bin/env python3
"""Overhead of tracing a Python workload: untraced, tracemalloc, memtrace's
default mode and --python-allocators, on each CPython found (pyenv 3.12 and
Debian's python3.11). Writes docs/performance-python.md.

usage: pybench.py --build DIR [--n N] [--out FILE]   (root)
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from test_python import pyenv_python  # noqa: E402

WORKLOAD = r"""
import json, os, sys, time
n = int(sys.argv[2])
print("ready", flush=True)
while sys.argv[1] != "-" and not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
t0 = time.perf_counter()
kept = []
for i in range(n):
    d = {"id": i, "name": "item%d" % i, "tags": [str(k) for k in range(8)], "ok": i % 2 == 0}
    kept.append(json.loads(json.dumps(d)))
print("elapsed %.6f" % (time.perf_counter() - t0), flush=True)
"""


def wait_line(path, prefix, proc, timeout=600):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line[len(prefix):].strip()
        if proc.poll() is not None:
            raise RuntimeError(f"workload exited {proc.returncode}")
        time.sleep(0.02)
    raise RuntimeError("timeout")


def run(python, script, n, tmp, extra=(), daemon_args=None, build=None):
    out = os.path.join(tmp, "w.out")
    go = os.path.join(tmp, "go")
    if os.path.exists(go):
        os.unlink(go)
    signal_arg = go if daemon_args is not None else "-"
    with open(out, "w") as f:
        p = subprocess.Popen([python, *extra, script, signal_arg, str(n)], stdout=f)
    daemon = None
    try:
        wait_line(out, "ready", p)
        if daemon_args is not None:
            sock = os.path.join(tmp, "s.sock")
            daemon = subprocess.Popen([os.path.join(build, "memtraced"), "--socket", sock,
                                       *daemon_args, "--pid", str(p.pid)],
                                      stderr=subprocess.DEVNULL)
            end = time.monotonic() + 30
            while subprocess.run([os.path.join(build, "memtracectl"), "--socket", sock,
                                  "status"], capture_output=True).returncode != 0:
                if time.monotonic() > end:
                    raise RuntimeError("memtraced did not start")
                time.sleep(0.05)
            open(go, "w").close()
        elapsed = float(wait_line(out, "elapsed ", p))
        events = None
        if daemon_args is not None:
            time.sleep(0.5)
            st = subprocess.run([os.path.join(build, "memtracectl"), "--socket",
                                 os.path.join(tmp, "s.sock"), "stats", "--json"],
                                capture_output=True, text=True)
            events = json.loads(st.stdout)["events_received"]
        p.wait()
        return elapsed, events
    finally:
        if daemon:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--out", default="docs/performance-python.md")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="pybench-", dir="/tmp")
    script = os.path.join(tmp, "workload.py")
    with open(script, "w") as f:
        f.write(WORKLOAD)
    pythons = [("pyenv CPython 3.12", pyenv_python("3.12")),
               ("Debian python3.11", "/usr/bin/python3.11"
                if os.access("/usr/bin/python3.11", os.X_OK) else None)]
    rows = []
    for name, py in pythons:
        if not py:
            print(f"skip {name}: not installed", flush=True)
            continue
        base = run(py, script, args.n, tmp)
        configs = [("untraced", base),
                   ("tracemalloc, 1 frame", run(py, script, args.n, tmp, ["-X", "tracemalloc=1"])),
                   ("tracemalloc, 25 frames",
                    run(py, script, args.n, tmp, ["-X", "tracemalloc=25"])),
                   ("memtrace default (libc probes, Python frames)",
                    run(py, script, args.n, tmp, daemon_args=[], build=build)),
                   ("memtrace --python-allocators",
                    run(py, script, args.n, tmp, daemon_args=["--python-allocators"],
                        build=build))]
        for cname, (t, events) in configs:
            print(f"{name}: {cname}: {t:.3f} s, events {events}", flush=True)
            rows.append((name, cname, t, t / base[0], events))
    shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        "# Performance on Python",
        "",
        "Written by `make bench-python` (tests/bench/pybench.py); do not edit by hand.",
        "",
        f"Machine: {platform.machine()}, kernel {platform.release()}, {os.cpu_count()} CPUs "
        "(shared with other work: single runs, expect noise). Workload: "
        f"{args.n} iterations of building a small dict, `json.dumps` and `json.loads` "
        "of it, results kept; time measured inside the workload, from after attach.",
        "",
        "| interpreter | configuration | seconds | slowdown | memtrace events |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for name, cname, t, ratio, events in rows:
        ev = "" if events is None else str(events)
        lines.append(f"| {name} | {cname} | {t:.3f} | {ratio:.1f}x | {ev} |")
    lines += [
        "",
        "Events are allocation, free and realloc events received (including the",
        "interpreter's own activity between attach and the end). Each costs a uprobe",
        "trap or two (tens of microseconds here), the bulk of every memtrace figure.",
        "The default mode probes only libc's allocator: this workload still calls",
        "malloc 4 times per iteration (json's decoder allocates blocks over pymalloc's",
        "512-byte limit), which is what it pays for. `--python-allocators` adds a trap",
        "on every PyObject_Malloc/Free: far more than tracemalloc, which runs inside",
        "the interpreter. On Debian's python3.11 pymalloc is inlined, so",
        "`--python-allocators` sees few calls -- and counts few (docs/python.md).",
        "The BPF program at the allocation's return, Python walk included, measured",
        "with kernel.bpf_stats_enabled on this workload: about 1.4 us per event on",
        "3.12 (0.6 us without Python frames, docs/performance.md).",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
