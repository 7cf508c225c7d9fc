#!/usr/bin/env python3
"""End-to-end test of the BPF side's two per-CPU scratch sets: a uprobe program runs with
migration disabled, not preemption, so on a fully preemptible kernel (PREEMPT_RT: the kernel
matrix runs this on 6.1-rt, tests/kernels/run.py) a thread can preempt another in the middle
of building its event on the same CPU. tests/e2e/preempt.c pins two threads to each CPU, one
allocating all the time and one real-time thread waking up every 100 us to allocate a few
blocks, each thread with sizes of its own through functions of its own: an event built in a
set the other thread was using would carry one thread's size under the other's stack.
"""

from harness import *  # noqa: F401,F403
from test_stacks import run_cmd_report

CALLS = 4000  # of each real-time thread: as many wake-ups into the other's calls, a quarter


def functions(entry):
    return [f.get("function") for f in entry.get("frames") or []]


def test_preempt_scratch(r):
    """Each thread's allocations exact in count and bytes under its own three functions;
    no event lost; every site_T stack has site_T's caller chain."""
    prog = os.path.join(r.build, "tests", "preempt")
    rep, stats = run_cmd_report(r, "preempt", cmd=[prog, "--calls", str(CALLS)])
    with open(os.path.join(r.tmp, "preempt.out")) as f:
        line = next((l for l in f if l.startswith("expect ")), None)
    if line is None:
        raise Fail("preempt printed no expect line")
    expect = json.loads(line[len("expect "):])
    n, calls = expect["threads"], expect["calls"]
    if n < 2 or len(calls) != n or not expect["fifo"]:
        raise Fail(f"preempt ran {expect} (real-time threads are needed)")
    lost = number(stats, "events_lost", "stats")
    if lost:
        raise Fail(f"events_lost={lost} (two threads a CPU: no third level)")
    got = {}  # thread -> [allocations, bytes, frees]
    bad = []
    for e in rep["entries"]:
        fns = functions(e)
        m = re.fullmatch(r"site_(\d+)", str(fns[0]) if fns else "")
        if not m:
            continue
        t = int(m.group(1))
        if fns[1:3] != [f"work_{t}", f"thread_main_{t}"]:
            bad.append(f"site_{t} under {fns[1:3]}")
        acc = got.setdefault(t, [0, 0, 0])
        acc[0] += number(e, "allocations", "entry")
        acc[1] += number(e, "bytes_allocated", "entry")
        acc[2] += number(e, "frees", "entry")
    for t in range(n):
        # SIZE(t, k) = 1000 t + 100 + k % 8 for its k-th call
        want = calls[t]
        want_bytes = sum(1000 * t + 100 + k % 8 for k in range(want))
        a, b, fr = got.get(t, [0, 0, 0])
        if (a, b, fr) != (want, want_bytes, want):
            bad.append(f"thread {t}: {a} allocations of {b} bytes, {fr} frees (expected "
                       f"{want} of {want_bytes}, {want})")
    extra = sorted(set(got) - set(range(n)))
    if extra:
        bad.append(f"sites of threads that did not run: {extra}")
    if bad:
        raise Fail("; ".join(bad[:6]))
