#!/usr/bin/env python3
"""End-to-end tests of one daemon with many targets: memtraced starts idle,
memtracectl attach adds processes at run time, detach removes one (its probes
go: it runs at untraced speed again by its own count) while the other's
totals go on."""

from harness import *  # noqa: F401,F403
from test_core import unused_pid
from test_faults import stop_daemon_clean


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

        # attached again: a new entry of the pid counts from zero, the old one stays as it was
        rc, _, err = r.ctl("attach", str(procs[0].pid))
        if rc:
            raise Fail(f"attach again exited {rc}: {one_line(err)}")
        time.sleep(1.2)
        st = r.ctl_json("stats", "--json")
        gens = [t for t in st["targets"] if t["pid"] == procs[0].pid]
        if [t["state"] for t in gens] != ["detached", "attached"]:
            raise Fail(f"entries of the pid attached again: {[t['state'] for t in gens]}")
        if gens[0]["counters"]["allocations"] != a2:
            raise Fail(f"the detached entry changed ({a2} -> "
                       f"{gens[0]['counters']['allocations']})")
        if not gens[1]["counters"]["allocations"]:
            raise Fail("the new entry counts nothing")
    finally:
        for p in procs:
            p.kill()
            p.wait()


EXACT = ("allocations", "frees", "bytes_allocated", "bytes_freed", "live_allocations",
         "live_bytes")


def run_forker(r, *daemon_args, exec_child=None, lines=4, late=False):
    """forker under a daemon: returns ({pid: expect} of parent and children, parent pid)."""
    prog = os.path.join(r.build, "tests", "forker")
    out = os.path.join(r.tmp, "forker.out")
    argv = [prog] + (["--exec-child"] + exec_child if exec_child else []) + \
        (["--late"] if late else [])
    target_proc = r.spawn(argv, "target", "forker.out")
    r.wait_line(out, "ready ", target_proc)
    daemon = r.start_daemon(*daemon_args, "--pid", str(target_proc.pid))
    r.wait_state("attached", target_proc.pid, daemon)
    target_proc.send_signal(signal.SIGUSR1)
    rc = r.wait_exit(target_proc, "forker")
    if rc != 0:
        raise Fail(f"forker exited with status {rc}")
    expect = {}
    with open(out) as f:
        for line in f:
            if line.startswith("expect "):
                _, pid, js = line.split(" ", 2)
                expect[int(pid)] = json.loads(js)
    if len(expect) != lines:
        raise Fail(f"forker printed {len(expect)} expect lines, not {lines}")
    return expect, target_proc.pid, daemon


def wait_all_exited(r, pids):
    end = deadline_after()
    while True:
        st = r.ctl_json("stats", "--json")
        got = {t["pid"]: t for t in st["targets"]}
        if all(p in got and got[p]["state"] == "exited" for p in pids):
            return st, got
        if time.monotonic() > end:
            raise Fail(f"targets: {[(t['pid'], t['state']) for t in st['targets']]}; "
                       f"expected {sorted(pids)} all exited")
        time.sleep(POLL)


def test_follow_forks(r, late=False):
    """--follow-forks: three children forked after attach are traced from their first
    allocation, each under its own pid with exact totals; the parent's stay its own."""
    expect, parent, daemon = run_forker(r, "--follow-forks", late=late)
    st, got = wait_all_exited(r, list(expect))
    if len(st["targets"]) != 4:
        raise Fail(f"{len(st['targets'])} targets, expected the parent and 3 children")
    bad = []
    for pid, want in expect.items():
        c = got[pid]["counters"]
        bad += [f"pid {pid}{' (parent)' if pid == parent else ''}: {k}={c[k]} "
                f"(expected {want[k]})" for k in EXACT if c[k] != want[k]]
    if bad:
        raise Fail("; ".join(bad))
    for pid in expect:
        if pid != parent and "forker" not in got[pid].get("command", ""):
            raise Fail(f"child {pid} has command {got[pid].get('command')!r}")
    entries = r.report("--pid", str(min(p for p in expect if p != parent)), "--top", "5")
    if frame0_function(entries[0]) != "site_child":
        raise Fail(f"a child's top site is {frame0_function(entries[0])}, not site_child")
    stop_daemon_clean(r, daemon)


def test_follow_forks_late(r):
    """--follow-forks, and the first child allocates only after its two siblings have
    exited: still exact (the BPF programs hang off perf events that no child holds a copy
    of, so a child's exit cannot take them away: src/daemon/attach/probes.c)."""
    test_follow_forks(r, late=True)


def test_follow_forks_exec(r):
    """--follow-forks, and the first child executes pattern: it gets an entry of its own for
    the new program (state exited after execed), every pattern site exact through the probes
    it inherited, while its siblings exit (docs/design.md, the guard event); the other
    children and the parent stay exact."""
    expect_file = os.path.join(r.tmp, "expect.txt")
    expect, parent, daemon = run_forker(r, "--follow-forks", lines=3,
                                        exec_child=[r.pattern, "--no-wait", "--expect-file",
                                                    expect_file])
    pexpect = r.read_expect(expect_file)
    end = deadline_after()
    while True:
        st = r.ctl_json("stats", "--json")
        if len(st["targets"]) == 5 and all(t["state"] in ("exited", "execed")
                                           for t in st["targets"]):
            break
        if time.monotonic() > end:
            raise Fail(f"targets {[(t['pid'], t['state']) for t in st['targets']]}: expected "
                       "the parent, 3 children, one of them twice (execed, exited)")
        time.sleep(POLL)
    got = {t["pid"]: t for t in st["targets"] if t["state"] == "exited"}
    bad = [f"pid {pid}: {k}={got[pid]['counters'][k]} (expected {want[k]})"
           for pid, want in expect.items() for k in EXACT if got[pid]["counters"][k] != want[k]]
    if bad:
        raise Fail("; ".join(bad))
    execed = [t for t in st["targets"] if t["state"] == "execed"]
    if len(execed) != 1:
        raise Fail(f"{len(execed)} entries in state execed, expected 1")
    new = got[execed[0]["pid"]]
    if "pattern" not in new.get("command", "") or new.get("note"):
        raise Fail(f"the new program's entry: command {new.get('command')!r}, "
                   f"note {new.get('note')!r}")
    check_sites(r.report("--pid", str(new["pid"]), "--top", "400", "--sort", "allocated"),
                pexpect)
    stop_daemon_clean(r, daemon)


def test_follow_forks_detach(r):
    """--follow-forks, then detach the parent while its children run: the children ran on
    copies of its probes, so they are detached with it, and every entry says so."""
    prog = os.path.join(r.build, "tests", "forker")
    out = os.path.join(r.tmp, "forker.out")
    parent = r.spawn([prog, "--hold"], "target", "forker.out")
    r.wait_line(out, "ready ", parent)
    daemon = r.start_daemon("--follow-forks", "--pid", str(parent.pid))
    r.wait_state("attached", parent.pid, daemon)
    parent.send_signal(signal.SIGUSR1)
    end = deadline_after()
    while True:
        with open(out) as f:
            kids = [int(line.split()[1]) for line in f if line.startswith("expect ")]
        st = r.ctl_json("status", "--json")
        if len(kids) == 3 and len(st["targets"]) == 4:
            break
        if time.monotonic() > end:
            raise Fail(f"{len(kids)} children reported, {len(st['targets'])} targets")
        time.sleep(POLL)
    try:
        rc, _, err = r.ctl("detach", str(parent.pid))
        if rc:
            raise Fail(f"detach exited {rc}: {one_line(err)}")
        st = r.ctl_json("status", "--json")
        states = {t["pid"]: t["state"] for t in st["targets"]}
        if states != {p: "detached" for p in [parent.pid] + kids}:
            raise Fail(f"states after detaching the parent: {states}")
    finally:
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass
        parent.send_signal(signal.SIGUSR1)
        r.wait_exit(parent, "forker")
    stop_daemon_clean(r, daemon)


def test_no_follow_forks(r):
    """Without --follow-forks the children are not traced: one target, the parent's totals."""
    expect, parent, daemon = run_forker(r)
    st, got = wait_all_exited(r, [parent])
    if [t["pid"] for t in st["targets"]] != [parent]:
        raise Fail(f"targets {[t['pid'] for t in st['targets']]}, expected only {parent}")
    c = st["counters"] if "counters" in st else got[parent]["counters"]
    bad = [f"{k}={got[parent]['counters'][k]} (expected {expect[parent][k]})"
           for k in EXACT if got[parent]["counters"][k] != expect[parent][k]]
    if bad:
        raise Fail("; ".join(bad))
    del c
    stop_daemon_clean(r, daemon)


def test_comm(r):
    """--comm: a matching process started after the daemon is traced from its first
    instruction (stopped at exec until the probes are placed): every site exact; a process
    of another name is not traced; --max-targets 1 leaves a second match alone."""
    expect_file = os.path.join(r.tmp, "expect.txt")
    # a name of its own: other processes on the machine may run "pattern"
    name = f"mt{os.getpid() % 100000}x{int(time.time()) % 10000}"
    prog = os.path.join(r.tmp, name)
    shutil.copy(r.pattern, prog)
    daemon = r.start_daemon("--comm", name, "--max-targets", "1")
    spin = r.spawn([os.path.join(r.build, "tests", "spin")], "other", "spin.out")
    p = r.spawn([prog, "--no-wait", "--expect-file", expect_file], "target",
                "pattern.out")
    rc = r.wait_exit(p, "pattern")
    if rc != 0:
        raise Fail(f"pattern exited with status {rc} under --comm")
    expect = r.read_expect(expect_file)
    t = r.wait_state("exited", p.pid, daemon)
    if name not in t.get("command", ""):
        raise Fail(f"the matched target's command is {t.get('command')!r}")
    with r.part("sites"):
        check_sites(r.report("--pid", str(p.pid), "--top", "400", "--sort", "allocated"),
                    expect)
    with r.part("others_untouched"):
        st = r.ctl_json("status", "--json")
        if any(x["pid"] == spin.pid for x in st["targets"]):
            raise Fail("a process of another name is traced")
    with r.part("cap"):
        first = r.spawn([prog], "capped1", "p1.out")  # waits for SIGUSR1
        r.wait_line(os.path.join(r.tmp, "p1.out"), "ready", first)
        r.wait_state("attached", first.pid, daemon)
        second = r.spawn([prog], "capped2", "p2.out")
        r.wait_line(os.path.join(r.tmp, "p2.out"), "ready", second)
        st = r.ctl_json("status", "--json")
        if any(x["pid"] == second.pid for x in st["targets"]):
            raise Fail("a match past --max-targets 1 is traced")
        with open(os.path.join(r.tmp, "p2.out")) as f:
            if "ready" not in f.read():
                raise Fail("the match past the cap does not run")
        for q in (first, second, spin):
            q.kill()
            q.wait()
    stop_daemon_clean(r, daemon)


def proc_state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_comm_daemon_killed(r):
    """--comm stops a new match at its exec until its probes are placed. A daemon killed in
    that window (here: frozen with SIGSTOP, then SIGKILLed) must not leave the match stopped:
    the keeper process continues it, and it runs to the end unharmed."""
    name = f"mk{os.getpid() % 100000}x{int(time.time()) % 10000}"
    prog = os.path.join(r.tmp, name)
    shutil.copy(r.pattern, prog)
    daemon = r.start_daemon("--comm", name)
    daemon.send_signal(signal.SIGSTOP)  # it cannot continue what BPF stops now
    expect_file = os.path.join(r.tmp, "expect.txt")
    p = r.spawn([prog, "--no-wait", "--expect-file", expect_file], "target", "pattern.out")
    kill_while_stopped(r, daemon, p, expect_file)


def kill_while_stopped(r, daemon, proc, expect_file):
    """proc is about to be stopped for the frozen daemon: once it is, SIGKILL the daemon;
    the keeper must continue proc, which then runs pattern to the end."""
    end = deadline_after()
    while proc_state(proc.pid) != "T":
        if time.monotonic() > end or proc.poll() is not None:
            raise Fail(f"pid {proc.pid} was not stopped at its exec "
                       f"(state {proc_state(proc.pid)})")
        time.sleep(POLL)
    daemon.kill()
    r.wait_exit(daemon, "memtraced after SIGKILL")
    rc = r.wait_exit(proc, "the stopped process after the daemon was killed")
    if rc != 0:
        raise Fail(f"the stopped process exited with status {rc}")
    r.read_expect(expect_file)  # its own checks passed
    with open(r.daemon_logs[-1], errors="replace") as f:
        if "continued 1 stopped process" not in f.read():
            raise Fail("the keeper did not say it continued the process")


def test_exec_daemon_killed(r):
    """A traced process that executes a new program is stopped at the exec until the daemon
    has resolved the new allocator. A daemon killed meanwhile (frozen, then SIGKILLed) must
    not leave it stopped: the keeper continues it, and the new program runs to the end."""
    expect_file = os.path.join(r.tmp, "expect.txt")
    script = f'trap "exec {r.pattern} --no-wait --expect-file {expect_file}" USR1; ' \
             'echo ready $$; while :; do sleep 0.05; done'
    sh_proc = r.spawn(["sh", "-c", script], "target", "sh.out")
    r.wait_line(os.path.join(r.tmp, "sh.out"), "ready ", sh_proc)
    daemon = r.start_daemon("--pid", str(sh_proc.pid))
    r.wait_state("attached", sh_proc.pid, daemon)
    daemon.send_signal(signal.SIGSTOP)
    sh_proc.send_signal(signal.SIGUSR1)
    kill_while_stopped(r, daemon, sh_proc, expect_file)
