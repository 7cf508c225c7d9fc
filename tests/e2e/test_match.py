#!/usr/bin/env python3
"""End-to-end tests of whole-host mode on servers that fork their workers (--comm).

tests/e2e/preforker.c is a small pre-fork server: a parent that allocates, forks early
workers, waits ("ready"), allocates more, then forks rounds of workers, each of which frees
blocks it inherited, allocates its own and writes exactly what it called, as seen by a
daemon that traced the parent from its first instruction ("start") and by one that attached
at the ready point ("ready"). --comm matches the parent at its exec (daemon started before
it) or by the start-up scan (daemon started after), and every worker at its fork, without
--follow-forks: each is traced from its first call with its parent's heap, its counters
exact, unknown_frees 0 when the parent was traced from its start. --max-targets refuses the
forks past it, counts them exactly in matches_over_limit (status, stats, Prometheus, the
log), and a slot freed by a worker's exit lets the next fork be traced. A worker that
executes a program that does not match is traced no more; one that executes the server
again is traced anew."""

import pwd
import socket
import urllib.request

from harness import *  # noqa: F401,F403
from test_faults import stop_daemon_clean

# what a target's counters must equal, from the program's own tally
KEYS = ("inherited_allocations", "inherited_bytes", "allocations", "frees", "bytes_allocated",
        "bytes_freed", "unknown_frees", "live_allocations", "live_bytes")
# what an exit or an exec changes (live: the inherited blocks leave the heap) leaves out
KEYS_ENDED = ("inherited_allocations", "inherited_bytes", "allocations", "frees",
              "bytes_allocated", "bytes_freed", "unknown_frees")


def unique_name(tag):
    """A comm of our own (other processes on the machine may run "preforker"), <= 15 chars."""
    return f"{tag}{os.getpid() % 100000}x{int(time.time()) % 1000}"


def expects(path):
    """{(pid, kind): line} of the expect lines written so far."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("expect ") and line.endswith("\n"):
                _, pid, js = line.split(" ", 2)
                e = json.loads(js)
                out[(int(pid), e["kind"])] = e
    return out


def wait_expects(path, proc, want):
    """Wait until want(expects) is true; return the expects."""
    end = deadline_after()
    while True:
        got = expects(path)
        if want(got):
            return got
        if proc.poll() is not None or time.monotonic() > end:
            raise Fail(f"preforker's lines: {sorted(got)} (it exited: {proc.poll()})")
        time.sleep(POLL)


def generations(st, pid):
    return [t for t in st["targets"] if t["pid"] == pid]


def check_exact(st, pid, want, keys, state=None, newest=True):
    """The newest (or oldest) entry of pid has want's counters (keys), and the invariant."""
    gens = generations(st, pid)
    if not gens:
        raise Fail(f"pid {pid} is not a target")
    t = gens[-1] if newest else gens[0]
    c = t["counters"]
    bad = [f"{k}={c[k]} (expected {want[k]})" for k in keys if c[k] != want[k]]
    if c["live_allocations"] != (c["inherited_allocations"] + c["allocations"] - c["frees"]
                                 - c["missed_frees"] - c["untracked_allocations"]
                                 - c["inherited_released"]):
        bad.append(f"the counters do not add up: {c}")
    if state and t["state"] != state:
        bad.append(f"state {t['state']}, expected {state}")
    if bad:
        raise Fail(f"pid {pid}: " + "; ".join(bad))
    return t


def wait_ended(r, pids, states=("exited",)):
    """Until each pid's newest entry is in one of states (its exit handled: its slot free)."""
    end = deadline_after()
    while True:
        st = r.ctl_json("status", "--json")
        left = [p for p in pids if not generations(st, p) or
                generations(st, p)[-1]["state"] not in states]
        if not left:
            return st
        if time.monotonic() > end:
            raise Fail(f"pids {left} not {'/'.join(states)}: "
                       f"{[(t['pid'], t['state']) for t in st['targets']]}")
        time.sleep(POLL)


def start_server(r, name, *args):
    prog = os.path.join(r.tmp, name)
    shutil.copy(os.path.join(r.build, "tests", "preforker"), prog)
    out = os.path.join(r.tmp, "preforker.out")
    proc = r.spawn([prog, *args], "target", "preforker.out")
    pid = int(r.wait_line(out, "ready ", proc))
    return proc, pid, out


def workers_of(got, rnd):
    return sorted((e["index"], pid) for (pid, kind), e in got.items()
                  if kind == "worker" and e["round"] == rnd)


def run_rounds(r, proc, pid, out, view, rounds, workers, nearly=0, on_done=None,
               traced=None):
    """Drive the server through its rounds: after each, every traced worker's counters are
    exactly its tally in view; traced(index) says which ones are targets (default: all)."""
    os.kill(pid, signal.SIGUSR1)  # the ready point
    if nearly:
        got = wait_expects(out, proc, lambda g: sum(k == "early" for _, k in g) == nearly)
        st = r.ctl_json("stats", "--json")
        with r.part("early"):
            for (p, kind), e in got.items():
                if kind == "early":
                    check_exact(st, p, e[view], KEYS, "attached")
    for rnd in range(1, rounds + 1):
        r.wait_line(out, f"round {rnd} done", proc)
        got = expects(out)
        ws = workers_of(got, rnd)
        if len(ws) != workers:
            raise Fail(f"round {rnd}: {len(ws)} worker lines, not {workers}")
        st = r.ctl_json("stats", "--json")
        with r.part(f"round{rnd}"):
            for index, p in ws:
                if traced and not traced(rnd, index):
                    if generations(st, p):
                        raise Fail(f"round {rnd} worker {index} (pid {p}) is traced past "
                                   f"--max-targets")
                    continue
                check_exact(st, p, got[(p, "worker")][view], KEYS, "attached")
        if on_done:
            on_done(rnd, st, ws)
        os.kill(pid, signal.SIGUSR1)
        r.wait_line(out, f"round {rnd} reaped", proc)
        ended = [p for i, p in ws if not traced or traced(rnd, i)]
        wait_ended(r, ended, ("exited", "execed"))
        os.kill(pid, signal.SIGUSR1)
    got = wait_expects(out, proc, lambda g: (pid, "parent") in g)
    return got


def finish(r, proc, pid, daemon):
    os.kill(pid, signal.SIGUSR1)
    rc = r.wait_exit(proc, "preforker")
    if rc != 0:
        raise Fail(f"preforker exited with status {rc}")
    st = r.ctl_json("stats", "--json")
    bad = [(t["pid"], t["counters"]["unknown_frees"]) for t in st["targets"]
           if t["counters"]["unknown_frees"]]
    stop_daemon_clean(r, daemon)
    return st, bad


def test_match_preforker_before(r):
    """--comm started before the server: the parent matched at its exec, traced from its
    first instruction; early workers and two rounds of workers traced at their fork with
    the parent's heap, every counter exact, unknown_frees 0 everywhere. In the last round
    worker 0 executes a program that does not match (traced no more: its entry ends,
    execed, and what the new program allocates is not counted) and worker 1 executes the
    server again (traced anew, exact)."""
    name = unique_name("pfb")
    daemon = r.start_daemon("--comm", name)
    pattern_expect = os.path.join(r.tmp, "pattern-expect.txt")
    exec_prog = f"exec {r.pattern} --no-wait --expect-file {pattern_expect}"
    proc, pid, out = start_server(r, name, "--early", "2", "--rounds", "2", "--workers", "3",
                                  "--exec", exec_prog)
    r.wait_state("attached", pid, daemon)
    execs = {}

    def on_done(rnd, st, ws):
        if rnd == 2:
            execs.update({i: p for i, p in ws if i < 2})

    got = run_rounds(r, proc, pid, out, "start", 2, 3, nearly=2, on_done=on_done)
    st = r.ctl_json("stats", "--json")
    with r.part("parent"):
        check_exact(st, pid, got[(pid, "parent")]["start"], KEYS, "attached")
        if st.get("match", {}).get("matches_over_limit") != 0 or \
                st["match"].get("what") != f"--comm {name}":
            raise Fail(f"stats' match: {st.get('match')}")
    with r.part("exec_unmatched"):
        p = execs[0]
        r.read_expect(pattern_expect)  # the program it executed ran to its end, unharmed
        gens = generations(st, p)
        if [t["state"] for t in gens] != ["execed"]:
            raise Fail(f"pid {p} after executing pattern: {[t['state'] for t in gens]}, "
                       f"expected one entry, execed")
        check_exact(st, p, got[(p, "worker")]["start"], KEYS_ENDED)
        if "does not match" not in (gens[0].get("note") or ""):
            raise Fail(f"pid {p}'s note: {gens[0].get('note')!r}")
    with r.part("exec_matching"):
        p = execs[1]
        gens = generations(st, p)
        if [t["state"] for t in gens] != ["execed", "exited"]:
            raise Fail(f"pid {p} after executing the server: {[t['state'] for t in gens]}")
        check_exact(st, p, got[(p, "worker")]["start"], KEYS_ENDED, newest=False)
        check_exact(st, p, got[(p, "child")]["start"], KEYS)
    with r.part("no_unknown_frees"):
        _, bad = finish(r, proc, pid, daemon)
        if bad:
            raise Fail(f"unknown_frees (pid, n): {bad}")


def test_match_preforker_after(r):
    """--comm started while the server runs: the start-up scan attaches the parent and its
    early workers (they inherit nothing: attached, not forked); the workers forked after
    are traced at their fork with the parent's heap as traced since its attach, every
    counter exact; the blocks the parent allocated before the attach are unknown, so each
    worker's unknown_frees is exactly the number of those it frees."""
    name = unique_name("pfa")
    proc, pid, out = start_server(r, name, "--early", "2", "--rounds", "1", "--workers", "3")
    daemon = r.start_daemon("--comm", name)
    st = r.ctl_json("status", "--json")
    kids = [t["pid"] for t in st["targets"] if t["pid"] != pid]
    if [t["state"] for t in generations(st, pid)] != ["attached"] or len(kids) != 2:
        raise Fail(f"after the start-up scan: {[(t['pid'], t['state']) for t in st['targets']]}"
                   f", expected the parent {pid} and its 2 early workers")
    got = run_rounds(r, proc, pid, out, "ready", 1, 3, nearly=2)
    st = r.ctl_json("stats", "--json")
    with r.part("parent"):
        check_exact(st, pid, got[(pid, "parent")]["ready"], KEYS, "attached")
    finish(r, proc, pid, daemon)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_match_preforker_limit(r):
    """--max-targets 3 on a server forking 3 workers a round: the parent and the first two
    workers are traced, exactly; the third is not, and counts in matches_over_limit, shown
    by status (text and JSON), stats, Prometheus and the log; once the first round's
    workers exited, the second round's first two are traced again (their slots freed) and
    the count is 2. The workers past the limit run to their end unharmed."""
    name = unique_name("pfl")
    port = free_port()
    daemon = r.start_daemon("--comm", name, "--max-targets", "3", "--metrics-listen",
                            f"127.0.0.1:{port}")
    proc, pid, out = start_server(r, name, "--rounds", "2", "--workers", "3")
    r.wait_state("attached", pid, daemon)

    def over(rnd, st, ws):
        with r.part(f"counted{rnd}"):
            m = r.ctl_json("status", "--json").get("match", {})
            if m.get("matches_over_limit") != rnd or m.get("traced") != 3 or \
                    m.get("max_targets") != 3:
                raise Fail(f"status' match after round {rnd}: {m}")

    run_rounds(r, proc, pid, out, "start", 2, 3, on_done=over,
               traced=lambda rnd, index: index < 2)
    with r.part("shown"):
        rc, text, err = r.ctl("status")
        if rc or "warning: 2 matching processes were not traced" not in text:
            raise Fail(f"status text: {text!r}")
        rc, text, err = r.ctl("stats")
        if rc or not any(l.split() == ["matches_over_limit", "2"] for l in text.splitlines()):
            raise Fail(f"stats text: {text!r}")
        if r.ctl_json("stats", "--json").get("match", {}).get("matches_over_limit") != 2:
            raise Fail("stats --json: matches_over_limit is not 2")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
        if "memtrace_matches_over_limit_total 2\n" not in metrics:
            raise Fail("Prometheus: no memtrace_matches_over_limit_total 2")
        end = deadline_after()
        while True:  # the log tells on the drain tick, a line a second at most
            with open(r.daemon_logs[-1], errors="replace") as f:
                log = f.read()
            if "2 in all (matches_over_limit)" in log:
                break
            if time.monotonic() > end:
                raise Fail("the log does not tell of the 2 matches over the limit")
            time.sleep(POLL)
    finish(r, proc, pid, daemon)


def test_match_preforker_limit_scan(r):
    """--max-targets 2 started while the server runs: the start-up scan (two passes over
    /proc) traces the parent and one early worker and counts the other once; the round's
    two workers, forked with the limit reached, are counted at their fork (3 in all). The
    early worker traced is exact; every process runs to its end."""
    name = unique_name("pfs")
    proc, pid, out = start_server(r, name, "--early", "2", "--rounds", "1", "--workers", "2")
    daemon = r.start_daemon("--comm", name, "--max-targets", "2")
    st = r.ctl_json("status", "--json")
    traced = [t["pid"] for t in st["targets"]]
    with r.part("scan"):
        if len(traced) != 2 or pid not in traced or \
                st.get("match", {}).get("matches_over_limit") != 1:
            raise Fail(f"after the scan: targets {traced} (parent {pid}), match "
                       f"{st.get('match')}: expected the parent, one early worker, 1 over")
    os.kill(pid, signal.SIGUSR1)
    got = wait_expects(out, proc, lambda g: sum(k == "early" for _, k in g) == 2)
    r.wait_line(out, "round 1 done", proc)
    st = r.ctl_json("stats", "--json")
    with r.part("forks"):
        early = [p for p in traced if p != pid][0]
        check_exact(st, early, got[(early, "early")]["ready"], KEYS, "attached")
        if st.get("match", {}).get("matches_over_limit") != 3 or len(st["targets"]) != 2:
            raise Fail(f"after the round: {[t['pid'] for t in st['targets']]}, match "
                       f"{st.get('match')}: expected 3 over the limit, no worker traced")
    os.kill(pid, signal.SIGUSR1)
    r.wait_line(out, "round 1 reaped", proc)
    os.kill(pid, signal.SIGUSR1)
    wait_expects(out, proc, lambda g: (pid, "parent") in g)
    finish(r, proc, pid, daemon)


# ---- Debian's PostgreSQL 15 under pgbench ---------------------------------------------------

PGBIN = "/usr/lib/postgresql/15/bin"


class Cluster:
    """A PostgreSQL cluster of user postgres in the test's directory, on a socket there."""

    def __init__(self, r):
        for exe in ("initdb", "pg_ctl", "postgres"):
            if not os.access(os.path.join(PGBIN, exe), os.X_OK):
                raise Fail(f"{PGBIN}/{exe} is missing (make deps installs postgresql)")
        for exe in ("pgbench", "psql"):
            if not shutil.which(exe):
                raise Fail(f"{exe} is missing (make deps installs postgresql-contrib)")
        self.r = r
        pw = pwd.getpwnam("postgres")
        os.chmod(r.tmp, 0o711)  # user postgres reaches its directory, nothing else
        self.dir = os.path.join(r.tmp, "pg")
        os.mkdir(self.dir, 0o700)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self.log = os.path.join(self.dir, "server.log")
        self.running = False

    def run(self, *argv, timeout=60, check=True):
        env = dict(os.environ, PGHOST=self.dir, PGPORT="5432", PGUSER="postgres",
                   PGDATABASE="postgres", HOME=self.dir)
        try:
            p = subprocess.run(argv, user="postgres", group="postgres", extra_groups=[],
                               env=env, cwd=self.dir, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, errors="replace",
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail(f"{os.path.basename(argv[0])} did not return within {timeout} s") \
                from None
        if check and p.returncode:
            raise Fail(f"{' '.join(argv[:2])} exited {p.returncode}: "
                       f"{one_line(p.stdout + p.stderr)[-300:]}")
        return p

    def initdb(self):
        self.run(f"{PGBIN}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres",
                 "--no-sync", "--no-instructions")

    def start(self):
        # the socket in our directory only; fsync off: the test measures nothing
        self.running = True
        self.run(f"{PGBIN}/pg_ctl", "-D", self.data, "-l", self.log, "-w", "-t", "60", "-o",
                 f"-k {self.dir} -p 5432 -c listen_addresses='' -c fsync=off", "start")
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def stop(self):
        if not self.running:
            return
        self.running = False
        p = self.run(f"{PGBIN}/pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop",
                     check=False)
        if p.returncode:  # whatever is left of it goes
            try:
                with open(os.path.join(self.data, "postmaster.pid")) as f:
                    os.kill(int(f.readline()), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def family(self, st, postmaster):
        """Our cluster's targets (the host may run another): the postmaster and its
        children, those forked while it was traced (parent_pid) and those running now."""
        kids = set()
        for d in os.listdir("/proc"):
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == postmaster:
                        kids.add(int(d))
            except (OSError, ValueError, IndexError):
                pass
        return [t for t in st["targets"] if t["pid"] == postmaster or
                t.get("parent_pid") == postmaster or t["pid"] in kids]


def pgbench_failed(out):
    for line in out.splitlines():
        if line.startswith("number of failed transactions:"):
            return int(line.split(":")[1].split()[0])
    raise Fail(f"pgbench printed no failed transaction count: {one_line(out)[-300:]}")


def test_match_postgres(r):
    """Debian's PostgreSQL 15: memtraced --comm postgres, nothing else.

    daemon_first: started before the server, it matches the postmaster at its exec, traced
    from its first instruction, and every backend at its fork, with the postmaster's heap:
    under pgbench -c 4 -j 2 no process of the cluster has an unknown free.

    daemon_later: started while the server runs (a new user's way), the start-up scan
    attaches the postmaster and its auxiliary processes, and every backend pgbench's
    clients make is traced at its fork: a target whose parent_pid is the postmaster, with
    thousands of allocations, its stacks named through PostgresMain. Its unknown frees are
    the blocks the postmaster allocated before the attach, freed by the backend (it deletes
    the postmaster's memory context at its start): at least one, and at most as many as a
    backend of daemon_first inherited (the same server started the same way: its
    postmaster's heap at a fork). Then the daemon is killed (SIGKILL) in the middle of the
    load: pgbench goes on to 0 failed transactions and the server answers SELECT 1."""
    pg = Cluster(r)
    try:
        pg.initdb()
        inherited_first = 0
        with r.part("daemon_first"):
            daemon = r.start_daemon("--comm", "postgres")
            postmaster = pg.start()
            pg.run("pgbench", "-i", "-s", "1", "-q")
            out = pg.run("pgbench", "-c", "4", "-j", "2", "-T", "3").stdout
            if pgbench_failed(out):
                raise Fail(f"pgbench under the daemon: {one_line(out)[-300:]}")
            st = r.ctl_json("stats", "--json")
            fam = pg.family(st, postmaster)
            backends = [t for t in fam if t["pid"] != postmaster and
                        t["counters"]["allocations"] >= 1000]
            if len(backends) < 4:
                raise Fail(f"{len(backends)} backends with allocations traced, expected the "
                           f"4 clients' at least: {[(t['pid'], t['state']) for t in fam]}")
            bad = [(t["pid"], t["counters"]["unknown_frees"]) for t in fam
                   if t["counters"]["unknown_frees"]]
            if bad:
                raise Fail(f"unknown_frees with the postmaster traced from its exec "
                           f"(pid, n): {bad}")
            if any(t["counters"]["inherited_allocations"] == 0 for t in backends):
                raise Fail("a backend inherited no block from the postmaster")
            inherited_first = max(t["counters"]["inherited_allocations"] for t in backends)
            pg.stop()
            stop_daemon_clean(r, daemon)
        with r.part("daemon_later"):
            postmaster = pg.start()
            daemon = r.start_daemon("--comm", "postgres", wait=False)
            # the loop answers once the start-up scan is done: under ASan, attaching
            # to the 6 processes (33 probes and a dozen modules' unwind tables each)
            # takes longer than a request may wait
            r.wait_line(r.daemon_logs[-1], "memtraced: whole-host mode: ", daemon)
            r.wait_daemon(daemon, r.sock)
            st = r.ctl_json("status", "--json")
            fam = pg.family(st, postmaster)
            if len(fam) < 5 or any(t["state"] != "attached" for t in fam):
                raise Fail(f"the start-up scan: {[(t['pid'], t['state']) for t in fam]}, "
                           f"expected the postmaster and its auxiliary processes attached")
            pg.run("pgbench", "-i", "-s", "1", "-q")
            env = dict(os.environ, PGHOST=pg.dir, PGPORT="5432", PGUSER="postgres",
                       PGDATABASE="postgres")
            bench = subprocess.Popen(["pgbench", "-c", "4", "-j", "2", "-T", "8"],
                                     user="postgres", group="postgres", extra_groups=[],
                                     env=env, cwd=pg.dir, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace")
            try:
                end = deadline_after()
                while True:  # the 4 clients' backends at work
                    st = r.ctl_json("stats", "--json")
                    fam = pg.family(st, postmaster)
                    backends = [t for t in fam if t["pid"] != postmaster and
                                t["state"] == "attached" and
                                t["counters"]["allocations"] >= 1000]
                    if len(backends) >= 4:
                        break
                    if time.monotonic() > end or bench.poll() is not None:
                        raise Fail(f"backends under load: {[(t['pid'], t['state'], t['counters']['allocations']) for t in fam]}")
                    time.sleep(POLL)
                for t in backends:
                    c = t["counters"]
                    if not 0 < c["unknown_frees"] <= inherited_first:
                        raise Fail(f"backend {t['pid']}: unknown_frees {c['unknown_frees']}, "
                                   f"expected 1 to {inherited_first} (the postmaster's "
                                   f"blocks from before the attach)")
                    if c["live_allocations"] != c["inherited_allocations"] + \
                            c["allocations"] - c["frees"] - c["missed_frees"] - \
                            c["untracked_allocations"] - c["inherited_released"]:
                        raise Fail(f"backend {t['pid']}: the counters do not add up: {c}")
                entries = r.report("--pid", str(backends[0]["pid"]), "--top", "100")
                names = {f.get("function") for e in entries for f in e.get("frames", [])}
                if not names & {"PostgresMain", "exec_simple_query"}:
                    raise Fail(f"backend {backends[0]['pid']}: no stack through PostgresMain "
                               f"or exec_simple_query in {len(entries)} entries")
                r.kill_daemon(daemon)  # mid-load
                out, _ = bench.communicate(timeout=60)
            finally:
                if bench.poll() is None:
                    bench.kill()
                    bench.wait()
            if bench.returncode or pgbench_failed(out):
                raise Fail(f"pgbench, the daemon killed under it: exit {bench.returncode}: "
                           f"{one_line(out)[-300:]}")
            one = pg.run("psql", "-tAc", "SELECT 1").stdout.strip()
            if one != "1":
                raise Fail(f"SELECT 1 after the daemon was killed: {one!r}")
    finally:
        pg.stop()
