#!/usr/bin/env python3
"""The scale section of make bench: a heap of many live blocks over many
distinct stacks (tests/bench/heapscale.c), and how long each view takes,
how much daemon memory each live block costs, and the longest gap between
ring buffer drains while several clients take full snapshots during a
two-thread workload.

    python3 tests/bench/scalebench.py --build DIR [--blocks N,N,...] [--levels L]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

# (name, memtracectl arguments); {out} is a file in the run's directory
VIEWS = [
    ("status", ["status"]),
    ("stats", ["stats"]),
    ("report --top 10", ["report", "--top", "10"]),
    ("report --by line", ["report", "--by", "line", "--top", "10"]),
    ("peak", ["peak", "--top", "10"]),
    ("leaks", ["leaks", "--top", "5"]),
    ("snapshot -o", ["snapshot", "-o", "{out}.mts"]),
    ("report --format pprof", ["report", "--format", "pprof", "-o", "{out}.pb.gz"]),
    ("report --format html", ["report", "--format", "html", "-o", "{out}.html"]),
]
# the targets of the issue: every view within 200 ms but these within 2 s
SLOW_VIEWS = {"snapshot -o", "report --format pprof", "report --format html"}


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Run:
    """One heapscale target under one memtraced."""

    def __init__(self, build, tmp, levels, threads, daemon_args=()):
        self.build, self.tmp = build, tmp
        self.sock = os.path.join(tmp, "scale.sock")
        self.prog = subprocess.Popen([os.path.join(build, "tests", "heapscale"), str(levels),
                                      str(threads)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.prog.stdout.readline().strip() == "ready"
        self.log = open(os.path.join(tmp, "daemon.err"), "w")
        self.daemon = subprocess.Popen([os.path.join(build, "memtraced"), "--socket", self.sock,
                                        "--pid", str(self.prog.pid)] + list(daemon_args),
                                       stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            out = self.ctl(["status", "--json"], check=False)
            if out.returncode == 0 and '"attached"' in out.stdout:
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("daemon did not attach")

    def ctl(self, args, check=True, timeout=900):
        return subprocess.run([os.path.join(self.build, "memtracectl"), "--socket", self.sock]
                              + args, capture_output=True, text=True, check=check,
                              timeout=timeout)

    def command(self, line):
        self.prog.stdin.write(line + "\n")
        self.prog.stdin.flush()
        return self.prog.stdout.readline().strip()

    def stats(self):
        return json.loads(self.ctl(["stats", "--json"]).stdout)

    def status(self):
        return json.loads(self.ctl(["status", "--json"]).stdout)

    def close(self):
        try:
            self.command("quit")
            self.prog.wait(timeout=60)
        finally:
            if self.prog.poll() is None:
                self.prog.kill()
            self.daemon.terminate()
            self.daemon.wait(timeout=60)
            self.log.close()


def time_view(run, args, out):
    argv = [a.replace("{out}", out) for a in args]
    t0 = time.monotonic()
    res = run.ctl(argv, check=False)
    dt = time.monotonic() - t0
    err = "" if res.returncode == 0 else (res.stderr.strip().splitlines() or ["failed"])[-1]
    return dt, err


def wait_settled(run, expect_events, timeout=120):
    """Until the daemon has received as many events (status is cheap)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = run.status()
        if st["events_received"] >= expect_events:
            return st
        time.sleep(0.2)
    return run.status()


def scale_point(build, tmp, blocks, levels, repeat, views=VIEWS, daemon_args=()):
    """Times of each view (medians of repeat), memory per block, at one heap size."""
    run = Run(build, tmp, levels, 2, daemon_args)
    try:
        time.sleep(0.5)
        rss0 = rss_kib(run.daemon.pid)
        t0 = time.monotonic()
        assert run.command(f"hold {blocks}") == f"held {blocks}"
        hold_s = time.monotonic() - t0
        st = wait_settled(run, blocks)
        # a request drains the ring buffer first: after it, every block is counted
        time.sleep(1)
        rss1 = rss_kib(run.daemon.pid)
        hwm1 = rss_kib(run.daemon.pid, "VmHWM")
        res = {"blocks": blocks, "stacks": st.get("stacks_total", 0), "hold_s": hold_s,
               "rss_before_kib": rss0, "rss_after_kib": rss1, "hwm_after_kib": hwm1,
               "bytes_per_block": (rss1 - rss0) * 1024 / blocks if blocks else 0,
               "events_received": st["events_received"], "events_lost": st["events_lost"],
               "views": {}}
        for name, args in views:
            samples, errs = [], []
            for _ in range(repeat):
                dt, err = time_view(run, args, os.path.join(tmp, "out"))
                samples.append(dt)
                if err:
                    errs.append(err)
            res["views"][name] = {"median_s": statistics.median(samples), "min_s": min(samples),
                                  "max_s": max(samples), "errors": errs}
            print(f"  {blocks:8d} blocks  {name:24s} {statistics.median(samples):8.3f} s"
                  + (f"  FAILED: {errs[0]}" if errs else ""), flush=True)
        res["rss_end_kib"] = rss_kib(run.daemon.pid)
        res["hwm_end_kib"] = rss_kib(run.daemon.pid, "VmHWM")
        return res
    finally:
        run.close()


def drain_gap(build, tmp, blocks, levels, clients=3, seconds=10, ring=None):
    """The daemon's longest gap between ring buffer drains while clients take
    full snapshots (snapshot -o) in a loop during a two-thread churn. The
    window starts at a reset-peak, which restarts the daemon's maximum."""
    args = ["--ring-buffer-size", str(ring)] if ring else []
    run = Run(build, tmp, levels, 2, args)
    try:
        assert run.command(f"hold {blocks}") == f"held {blocks}"
        wait_settled(run, blocks)
        stop = threading.Event()
        taken = [0] * clients
        failed = []

        def client(i):
            out = os.path.join(tmp, f"gap{i}.mts")
            while not stop.is_set():
                r = run.ctl(["snapshot", "-o", out], check=False)
                if r.returncode:
                    failed.append(r.stderr.strip())
                else:
                    taken[i] += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        run.ctl(["reset-peak"])
        before = run.stats()
        for t in threads:
            t.start()
        line = run.command(f"churn {seconds}")
        stop.set()
        for t in threads:
            t.join()
        pairs = int(line.split()[1])
        after = run.stats()
        daemon = run.status().get("daemon", {})
        return {"blocks": blocks, "pairs": pairs, "snapshots": sum(taken), "failed": failed,
                "events_lost": after["events_lost"],
                "allocations_counted": after["allocations"] - before["allocations"],
                "frees_counted": after["frees"] - before["frees"],
                "drain_gap_max_ms": daemon.get("drain_gap_max", 0) * 1e3,
                "freeze_max_ms": daemon.get("freeze_max", 0) * 1e3,
                "frozen_requests": daemon.get("frozen_requests", 0)}
    finally:
        run.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--blocks", default="10000,100000,1000000")
    ap.add_argument("--levels", type=int, default=17)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--views", default="", help="comma-separated view names (default all)")
    ap.add_argument("--daemon-args", default="")
    ap.add_argument("--gap", action="store_true", help="also the drain gap run")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("scalebench: needs root", file=sys.stderr)
        return 1
    views = VIEWS
    if args.views:
        want = args.views.split(",")
        views = [v for v in VIEWS if v[0] in want]
    results = {"points": [], "gap": None}
    with tempfile.TemporaryDirectory(prefix="memtrace-scale-") as tmp:
        for n in [int(x) for x in args.blocks.split(",")]:
            results["points"].append(scale_point(args.build, tmp, n, args.levels, args.repeat,
                                                 views, args.daemon_args.split()))
        if args.gap:
            results["gap"] = drain_gap(args.build, tmp, int(args.blocks.split(",")[-1]),
                                       args.levels)
            print(json.dumps(results["gap"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
