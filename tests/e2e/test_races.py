#!/usr/bin/env python3
"""End-to-end tests of what the daemon reads of a process that keeps changing (docs/design.md,
"What is read of a process, and when"): a new program after an exec, a --comm match, a
forked child. Each makes the race a busy host makes, every time, instead of hoping for it:

- MEMTRACE_TEST_LAG_MS in the daemon's environment makes it lose that long after it
  continues a process it stopped (the process runs ahead, here to its end, before the
  daemon drains a single stack of it); MEMTRACE_TEST_RESOLVE_LAG_MS, between reading a new
  program's allocator and attaching to it (the process exits meanwhile).
- A daemon frozen with SIGSTOP drains a fork only after the child has exited and the parent
  has executed another program.
- MEMTRACE_TEST_ATTACH_LAG_MS makes it lose that long between watching a running process
  and placing its probes, while the process forks a child every 4 ms.

The MEMTRACE_TEST_* variables work only in the daemon with test hooks (r.daemon_binary(hooks=
True)); memtraced has none.

Before the fixes these failed every time: the new program's frames unnamed (frames[0] None),
the match "not traced" after 0 allocations, the child's frames named from nothing."""

import threading

from harness import *  # noqa: F401,F403
from test_faults import stop_daemon_clean

LAG = {"MEMTRACE_TEST_LAG_MS": "300"}
RESOLVE_LAG = {"MEMTRACE_TEST_RESOLVE_LAG_MS": "1500"}
ATTACH_LAG = {"MEMTRACE_TEST_ATTACH_LAG_MS": "400"}
FORKLOOP_PAIRS = 50  # tests/e2e/forkloop.c's PAIRS


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def lagging_daemon(r, lag, *args):
    daemon = r.spawn([r.daemon_binary(hooks=True), "--socket", r.sock, *args], "daemon",
                     "memtraced.out", env=dict(os.environ, **lag))
    r.wait_daemon(daemon, r.sock)
    return daemon


def generations(r, pid):
    return [t for t in r.ctl_json("stats", "--json")["targets"] if t["pid"] == pid]


def wait_generations(r, pid, states):
    end = deadline_after()
    while True:
        gens = generations(r, pid)
        if [t["state"] for t in gens] == states:
            return gens
        if time.monotonic() > end:
            raise Fail(f"states of pid {pid}: {[t['state'] for t in gens]}, expected {states}")
        time.sleep(POLL)


def check_program(r, t, expect):
    """Entry t traced all of pattern's run: no note, nothing unknown, every site of its phase
    exact and named (its totals add its start-up's allocations to the phase's)."""
    c = t["counters"]
    bad = []
    if c["allocations"] < expect["allocations"]:
        bad.append(f"allocations={c['allocations']}, the phase alone made "
                   f"{expect['allocations']}")
    if c["unknown_frees"]:
        bad.append(f"unknown_frees={c['unknown_frees']}")
    if t.get("note"):
        bad.append(f"note {t['note']!r}")
    if bad:
        raise Fail(", ".join(bad))
    check_sites(r.report("--pid", str(t["pid"]), "--top", "400", "--sort", "allocated"),
                expect)


def test_races_exec_lag(r):
    """A traced shell executes pattern, which runs to its end while the daemon lags after
    letting it go from its ld.so: its maps were read while it was held there, so every
    stack of it is named, every site exact."""
    expect_file = os.path.join(r.tmp, "expect.txt")
    script = f'trap "exec {r.pattern} --no-wait --expect-file {expect_file}" USR1; ' \
             'echo ready $$; while :; do sleep 0.05; done'
    sh_proc = r.spawn(["sh", "-c", script], "target", "sh.out")
    r.wait_line(os.path.join(r.tmp, "sh.out"), "ready ", sh_proc)
    daemon = lagging_daemon(r, LAG, "--pid", str(sh_proc.pid))
    r.wait_state("attached", sh_proc.pid, daemon)
    sh_proc.send_signal(signal.SIGUSR1)
    with r.part("new_program"):
        rc = r.wait_exit(sh_proc, "the executed pattern")
        if rc != 0:
            raise Fail(f"pattern exited with status {rc}")
        expect = r.read_expect(expect_file)
        gens = wait_generations(r, sh_proc.pid, ["execed", "exited"])
        if "pattern" not in gens[1].get("command", ""):
            raise Fail(f"the new program's command is {gens[1].get('command')!r}")
        check_program(r, gens[1], expect)
    stop_daemon_clean(r, daemon)


def test_races_comm_lag(r):
    """--comm: a match runs to its end while the daemon lags between reading its program
    and attaching to it. Its allocator is resolved while it is held in its ld.so, so the
    lag costs nothing: traced from its first call to its last, exactly."""
    name = f"mr{os.getpid() % 100000}x{int(time.time()) % 10000}"
    prog = os.path.join(r.tmp, name)
    shutil.copy(r.pattern, prog)
    expect_file = os.path.join(r.tmp, "expect.txt")
    # fp: no unwinder's stop in ld.so, which would hold the match for the daemon anyway
    daemon = lagging_daemon(r, RESOLVE_LAG, "--comm", name, "--stack-walker", "fp")
    # long enough to outlive the daemon's reading of it, not its lag
    p = r.spawn([prog, "--no-wait", "--loops", "10", "--expect-file", expect_file], "target",
                "pattern.out")
    with r.part("match"):
        rc = r.wait_exit(p, "the match")
        if rc != 0:
            raise Fail(f"the match exited with status {rc}")
        expect = r.read_expect(expect_file)
        gens = wait_generations(r, p.pid, ["exited"])
        check_program(r, gens[0], expect)
    stop_daemon_clean(r, daemon)


def test_races_fork_then_exec(r):
    """--follow-forks: the parent forks a child that allocates and exits, reaps it and
    executes sleep, all while the daemon is frozen; the daemon then drains the fork. The
    child's stacks are named from the parent's program as the daemon knew it at the fork,
    not from what /proc shows now (sleep's maps, and no child)."""
    prog = os.path.join(r.build, "tests", "forkexec")
    out = os.path.join(r.tmp, "forkexec.out")
    parent = r.spawn([prog, "sleep", "30"], "target", "forkexec.out")
    r.wait_line(out, "ready ", parent)
    daemon = r.start_daemon("--follow-forks", "--pid", str(parent.pid))
    r.wait_state("attached", parent.pid, daemon)
    daemon.send_signal(signal.SIGSTOP)
    try:
        parent.send_signal(signal.SIGUSR1)
        line = r.wait_line(out, "expect ", parent)
        child = int(line.split(" ", 1)[0])
        expect = json.loads(line.split(" ", 1)[1])
        end = deadline_after()
        while proc_state(parent.pid) != "T":  # held at its exec: sleep's maps are in place
            if time.monotonic() > end or parent.poll() is not None:
                raise Fail(f"the parent was not held at its exec "
                           f"(state {proc_state(parent.pid)})")
            time.sleep(POLL)
    finally:
        daemon.send_signal(signal.SIGCONT)
    with r.part("child_named"):
        wait_generations(r, child, ["exited"])
        check_sites(r.report("--pid", str(child), "--top", "400", "--sort", "allocated"),
                    expect)
    with r.part("parent_execed"):
        gens = wait_generations(r, parent.pid, ["execed", "attached"])
        if "sleep" not in gens[1].get("command", ""):
            raise Fail(f"the parent's new program's command is {gens[1].get('command')!r}")
    stop_daemon_clean(r, daemon)


def fork_during_attach(r, how, *args):
    """A running process that forks a child every 4 ms, attached with its children
    traced (--follow-forks, or as a --comm match) by a daemon that lags between the watch
    (from which a child is a target) and the probes. The process stands still over that
    window, so every child the daemon traces has every probe: exactly its 50 mallocs and
    50 frees. Before the hold, the children forked in the window were targets with none or
    some of the probes (0 allocations counted)."""
    prog = os.path.join(r.build, "tests", "forkloop")
    if how == "comm":  # a name of its own, so that nothing else on the machine matches
        name = f"fl{os.getpid() % 100000}x{int(time.time()) % 10000}"
        shutil.copy(prog, os.path.join(r.tmp, name))
        prog = os.path.join(r.tmp, name)
    out = os.path.join(r.tmp, "forkloop.out")
    parent = r.spawn([prog], "target", "forkloop.out")
    r.wait_line(out, "ready ", parent)
    extra = ("--comm", os.path.basename(prog)) if how == "comm" else ("--pid", str(parent.pid))
    daemon = r.spawn([r.daemon_binary(hooks=True), "--socket", r.sock, *extra, *args],
                     "daemon", "memtraced.out", env=dict(os.environ, **ATTACH_LAG))
    states, done = set(), threading.Event()

    def watch_parent():  # its states until it is attached (the socket may answer before)
        while not done.is_set():
            states.add(proc_state(parent.pid))
            time.sleep(0.002)

    watcher = threading.Thread(target=watch_parent)
    watcher.start()
    try:
        r.wait_daemon(daemon, r.sock)
        r.wait_state("attached", parent.pid, daemon)
    finally:
        done.set()
        watcher.join()
    with r.part("held"):
        if "t" not in states:
            raise Fail(f"the parent was never seen held while the daemon attached "
                       f"(states seen: {sorted(s for s in states if s)})")
    end = deadline_after()
    while len(generations_all(r)) < 30:
        if time.monotonic() > end:
            raise Fail(f"{len(generations_all(r))} targets after {TIMEOUT:.0f} s")
        time.sleep(POLL)
    parent.send_signal(signal.SIGUSR1)
    if r.wait_exit(parent, "forkloop") != 0:
        raise Fail("forkloop failed")
    with r.part("children_exact"):
        time.sleep(0.3)  # the last children's events drained
        children = [t for t in generations_all(r) if t["pid"] != parent.pid]
        bad = [(t["pid"], t["counters"]["allocations"], t["counters"]["frees"])
               for t in children
               if (t["counters"]["allocations"], t["counters"]["frees"],
                   t["counters"]["unknown_frees"]) != (FORKLOOP_PAIRS, FORKLOOP_PAIRS, 0)]
        if len(children) < 20 or bad:
            raise Fail(f"{len(children)} children traced; {len(bad)} not exactly "
                       f"{FORKLOOP_PAIRS} mallocs and frees (pid, allocations, frees): "
                       f"{bad[:5]}")
    stop_daemon_clean(r, daemon)


def test_races_fork_unheld_noted(r):
    """A running process that forks a child every 4 ms, attached with --follow-forks by a
    daemon that cannot hold it still (MEMTRACE_TEST_NO_HOLD, as where ptrace is refused) and
    lags 400 ms between the watch and the probes: the children forked in that window carry
    only some probes. Each child must be either exact (50 mallocs and frees) or carry the
    note that says so; some must carry it, none that forked after the probes were placed."""
    prog = os.path.join(r.build, "tests", "forkloop")
    out = os.path.join(r.tmp, "forkloop.out")
    parent = r.spawn([prog], "target", "forkloop.out")
    r.wait_line(out, "ready ", parent)
    daemon = r.spawn([r.daemon_binary(hooks=True), "--socket", r.sock, "--pid",
                      str(parent.pid), "--follow-forks"], "daemon", "memtraced.out",
                     env=dict(os.environ, MEMTRACE_TEST_NO_HOLD="1", **ATTACH_LAG))
    r.wait_daemon(daemon, r.sock)
    r.wait_state("attached", parent.pid, daemon)
    end = deadline_after()
    while len(generations_all(r)) < 130:  # the window's ~100 and 30 after it
        if time.monotonic() > end:
            raise Fail(f"{len(generations_all(r))} targets after {TIMEOUT:.0f} s")
        time.sleep(POLL)
    parent.send_signal(signal.SIGUSR1)
    if r.wait_exit(parent, "forkloop") != 0:
        raise Fail("forkloop failed")
    with r.part("exact_or_noted"):
        end = deadline_after()
        while True:
            children = [t for t in generations_all(r) if t["pid"] != parent.pid]
            noted = [t for t in children if "probes were being placed" in (t.get("note") or "")]
            exact = [t for t in children
                     if (t["counters"]["allocations"], t["counters"]["frees"],
                         t["counters"]["unknown_frees"]) == (FORKLOOP_PAIRS, FORKLOOP_PAIRS, 0)]
            neither = [(t["pid"], t["counters"]["allocations"], t["counters"]["frees"])
                       for t in children if t not in noted and t not in exact]
            if not neither:
                break
            if time.monotonic() > end:  # the last children's events may still drain
                raise Fail(f"{len(children)} children: {len(neither)} neither exact nor "
                           f"noted (pid, allocations, frees): {neither[:5]}")
            time.sleep(POLL)
        if not noted:
            raise Fail(f"none of {len(children)} children is noted (the 400 ms window)")
        if len(exact) < 20:
            raise Fail(f"only {len(exact)} of {len(children)} children exact")
    stop_daemon_clean(r, daemon)


def generations_all(r):
    return r.ctl_json("stats", "--json")["targets"]


def test_races_fork_during_attach(r):
    fork_during_attach(r, "pid", "--follow-forks")


def test_races_match_forks_during_attach(r):
    fork_during_attach(r, "comm")
