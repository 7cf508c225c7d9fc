#!/usr/bin/env python3
"""End-to-end tests of process families: a forked child's heap begins as its parent's.

tests/e2e/inherit.c forks three workers from a parent traced from its first call
(memtraced --follow-forks -- inherit): each worker frees blocks it inherited (some of them
freed by the parent after the fork, too), reallocates one, allocates its own, and prints
exactly what its heap holds. While the workers live, every counter of each is exact with
the inherited blocks (no unknown free), report --pid and leaks --pid show the inherited
blocks under the parent's allocation sites, and the invariant of docs/metrics.md holds;
once they exit, what they inherited and kept leaves their heaps (inherited_released)."""

from harness import *  # noqa: F401,F403
from test_faults import stop_daemon_clean

INHERIT_KEYS = ("inherited_allocations", "inherited_bytes", "allocations", "frees",
                "bytes_allocated", "bytes_freed", "live_allocations", "live_bytes",
                "unknown_frees")
KEEP, KEEP_SIZE, SHARED = 40, 300, 100


def balanced(c):
    return c["live_allocations"] == (c["inherited_allocations"] + c["allocations"] - c["frees"]
                                     - c["missed_frees"] - c["untracked_allocations"]
                                     - c["inherited_released"])


def read_expects(r, path, n, proc):
    end = deadline_after()
    while True:
        expect = {}
        with open(path) as f:
            for line in f:
                if line.startswith("expect ") and line.endswith("\n"):
                    _, pid, js = line.split(" ", 2)
                    expect[int(pid)] = json.loads(js)
        if len(expect) == n:
            return expect
        if proc.poll() is not None or time.monotonic() > end:
            raise Fail(f"{len(expect)} expect lines of {n} in {os.path.basename(path)}")
        time.sleep(POLL)


def family_run(r):
    prog = os.path.join(r.build, "tests", "inherit")
    daemon = r.start_daemon("--follow-forks", "--", prog, wait=False)
    r.wait_daemon(daemon, r.sock)
    expect = read_expects(r, os.path.join(r.tmp, "memtraced.out"), 4, daemon)
    parent = min(expect)  # forked first, the lowest pid (no wrap in a test's time)
    return daemon, expect, parent


def check_counters(st, expect, keys):
    got = {t["pid"]: t["counters"] for t in st["targets"] if t["state"] != "execed"}
    bad = []
    for pid, want in expect.items():
        if pid not in got:
            bad.append(f"pid {pid} not traced")
            continue
        bad += [f"pid {pid}: {k}={got[pid][k]} (expected {want[k]})" for k in keys
                if k in want and got[pid][k] != want[k]]
        if not balanced(got[pid]):
            bad.append(f"pid {pid}: counters do not add up: {got[pid]}")
    if bad:
        raise Fail("; ".join(bad))
    return got


def wait_counters(r, expect, keys):
    end = deadline_after()
    while True:
        st = r.ctl_json("stats", "--json")
        try:
            return check_counters(st, expect, keys)
        except Fail:
            if time.monotonic() > end:
                raise
        time.sleep(POLL)


def test_family_inherited_heap(r):
    """Each worker's counters, sites and leaks, with the heap it inherited."""
    daemon, expect, parent = family_run(r)
    workers = sorted(p for p in expect if p != parent)
    got = wait_counters(r, expect, INHERIT_KEYS)
    for i, pid in enumerate(workers):
        freed = (i + 1) * 10 * 2 + 1
        with r.part(f"report_{i}"):
            entries = r.report("--pid", str(pid), "--top", "50")
            sums = site_sums(entries)
            keep = sums.get("site_keep", {})
            shared = sums.get("site_shared", {})
            if keep.get("live_allocations") != KEEP or keep.get("live_bytes") != KEEP * KEEP_SIZE:
                raise Fail(f"pid {pid}: site_keep live {keep}: expected {KEEP} blocks")
            if shared.get("live_allocations") != SHARED - freed or \
                    shared.get("frees") != freed:
                raise Fail(f"pid {pid}: site_shared {shared}: expected "
                           f"{SHARED - freed} live, {freed} frees")
            for e in entries:
                if frame0_function(e) == "site_keep" and \
                        e.get("inherited_allocations") != KEEP:
                    raise Fail(f"pid {pid}: site_keep entry inherited "
                               f"{e.get('inherited_allocations')}, expected {KEEP}")
            mine = sums.get("site_worker", {})
            if mine.get("live_allocations") != (i + 1) * 25:
                raise Fail(f"pid {pid}: site_worker {mine}")
        with r.part(f"leaks_{i}"):
            lk = r.ctl_json("leaks", "--pid", str(pid), "--older-than", "0", "--json")
            total = sum(e["blocks"] for e in lk["entries"])
            if total != got[pid]["live_allocations"]:
                raise Fail(f"pid {pid}: leaks lists {total} blocks, its heap holds "
                           f"{got[pid]['live_allocations']}")
    # the parent's own view is its own
    par = got[parent]
    if par["inherited_allocations"] or par["live_allocations"] != KEEP + SHARED // 2:
        raise Fail(f"parent: {par}")
    # the workers exit: what they inherited and kept leaves their heaps
    for pid in workers:
        os.kill(pid, signal.SIGUSR1)
    end = deadline_after()
    while True:
        st = r.ctl_json("stats", "--json")
        ts = {t["pid"]: t for t in st["targets"]}
        if all(ts.get(p, {}).get("state") == "exited" for p in expect):
            break
        if time.monotonic() > end:
            raise Fail(f"targets {[(t['pid'], t['state']) for t in st['targets']]}")
        time.sleep(POLL)
    for i, pid in enumerate(workers):
        c = ts[pid]["counters"]
        own = (i + 1) * 25
        kept = KEEP + SHARED - ((i + 1) * 20 + 1)
        if c["live_allocations"] != own + 1 or c["inherited_released"] != kept or \
                not balanced(c):
            raise Fail(f"pid {pid} after its exit: live {c['live_allocations']} (expected "
                       f"{own + 1}: its own and the realloc'ed block), inherited_released "
                       f"{c['inherited_released']} (expected {kept})")
    if not balanced(st):
        raise Fail(f"the totals do not add up: {counters_of(st)}")
    stop_daemon_clean(r, daemon)
