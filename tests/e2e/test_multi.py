#!/usr/bin/env python3
"""End-to-end tests of one daemon with many targets: memtraced starts idle,
memtracectl attach adds processes at run time, detach removes one (its probes
go: it runs at untraced speed again by its own count) while the other's
totals go on."""

from harness import *  # noqa: F401,F403
from test_core import unused_pid


def rates(path, last=3):
    with open(path) as f:
        nums = [int(x) for x in f.read().split()]
    return nums[-last:]


def target(status, pid):
    for t in status["targets"]:
        if t["pid"] == pid:
            return t
    raise Fail(f"pid {pid} not in status")


def counters(r, pid):
    st = r.ctl_json("stats", "--json")
    return target(st, pid)["counters"]["allocations"]


def test_attach_detach(r):
    spin = os.path.join(r.build, "tests", "spin")
    outs = [os.path.join(r.tmp, f"spin{i}.out") for i in range(2)]
    procs = []
    for o in outs:
        p = subprocess.Popen([spin], stdout=open(o, "w"))
        r.extra_pids.add(p.pid)
        procs.append(p)
    try:
        r.start_daemon()  # no target: idle
        st = r.ctl_json("status", "--json")
        if st["targets"]:
            raise Fail(f"an idle daemon lists targets: {st['targets']}")
        time.sleep(1)
        untraced = min(rates(outs[0]))
        for p in procs:
            rc, out, err = r.ctl("attach", str(p.pid))
            if rc:
                raise Fail(f"attach {p.pid} exited {rc}: {one_line(err)}")
        st = r.ctl_json("status", "--json")
        if sorted(t["pid"] for t in st["targets"]) != sorted(p.pid for p in procs) or \
                any(t["state"] != "attached" for t in st["targets"]):
            raise Fail(f"status after two attaches: {st['targets']}")
        time.sleep(1.2)
        traced = max(rates(outs[0]))
        if traced * 5 > untraced:
            raise Fail(f"tracing did not slow the target ({untraced} -> {traced} pairs/200ms)")
        a0, b0 = counters(r, procs[0].pid), counters(r, procs[1].pid)
        if not a0 or not b0:
            raise Fail(f"no allocations counted ({a0}, {b0})")

        rc, _, err = r.ctl("detach", str(procs[0].pid))
        if rc:
            raise Fail(f"detach exited {rc}: {one_line(err)}")
        a1 = counters(r, procs[0].pid)
        time.sleep(1.2)
        a2, b2 = counters(r, procs[0].pid), counters(r, procs[1].pid)
        if a2 != a1:
            raise Fail(f"the detached target is still counted ({a1} -> {a2})")
        if b2 <= b0:
            raise Fail(f"the other target stopped being counted ({b0} -> {b2})")
        after = min(rates(outs[0]))
        if after < untraced / 3:
            raise Fail(f"probes still slow the detached target: {after} pairs/200ms, "
                       f"{untraced} untraced")
        t = target(r.ctl_json("status", "--json"), procs[0].pid)
        if t["state"] != "detached" or t["probes"] != 0:
            raise Fail(f"detached target shows {t['state']} with {t['probes']} probes")

        # errors: one line, exit 1; usage: exit 2
        for args, want in ((["attach", str(unused_pid())], 1), (["attach", str(procs[1].pid)], 1),
                           (["detach", str(procs[0].pid)], 1), (["attach"], 2),
                           (["detach", "x"], 2)):
            rc, _, err = r.ctl(*args)
            if rc != want or len(err.strip().splitlines()) != 1:
                raise Fail(f"memtracectl {' '.join(args)}: exit {rc} (want {want}), "
                           f"stderr {err!r}")
    finally:
        for p in procs:
            p.kill()
            p.wait()


TESTS = [("attach_detach", test_attach_detach)]
