#!/usr/bin/env python3
"""Soak test (make soak; not in CI): two threads allocating at full speed with random
lifetimes under memtraced for a long time.

    python3 tests/soak.py --build DIR [--minutes M] [--sample S]

Passes when, at the end, every counter equals what the target did (its own tally), no event was
lost, and the daemon's RSS after warm-up (the first 10% of the run) grew by less than 10%
(or 8 MiB). Prints one line per sample and a summary to copy into docs/reliability.md.
"""

import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e"))
from harness import Fail, Results, Run, counters_of, number  # noqa: E402


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def soak(r, minutes, sample):
    seconds = minutes * 60
    churn = os.path.join(r.build, "tests", "churn")
    target = r.spawn([churn, "--threads", "2", "--seconds", str(seconds), "--wait"], "target",
                     "churn.out")
    r.wait_line(os.path.join(r.tmp, "churn.out"), "ready ", target)
    daemon = r.start_daemon("--pid", str(target.pid))
    r.wait_state("attached", target.pid, daemon)
    target.send_signal(signal.SIGUSR1)
    t0 = time.monotonic()
    samples = []
    print(f"soak: {minutes} min, two threads, random sizes 1-4096 B, random lifetimes "
          f"(1024 slots each)", flush=True)
    while target.poll() is None:
        time.sleep(sample)
        st = r.ctl_json("status", "--json")
        elapsed = time.monotonic() - t0
        row = (elapsed, rss_kib(daemon.pid), number(st, "events_received", "status"),
               number(st, "events_lost", "status"), cpu_seconds(daemon.pid))
        samples.append(row)
        print(f"  t={row[0]:7.1f}s  daemon_rss={row[1] / 1024:7.1f} MiB  "
              f"events_received={row[2]}  events_lost={row[3]}  daemon_cpu={row[4]:.1f}s",
              flush=True)
        text = open(os.path.join(r.tmp, "churn.out")).read()
        if "expect " in text:
            break
    text = r.wait_line(os.path.join(r.tmp, "churn.out"), "expect ", target)
    import json
    expect = json.loads(text)
    if expect.get("ok") is not True:
        raise Fail("churn found a corrupted block")
    stats = r.wait_stats(expect)
    got = counters_of(stats)
    problems = [f"{k}={got[k]} (expected {expect[k]})"
                for k in ("allocations", "frees", "bytes_allocated", "bytes_freed",
                          "live_allocations", "live_bytes") if got[k] != expect[k]]
    if got["events_lost"]:
        problems.append(f"events_lost={got['events_lost']}")
    warm = [s for s in samples if s[0] >= seconds * 0.1] or samples
    base, last = warm[0][1], samples[-1][1]
    growth = last - base
    if growth > max(base * 0.10, 8 * 1024):
        problems.append(f"daemon RSS grew from {base} KiB to {last} KiB after warm-up")
    rate = expect["events"] / seconds
    print(f"soak summary: {minutes} min, {expect['events']} allocator calls "
          f"({rate / 1e3:.0f} k/s), {got['events_lost']} lost; totals "
          f"{'exact' if not problems else 'WRONG'}; daemon RSS {base / 1024:.1f} MiB after "
          f"warm-up -> {last / 1024:.1f} MiB at the end; daemon CPU {samples[-1][4]:.0f} s",
          flush=True)
    if problems:
        raise Fail("; ".join(problems))


def main():
    ap = argparse.ArgumentParser(description="memtrace soak test (root, real BPF)")
    ap.add_argument("--build", required=True)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--sample", type=float, default=10)
    args = ap.parse_args()
    results = Results()
    r = Run(os.path.abspath(args.build), "soak", results)
    try:
        soak(r, args.minutes, args.sample)
        results.record("soak")
    except Fail as e:
        results.record("soak", str(e), r.log_tail())
    finally:
        r.cleanup()
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
