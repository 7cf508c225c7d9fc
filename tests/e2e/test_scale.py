#!/usr/bin/env python3
"""End-to-end tests at scale (issue 14), small enough for make check: tests/bench/heapscale
holding tens of thousands of live blocks over thousands of distinct stacks. Every view answers,
the views the daemon groups for the client equal the same views grouped by the client from a
snapshot file, and a target traced through a small ring buffer while clients take full
snapshots loses no event and counts everything exactly."""

import threading

from harness import *  # noqa: F401,F403

LEVELS = 12  # 4096 distinct stacks
BLOCKS = 30000


class Scale:
    """tests/bench/heapscale under one daemon: commands on its stdin, replies on its stdout."""

    def __init__(self, r, levels, *daemon_args):
        path = os.path.join(r.build, "tests", "heapscale")
        self.r = r
        self.out = os.path.join(r.tmp, "heapscale.out")
        self.proc = subprocess.Popen([path, str(levels), "2"], stdin=subprocess.PIPE,
                                     stdout=open(self.out, "w"), start_new_session=True,
                                     text=True)
        r.procs.append((self.proc, "target"))
        self.replies = 0
        self.wait_reply("ready")
        self.daemon = r.start_daemon("--pid", str(self.proc.pid), *daemon_args)
        r.wait_state("attached", self.proc.pid, self.daemon)

    def wait_reply(self, word, seconds=120):
        """The next reply line, which must start with word."""
        end = deadline_after(seconds)
        while True:
            with open(self.out) as f:
                lines = f.read().splitlines()
            if len(lines) > self.replies:
                line = lines[self.replies]
                self.replies += 1
                if not line.startswith(word):
                    raise Fail(f"heapscale said {line!r}, expected {word}")
                return line
            if self.proc.poll() is not None:
                raise Fail(f"heapscale exited with status {self.proc.returncode}")
            if time.monotonic() > end:
                raise Fail(f"heapscale did not say {word} within {seconds} s")
            time.sleep(POLL)

    def command(self, line, reply, seconds=120):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.wait_reply(reply, seconds)

    def settle(self, allocations):
        """Until the daemon counted allocations allocations (its requests drain first)."""
        end = deadline_after(120)
        while True:
            st = self.r.ctl_json("stats", "--json")
            if number(st, "allocations", "stats") >= allocations:
                return st
            if time.monotonic() > end:
                raise Fail(f"the daemon counted {st['allocations']} allocations, "
                           f"not {allocations}, within 120 s")
            time.sleep(0.2)


def test_scale_views(r):
    """30 000 live blocks over 4096 stacks: every view answers; the daemon's grouped views and
    leaks equal the client's grouping of a snapshot file."""
    s = Scale(r, LEVELS)
    s.command(f"hold {BLOCKS}", "held")
    # the held array's calloc, then one block per call down the paths
    st = s.settle(BLOCKS + 1)
    path = os.path.join(r.tmp, "all.mts")

    with r.part("counts"):
        if number(st, "live_allocations", "stats") != BLOCKS + 1 or st["events_lost"]:
            raise Fail(f"live_allocations={st['live_allocations']} events_lost="
                       f"{st['events_lost']}, expected {BLOCKS + 1} and 0")
        if number(st, "stacks_total", "stats") != (1 << LEVELS) + 1:
            raise Fail(f"stacks_total={st['stacks_total']}, expected {(1 << LEVELS) + 1}")

    with r.part("every_view"):
        rc, _, err = r.ctl("snapshot", "-o", path, timeout=60)
        if rc:
            raise Fail(f"snapshot -o exited {rc}: {one_line(err)[:200]}")
        for view in (("status",), ("stats",), ("report", "--top", "10"),
                     ("report", "--by", "line"), ("report", "--by", "function", "--cumulative"),
                     ("report", "--by", "stack", "--top", "3"), ("peak",), ("leaks",),
                     ("timeline",), ("report", "--format", "folded"),
                     ("report", "--format", "pprof", "-o", os.path.join(r.tmp, "p.pb.gz")),
                     ("report", "--format", "html", "-o", os.path.join(r.tmp, "r.html"))):
            t0 = time.monotonic()
            rc, out, err = r.ctl(*view, timeout=60)
            if rc:
                raise Fail(f"{' '.join(view)} exited {rc}: {one_line(err)[:200]}")
            if time.monotonic() - t0 > 30:
                raise Fail(f"{' '.join(view)} took {time.monotonic() - t0:.0f} s")

    with r.part("grouped_in_daemon_equal_file"):
        # each of these is grouped by the daemon live, by the client from the file
        for view in (("report", "--by", "line", "--json"),
                     ("report", "--by", "function", "--cumulative", "--json", "--top", "0"),
                     ("report", "--by", "stack", "--json", "--top", "7"),
                     ("report", "--by", "module", "--sort", "allocated", "--json"),
                     ("peak", "--json"), ("peak", "--by", "file", "--json"),
                     ("leaks", "--json", "--top", "4")):
            live = r.ctl_json(*view)
            rc, out, err = subprocess_ctl(r, "--from", path, *view)
            if rc:
                raise Fail(f"--from {' '.join(view)} exited {rc}: {one_line(err)[:200]}")
            saved = json.loads(out)
            if view[0] == "leaks":  # ages move on between the two
                for obj in (live, saved):
                    for e in obj.get("entries", []):
                        e.pop("oldest_age", None)
                        e.pop("youngest_age", None)
            if live != saved:
                keys = sorted(k for k in set(live) | set(saved) if live.get(k) != saved.get(k))
                raise Fail(f"{' '.join(view)} differs between the daemon and the file in {keys}")
        live = r.ctl_json("stats", "--json")
        rc, out, err = subprocess_ctl(r, "--from", path, "stats", "--json")
        saved = json.loads(out)
        for k in ("top_sites_by_bytes_allocated", "top_sites_by_allocations"):
            if live.get(k) != saved.get(k):
                raise Fail(f"stats {k} differs between the daemon and the file")

    with r.part("one_lookup_per_address"):
        d = r.ctl_json("status", "--json").get("daemon", {})
        # a dozen distinct return addresses in heapscale, a few in libc: each looked up once
        # however many stacks and requests went by
        if not 0 < number(d, "symbol_lookups", "daemon") < 200:
            raise Fail(f"symbol_lookups={d.get('symbol_lookups')}")
        # the views above named the same few dozen addresses over and over (each
        # snapshot names each distinct word once); with the DWARF walker most stacks
        # end where the call frame information says, so their ends need no lookup
        if number(d, "symbol_cache_hits", "daemon") < 100:
            raise Fail(f"symbol_cache_hits={d.get('symbol_cache_hits')}")

    stop_daemon(r, s.daemon)


def subprocess_ctl(r, *args):
    p = subprocess.run([r.memtracectl, *args], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, errors="replace", timeout=60)
    return p.returncode, p.stdout, p.stderr


def stop_daemon(r, daemon):
    daemon.send_signal(signal.SIGTERM)
    rc = r.wait_exit(daemon, "memtraced")
    if rc != 0:
        raise Fail(f"memtraced exited with status {rc} after SIGTERM")


def test_scale_small_ring(r):
    """A target traced through a 512 KiB ring buffer, two threads churning while three clients
    take full snapshots over and over: no event lost, every call counted."""
    s = Scale(r, 10, "--ring-buffer-size", str(512 * 1024))
    s.command("hold 20000", "held")
    before = s.settle(20001)
    stop = threading.Event()
    taken, failed = [0, 0, 0], []

    def client(i):
        out = os.path.join(r.tmp, f"loop{i}.mts")
        while not stop.is_set():
            rc, _, err = r.ctl("snapshot", "-o", out, timeout=60)
            if rc:
                failed.append(one_line(err)[:200])
            else:
                taken[i] += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    try:
        line = s.command("churn 6 4000", "churned", 60)
    finally:
        stop.set()
        for t in threads:
            t.join()
    pairs = int(line.split()[1])
    after = s.settle(20001 + pairs)

    with r.part("snapshots_taken"):
        if failed:
            raise Fail(f"{len(failed)} snapshots failed: {failed[0]}")
        if sum(taken) < 3:
            raise Fail(f"only {sum(taken)} snapshots were taken during the churn")

    with r.part("nothing_lost"):
        if after["events_lost"]:
            raise Fail(f"events_lost={after['events_lost']}")
        got = {k: number(after, k, "stats") - number(before, k, "stats")
               for k in ("allocations", "frees", "bytes_allocated", "bytes_freed")}
        want = {"allocations": pairs, "frees": pairs, "bytes_allocated": 32 * pairs,
                "bytes_freed": 32 * pairs}
        if got != want:
            raise Fail(f"during the churn the daemon counted {got}, the target made {want}")
        if number(after, "live_allocations", "stats") != 20001:
            raise Fail(f"live_allocations={after['live_allocations']}, expected 20001")

    with r.part("daemon_figures"):
        d = r.ctl_json("status", "--json").get("daemon", {})
        # every snapshot was built by the worker on a frozen core; the loop's figures are kept
        if number(d, "frozen_requests", "daemon") < sum(taken):
            raise Fail(f"frozen_requests={d.get('frozen_requests')}, {sum(taken)} snapshots")
        for k in ("drain_gap_max", "loop_busy_max", "freeze_max"):
            if not number(d, k, "daemon") > 0:
                raise Fail(f"{k}={d.get(k)}")

    stop_daemon(r, s.daemon)


def test_scale_exit_during_snapshot(r):
    """The target is killed while a lane reads the frozen core for a full snapshot: the
    snapshot completes, the exit is acted on after the thaw (its data stays readable and
    exact), and closing its probes
    (a kernel grace period each) does not hold up the ring buffer's drains."""
    s = Scale(r, LEVELS)
    s.command("hold 100000", "held")
    s.settle(100001)
    r.ctl_json("reset-peak", "--json")  # a new window for drain_gap_max
    f0 = number(r.ctl_json("status", "--json").get("daemon", {}), "frozen_requests", "daemon")
    result = {}

    def snapshot():
        result["rc"], _, result["err"] = r.ctl("snapshot", "-o", os.path.join(r.tmp, "x.mts"),
                                               timeout=60)

    t = threading.Thread(target=snapshot)
    t.start()
    end = deadline_after(30)
    while number(r.ctl_json("status", "--json").get("daemon", {}), "frozen_requests",
                  "daemon") <= f0 and time.monotonic() < end:
        time.sleep(0.005)
    s.proc.kill()
    s.proc.wait()
    t.join()
    with r.part("snapshot_completes"):
        if result.get("rc"):
            raise Fail(f"snapshot -o exited {result['rc']}: {one_line(result['err'])[:200]}")
    with r.part("exit_after_thaw"):
        r.wait_state("exited", s.proc.pid, s.daemon)
        st = r.ctl_json("stats", "--json")
        if number(st, "live_allocations", "stats") != 100001:
            raise Fail(f"live_allocations={st['live_allocations']} after the exit, "
                       "expected 100001")
    with r.part("exit_does_not_stall_drains"):
        gap = number(r.ctl_json("status", "--json").get("daemon", {}), "drain_gap_max", "daemon")
        if gap > 0.5:
            raise Fail(f"drain_gap_max={gap:.3f} s across the snapshot and the exit")
    stop_daemon(r, s.daemon)


def thread_name(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/comm") as f:
        return f.read().strip()


def sched_of(pid, tid):
    """(policy, nice) of a thread: /proc stat fields 41 and 19."""
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[38]), int(fields[16])


def test_scale_realtime(r):
    """--realtime: the loop thread alone at SCHED_FIFO; the request lanes and the traced
    command it starts are ordinary (nice 10 for the lanes), and requests are answered."""
    daemon = r.start_daemon("--realtime", "--", "/bin/sleep", "30")
    st = r.ctl_json("status", "--json")
    child = st["targets"][0]["pid"] if st.get("targets") else 0
    with r.part("loop_fifo"):
        if sched_of(daemon.pid, daemon.pid)[0] != 1:
            raise Fail(f"the loop thread's policy is {sched_of(daemon.pid, daemon.pid)[0]}, "
                       "not SCHED_FIFO (1)")
        if not child or sched_of(child, child)[0] != 0:
            raise Fail(f"the traced command (pid {child}) is not SCHED_OTHER")
    with r.part("lanes_ordinary"):
        r.report("--top", "5")
        rc, _, err = r.ctl("report", "--by", "line")
        if rc:
            raise Fail(f"report --by line exited {rc}: {one_line(err)[:200]}")
        others = [int(t) for t in os.listdir(f"/proc/{daemon.pid}/task") if int(t) != daemon.pid]
        lanes = [t for t in others if thread_name(daemon.pid, t) == "memtrace-lane"]
        if len(lanes) != 2:
            raise Fail(f"{len(lanes)} request lanes among the loop's {len(others)} other "
                       "threads, expected 2")
        for tid in others:
            # the lanes and the resident memory sampler at nice 10; the deferred
            # queue's memory keeper at the loop's nice
            policy, nice = sched_of(daemon.pid, tid)
            want = 10 if tid in lanes or thread_name(daemon.pid, tid) == "memtrace-rss" else 0
            if policy != 0 or nice != want:
                raise Fail(f"thread {tid} ({thread_name(daemon.pid, tid)}): policy {policy} "
                           f"nice {nice}, expected 0 and {want}")
    stop_daemon(r, daemon)
