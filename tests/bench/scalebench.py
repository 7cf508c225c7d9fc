#!/usr/bin/env python3
"""The scale section of make bench: a heap of many live blocks over many
distinct stacks (tests/bench/heapscale.c), and how long each view takes,
how much daemon memory each live block costs, and the longest gap between
ring buffer drains while several clients take full snapshots during a
two-thread workload. Run alone (make bench-scale) it rewrites only its
section of docs/performance.md.

    python3 tests/bench/scalebench.py --build DIR [--blocks N,N,...] [--levels L]
"""

import argparse
import json
import os
import platform
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
        wait_settled(run, blocks)
        # a request drains the ring buffer first: after it, every block is counted
        time.sleep(1)
        rss1 = rss_kib(run.daemon.pid)
        st = run.stats()
        hwm1 = rss_kib(run.daemon.pid, "VmHWM")
        res = {"blocks": blocks, "stacks": st.get("stacks_total", 0), "hold_s": hold_s,
               "rss_before_kib": rss0, "rss_after_kib": rss1, "hwm_after_kib": hwm1,
               "bytes_per_block": (rss1 - rss0) * 1024 / blocks if blocks else 0,
               "live_allocations": st["live_allocations"], "events_lost": st["events_lost"],
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


def drain_gap(build, tmp, blocks, levels, clients=3, seconds=10, ring=None, realtime=False):
    """The daemon's longest gap between ring buffer drains while clients take
    full snapshots (snapshot -o) in a loop during a two-thread churn (none
    with clients=0). The window starts at a reset-peak, which restarts the
    daemon's maximum. realtime: memtraced --realtime."""
    args = ["--ring-buffer-size", str(ring)] if ring else []
    if realtime:
        args.append("--realtime")
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
        return {"blocks": blocks, "clients": clients, "realtime": realtime, "pairs": pairs,
                "snapshots": sum(taken),
                "failed": failed, "events_lost": after["events_lost"],
                "allocations_counted": after["allocations"] - before["allocations"],
                "frees_counted": after["frees"] - before["frees"],
                "drain_gap_max_ms": daemon.get("drain_gap_max", 0) * 1e3,
                "loop_busy_max_ms": daemon.get("loop_busy_max", 0) * 1e3,
                "freeze_max_ms": daemon.get("freeze_max", 0) * 1e3,
                "frozen_requests": daemon.get("frozen_requests", 0)}
    finally:
        run.close()


HEADING = "## Production scale"


def fmt_s(v):
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def num(n):
    """1 000 000: thousands apart, as the rest of the docs write them."""
    return f"{n:,}".replace(",", " ")


def section(points, gaps, repeat, load):
    """The section's lines."""
    ok = all(not v["errors"] for p in points for v in p["views"].values())
    points = [p for p in points if p["views"]]
    lines = [
        HEADING,
        "",
        "Written by `make bench`, or alone by `make bench-scale` (tests/bench/scalebench.py).",
        "",
        f"Machine: {platform.machine()}, kernel {platform.release()}, {os.cpu_count()} CPUs "
        f"(shared with other work, load average {load:.1f} when this part began: expect "
        "noise). Workload: tests/bench/heapscale, two threads holding N live blocks of 32 "
        "bytes, block i allocated down path i mod 2^17 of a recursion that calls one of two "
        "functions per level: up to 131 072 distinct stacks of 22 frames (frame pointers), "
        "made of a dozen distinct return addresses. Each time is the median of "
        f"{repeat} runs of memtracectl as a shell sees it (connect, request, reply, decode, "
        "render). Targets (issue 14): every view within 200 ms, `snapshot -o` and the file "
        "formats within 2 s.",
        "",
        "| request | " + " | ".join(f"{num(p['blocks'])} blocks, {num(p['stacks'])} stacks"
                                   for p in points) + " |",
        "| --- |" + " ---: |" * len(points),
    ]
    for name, _ in VIEWS:
        cells = []
        for p in points:
            v = p["views"].get(name)
            if not v:
                cells.append("")
                continue
            slow = name in SLOW_VIEWS
            over = v["median_s"] > (2.0 if slow else 0.2)
            cells.append(("**" if over else "") + fmt_s(v["median_s"]) + " s" +
                         ("**" if over else "") + (" (failed)" if v["errors"] else ""))
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    lines += ["", "Times over their target are in bold." + (
        "" if ok else " Some requests failed: see (failed)."), ""]
    lines += [
        "Daemon memory per live block (its RSS after the blocks were allocated and counted, "
        "less its RSS before, over the number of blocks; fixed costs such as the symbol "
        "tables read meanwhile included):",
        "",
        "| live blocks | stacks | bytes per live block | RSS before → after |",
        "| ---: | ---: | ---: | --- |",
    ]
    for p in points:
        lines.append(f"| {num(p['blocks'])} | {num(p['stacks'])} | {p['bytes_per_block']:.1f} | "
                     f"{p['rss_before_kib'] / 1024:.1f} → {p['rss_after_kib'] / 1024:.1f} MiB |")
    if len(points) >= 2 and points[-1]["blocks"] > points[-2]["blocks"]:
        a, b = points[-2], points[-1]
        slope = (b["rss_after_kib"] - a["rss_after_kib"]) * 1024 / (b["blocks"] - a["blocks"])
        lines += ["", f"Between {num(a['blocks'])} and {num(b['blocks'])} blocks the daemon grew "
                  f"by {slope:.1f} bytes per added block."]
    lines += [""]
    if gaps:
        g = gaps[0]
        lines += [
            f"Ingest while requests are served: at {num(g['blocks'])} live blocks, heapscale's "
            "two threads make malloc+free pairs down random paths for 10 s while "
            f"{g['clients']} clients take `snapshot -o` one after another. The daemon's "
            "longest gap between two ring buffer drains (`drain_gap_max` in `status --json`, "
            "from a `reset-peak` at the start of the window) and how the window went:",
            "",
            "| clients | loop priority | longest drain gap | snapshots taken | pairs made | "
            "allocations and frees counted | events lost | longest freeze | longest loop wakeup |",
            "| ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |",
        ]
        for g in sorted(gaps, key=lambda g: (-g["clients"], bool(g.get("realtime")))):
            exact = (g["allocations_counted"] == g["pairs"] and g["frees_counted"] == g["pairs"])
            prio = "`--realtime`" if g.get("realtime") else "normal"
            lines.append(f"| {g['clients']} | {prio} | {g['drain_gap_max_ms']:.1f} ms | "
                         f"{g['snapshots']} | "
                         f"{g['pairs']} | {'all' if exact else 'NOT ALL'} "
                         f"({g['allocations_counted']}, {g['frees_counted']}) | "
                         f"{g['events_lost']} | {g['freeze_max_ms']:.0f} ms | "
                         f"{g.get('loop_busy_max_ms', 0):.1f} ms |")
        lines += [""]
        for clients in sorted({g["clients"] for g in gaps}, reverse=True):
            for rt in (False, True):
                v = [g["drain_gap_max_ms"] for g in gaps
                     if g["clients"] == clients and bool(g.get("realtime")) == rt]
                if v:
                    lines.append(f"- {clients} clients, {'`--realtime`' if rt else 'normal'}: "
                                 f"longest gap median {statistics.median(v):.1f} ms, "
                                 f"max {max(v):.1f} ms over {len(v)} run{'s' if len(v) > 1 else ''}.")
        lines += [
            "",
            "The drain timer fires every 10 ms; on this shared machine a wakeup can wait for",
            "a CPU for a few more: the churn's two threads alone keep both CPUs busy (the",
            "runs without clients show it). With `--realtime` the loop thread (only) runs",
            "at SCHED_FIFO 1 and takes a CPU when its timer fires, unless the CPU is in a",
            "long kernel path: this kernel does not preempt the kernel (PREEMPT_NONE).",
            "Routine drains take 2048 records at a time, and the queue of events drained",
            "during a freeze is written into memory a keeper thread prepared: before both,",
            "the longest gap with 3 clients was 41-63 ms (docs/design.md, \"The drain",
            "timer\").",
            "The longest loop wakeup (`loop_busy_max`) is the daemon's own share of a gap:",
            "the most CPU time its event loop used between two waits, draining included.",
            "A freeze is the worker reading the core for a request: the loop goes on",
            "draining the ring buffer meanwhile, into a queue it applies afterwards",
            "(docs/design.md).",
            "",
        ]
    lines += [
        "Before this work (commit a3804df, same machine and workload, 10 s client timeout):",
        "`report --top 10` took 0.15-0.20 s, and every other view at 100 000 and 1 000 000",
        "blocks computed for 90-300 s with ingest stopped, and was then dropped by the",
        "daemon's deadline (`report --by line` and `--format html` at 100 000 blocks",
        "returned after 102 s and 124 s); the daemon grew by 572 bytes per block at",
        "100 000 blocks and 143 at 1 000 000.",
        "",
    ]
    return lines


def write_section(path, lines):
    """Replace the section in path (before the Python one when it is new)."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Performance\n\n"
    body = "\n".join(lines).rstrip("\n") + "\n\n"
    start = text.find("\n" + HEADING + "\n")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[:start + 1] + body + (text[end + 1:] if end >= 0 else "")
    else:
        py = text.find("\n## Python workload\n")
        text = (text[:py + 1] + body + text[py + 1:]) if py >= 0 else text.rstrip("\n") + "\n\n" + body
    with open(path, "w") as f:
        f.write(text)


def measure(build, blocks, levels, repeat, views=VIEWS, gap=True, gap_repeat=3):
    """Every point and the drain gap runs; returns (section lines, results)."""
    load = os.getloadavg()[0]
    results = {"points": [], "gaps": [], "repeat": repeat, "load": load}
    with tempfile.TemporaryDirectory(prefix="memtrace-scale-") as tmp:
        for n in blocks:
            results["points"].append(scale_point(build, tmp, n, levels, repeat, views))
        if gap:
            runs = [(3, False), (3, True)] * gap_repeat + [(0, False), (0, True)]
            for clients, realtime in runs:
                g = drain_gap(build, tmp, blocks[-1], levels, clients=clients,
                              realtime=realtime)
                print(f"  drain gap with {clients} clients"
                      f"{' (--realtime)' if realtime else ''}: {g['drain_gap_max_ms']:.1f} ms "
                      f"(loop busy {g['loop_busy_max_ms']:.1f} ms), "
                      f"{g['snapshots']} snapshots, {g['pairs']} pairs, lost "
                      f"{g['events_lost']}", flush=True)
                results["gaps"].append(g)
    return section(results["points"], results["gaps"], repeat, load), results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--blocks", default="10000,100000,1000000")
    ap.add_argument("--levels", type=int, default=17)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--views", default="", help="comma-separated view names (default all)")
    ap.add_argument("--no-gap", action="store_true", help="skip the drain gap runs")
    ap.add_argument("--json", default="")
    ap.add_argument("--out", default="docs/performance.md", help="'' to write nothing")
    ap.add_argument("--from-json", default="", help="rewrite the section from a --json file")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
        write_section(args.out, section(results["points"], results["gaps"], results["repeat"],
                                        results["load"]))
        return 0
    if os.geteuid() != 0:
        print("scalebench: needs root", file=sys.stderr)
        return 1
    views = VIEWS
    if args.views:
        want = args.views.split(",")
        views = [v for v in VIEWS if v[0] in want]
    lines, results = measure(args.build, [int(x) for x in args.blocks.split(",")], args.levels,
                             args.repeat, views, not args.no_gap)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.out:
        write_section(args.out, lines)
        print(f"scalebench: wrote the scale section of {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
