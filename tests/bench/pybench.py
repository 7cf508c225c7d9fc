#!/usr/bin/env python3
"""Overhead of tracing a Python workload: untraced, tracemalloc, memtrace's
default mode and --python-allocators, on each CPython found (pyenv 3.12 and
Debian's python3.11). `make bench` (tests/bench/bench.py) runs it as the
Python section of docs/performance.md; run alone (`make bench-python`) it
rewrites only that section.

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


def prog_ids_of(pid):
    """The ids of the BPF programs process pid holds (its fds' fdinfo)."""
    ids = set()
    fddir = f"/proc/{pid}/fd"
    for fd in os.listdir(fddir):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def alloc_return_ns(daemon_pid):
    """Mean run time of our daemon's alloc_return BPF program (kernel.bpf_stats_enabled):
    the allocation's return, Python walk included, without the trap around it. Other
    daemons on the machine have programs of the same name: only this one's count."""
    ours = prog_ids_of(daemon_pid)
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True)
    if out.returncode == 0:
        for p in json.loads(out.stdout):
            if p.get("name") == "alloc_return" and p["id"] in ours and p.get("run_cnt", 0):
                return p["run_time_ns"] / p["run_cnt"]
    return None


def run(python, script, n, tmp, extra=(), daemon_args=None, build=None, daemon_env=None):
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
                                      stderr=subprocess.DEVNULL,
                                      env=dict(os.environ, **(daemon_env or {})))
            end = time.monotonic() + 30
            while subprocess.run([os.path.join(build, "memtracectl"), "--socket", sock,
                                  "status"], capture_output=True).returncode != 0:
                if time.monotonic() > end:
                    raise RuntimeError("memtraced did not start")
                time.sleep(0.05)
            open(go, "w").close()
        elapsed = float(wait_line(out, "elapsed ", p))
        events = prog_ns = None
        if daemon_args is not None:
            time.sleep(0.5)
            st = subprocess.run([os.path.join(build, "memtracectl"), "--socket",
                                 os.path.join(tmp, "s.sock"), "stats", "--json"],
                                capture_output=True, text=True)
            events = json.loads(st.stdout)["events_received"]
            prog_ns = alloc_return_ns(daemon.pid)
        p.wait()
        return elapsed, events, prog_ns
    finally:
        if daemon:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()
        if p.poll() is None:
            p.kill()
            p.wait()


HEADING = "## Python workload"


def measure(build, n, repeat=3):
    """Run every configuration on each CPython found; returns the section's lines."""
    build = os.path.abspath(build)
    load = os.getloadavg()[0]
    subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"], check=False)
    tmp = tempfile.mkdtemp(prefix="pybench-", dir="/tmp")
    script = os.path.join(tmp, "workload.py")
    with open(script, "w") as f:
        f.write(WORKLOAD)
    pythons = [("pyenv CPython 3.12", pyenv_python("3.12")),
               ("Debian python3.11", "/usr/bin/python3.11"
                if os.access("/usr/bin/python3.11", os.X_OK) else None)]
    rows = []
    skipped = []
    try:
        for name, py in pythons:
            if not py:
                print(f"skip {name}: not installed", flush=True)
                skipped.append(name)
                continue

            def med(runs, *a, **kw):
                """The median run of several, by time (one for the slow mode)."""
                res = sorted((run(py, script, n, tmp, *a, **kw) for _ in range(runs)),
                             key=lambda r: r[0])
                return res[len(res) // 2]

            base = med(repeat)
            configs = [("untraced", base),
                       ("tracemalloc, 1 frame", med(repeat, ["-X", "tracemalloc=1"])),
                       ("tracemalloc, 25 frames", med(repeat, ["-X", "tracemalloc=25"])),
                       ("memtrace default (libc probes, Python frames)",
                        med(repeat, daemon_args=[], build=build)),
                       ("memtrace --python-allocators, probes at +0 (before)",
                        med(1, daemon_args=["--python-allocators"], build=build,
                            daemon_env={"MEMTRACE_PROBE_AT_ENTRY": "1"})),
                       ("memtrace --python-allocators",
                        med(1, daemon_args=["--python-allocators"], build=build))]
            for cname, (t, events, prog_ns) in configs:
                print(f"{name}: {cname}: {t:.3f} s, events {events}, alloc_return "
                      f"{prog_ns} ns", flush=True)
                rows.append((name, cname, t, t / base[0], events, prog_ns))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        HEADING,
        "",
        "Written by `make bench`, or alone by `make bench-python` (tests/bench/pybench.py).",
        "",
        f"Machine: {platform.machine()}, kernel {platform.release()}, {os.cpu_count()} CPUs "
        f"(shared with other work, load average {load:.1f} when this part began: expect "
        f"noise). Each time is the median of {repeat} runs, one for each --python-allocators "
        "configuration. "
        "Workload: "
        f"{n} iterations of building a small dict, `json.dumps` and `json.loads` "
        "of it, results kept; time measured inside the workload, from after attach. "
        "tracemalloc is CPython's own (`python -X tracemalloc=N`), started with the "
        "interpreter.",
        "",
        "| interpreter | configuration | seconds | slowdown | memtrace events "
        "| return-probe BPF program, ns per run |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, cname, t, ratio, events, prog_ns in rows:
        ev = "" if events is None else str(events)
        pn = "" if prog_ns is None else f"{prog_ns:.0f}"
        lines.append(f"| {name} | {cname} | {t:.3f} | {ratio:.1f}x | {ev} | {pn} |")
    default = [e for _, c, _, _, e, _ in rows if c.startswith("memtrace default") and e]
    lines += [
        "",
        "Events are allocation, free and realloc events received (including the",
        "interpreter's own activity between attach and the end). Each costs a uprobe",
        "trap or two (tens of microseconds here), the bulk of every memtrace figure;",
        "the last column is the BPF program run at the allocation's return, Python",
        "walk included, as the kernel accounts it (kernel.bpf_stats_enabled). Its mean",
        "is lower with --python-allocators, whose runs include the libc calls made",
        "inside PyObject_Malloc, which the program drops early (not investigated",
        "further).",
        "The default mode probes only libc's allocator: this workload still makes",
        f"about {min(default) / n:.0f} libc allocator events per iteration (json's decoder"
        if default else "libc allocator events on every iteration (json's decoder",
        "allocates blocks over pymalloc's 512-byte limit), which is what it pays for.",
        "`--python-allocators` adds a trap on every PyObject_Malloc/Free: far more",
        "than tracemalloc, which runs inside the interpreter. \"Before\" probes every",
        "function at its entry (`MEMTRACE_PROBE_AT_ENTRY=1`): a pyenv build's",
        "PyObject_Malloc starts `mov %rdi,%rsi`, PyObject_Free `mov`, both single-stepped,",
        "two traps each. Without it PyObject_Malloc is probed at its `js` (+6) and the",
        "frees at pymalloc's `_PyObject_Free`, where the allocator table sends",
        "PyObject_Free and PyMem_Free, at its `je` (+3): one trap each (docs/design.md,",
        "\"Cheaper traps\"). What remains is the trap itself and the return probe.",
        "On Debian's python3.11 pymalloc is inlined, so `--python-allocators` sees few",
        "calls -- and counts few (docs/python.md).",
    ]
    if skipped:
        lines += ["", "Not installed, so not measured: " + ", ".join(skipped) + "."]
    lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--out", default="docs/performance.md")
    ap.add_argument("--print", action="store_true", help="print the section, write nothing")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("pybench: needs root", file=sys.stderr)
        return 1
    section = measure(args.build, args.n)
    if args.print:
        print("\n".join(section))
        return 0
    try:
        with open(args.out) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Performance\n\n"
    # the Python section is the document's last: replace it, keep the rest
    i = text.find("\n" + HEADING + "\n")
    head = text[:i + 1] if i >= 0 else text.rstrip("\n") + "\n\n"
    with open(args.out, "w") as f:
        f.write(head + "\n".join(section))
    print(f"pybench: wrote the Python section of {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
