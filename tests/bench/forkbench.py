#!/usr/bin/env python3
"""The fork section of make bench: what a fork costs the daemon when the
parent holds many live blocks (a forked child's heap begins as its parent's,
shared: src/daemon/core/family.c). tests/bench/heapscale.c holds N blocks
traced with --follow-forks, then forks K children that each free F of the
blocks they inherited and allocate F of their own, and wait; the daemon's CPU
time (utime + stime) and resident memory are read before the forks, once
every child's events are counted, and after the children exit. Run alone
(make bench-fork) it rewrites only its section of docs/performance.md.

    python3 tests/bench/forkbench.py --build DIR [--blocks N,N] [--forks K] [--frees F]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HEADING = "## Forks of a large heap"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ctl(build, sock, *args):
    out = subprocess.run([os.path.join(build, "memtracectl"), "--socket", sock, *args],
                         capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise RuntimeError(f"memtracectl {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def stats(build, sock):
    return json.loads(ctl(build, sock, "stats", "--json"))


def command(prog, line, want):
    prog.stdin.write(line + "\n")
    prog.stdin.flush()
    got = prog.stdout.readline().strip()
    if not got.startswith(want):
        raise RuntimeError(f"heapscale: {line!r} answered {got!r}")
    return got


def settle(build, sock, cond, timeout=300):
    """Stats once cond(stats) holds and two reads agree."""
    end = time.monotonic() + timeout
    while True:
        st = stats(build, sock)
        if cond(st):
            time.sleep(0.3)
            again = stats(build, sock)
            if [t["counters"] for t in again["targets"]] == \
                    [t["counters"] for t in st["targets"]]:
                return again
        if time.monotonic() > end:
            raise RuntimeError("the daemon did not settle")
        time.sleep(0.1)


def one_run(build, tmp, blocks, forks, frees):
    sock = os.path.join(tmp, "fork.sock")
    prog = subprocess.Popen([os.path.join(build, "tests", "heapscale"), "17", "1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    log = open(os.path.join(tmp, "daemon.err"), "w")
    daemon = None
    try:
        assert prog.stdout.readline().strip() == "ready"
        daemon = subprocess.Popen([os.path.join(build, "memtraced"), "--socket", sock,
                                   "--follow-forks", "--pid", str(prog.pid)], stderr=log)
        end = time.monotonic() + 60
        while not (os.path.exists(sock) and attached(build, sock)):
            if time.monotonic() > end or daemon.poll() is not None:
                raise RuntimeError("memtraced did not start")
            time.sleep(0.1)
        command(prog, f"hold {blocks}", "held")
        settle(build, sock, lambda st: st["live_allocations"] >= blocks)
        base = received(build, sock)
        cpu0, rss0 = cpu_s(daemon.pid), rss_kib(daemon.pid)
        t0 = time.monotonic()
        command(prog, f"fork {forks} {frees}", "forked")
        # every child's fork, frees and allocations counted: status asks for no stacks
        wait_received(build, sock, base + forks * (2 * frees + 1))
        wall = time.monotonic() - t0
        cpu1, rss1 = cpu_s(daemon.pid), rss_kib(daemon.pid)
        st = settle(build, sock, lambda st: len(st["targets"]) == forks + 1)
        child = max(t["pid"] for t in st["targets"])
        views = {}
        for name, args in (("all", ["report", "--top", "10"]),
                           ("child", ["report", "--pid", str(child), "--top", "10"])):
            t1 = time.monotonic()
            ctl(build, sock, *args)
            views[name] = time.monotonic() - t1
        kids = [t for t in st["targets"] if t["pid"] != prog.pid]
        parent = [t for t in st["targets"] if t["pid"] == prog.pid][0]["counters"]
        exact = all(t["counters"]["inherited_allocations"] == parent["live_allocations"]
                    and t["counters"]["frees"] == frees
                    and t["counters"]["unknown_frees"] == 0
                    and t["counters"]["live_allocations"] == parent["live_allocations"]
                    for t in kids)
        cpu1b = cpu_s(daemon.pid)
        command(prog, "reap", "reaped")
        wait_exited(build, sock, forks)
        cpu2, rss2 = cpu_s(daemon.pid), rss_kib(daemon.pid)
        st = settle(build, sock, lambda st: True)
        released = all(t["counters"]["live_allocations"] == frees for t in st["targets"]
                       if t["pid"] != prog.pid)
        command(prog, "quit", "")
        return {"blocks": blocks, "forks": forks, "frees": frees, "wall": wall,
                "cpu_fork": (cpu1 - cpu0) / forks, "rss_fork": (rss1 - rss0) / forks,
                "cpu_exit": (cpu2 - cpu1b) / forks, "rss_after": rss2 - rss0,
                "exact": exact and released, "rss0": rss0, "views": views}
    finally:
        if daemon:
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
        prog.kill()
        prog.wait()
        log.close()


def status(build, sock):
    return json.loads(ctl(build, sock, "status", "--json"))


def received(build, sock):
    return status(build, sock)["events_received"]


def wait_received(build, sock, n, timeout=300):
    end = time.monotonic() + timeout
    while received(build, sock) < n:
        if time.monotonic() > end:
            raise RuntimeError(f"the daemon did not receive {n} events")
        time.sleep(0.05)


def wait_exited(build, sock, n, timeout=300):
    end = time.monotonic() + timeout
    while sum(t["state"] == "exited" for t in status(build, sock)["targets"]) < n:
        if time.monotonic() > end:
            raise RuntimeError("the children's exits were not seen")
        time.sleep(0.05)


def attached(build, sock):
    try:
        return [t["state"] for t in stats(build, sock)["targets"]] == ["attached"]
    except (RuntimeError, ValueError):
        return False


def measure(build, blocks=(10000, 1000000), forks=50, frees=(0, 1000)):
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="memtrace-fork-") as tmp:
        for n in blocks:
            for f in frees:
                row = one_run(build, tmp, n, forks, f)
                rows.append(row)
                print(f"fork: {n} blocks, {f} frees per child: {row['cpu_fork'] * 1e3:.2f} ms "
                      f"and {row['rss_fork']:.0f} KiB of daemon per fork"
                      f"{'' if row['exact'] else ' (NOT EXACT)'}", flush=True)
    lines = [
        HEADING,
        "",
        "Written by `make bench` (tests/bench/forkbench.py; `make bench-fork` reruns only this",
        f"section). Load average {load:.1f} when it began. tests/bench/heapscale.c holds N",
        "blocks of 32 bytes over 131 072 stacks, traced with `--follow-forks`, then forks",
        f"{forks} children that each free F of the blocks they inherited and allocate F of",
        "their own, and stay alive; then they exit. A child's heap begins as its parent's",
        "(docs/design.md, \"Process families\"): nothing is copied at the fork, and what",
        "a child changes costs it a side-table entry per inherited block it frees.",
        "The daemon's CPU time and resident memory are read before the forks, once",
        "every child's events are counted, and after the children exit.",
        "",
        "| parent's live blocks | F | daemon CPU per fork, ms | daemon memory per fork, KiB "
        "| CPU per child's exit, ms | memory kept after the exits, KiB "
        "| `report --top 10`, s | `report --pid CHILD --top 10`, s | every count exact |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(f"| {r['blocks']:,} | {r['frees']} | {r['cpu_fork'] * 1e3:.2f} | "
                     f"{r['rss_fork']:.0f} | {r['cpu_exit'] * 1e3:.2f} | {r['rss_after']:,} | "
                     f"{r['views']['all']:.3f} | {r['views']['child']:.3f} | "
                     f"{'yes' if r['exact'] else 'NO'} |")
    lines += [
        "",
        "\"Every count exact\": each child's `inherited_allocations` and `live_allocations`",
        "equal the parent's live blocks, its `frees` are F with no `unknown_frees`, and",
        "after its exit only its own F blocks are live (the inherited ones it kept are",
        "`inherited_released`). CPU per fork includes all the daemon does for a new",
        "process (its entry, pidfd, a copy of the parent's memory map for symbols), and",
        "the F frees and F allocations of each child, whose new stacks (one per path it",
        "allocates or frees on) are most of the memory; the clock counts in 10 ms ticks, so",
        "figures below a few tenths of a ms are rounding. The two views are taken while",
        "the children live: a child's rows are its inherited stacks as well as its own, so",
        "a view of every process ranks each child's copy of the parent's stacks, while a",
        "view of one child makes only that child's. Copying a heap of 1,000,000",
        "blocks per child instead would cost the daemon at least 24 MB a fork (24 bytes",
        "a block).",
        "",
    ]
    return lines, rows


def write_section(path, lines):
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
        text = (text[:py + 1] + body + text[py + 1:]) if py >= 0 else \
            text.rstrip("\n") + "\n\n" + body
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--blocks", default="10000,1000000")
    ap.add_argument("--forks", type=int, default=50)
    ap.add_argument("--frees", default="0,1000")
    ap.add_argument("--out", default="docs/performance.md")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("forkbench: needs root", file=sys.stderr)
        return 1
    lines, rows = measure(args.build, [int(x) for x in args.blocks.split(",")], args.forks,
                          [int(x) for x in args.frees.split(",")])
    write_section(args.out, lines)
    return 0 if all(r["exact"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
