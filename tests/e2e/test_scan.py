#!/usr/bin/env python3
"""End-to-end tests of `memtracectl leaks --unreachable` (issue 20): the daemon stops a
traced process, marks its live blocks from its roots and reports the unreachable ones.

tests/e2e/scanprog.c builds blocks whose reachability is known by construction, each kind
from its own function: the scan must give exact counts per kind and function, no false
leak, and agree with LeakSanitizer on the same program; Debian's redis-server under
redis-benchmark keeps answering while it is scanned; the target survives the daemon killed
mid-scan, another tracer, its own death mid-scan, the pause bound, and many threads that
come and go (tests/e2e/scanthreads.c); a forked child's scan counts the blocks it
inherited (tests/e2e/scanfork.c). MEMTRACE_TEST_SCAN_STALL_MS holds a target still
longer, so that "mid-scan" is a moment a test can reach (the daemon with test hooks only)."""

import re
import signal
import socket

from harness import *  # noqa: F401,F403

REDIS = "/usr/bin/redis-server"
BENCH = "/usr/bin/redis-benchmark"
KINDS = ("direct", "indirect", "possible")
# pthread_create's thread control block points one word into the DTV it allocates (glibc's
# dtv + 1): valgrind's well-known "possibly lost ... in pthread_create"
DTV_FUNCTIONS = ("allocate_dtv", "calloc")


def scanprog_path(r):
    return os.path.join(r.build, "tests", "scanprog")


def start_scanprog(r, tag="scanprog", args=()):
    p = r.spawn([scanprog_path(r), *args], "target", f"{tag}.out")
    r.wait_line(os.path.join(r.tmp, f"{tag}.out"), "ready ", p)
    return p


def build_cases(r, p, tag="scanprog"):
    """SIGUSR1: the program builds every case and prints what it expects."""
    os.kill(p.pid, signal.SIGUSR1)
    text = r.wait_line(os.path.join(r.tmp, f"{tag}.out"), "built ", p)
    return json.loads(text)


def scan(r, *args, expect_rc=0, timeout=60):
    rc, out, err = r.ctl("leaks", "--unreachable", "--top", "0", *args, timeout=timeout)
    if rc != expect_rc:
        raise Fail(f"leaks --unreachable {' '.join(args)} exited {rc}, expected {expect_rc}: "
                   f"{one_line(err)[:300]}")
    return out, err


def scan_json(r, *args):
    out, _ = scan(r, "--json", *args)
    try:
        return json.loads(out)
    except ValueError as e:
        raise Fail(f"leaks --unreachable --json printed invalid JSON ({e}): "
                   f"{one_line(out)[:200]}") from None


def functions(entry):
    return [f.get("function") or "" for f in entry.get("frames") or []]


def by_function(obj):
    """(kind, allocating function) -> [blocks, bytes], summed over stacks."""
    got = {}
    for e in obj["entries"]:
        fns = functions(e)
        key = (e["kind"], fns[0] if fns else "")
        acc = got.setdefault(key, [0, 0])
        acc[0] += e["blocks"]
        acc[1] += e["bytes"]
    return got


def is_dtv(entry):
    return any(f in functions(entry) for f in ("allocate_dtv", "_dl_allocate_tls"))


def proc_state(pid):
    """(state letter, tracer pid) of pid, or (None, None) once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None, None
    state = re.search(r"^State:\s+(\S)", text, re.M).group(1)
    tracer = int(re.search(r"^TracerPid:\s+(\d+)", text, re.M).group(1))
    return state, tracer


def all_threads_running(pid):
    """No thread of pid is stopped or traced."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                text = f.read()
        except OSError:
            continue  # it exited meanwhile
        state = re.search(r"^State:\s+(\S)", text, re.M).group(1)
        tracer = int(re.search(r"^TracerPid:\s+(\d+)", text, re.M).group(1))
        if state in ("t", "T") or tracer:
            return False
    return True


def wait_until(what, cond, seconds=TIMEOUT):
    end = deadline_after(seconds)
    while not cond():
        if time.monotonic() > end:
            raise Fail(f"{what} within {seconds:.0f} s")
        time.sleep(0.01)


def check_known(obj, expect, threads_created=2):
    """Exact counts per kind and allocating function; nothing else reported but the DTVs
    of the threads the program created after the tracer attached."""
    got = by_function(obj)
    problems = []
    for kind in KINDS:
        for fn, want in expect[kind].items():
            have = got.pop((kind, fn), [0, 0])
            if have != want:
                problems.append(f"{kind} {fn}: {have[0]} blocks {have[1]} B, expected "
                                f"{want[0]} blocks {want[1]} B")
    for fn in expect["reachable"]:
        for kind in KINDS:
            if (kind, fn) in got:
                problems.append(f"{fn} is reachable, reported {kind}: {got.pop((kind, fn))}")
    dtv = [e for e in obj["entries"] if e["kind"] == "possible" and is_dtv(e)]
    for e in dtv:
        got.pop(("possible", functions(e)[0]), None)
    if sum(e["blocks"] for e in dtv) != threads_created:
        problems.append(f"{sum(e['blocks'] for e in dtv)} possible DTV blocks, expected "
                        f"{threads_created} (one per thread created)")
    for (kind, fn), have in got.items():
        problems.append(f"false {kind} leak: {fn}: {have}")
    sc = obj["scan"]
    for kind in KINDS:
        blocks = sum(e["blocks"] for e in obj["entries"] if e["kind"] == kind)
        nbytes = sum(e["bytes"] for e in obj["entries"] if e["kind"] == kind)
        if sc[kind] != {"blocks": blocks, "bytes": nbytes}:
            problems.append(f"scan.{kind} {sc[kind]} is not the entries' {blocks}, {nbytes}")
    if problems:
        raise Fail("; ".join(problems))


def attach_scanprog(r, tag="scanprog", daemon_args=(), env=None, args=("--kernel-held",)):
    """scanprog under a daemon, its cases built: by default with the two blocks only the
    kernel holds (an epoll registration's data, a timer's value), reachable. env (STALL): the
    daemon with test hooks, these variables in its environment."""
    p = start_scanprog(r, tag, args)
    if env:
        r.start_daemon("--pid", str(p.pid), *daemon_args, env=env, hooks=True)
    else:
        r.start_daemon("--pid", str(p.pid), *daemon_args)
    r.wait_state("attached", p.pid)
    expect = build_cases(r, p, tag)
    return p, expect


def finish(r, p, what="scanprog"):
    """The target runs on after every scan: it exits 0 when asked."""
    if not all_threads_running(p.pid):
        raise Fail(f"{what} is still stopped or traced: {proc_state(p.pid)}")
    os.kill(p.pid, signal.SIGUSR1)
    rc = r.wait_exit(p, what, 10)
    if rc != 0:
        raise Fail(f"{what} exited {rc}")


# ---- the known program -----------------------------------------------------------------------

def test_scan_known(r):
    """Every kind of reachability at its exact count, by function (blocks only the kernel
    holds included); the text form; LSan's suppressions; the usage errors; the target
    resumed and well."""
    p, expect = attach_scanprog(r)
    stats = r.ctl_json("stats", "--json")
    with r.part("kinds"):
        obj = scan_json(r)
        check_known(obj, expect)
        sc = obj["scan"]
        if sc["pids"] != [p.pid] or sc["targets"] != 1 or sc["threads"] != 3:
            raise Fail(f"scan pids {sc['pids']}, targets {sc['targets']}, threads "
                       f"{sc['threads']} (expected [{p.pid}], 1, 3)")
        if sc["live_blocks"] != stats["live_allocations"] or \
                sc["live_bytes"] != stats["live_bytes"]:
            raise Fail(f"scan live {sc['live_blocks']}/{sc['live_bytes']}, stats "
                       f"{stats['live_allocations']}/{stats['live_bytes']}")
        if not 0 < sc["pause_seconds"] < sc["max_pause_seconds"] == 1.0:
            raise Fail(f"pause_seconds {sc['pause_seconds']}, max {sc['max_pause_seconds']}")
        if sc["bytes_scanned"] < 4096 or sc["bytes_unreadable"] or sc["blocks_unread"]:
            raise Fail(f"bytes_scanned {sc['bytes_scanned']}, unreadable "
                       f"{sc['bytes_unreadable']}, blocks_unread {sc['blocks_unread']}")
        if sc["entries_total"] != len(obj["entries"]):
            raise Fail(f"entries_total {sc['entries_total']} for {len(obj['entries'])}")
    with r.part("resumed"):
        if not all_threads_running(p.pid):
            raise Fail(f"after the scan: {proc_state(p.pid)}")
    with r.part("again"):
        again = scan_json(r)
        if by_function(again) != by_function(obj):
            raise Fail(f"a second scan differs: {by_function(again)}")
    with r.part("text"):
        out, _ = scan(r)
        first = out.splitlines()[0]
        m = re.match(rf"scan of pid {p.pid}: stood still [0-9.]+ ms, [0-9.]+ (K|M)iB scanned "
                     r"in 3 threads; (\d+) live blocks: direct (\d+) blocks \(\d+ B\), indirect "
                     r"(\d+) blocks \(\d+ B\), possible (\d+) blocks \(\d+ B\); (\d+) of (\d+) "
                     r"entries, direct first, most bytes first$", first)
        if not m:
            raise Fail(f"header line: {first!r}")
        if [int(m.group(i)) for i in (3, 4, 5)] != [obj["scan"][k]["blocks"] for k in KINDS]:
            raise Fail(f"header counts: {first!r}")
        entries = [l for l in out.splitlines() if re.match(r"#\d+  (direct|indirect|possible): "
                                                           r"\d+ blocks?, \d+ B", l)]
        if len(entries) != len(obj["entries"]):
            raise Fail(f"{len(entries)} text entries for {len(obj['entries'])}")
        top, _ = scan(r, "--top", "2")
        if len([l for l in top.splitlines() if l.startswith("#")]) != 2 or \
                f"; 2 of {len(obj['entries'])} entries" not in top.splitlines()[0]:
            raise Fail(f"--top 2: {one_line(top)[:200]}")
    with r.part("suppressions"):
        path = os.path.join(r.tmp, "lsan.supp")
        with open(path, "w") as f:
            f.write("# LeakSanitizer's format\n\nleak:lost_list_head\n  leak:^make_ring$\t\n"
                    "leak:no_such_function\n")
        s = scan_json(r, "--suppressions", path)
        got = by_function(s)
        # the suppressed head holds the rest of its list: no longer indirect (LSan's rule)
        if ("direct", "lost_list_head") in got or ("indirect", "lost_list_node") in got or \
                ("indirect", "make_ring") in got:
            raise Fail(f"suppressed leaks reported: {got}")
        if got.get(("direct", "make_direct")) != expect["direct"]["make_direct"]:
            raise Fail(f"make_direct with suppressions: {got.get(('direct', 'make_direct'))}")
        sup = s["scan"]["suppressed"]
        want = [{"pattern": "lost_list_head", "blocks": 1,
                 "bytes": expect["direct"]["lost_list_head"][1]},
                {"pattern": "^make_ring$", "blocks": 3,
                 "bytes": expect["indirect"]["make_ring"][1]},
                {"pattern": "no_such_function", "blocks": 0, "bytes": 0}]
        if sup["suppressions"] != want or sup["blocks"] != 4 or \
                sup["bytes"] != want[0]["bytes"] + want[1]["bytes"]:
            raise Fail(f"suppressed: {sup}")
        if s["scan"]["indirect"]["blocks"] != 0:
            raise Fail(f"indirect with the head suppressed: {s['scan']['indirect']}")
        text, _ = scan(r, "--suppressions", path)
        if "suppressed 4 blocks (144 B): leak:lost_list_head 1 block (48 B), leak:^make_ring$ 3 " \
           "blocks (96 B), leak:no_such_function 0 blocks (0 B)" not in text:
            raise Fail(f"text suppressions line: {one_line(text)[:300]}")
        # by module (the program's path) and by source file: everything of the program goes
        for pattern in ("scanprog", "tests/e2e/scanprog.c"):
            with open(path, "w") as f:
                f.write(f"leak:{pattern}\n")
            s = scan_json(r, "--suppressions", path)
            if s["entries"]:
                raise Fail(f"leak:{pattern} left {by_function(s)}")
    with r.part("usage"):
        bad = os.path.join(r.tmp, "bad.supp")
        with open(bad, "w") as f:
            f.write("leak:ok\nrace:foo\n")
        for args, rc, text in (
                (("--suppressions", bad), 2, "line 2: 'race' is not a leak suppression"),
                (("--suppressions", os.path.join(r.tmp, "none")), 2, "cannot open"),
                (("--older-than", "1s"), 2, "--older-than does not apply to --unreachable"),
                (("--max-pause", "0"), 2, "bad --max-pause"),
                (("--format", "pprof"), 2, "text or json"),
                (("--pid", "1"), 1, "pid 1 is not traced")):
            got_rc, _, err = r.ctl("leaks", "--unreachable", *args)
            if got_rc != rc or text not in err or one_error_line(err):
                raise Fail(f"{args}: rc {got_rc}, stderr {one_line(err)[:200]!r}")
        for args, text in ((("--suppressions", bad, "leaks"), "applies to leaks --unreachable"),
                           (("--from", "x.mts", "leaks", "--unreachable"), "needs memtraced")):
            run = subprocess.run([r.memtracectl, *args], capture_output=True, text=True)
            if run.returncode != 2 or text not in run.stderr:
                raise Fail(f"{args}: rc {run.returncode}, stderr {one_line(run.stderr)[:200]!r}")
    with r.part("exits"):
        finish(r, p)


# ---- the same program under LeakSanitizer -----------------------------------------------------

def lsan_report(text):
    """LeakSanitizer's report: (kind, allocating function) -> [blocks, bytes]."""
    got = {}
    for m in re.finditer(r"^(Direct|Indirect) leak of (\d+) byte\(s\) in (\d+) object\(s\) "
                         r"allocated from:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S):
        frames = re.findall(r"#(\d+) 0x[0-9a-f]+ in (\S+)", m.group(4))
        # frame 0 is LSan's malloc interceptor; frame 1 the allocating function
        fn = next((name for n, name in frames if n != "0"), "")
        acc = got.setdefault((m.group(1).lower(), fn), [0, 0])
        acc[0] += int(m.group(3))
        acc[1] += int(m.group(2))
    return got


def test_scan_lsan(r):
    """The program built with -fsanitize=leak reports at exit the same direct and indirect
    leaks, by allocating function, as the scan of the plain build just before it exits."""
    clang = shutil.which("clang") or shutil.which("clang-14")
    if not clang:
        raise Fail("clang is missing (make deps installs it, with libclang-rt-14-dev)")
    lsan_exe = os.path.join(r.tmp, "scanprog_lsan")
    cc = subprocess.run([clang, "-fsanitize=leak", "-O1", "-g", "-fno-omit-frame-pointer",
                         "-fno-optimize-sibling-calls", "-pthread",
                         os.path.join(HERE, "scanprog.c"), "-o", lsan_exe],
                        capture_output=True, text=True)
    if cc.returncode:
        raise Fail(f"clang -fsanitize=leak: {one_line(cc.stderr)[:300]}")
    # without the blocks only the kernel holds: LeakSanitizer cannot see those pointers
    p, expect = attach_scanprog(r, args=())
    ours = {k: v for k, v in by_function(scan_json(r)).items() if k[0] != "possible"}
    finish(r, p)
    lp = subprocess.Popen([lsan_exe, "--now"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, LSAN_OPTIONS="exitcode=23"))
    try:
        end = deadline_after()
        line = lp.stdout.readline()
        while not line.startswith("built ") and time.monotonic() < end:
            line = lp.stdout.readline()
        os.kill(lp.pid, signal.SIGUSR1)
        _, err = lp.communicate(timeout=30)
    finally:
        if lp.poll() is None:
            lp.kill()
    if lp.returncode != 23:
        raise Fail(f"the LeakSanitizer build exited {lp.returncode}: {one_line(err)[:300]}")
    theirs = lsan_report(err)
    if theirs != ours:
        raise Fail(f"LeakSanitizer {sorted(theirs.items())} != memtrace {sorted(ours.items())}")
    want = {(k, fn): v for k in ("direct", "indirect") for fn, v in expect[k].items()}
    if theirs != want:
        raise Fail(f"both agree, but not with the program: {sorted(theirs.items())}")


# ---- a real server under load ----------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_command(sock, *args):
    """One RESP command and its reply (bulk, integer, simple string or error) as text."""
    req = f"*{len(args)}\r\n" + "".join(f"${len(a)}\r\n{a}\r\n" for a in args)
    sock.sendall(req.encode())
    f = sock.makefile("rb")
    line = f.readline().decode().rstrip("\r\n")
    if line.startswith("$"):
        n = int(line[1:])
        return None if n < 0 else f.read(n + 2)[:-2].decode()
    return line


def redis_info(sock, section, field):
    """One number of redis-server's INFO section (an INFO counts in the next one's)."""
    m = re.search(r"^%s:(\d+)" % field, redis_command(sock, "INFO", section) or "", re.M)
    if not m:
        raise Fail(f"INFO {section} has no {field}")
    return int(m.group(1))


def check_bench_running(bench, c, clients, when):
    """redis-benchmark still running, its clients connected: its load is on the server."""
    if bench.poll() is not None:
        raise Fail(f"redis-benchmark ended (status {bench.returncode}) {when}")
    connected = redis_info(c, "clients", "connected_clients")
    if connected < clients + 1:
        raise Fail(f"{connected} clients connected {when}: the benchmark's {clients} and ours")


def test_scan_redis(r):
    """redis-server filled by redis-benchmark (strings, lists, hashes), then scanned three
    times under a second one that runs until it is stopped after the last scan: before and
    after each scan it is still running with its clients connected, and the server
    processed its requests between the two; each scan completes with its pause reported,
    every request of a checking client is answered right meanwhile, neither benchmark
    meets an error, and nothing redis holds is called a leak."""
    for exe in (REDIS, BENCH):
        if not os.access(exe, os.X_OK):
            raise Fail(f"{exe} is missing (make deps installs redis-server and redis-tools)")
    port = free_port()
    server = r.spawn([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                      "--appendonly", "no", "--daemonize", "no"], "target", "redis.out")
    end = deadline_after()
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if time.monotonic() > end:
            raise Fail("redis-server did not listen")
        time.sleep(POLL)
    r.start_daemon("--pid", str(server.pid))
    r.wait_state("attached", server.pid)
    fill = r.spawn([BENCH, "-h", "127.0.0.1", "-p", str(port), "-t", "set,lpush,hset,get",
                    "-n", "20000", "-c", "8", "-r", "5000", "-q"], "bench", "fill.out")
    fill_rc = r.wait_exit(fill, "redis-benchmark (fill)", 300)
    # one test of more requests than it can make in the test: it runs, each of its clients
    # with a request in flight, until it is stopped after the scans
    clients = 8
    bench = r.spawn([BENCH, "-h", "127.0.0.1", "-p", str(port), "-t", "set", "-d", "64",
                     "-n", "1000000000", "-c", str(clients), "-r", "5000", "-q"], "bench",
                    "bench.out")
    failures, answered, scans = [], 0, []
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        for i in range(3):
            time.sleep(1.0)
            check_bench_running(bench, c, clients, f"before scan {i + 1}")
            before = redis_info(c, "stats", "total_commands_processed")
            t0 = time.monotonic()
            obj = scan_json(r, "--pid", str(server.pid), "--max-pause", "5s")
            scans.append((obj, time.monotonic() - t0))
            during = redis_info(c, "stats", "total_commands_processed") - before - 1
            check_bench_running(bench, c, clients, f"after scan {i + 1}")
            if during < 1:
                raise Fail(f"scan {i + 1}: the server processed none of the benchmark's "
                           f"requests from before the scan to after it")
            # a checking client: every value it set reads back
            for k in range(50):
                key, value = f"check:{i}:{k}", f"v{i}-{k}-" + "x" * (k % 17)
                if redis_command(c, "SET", key, value) != "+OK" or \
                        redis_command(c, "GET", key) != value:
                    failures.append(key)
                answered += 2
        if bench.poll() is not None:
            raise Fail(f"redis-benchmark ended (status {bench.returncode}) before it was "
                       f"stopped")
        bench.send_signal(signal.SIGINT)
        bench_rc = r.wait_exit(bench, "redis-benchmark", 30)
        pong = redis_command(c, "PING")
    out = {}
    for name in ("fill.out", "fill.err", "bench.out", "bench.err"):
        with open(os.path.join(r.tmp, name), errors="replace") as f:
            out[name] = f.read()
    # the fill ran to its end, the load until our signal, and neither met an error (an
    # error is printed, and the benchmark goes on)
    if fill_rc or "rror" in out["fill.out"] + out["fill.err"] or \
            "HSET: " not in out["fill.out"]:
        raise Fail(f"redis: the fill's benchmark rc {fill_rc}: "
                   f"{one_line(out['fill.out'] + out['fill.err'])[-300:]}")
    if bench_rc != -signal.SIGINT or "rror" in out["bench.out"] + out["bench.err"] or \
            "rps=" not in out["bench.out"] or pong != "+PONG" or failures:
        raise Fail(f"redis: benchmark rc {bench_rc} {one_line(out['bench.err'])[:200]}, ping "
                   f"{pong}, failed checks {failures[:5]} of {answered}")
    for obj, took in scans:
        sc = obj["scan"]
        if not 0 < sc["pause_seconds"] < 5 or sc["threads"] < 1 or sc["live_blocks"] < 1000:
            raise Fail(f"scan: pause {sc['pause_seconds']}, threads {sc['threads']}, live "
                       f"{sc['live_blocks']}")
        held = [e for e in obj["entries"] if e["kind"] in ("direct", "indirect")]
        if held:
            raise Fail(f"redis-server holds what it allocated, yet {len(held)} entries are "
                       f"called leaks: {[(e['kind'], e['blocks'], functions(e)[:4]) for e in held[:3]]}")
    if not all_threads_running(server.pid):
        raise Fail(f"redis-server left stopped: {proc_state(server.pid)}")


PYTHON = "/usr/bin/python3.11"
# what makes and holds pymalloc's arenas, and the objects of the program's cycles
ARENA_FUNCTIONS = ("new_arena", "_PyObject_ArenaMmap", "allocate_from_new_pool")
CYCLE_FUNCTIONS = ("make_cycles", "keep_objects")


def test_scan_python(r):
    """A CPython target in default mode (tests/e2e/pyleaks.py), as docs/usage.md says: its
    arenas are reached through pymalloc's table and searched whole, so no object is
    reported, not its garbage cycles, small (in arenas) or large (malloc'd, reached through
    the collector's lists) alike; what the scan finds is C-level leaks: every block the
    program malloc'd through ctypes and lost, under the Python function that made them,
    direct, or possible where an integer in memory looks like a pointer into its middle
    (python3.11 is not PIE: its heap lies low, where hashes and counts fall). Only an
    integer equal to a block's start could hide one; at the rate such words fall inside
    blocks here (0 to 3 in 200 KB of blocks) that is about 1 run in 4000 with 16 blocks."""
    if not os.access(PYTHON, os.X_OK):
        raise Fail(f"{PYTHON} is missing (make deps installs it)")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyleaks.py")
    p = r.spawn([PYTHON, script], "target", "pyleaks.out")
    out = os.path.join(r.tmp, "pyleaks.out")
    r.wait_line(out, "ready ", p)
    r.start_daemon("--pid", str(p.pid))
    r.wait_state("attached", p.pid)
    os.kill(p.pid, signal.SIGUSR1)
    expect = json.loads(r.wait_line(out, "expect ", p))
    n, size = expect["c_leak"]
    # the large objects of the cycles are blocks memtrace holds, that the scan could report
    # (once the daemon has taken the program's events)
    def big_blocks():
        rep = r.ctl_json("report", "--pid", str(p.pid), "--top", "0", "--format", "json")
        return sum(e["live_allocations"] for e in rep["entries"]
                   if "make_cycles" in functions(e) and e["live_allocations"] and
                   e["live_bytes"] == 672 * e["live_allocations"])

    wait_until(f"memtrace never held the {2 * expect['cycles_big']} objects of 672 B of the "
               f"large cycles", lambda: big_blocks() == 2 * expect["cycles_big"])
    obj = scan_json(r, "--pid", str(p.pid))
    sc = obj["scan"]
    problems = []
    if sc["pids"] != [p.pid] or sc["events_lost"] or sc["blocks_unread"]:
        problems.append(f"scan figures {sc}")
    leak = [e for e in obj["entries"] if "c_leak" in functions(e)]
    found = {k: sum(e["blocks"] for e in leak if e["kind"] == k) for k in KINDS}
    if any(e["kind"] not in ("direct", "possible") or e["bytes"] != e["blocks"] * size
           for e in leak) or found["direct"] + found["possible"] != n:
        problems.append(f"the ctypes leak ({n} blocks of {size} B, direct or possible) is "
                        f"reported as {[(e['kind'], e['blocks'], e['bytes']) for e in leak]}")
    for e in obj["entries"]:
        names = functions(e)
        if any(f in names for f in ARENA_FUNCTIONS + CYCLE_FUNCTIONS):
            problems.append(f"an arena or a Python object is reported: {e['kind']} "
                            f"{e['blocks']} blocks {e['bytes']} B at {names[:8]}")
    if sc["direct"]["blocks"] != found["direct"] or sc["indirect"]["blocks"] or \
            sc["possible"]["blocks"] != found["possible"]:
        problems.append(f"direct {sc['direct']}, indirect {sc['indirect']}, possible "
                        f"{sc['possible']}: only the {n} C blocks are leaks")
    if problems:
        raise Fail("; ".join(problems))
    if not all_threads_running(p.pid):
        raise Fail(f"python left stopped: {proc_state(p.pid)}")
    p.send_signal(signal.SIGTERM)
    if r.wait_exit(p, "python", 10) != 0:
        raise Fail(f"python exited {p.returncode}")


# ---- faults: the target survives everything ---------------------------------------------------

STALL = {"MEMTRACE_TEST_SCAN_STALL_MS": "4000"}


def scan_in_background(r, *args):
    return subprocess.Popen([r.memtracectl, "--socket", r.sock, "leaks", "--unreachable",
                             "--max-pause", "20s", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_stopped(r, pid):
    wait_until(f"pid {pid} was not stopped by the scan",
               lambda: proc_state(pid)[0] == "t")


def test_scan_daemon_killed(r):
    """memtraced SIGKILLed while the target stands still: the kernel detaches it, it runs
    on unstopped (it answers its signal and exits 0)."""
    p, _ = attach_scanprog(r, env=STALL)
    daemon = next(d for d, kind in r.procs if kind == "daemon")
    ctl = scan_in_background(r)
    wait_stopped(r, p.pid)
    os.kill(daemon.pid, signal.SIGKILL)
    r.wait_exit(daemon, "memtraced", 10)
    wait_until("the target ran again after the daemon died",
               lambda: all_threads_running(p.pid), 5)
    out, err = ctl.communicate(timeout=30)
    if ctl.returncode != 1 or one_error_line(err):
        raise Fail(f"memtracectl rc {ctl.returncode}: {one_line(err)[:200]}")
    finish(r, p)


def test_scan_strace(r):
    """A target another tracer holds is refused with one line, and scanned once it left."""
    strace = shutil.which("strace")
    if not strace:
        raise Fail("strace is missing")
    p, expect = attach_scanprog(r)
    tracer = r.spawn([strace, "-f", "-p", str(p.pid), "-o", "/dev/null"], "tracer",
                     "strace.out")
    wait_until("strace did not attach", lambda: proc_state(p.pid)[1] == tracer.pid)
    rc, out, err = r.ctl("leaks", "--unreachable")
    if rc != 1 or one_error_line(err) or \
            f"pid {p.pid} is already traced by pid {tracer.pid} (strace)" not in err:
        raise Fail(f"under strace: rc {rc}, stderr {one_line(err)[:300]!r}")
    tracer.send_signal(signal.SIGINT)
    r.wait_exit(tracer, "strace", 10)
    wait_until("strace did not detach", lambda: proc_state(p.pid)[1] == 0)
    check_known(scan_json(r), expect)
    finish(r, p)


def test_scan_gdb(r):
    """A target gdb holds stopped is refused with one line and left as gdb holds it (still
    stopped, still gdb's); once gdb has detached it runs again, and is scanned."""
    gdb = shutil.which("gdb")
    if not gdb:
        raise Fail("gdb is missing (make deps installs it)")
    p, expect = attach_scanprog(r)
    go = os.path.join(r.tmp, "gdb.go")
    os.mkfifo(go)
    # attach, then wait at a shell command (the target stopped) until told; batch mode
    # detaches at the end
    tracer = r.spawn([gdb, "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                      "-p", str(p.pid), "-ex", f"shell read go < {go}"], "tracer", "gdb.out")
    wait_until("gdb did not attach", lambda: proc_state(p.pid) == ("t", tracer.pid))
    rc, out, err = r.ctl("leaks", "--unreachable")
    if rc != 1 or out or one_error_line(err) or \
            f"pid {p.pid} is already traced by pid {tracer.pid} (gdb)" not in err:
        raise Fail(f"under gdb: rc {rc}, stderr {one_line(err)[:300]!r}")
    if proc_state(p.pid) != ("t", tracer.pid) or tracer.poll() is not None:
        raise Fail(f"after the refusal the target is {proc_state(p.pid)}, gdb "
                   f"{'gone' if tracer.poll() is not None else 'there'}: not as gdb held it")
    fd = None

    def open_go():
        nonlocal fd
        try:
            fd = os.open(go, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # gdb's shell has not opened it yet
            return False
        return True

    wait_until("gdb's shell did not wait", open_go)
    os.write(fd, b"go\n")
    os.close(fd)
    if r.wait_exit(tracer, "gdb", 30) != 0:
        raise Fail(f"gdb exited {tracer.returncode}")
    wait_until("the target did not run again after gdb detached",
               lambda: all_threads_running(p.pid), 10)
    check_known(scan_json(r), expect)
    finish(r, p)


def priorities(daemon_pid):
    """(the nice of the daemon's session group, of its scan thread): either None if absent."""
    group = thread = None
    try:
        with open(f"/proc/{daemon_pid}/autogroup") as f:
            group = int(f.read().split(" nice ")[1])
    except (OSError, IndexError, ValueError):
        pass
    for tid in os.listdir(f"/proc/{daemon_pid}/task"):
        try:
            with open(f"/proc/{daemon_pid}/task/{tid}/comm") as f:
                if f.read().strip() != "memtrace-scan":
                    continue
            with open(f"/proc/{daemon_pid}/task/{tid}/stat") as f:
                thread = int(f.read().rsplit(")", 1)[1].split()[16])
        except OSError:
            continue
    return group, thread


def test_scan_target_killed(r):
    """A target killed while it stands still: the scan says so in one line, the daemon
    serves on, and the process is released to its parent (it is reaped, no zombie left).
    While the target stands still the scan runs at nice -10, its thread and the daemon's
    session (autogroup), and at their own priorities again afterwards."""
    p, _ = attach_scanprog(r, env=STALL)
    daemon = next(d for d, kind in r.procs if kind == "daemon")
    before = priorities(daemon.pid)
    ctl = scan_in_background(r)
    wait_stopped(r, p.pid)
    during = priorities(daemon.pid)
    want = (None if before[0] is None else -10, -10)
    if before[1] not in (None, 0) or during != want:  # None: no request has made it yet
        raise Fail(f"nice of the daemon's session and scan thread: {before} before the "
                   f"scan, {during} during it, expected {want} during it")
    os.kill(p.pid, signal.SIGKILL)
    if r.wait_exit(p, "the killed target", 10) != -signal.SIGKILL:
        raise Fail(f"the target's status: {p.returncode}")
    out, err = ctl.communicate(timeout=30)
    if ctl.returncode != 1 or one_error_line(err) or f"pid {p.pid}" not in err or \
            not re.search(r"exited|killed", err):
        raise Fail(f"memtracectl rc {ctl.returncode}: {one_line(err)[:300]!r}")
    if priorities(daemon.pid) != (before[0], 0):
        raise Fail(f"nice after the scan {priorities(daemon.pid)}, before it {before}")
    r.wait_state("exited", p.pid)
    rc, _, err = r.ctl("leaks", "--unreachable")
    if rc != 1 or "no traced process is running" not in err:
        raise Fail(f"a scan with no live target: rc {rc}, {one_line(err)[:200]}")


def test_scan_pause_bound(r):
    """Past --max-pause the scan gives up, resumes the target and says so; the pause is
    bounded by it."""
    p, _ = attach_scanprog(r, env=STALL)
    t0 = time.monotonic()
    rc, out, err = r.ctl("leaks", "--unreachable", "--max-pause", "300ms", timeout=30)
    took = time.monotonic() - t0
    if rc != 1 or one_error_line(err) or \
            f"gave up on pid {p.pid}: it stood still for the whole pause bound (300 ms" not in err:
        raise Fail(f"rc {rc}, stderr {one_line(err)[:300]!r}")
    if took > 3.5:
        raise Fail(f"the scan took {took:.1f} s to give up")
    if not all_threads_running(p.pid):
        raise Fail(f"left stopped: {proc_state(p.pid)}")
    finish(r, p)


def test_scan_stop_bound(r):
    """A thread that cannot stop (tests/e2e/vforkhold.c: it waits in vfork() for its child)
    makes the scan give up at the pause bound, with one line that names it: the process runs
    on, none of its threads left stopped or traced, and is scanned once the child is gone."""
    prog = os.path.join(r.build, "tests", "vforkhold")
    p = r.spawn([prog], "target", "vforkhold.out")
    out = os.path.join(r.tmp, "vforkhold.out")
    r.wait_line(out, "ready ", p)
    child = int(r.wait_line(out, "held ", p))
    r.start_daemon("--pid", str(p.pid))
    r.wait_state("attached", p.pid)
    t0 = time.monotonic()
    rc, o, err = r.ctl("leaks", "--unreachable", "--max-pause", "300ms", timeout=30)
    took = time.monotonic() - t0
    m = re.fullmatch(r"memtracectl: memtraced: gave up on pid %d: thread (\d+) did not stop "
                     r"within the pause bound \(300 ms, --max-pause\); it runs on, nothing is "
                     r"reported\n" % p.pid, err)
    if rc != 1 or o or not m or int(m.group(1)) == p.pid or \
            not os.path.exists(f"/proc/{p.pid}/task/{m.group(1)}"):
        raise Fail(f"rc {rc}, stdout {o[:100]!r}, stderr {err[:300]!r}")
    if took > 3.5:
        raise Fail(f"the scan took {took:.1f} s to give up")
    if not all_threads_running(p.pid):
        raise Fail(f"left stopped or traced: {proc_state(p.pid)}")
    os.kill(child, signal.SIGKILL)
    wait_until("the thread did not go on once its vfork child was gone",
               lambda: len(os.listdir(f"/proc/{p.pid}/task")) == 1)
    obj = scan_json(r)
    if obj["scan"]["pids"] != [p.pid] or obj["scan"]["threads"] != 1:
        raise Fail(f"the scan after the child was gone: {obj['scan']}")
    p.send_signal(signal.SIGTERM)
    if r.wait_exit(p, "vforkhold", 10) != 0:
        raise Fail(f"vforkhold exited {p.returncode}")


def test_scan_threads(r):
    """64 threads that each hold a block on their stack and drop another, and threads
    created and joined all the time: every scan gives exactly 64 direct leaks from
    thread_lost and nothing else as direct or indirect, and every thread runs on."""
    n = 64
    exe = os.path.join(r.build, "tests", "scanthreads")
    p = r.spawn([exe, str(n)], "target", "threads.out")
    out = os.path.join(r.tmp, "threads.out")
    r.wait_line(out, "starting ", p)
    r.start_daemon("--pid", str(p.pid))
    r.wait_state("attached", p.pid)
    os.kill(p.pid, signal.SIGUSR2)
    r.wait_line(out, "ready ", p)
    progress = []
    for i in range(3):
        obj = scan_json(r)
        got = by_function(obj)
        lost = got.pop(("direct", "thread_lost"), None)
        if lost != [n, n * 48]:
            raise Fail(f"scan {i}: thread_lost {lost}, expected [{n}, {n * 48}]")
        others = {k: v for k, v in got.items() if k[0] != "possible"}
        if others:
            raise Fail(f"scan {i}: false leaks {others}")
        bad = [e for e in obj["entries"] if e["kind"] == "possible" and not is_dtv(e)]
        if bad:
            raise Fail(f"scan {i}: possible leaks besides DTVs: "
                       f"{[functions(e)[:3] for e in bad[:3]]}")
        if obj["scan"]["threads"] < n + 2:
            raise Fail(f"scan {i}: {obj['scan']['threads']} threads stopped")
        if not all_threads_running(p.pid):
            raise Fail(f"scan {i}: threads left stopped")
        time.sleep(0.3)
        with open(out) as f:
            progress.append(int([l for l in f if l.startswith("progress ")][-1].split()[1]))
    if not progress[0] < progress[1] < progress[2]:
        raise Fail(f"the churn did not go on between scans: {progress}")
    os.kill(p.pid, signal.SIGUSR1)
    if r.wait_exit(p, "scanthreads", 20) != 0:
        raise Fail(f"scanthreads exited {p.returncode}")


def test_scan_forked(r):
    """A forked child's scan counts the blocks it inherited: those its copy of memory still
    holds are reachable, those nobody held at the fork and the one it dropped since are
    leaked, by the parent's allocating function; the parent's scan is its own."""
    exe = os.path.join(r.build, "tests", "scanfork")
    daemon = r.start_daemon("--follow-forks", "--", exe, wait=False)
    r.wait_daemon(daemon, r.sock)
    out = os.path.join(r.tmp, "memtraced.out")
    child = int(r.wait_line(out, "child ", daemon))
    parent = int(r.wait_line(out, "parent ", daemon))
    r.extra_pids.update((child, parent))
    r.wait_state("attached", child)
    kept, lost, own = (6, 48), (4, 64), (3, 80)
    cases = {child: {("direct", "site_lost"): [lost[0], lost[0] * lost[1]],
                     ("direct", "site_kept"): [1, kept[1]],
                     ("direct", "site_child_lost"): [own[0], own[0] * own[1]]},
             parent: {("direct", "site_lost"): [lost[0], lost[0] * lost[1]]}}
    for pid, want in cases.items():
        with r.part("child" if pid == child else "parent"):
            obj = scan_json(r, "--pid", str(pid))
            got = by_function(obj)
            if got != want or obj["scan"]["pids"] != [pid]:
                raise Fail(f"pid {pid}: {sorted(got.items())} in {obj['scan']['pids']}, "
                           f"expected {sorted(want.items())}")
            if not all_threads_running(pid):
                raise Fail(f"pid {pid} left stopped: {proc_state(pid)}")
    os.kill(child, signal.SIGUSR1)
    r.wait_state("exited", parent)
    rc, _, err = r.ctl("leaks", "--unreachable", "--pid", str(child))
    if rc != 1 or f"pid {child}" not in err or one_error_line(err):
        raise Fail(f"a scan of the exited child: rc {rc}, {one_line(err)[:200]}")
