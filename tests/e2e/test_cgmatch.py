#!/usr/bin/env python3
"""End-to-end tests of tracing by cgroup (memtraced --cgroup PATH, --unit NAME).

A cgroup of the v2 hierarchy made by the test (on hybrid hosts the unified one beside the v1
controllers; on others the only one), and tests/e2e/forker in it four ways: there before the
daemon starts (the scan at start), started there after it (an exec in the cgroup, traced
from its first instruction), moved in by writing cgroup.procs while it runs (attached as it
runs), and the children each of them forks (from their first call). One more forker runs
outside the cgroup and must not be traced. Every process's own counters must equal what it
says it did. Then a traced process moved out of the cgroup is detached, and status says
why. Bad paths and units get one line and a non-zero exit."""

import subprocess

from harness import *  # noqa: F401,F403
from test_match import generations

OWN = ("allocations", "frees", "bytes_allocated", "bytes_freed")


def v2_mount():
    """Where the cgroup2 file system is mounted, or None."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            if post.split(" ", 1)[0] == "cgroup2":
                return pre.split()[4].replace("\\040", " ")
    return None


def procs_of(cg):
    try:
        with open(os.path.join(cg, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def remove_cgroup(cg, root):
    """Kill what is left in cg and below, then remove the directories, deepest first."""
    for d, _, _ in sorted(os.walk(cg), key=lambda w: -w[0].count("/")):
        for pid in procs_of(d):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    end = deadline_after(10)
    for d, _, _ in sorted(os.walk(cg), key=lambda w: -w[0].count("/")):
        while True:
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > end:
                    break
                time.sleep(POLL)


def move(pid, cg):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(f"{pid}\n")


def in_cgroup(r, cg, name, *args):
    """forker started by a shell that moves itself into cg first, then executes it."""
    prog = os.path.join(r.build, "tests", "forker")
    sh = f'echo $$ > "{cg}/cgroup.procs" && exec "{prog}" "$@"'
    return r.spawn(["sh", "-c", sh, "sh", *args], "target", name)


def forker_lines(path, proc, n):
    """{pid: counts} of forker's first n "expect PID {json}" lines."""
    end = deadline_after()
    while True:
        got = {}
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("expect ") and line.endswith("\n"):
                    _, pid, js = line.split(" ", 2)
                    got[int(pid)] = json.loads(js)
        if len(got) >= n:
            return got
        if proc.poll() is not None or time.monotonic() > end:
            raise Fail(f"{os.path.basename(path)}: {len(got)} lines of {n} "
                       f"(it exited: {proc.poll()})")
        time.sleep(POLL)


def newest(st, pid):
    g = generations(st, pid)
    return g[-1] if g else None


def check_own(st, pid, want, what):
    t = newest(st, pid)
    if t is None:
        raise Fail(f"{what} (pid {pid}) is not a target")
    bad = [f"{k}={t['counters'][k]} (expected {want[k]})" for k in OWN
           if t["counters"][k] != want[k]]
    if bad:
        raise Fail(f"{what} (pid {pid}): " + "; ".join(bad) +
                   f" (events lost: {st.get('events_lost')}, by kind "
                   f"{st.get('events_lost_by_kind')})")


def test_cgroup_match(r):
    root = v2_mount()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    rel = f"/memtrace-e2e-{os.getpid()}-{int(time.time()) % 100000}"
    cg = root + rel
    os.mkdir(cg)
    os.mkdir(cg + "/inner")
    try:
        with r.part("errors"):
            for args, says in ((["--cgroup", rel + "/none"], "no such cgroup"),
                               (["--cgroup", "/sys/fs/cgroup/memory/x"] if root != "/sys/fs/cgroup"
                                else ["--cgroup", "/a/../b"], "cgroup"),
                               (["--unit", f"memtrace-none-{os.getpid()}"], "has no cgroup"),
                               (["--cgroup", rel, "--comm", "x"], "one of")):
                p = subprocess.run([r.memtraced, "--socket", r.sock + ".bad", *args],
                                   capture_output=True, text=True, timeout=30)
                msg = one_error_line(p.stderr)
                if p.returncode == 0 or msg or says not in p.stderr:
                    raise Fail(f"memtraced {' '.join(args)}: status {p.returncode}, "
                               f"{msg or one_line(p.stderr)!r} (wanted a line with {says!r})")

        # there before the daemon starts (below the cgroup: its sub-cgroup), and one outside
        pre = in_cgroup(r, cg + "/inner", "pre.out", "--hold")
        pre_pid = int(r.wait_line(os.path.join(r.tmp, "pre.out"), "ready ", pre))
        out_p = r.spawn([os.path.join(r.build, "tests", "forker")], "target", "outside.out")
        out_pid = int(r.wait_line(os.path.join(r.tmp, "outside.out"), "ready ", out_p))
        moved = r.spawn([os.path.join(r.build, "tests", "forker")], "target", "moved.out")
        moved_pid = int(r.wait_line(os.path.join(r.tmp, "moved.out"), "ready ", moved))

        r.start_daemon("--cgroup", rel)
        with r.part("at_start"):
            r.wait_state("attached", pre_pid)
            st = r.ctl_json("status", "--json")
            if generations(st, out_pid) or generations(st, moved_pid):
                raise Fail("a process outside the cgroup is a target")

        # started there after the daemon: traced from its exec
        later = in_cgroup(r, cg, "later.out")
        later_pid = int(r.wait_line(os.path.join(r.tmp, "later.out"), "ready ", later))
        # moved in as it runs
        move(moved_pid, cg + "/inner")
        with r.part("moved_in"):
            r.wait_state("attached", moved_pid)

        for pid in (pre_pid, later_pid, moved_pid, out_pid):
            os.kill(pid, signal.SIGUSR1)
        # each forker's three children, and the parents (pre holds: its children wait)
        want = {}
        for name, proc, n in (("pre.out", pre, 3), ("later.out", later, 4),
                              ("moved.out", moved, 4), ("outside.out", out_p, 4)):
            want[name] = forker_lines(os.path.join(r.tmp, name), proc, n)
        with r.part("children_exact"):
            end = deadline_after()
            while True:
                st = r.ctl_json("stats", "--json")
                bad, checked = [], 0  # every process that is not right, not the first only
                for name in ("pre.out", "later.out", "moved.out"):
                    for pid, e in want[name].items():
                        if pid in (later_pid,):
                            continue  # traced from its exec: ld.so's and stdio's too
                        checked += 1
                        try:
                            check_own(st, pid, e, name.split(".")[0])
                        except Fail as f:
                            bad.append(str(f))
                if not bad:
                    break
                if time.monotonic() > end:
                    skipped = (st.get("daemon") or {}).get("bpf_runs_skipped")
                    raise Fail(f"{len(bad)} of {checked} processes: " + " | ".join(bad) +
                               f" (BPF program runs the kernel skipped: {skipped})")
                time.sleep(POLL)
        with r.part("later_from_exec"):
            t = newest(st, later_pid)
            if t is None:
                raise Fail("the forker started in the cgroup is not a target")
            if t["counters"]["allocations"] < want["later.out"][later_pid]["allocations"]:
                raise Fail(f"it made {t['counters']['allocations']} allocations, fewer than "
                           f"the {want['later.out'][later_pid]['allocations']} it counted")
        with r.part("outside_not_traced"):
            for pid in want["outside.out"]:
                if generations(st, pid):
                    raise Fail(f"pid {pid}, outside the cgroup, is a target")

        # moved out: detached, and status says why
        move(pre_pid, root)
        with r.part("moved_out"):
            t = r.wait_state("detached", pre_pid)
            note = t.get("note") or ""
            if "moved out of cgroup" not in note:
                raise Fail(f"its note is {note!r}")
            rc, text, _ = r.ctl("status")
            if "moved out of cgroup" not in text:
                raise Fail("status (text) does not say it moved out")
    finally:
        remove_cgroup(cg, root)


def test_cgroup_attach(r):
    """memtracectl attach --cgroup on a daemon started with no target: the cgroup's processes
    running then are traced, and one started there after, with their forks, exactly; a
    second match, a bad path or a pid with --cgroup get one line."""
    root = v2_mount()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    rel = f"/memtrace-e2e-attach-{os.getpid()}-{int(time.time()) % 100000}"
    cg = root + rel
    os.mkdir(cg)
    try:
        pre = in_cgroup(r, cg, "pre.out", "--hold")
        pre_pid = int(r.wait_line(os.path.join(r.tmp, "pre.out"), "ready ", pre))
        r.start_daemon()
        with r.part("errors_before"):
            for args, says in ((["attach", "--cgroup", rel + "/none"], "no such cgroup"),
                               (["attach", "--unit", f"memtrace-none-{os.getpid()}"],
                                "has no cgroup"),
                               (["attach", "--cgroup", rel, str(pre_pid)], "not both")):
                rc, _, err = r.ctl(*args)
                msg = one_error_line(err)
                if rc == 0 or msg or says not in err:
                    raise Fail(f"memtracectl {' '.join(args)}: status {rc}, "
                               f"{msg or one_line(err)!r} (wanted a line with {says!r})")
        with r.part("attached"):
            rc, out, err = r.ctl("attach", "--cgroup", rel)
            if rc != 0:
                raise Fail(f"attach --cgroup exited {rc}: {one_line(err)}")
            if str(pre_pid) not in out:
                raise Fail(f"its status does not show pid {pre_pid}: {one_line(out)[:300]}")
            r.wait_state("attached", pre_pid)
        with r.part("second_refused"):
            rc, _, err = r.ctl("attach", "--cgroup", "/")
            if rc == 0 or "already" not in err or one_error_line(err):
                raise Fail(f"a second match: status {rc}, {one_line(err)!r}")
        later = in_cgroup(r, cg, "later.out")
        later_pid = int(r.wait_line(os.path.join(r.tmp, "later.out"), "ready ", later))
        for pid in (pre_pid, later_pid):
            os.kill(pid, signal.SIGUSR1)
        want = {}
        want.update(forker_lines(os.path.join(r.tmp, "pre.out"), pre, 3))
        got_later = forker_lines(os.path.join(r.tmp, "later.out"), later, 4)
        want.update({p: e for p, e in got_later.items() if p != later_pid})
        with r.part("exact"):
            end = deadline_after()
            while True:
                st = r.ctl_json("stats", "--json")
                try:
                    for pid, e in want.items():
                        check_own(st, pid, e, "a forker's child")
                    if newest(st, later_pid) is None:
                        raise Fail("the forker started in the cgroup is not a target")
                    break
                except Fail:
                    if time.monotonic() > end:
                        raise
                    time.sleep(POLL)
    finally:
        remove_cgroup(cg, root)


def test_cgroup_move_out_in(r):
    """A process moved out of the cgroup and back in at once: moved out, its probes are
    closed off the event loop (status answers meanwhile); moved back, it is attached anew
    only once they are gone, so that its calls count once, not twice: its own counts and
    its children's are exact."""
    root = v2_mount()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    rel = f"/memtrace-e2e-outin-{os.getpid()}-{int(time.time()) % 100000}"
    cg = root + rel
    os.mkdir(cg)
    try:
        r.start_daemon("--cgroup", rel)
        p = r.spawn([os.path.join(r.build, "tests", "forker")], "target", "outin.out")
        pid = int(r.wait_line(os.path.join(r.tmp, "outin.out"), "ready ", p))
        move(pid, cg)
        with r.part("moved_in"):
            r.wait_state("attached", pid)
        move(pid, root)
        with r.part("moved_out"):
            t = r.wait_state("detached", pid)
            if "moved out of cgroup" not in (t.get("note") or ""):
                raise Fail(f"its note is {t.get('note')!r}")
        move(pid, cg)  # back at once: the old probes may still be closing
        with r.part("moved_back"):
            end = deadline_after()
            while True:
                g = generations(r.ctl_json("status", "--json"), pid)
                if len(g) >= 2 and g[-1]["state"] == "attached":
                    break
                if time.monotonic() > end:
                    raise Fail(f"not attached again: {[x['state'] for x in g]}")
                time.sleep(POLL)
        os.kill(pid, signal.SIGUSR1)
        want = forker_lines(os.path.join(r.tmp, "outin.out"), p, 4)
        with r.part("counted_once"):
            end = deadline_after()
            while True:
                st = r.ctl_json("stats", "--json")
                bad = []
                for cpid, e in want.items():
                    try:
                        check_own(st, cpid, e, "parent" if cpid == pid else "child")
                    except Fail as f:
                        bad.append(str(f))
                if not bad:
                    break
                if time.monotonic() > end:
                    raise Fail(" | ".join(bad))
                time.sleep(POLL)
    finally:
        remove_cgroup(cg, root)


MOVE_EXEC_ROUNDS = 8
MOVE_EXEC_AT_ONCE = 4


def move_then_exec(r, cg, name, spins, tracer=()):
    """A shell that moves itself into cg, counts to spins (its own time, no other process: the
    exec lands before, during or after the daemon's attach), then executes forker."""
    prog = os.path.join(r.build, "tests", "forker")
    sh = (f'echo $$ > "{cg}/cgroup.procs" && i=0 && '
          f'while [ $i -lt {spins} ]; do i=$((i+1)); done && exec "{prog}"')
    return r.spawn([*tracer, "sh", "-c", sh], "target", name)


def move_exec_rounds(r, tracer=(), env=None):
    """MOVE_EXEC_ROUNDS rounds of MOVE_EXEC_AT_ONCE move_then_exec shells, each round's exec a
    little later after its move; checks what test_cgroup_move_exec says."""
    root = v2_mount()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    rel = f"/memtrace-e2e-mvexec-{os.getpid()}-{int(time.time()) % 100000}"
    cg = root + rel
    os.mkdir(cg)
    try:
        # 32 forkers and their 96 children: more than the 64 matches traced by default
        r.start_daemon("--cgroup", rel, "--max-targets", "1000", env=env, hooks=env is not None)
        procs = []  # (name, Popen, pid)
        for rnd in range(MOVE_EXEC_ROUNDS):
            batch = [(f"mv{rnd}_{k}.out",
                      move_then_exec(r, cg, f"mv{rnd}_{k}.out",
                                     (rnd * MOVE_EXEC_AT_ONCE + k) * 150, tracer))
                     for k in range(MOVE_EXEC_AT_ONCE)]
            for name, p in batch:
                procs.append((name, p, int(r.wait_line(os.path.join(r.tmp, name), "ready ", p))))
        forker = os.path.join(r.build, "tests", "forker")
        bad = []
        with r.part("traced"):
            end = deadline_after()
            while True:
                st = r.ctl_json("status", "--json")
                bad = []
                for name, _, pid in procs:
                    t = newest(st, pid)
                    if t is None or t.get("state") != "attached" or \
                            not (t.get("command") or "").startswith(forker):
                        bad.append(f"pid {pid}: " + ("not a target" if t is None else
                                   f"{t.get('state')} {t.get('command')!r}"))
                if not bad or time.monotonic() > end:
                    break
                time.sleep(POLL)
            if bad:
                raise Fail(f"{len(bad)} of {len(procs)} forkers not traced as forker: " +
                           " | ".join(bad))
        for _, _, pid in procs:
            os.kill(pid, signal.SIGUSR1)
        want = {name: forker_lines(os.path.join(r.tmp, name), p, 4) for name, p, _ in procs}
        with r.part("exact"):
            end = deadline_after()
            while True:
                st = r.ctl_json("stats", "--json")
                bad, firsts = [], {}
                for name, _, pid in procs:
                    for cpid, e in want[name].items():
                        try:
                            if cpid != pid:
                                check_own(st, cpid, e, name.split(".")[0] + "'s child")
                                continue
                            t = newest(st, pid)
                            if t is None:
                                raise Fail(f"pid {pid} is not a target")
                            c = t["counters"]
                            if any(c[k] < e[k] for k in OWN):
                                raise Fail(f"pid {pid}: {[c[k] for k in OWN]}, less than "
                                           f"it did: {[e[k] for k in OWN]}")
                            firsts.setdefault(tuple(c[k] for k in OWN), []).append(pid)
                            for o in generations(st, pid)[:-1]:  # the shell's, if any
                                if (o.get("command") or "").startswith(forker):
                                    raise Fail(f"pid {pid}: an older entry "
                                               f"({o.get('state')}) is the forker's too")
                        except Fail as f:
                            bad.append(str(f))
                if len(firsts) > 1:
                    bad.append("the forkers' own counters differ: " + "; ".join(
                        f"{list(k)} ({len(v)}: {v[:4]})" for k, v in firsts.items()))
                if not bad:
                    break
                if time.monotonic() > end:
                    raise Fail(f"{len(bad)} wrong: " + " | ".join(bad))
                time.sleep(POLL)
    finally:
        remove_cgroup(cg, root)


def test_cgroup_move_exec(r):
    """`sh -c 'echo $$ > cgroup.procs; exec forker'` (runc's init, many service managers), many
    times in a row, a few at once, while memtraced --cgroup runs: the move and the exec race
    the daemon's attach. Each forker must be traced from its own program: its newest entry
    names forker, holds at least what it says it did, and the same counters as every other
    round's (all are traced from their first instruction); its children exactly; no older
    entry of its pid (the shell's, traced from its move) is the forker's."""
    move_exec_rounds(r)


def test_cgroup_move_exec_unheld(r):
    """The same where the daemon cannot hold the process still with ptrace while it attaches
    (Yama's ptrace_scope 3, another tracer: MEMTRACE_TEST_NO_HOLD in the daemon with test
    hooks), and loses 100 ms after the exec tracepoint began to watch it
    (MEMTRACE_TEST_ATTACH_LAG_MS): most of the execs land there, in the middle of the attach."""
    move_exec_rounds(r, env={"MEMTRACE_TEST_NO_HOLD": "1", "MEMTRACE_TEST_ATTACH_LAG_MS": "100"})
