#!/usr/bin/env python3
"""End-to-end tests of the core tracer: exact counts on the known pattern, `-- CMD` mode,
bad input, and clean shutdown."""

from harness import *  # noqa: F401,F403


def test_attach_pid(r):
    """Attach to a running pattern: every number exact, report per site, then the exit."""
    target = r.start_pattern("--loops", "2")
    daemon = r.start_daemon("--pid", str(target.pid))
    with r.part("status"):
        t = r.wait_state("attached", target.pid, daemon)
        status = r.ctl_json("status", "--json")
        for key in ("uptime", "events_received", "events_lost"):
            number(status, key, "status")
        if "pattern" not in str(t.get("command")):
            raise Fail(f"command is {t.get('command')!r}, expected it to name pattern")
        if not isinstance(t.get("allocator"), str) or not t["allocator"]:
            raise Fail(f"allocator is {t.get('allocator')!r}")
        if number(t, "probes", "target") <= 0:
            raise Fail(f"probes is {t['probes']}")
        number(t, "traced_seconds", "target")

    target.send_signal(signal.SIGUSR1)
    expect = r.read_expect(os.path.join(r.tmp, "pattern.out"), target)
    stats = None
    with r.part("stats"):
        stats = r.wait_stats(expect)
        check_exact_stats(stats, expect)
        t = r.status_target(stats, target.pid, "stats")
        if t is not None:  # per-target counters, where stats gives them, match the totals
            mine = t.get("counters") if isinstance(t.get("counters"), dict) else t
            diff = [f"{k}={mine[k]}" for k in COUNTERS if k in mine and mine[k] != stats[k]]
            if diff:
                raise Fail(f"the target's counters differ from the totals: {', '.join(diff)}")

    entries = []
    with r.part("report_sites"):
        entries = r.report("--top", "200", "--sort", "allocated")
        check_sites(entries, expect)

    with r.part("report_frames"):
        ranges = site_line_ranges()
        checked = 0
        for e in entries:
            fn = frame0_function(e)
            if fn not in ranges:
                continue
            f0 = e["frames"][0]
            first, last = ranges[fn]
            module, file, line = f0.get("module"), f0.get("file"), f0.get("line")
            if not isinstance(f0.get("address"), int) or f0["address"] <= 0:
                raise Fail(f"{fn}: address is {f0.get('address')!r}")
            if not isinstance(module, str) or os.path.basename(module) != "pattern":
                raise Fail(f"{fn}: module is {module!r}, expected .../pattern")
            if not isinstance(file, str) or os.path.basename(file) != "pattern.c":
                raise Fail(f"{fn}: file is {file!r}, expected .../pattern.c")
            if not isinstance(line, int) or not first <= line <= last:
                raise Fail(f"{fn}: line is {line!r}, expected {first}..{last} of pattern.c")
            checked += 1
        if not checked:
            raise Fail("no report entry has a site_* function as frames[0]")

    with r.part("report_sort"):
        top = r.report("--top", "3", "--sort", "live")
        if len(top) != 3:
            raise Fail(f"--top 3 --sort live returned {len(top)} entries")
        live = [number(e, "live_bytes", "entry") for e in top]
        if live != sorted(live, reverse=True):
            raise Fail(f"--sort live is not descending: {live}")
        if entries and live[0] != max(number(e, "live_bytes", "entry") for e in entries):
            raise Fail(f"--sort live starts at {live[0]}, not at the largest live_bytes")
        alloc = [number(e, "bytes_allocated", "entry") for e in entries]
        if alloc != sorted(alloc, reverse=True):
            raise Fail("--sort allocated is not descending by bytes_allocated")
        if entries and frame0_function(entries[0]) != "site_spike":
            raise Fail(f"--sort allocated starts at {frame0_function(entries[0])}, "
                       f"not site_spike")
        count = r.report("--top", "5", "--sort", "count")
        calls = [number(e, "allocations", "entry") for e in count]
        if calls != sorted(calls, reverse=True):
            raise Fail(f"--sort count is not descending: {calls}")
        if not count or frame0_function(count[0]) != "site_thread_alloc":
            raise Fail("--sort count does not start at site_thread_alloc")

    with r.part("exit"):
        target.send_signal(signal.SIGUSR1)
        rc = r.wait_exit(target, "pattern")
        if rc != 0:
            raise Fail(f"pattern exited with status {rc}")
        t = r.wait_state("exited", target.pid, daemon)
        if t.get("exit_code") not in (None, 0):
            raise Fail(f"status shows exit_code {t['exit_code']}, expected 0")
        after = r.ctl_json("stats", "--json")
        if stats is not None and counters_of(after) != counters_of(stats):
            raise Fail(f"stats changed after the target exited: {counters_of(stats)} -> "
                       f"{counters_of(after)}")


def test_cmd_mode(r):
    """memtraced -- pattern --no-wait: traced from its first allocation; sites exact."""
    expect_file = os.path.join(r.tmp, "expect.txt")
    daemon = r.start_daemon("--", r.pattern, "--no-wait", "--expect-file", expect_file,
                            wait=False)
    r.wait_daemon(daemon, r.sock)
    expect = r.read_expect(expect_file)
    t = r.wait_state("exited", None, daemon)
    if t.get("exit_code") not in (None, 0):
        raise Fail(f"status shows exit_code {t['exit_code']}, expected 0")
    with r.part("stats"):
        stats = r.wait_stats(expect)
        got = counters_of(stats)
        low = [f"{k}={got[k]} (expected >= {expect[k]})"
               for k in ("allocations", "bytes_allocated", "live_allocations", "live_bytes",
                         "peak_live_bytes") if got[k] < expect[k]]
        # Blocks made before the phase are known here, so their frees are frees, not unknown.
        if got["frees"] + got["unknown_frees"] < expect["frees"] + expect["unknown_frees"]:
            low.append(f"frees+unknown_frees={got['frees'] + got['unknown_frees']}")
        if got["events_lost"] != 0:
            low.append(f"events_lost={got['events_lost']}")
        if low:
            raise Fail(", ".join(low))
    with r.part("report_sites"):
        check_sites(r.report("--top", "200", "--sort", "allocated"), expect)


def check_refused(r, outcome, what):
    """A memtraced run that must fail: exit 1, one line on stderr, no socket left."""
    rc, err = outcome
    if rc != 1:
        raise Fail(f"{what}: memtraced exited {rc}, expected 1 ({one_line(err)[:160]})")
    bad = one_error_line(err)
    if bad:
        raise Fail(f"{what}: {bad}")
    if os.path.lexists(r.sock):
        raise Fail(f"{what}: the socket {os.path.basename(r.sock)} was left behind")


def run_daemon_to_end(r, argv):
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=TIMEOUT, start_new_session=True)
    except subprocess.TimeoutExpired:
        raise Fail(f"memtraced did not exit within {TIMEOUT:.0f} s") from None
    return p.returncode, p.stderr


def unused_pid():
    try:
        with open("/proc/sys/kernel/pid_max") as f:
            pid = int(f.read()) - 1
    except (OSError, ValueError):
        pid = 4194303
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    return pid


def test_bad_pid(r):
    """--pid of a process that does not exist, and of a kernel thread (kthreadd, pid 2)."""
    check_refused(r, run_daemon_to_end(r, [r.memtraced, "--socket", r.sock,
                                           "--pid", str(unused_pid())]), "nonexistent pid")
    rc, err = run_daemon_to_end(r, [r.memtraced, "--socket", r.sock, "--pid", "2"])
    check_refused(r, (rc, err), "kernel thread")
    if "kernel thread" not in err:
        raise Fail(f"--pid 2 (kthreadd): {one_line(err)[:160]}, expected it to say kernel thread")


def test_static_binary(r):
    """--pid of a static, stripped process: nothing to probe."""
    binary = os.path.join(r.build, "tests", "static_nomalloc.static")
    cc = os.environ.get("CC", "cc")
    for argv in ([cc, "-static", "-O1", STATIC_SRC, "-o", binary], ["strip", binary]):
        try:
            b = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise Fail(f"cannot build the static binary: {e}") from None
        if b.returncode != 0:
            raise Fail(f"cannot build the static binary: {one_line(b.stderr)[:200]}")
    target = r.spawn([binary, "60"], "target", "static.out")
    time.sleep(0.1)
    if target.poll() is not None:
        raise Fail(f"the static binary exited with status {target.returncode}")
    check_refused(r, run_daemon_to_end(r, [r.memtraced, "--socket", r.sock,
                                           "--pid", str(target.pid)]), "static binary")


def attach_exact(r, target, what):
    """Attach to a waiting pattern, run its phase: every counter and site exact, then its exit."""
    daemon = r.start_daemon("--pid", str(target.pid), tag=f"memtraced-{what}")
    with r.part(f"{what}.attach"):
        r.wait_state("attached", target.pid, daemon)
    target.send_signal(signal.SIGUSR1)
    with r.part(f"{what}.exact"):
        expect = r.read_expect(os.path.join(r.tmp, f"{what}.out"), target)
        check_exact_stats(r.wait_stats(expect), expect)
        check_sites(r.report("--top", "200", "--sort", "allocated"), expect)
    target.send_signal(signal.SIGUSR1)
    r.wait_exit(target, "pattern")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail(f"{what}: memtraced exited with status {daemon.returncode} on SIGTERM")


def test_attach_chrooted(r):
    """A target whose root is not ours. A server that locked itself in an empty directory once
    its libraries were loaded: its link map names files its root no longer holds. A program
    started in a chroot by an explicit ld.so (no DT_DEBUG to find its link map): the memory map
    shows our paths, not its own. Both traced exactly."""
    empty = os.path.join(r.tmp, "empty-root")
    os.makedirs(empty, exist_ok=True)
    attach_exact(r, r.start_pattern("--chroot", empty, tag="selfchroot"), "selfchroot")

    root = os.path.join(r.tmp, "root")
    out = subprocess.run(["ldd", r.pattern], capture_output=True, text=True)
    libs = re.findall(r"(/\S+) \(0x", out.stdout)
    ldso = [p for p in libs if "ld-linux" in p]
    libc = [p for p in libs if os.path.basename(p) == "libc.so.6"]
    if out.returncode or len(ldso) != 1 or len(libc) != 1:
        raise Fail(f"cannot find pattern's ld.so and libc in ldd's output: {out.stdout!r}")
    for src, dst in ((r.pattern, "bin/pattern"), (ldso[0], "lib/ld.so"),
                     (libc[0], "opt/lib/libc.so.6")):
        os.makedirs(os.path.dirname(os.path.join(root, dst)), exist_ok=True)
        shutil.copy(src, os.path.join(root, dst))
    p = r.spawn(["chroot", root, "/lib/ld.so", "--library-path", "/opt/lib", "/bin/pattern"],
                "target", "ldso.out")
    r.wait_line(os.path.join(r.tmp, "ldso.out"), "ready ", p)
    attach_exact(r, p, "ldso")


def test_attach_replaced_libc(r):
    """A target whose libc was replaced on disk after it loaded it, as a package upgrade does
    to every running service: the probes go on the file it has mapped, not on the one now at
    that path (which it never calls: nothing would be counted)."""
    out = subprocess.run(["ldd", r.pattern], capture_output=True, text=True)
    libc = re.findall(r"(/\S+/libc\.so\.6) \(0x", out.stdout)
    if out.returncode or len(libc) != 1:
        raise Fail(f"cannot find pattern's libc in ldd's output: {out.stdout!r}")
    libdir = os.path.join(r.tmp, "lib")
    os.makedirs(libdir, exist_ok=True)
    shutil.copy(libc[0], os.path.join(libdir, "libc.so.6"))
    p = r.spawn([r.pattern], "target", "replaced.out",
                env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    r.wait_line(os.path.join(r.tmp, "replaced.out"), "ready ", p)
    # the upgrade: a new file renamed over the old one
    shutil.copy(libc[0], os.path.join(libdir, "libc.so.6.new"))
    os.rename(os.path.join(libdir, "libc.so.6.new"), os.path.join(libdir, "libc.so.6"))
    attach_exact(r, p, "replaced")


def test_thread_exit(r):
    """memtraced -- threadexit: 101 threads each free 64 blocks, and glibc frees the chunks
    each one's cache still holds again as it exits. Those second frees are nothing: the
    site's counts are exact and unknown_frees stays at a few (the caches' own blocks, which
    glibc allocates without malloc), where it was about 56 per thread. The last
    thread exits after 80 000 other addresses were freed, more than the daemon remembered
    before (65 536: node's threads found it so)."""
    binary = os.path.join(r.build, "tests", "threadexit")
    daemon = r.start_daemon("--", binary, tag="memtraced-threadexit", wait=False)
    r.wait_daemon(daemon, r.sock)
    expect = json.loads(r.wait_line(os.path.join(r.tmp, "memtraced-threadexit.out"),
                                    "expect ", daemon))
    r.wait_state("exited", None, daemon)
    with r.part("site"):
        entries = [e for e in r.report("--top", "0", "--sort", "count")
                   if frame0_function(e) == "site_churn"]
        got = tuple(sum(number(e, k, "entry") for e in entries)
                    for k in ("allocations", "frees", "bytes_allocated", "bytes_freed"))
        want = (expect["allocations"], expect["allocations"], expect["bytes"], expect["bytes"])
        if got != want:
            raise Fail(f"site_churn: allocations, frees, bytes allocated and freed {got}, "
                       f"expected {want}")
        spread = [e for e in r.report("--top", "0", "--sort", "count")
                  if frame0_function(e) == "site_spread"]
        got = tuple(sum(number(e, k, "entry") for e in spread) for k in ("allocations", "frees"))
        if got != (expect["spread"], expect["spread"]):
            raise Fail(f"site_spread: allocations and frees {got}, expected {expect['spread']}")
    with r.part("unknown_frees"):
        stats = r.ctl_json("stats", "--json")
        if number(stats, "events_lost", "stats"):
            raise Fail(f"events_lost {stats['events_lost']}")
        # each thread's cache block is allocated without malloc, so its free is unknown,
        # but only the first time its address is freed: the sequential threads' blocks
        # take the same place (2 in all here; 58 when the lingering thread's chunks had
        # been forgotten behind the spread's addresses)
        if number(stats, "unknown_frees", "stats") > 5:
            raise Fail(f"unknown_frees {stats['unknown_frees']} for {expect['threads']} "
                       f"threads: the second frees of glibc's thread caches were counted")


def test_socket_in_use(r):
    """A second daemon on a socket a live daemon serves must refuse and leave it alone."""
    first_target = r.start_pattern(tag="pattern1")
    first = r.start_daemon("--pid", str(first_target.pid))
    r.wait_state("attached", first_target.pid, first)
    second_target = r.start_pattern(tag="pattern2")
    rc, err = run_daemon_to_end(r, [r.memtraced, "--socket", r.sock,
                                    "--pid", str(second_target.pid)])
    if rc != 1:
        raise Fail(f"second memtraced exited {rc}, expected 1 ({one_line(err)[:160]})")
    bad = one_error_line(err)
    if bad:
        raise Fail(f"second memtraced: {bad}")
    if first.poll() is not None:
        raise Fail(f"the first memtraced exited ({first.returncode})")
    if not os.path.exists(r.sock):
        raise Fail("the first daemon's socket was removed")
    r.wait_state("attached", first_target.pid, first)
    if second_target.poll() is not None:
        raise Fail("the second target died")


def test_stale_socket(r):
    """A socket file nobody serves (a crashed daemon's) is taken over."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(r.sock)
    s.close()
    target = r.start_pattern()
    daemon = r.start_daemon("--pid", str(target.pid))
    r.wait_state("attached", target.pid, daemon)


def test_not_root(r):
    """memtraced run as nobody: refused with one line."""
    runner = None
    if shutil.which("setpriv"):
        runner = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    elif shutil.which("runuser"):
        runner = ["runuser", "-u", "nobody", "--"]
    else:
        raise Fail("neither setpriv nor runuser is installed")
    # nobody must be able to run the binary and reach the socket directory: copy it out of
    # a build tree that may be private, and open the directory up.
    os.chmod(r.tmp, 0o755)
    bindir = os.path.join(r.tmp, "bin")
    os.mkdir(bindir, 0o755)
    daemon = os.path.join(bindir, "memtraced")
    shutil.copy2(r.memtraced, daemon)
    os.chmod(daemon, 0o755)
    sockdir = os.path.join(r.tmp, "run")
    os.mkdir(sockdir)
    os.chmod(sockdir, 0o1777)
    r.sock = os.path.join(sockdir, "memtraced.sock")
    target = r.start_pattern()
    rc, err = run_daemon_to_end(r, runner + [daemon, "--socket", r.sock,
                                             "--pid", str(target.pid)])
    if rc in (126, 127):
        raise Fail(f"could not run memtraced as nobody: {one_line(err)[:160]}")
    check_refused(r, (rc, err), "not root")


def test_ctl_no_daemon(r):
    """memtracectl with nobody listening: exit 1, one line."""
    for args in (("status",), ("stats", "--json"), ("report", "--top", "3")):
        rc, _, err = r.ctl(*args)
        if rc != 1:
            raise Fail(f"memtracectl {' '.join(args)} exited {rc}, expected 1")
        bad = one_error_line(err)
        if bad:
            raise Fail(f"memtracectl {' '.join(args)}: {bad}")


def test_ctl_usage(r):
    """Usage errors exit 2, before any connection is tried."""
    for args in (("--no-such-option",), ("no-such-command",), ("report", "--top", "many"),
                 ("report", "--sort", "no-such-key")):
        rc, _, err = r.ctl(*args)
        if rc != 2:
            raise Fail(f"memtracectl {' '.join(args)} exited {rc}, expected 2")
        if not err.strip():
            raise Fail(f"memtracectl {' '.join(args)} printed nothing on stderr")


def stop_daemon_keeps_target(r, sig):
    target = r.start_pattern()
    daemon = r.start_daemon("--pid", str(target.pid))
    r.wait_state("attached", target.pid, daemon)
    daemon.send_signal(sig)
    rc = r.wait_exit(daemon, "memtraced")
    if rc != 0:
        raise Fail(f"memtraced exited {rc} on {sig.name}, expected 0")
    if os.path.lexists(r.sock):
        raise Fail("the socket was not removed")
    if target.poll() is not None:
        raise Fail(f"the target died with the daemon (status {target.returncode})")
    # Detached: the pattern runs its whole phase and exits normally.
    target.send_signal(signal.SIGUSR1)
    r.read_expect(os.path.join(r.tmp, "pattern.out"), target)
    target.send_signal(signal.SIGUSR1)
    rc = r.wait_exit(target, "pattern")
    if rc != 0:
        raise Fail(f"the target exited with status {rc} after the daemon stopped")


def test_sigterm(r):
    """SIGTERM: exit 0, socket removed, target unharmed."""
    stop_daemon_keeps_target(r, signal.SIGTERM)


def test_sigint(r):
    """SIGINT: the same as SIGTERM."""
    stop_daemon_keeps_target(r, signal.SIGINT)
