#!/usr/bin/env python3
"""End-to-end tests of memtraced and memtracectl on real BPF (needs root).

    python3 tests/e2e/run.py --build DIR [-k NAME]...

DIR holds memtraced, memtracectl and tests/pattern (`make e2e` builds them). Each test starts
its own daemon on a socket in a fresh temporary directory, bounds every wait and kills what it
started in a finally block. Prints "PASS name" or "FAIL name: reason" per check, then
"e2e: N passed, N failed". Standard library only.
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

TIMEOUT = 30.0  # seconds: the bound on every wait
POLL = 0.05
HERE = os.path.dirname(os.path.abspath(__file__))
PATTERN_SRC = os.path.join(HERE, "pattern.c")
STATIC_SRC = os.path.join(HERE, "static_nomalloc.c")

COUNTERS = ("allocations", "frees", "bytes_allocated", "bytes_freed", "live_allocations",
            "live_bytes", "peak_live_bytes", "unknown_frees")
SITE_KEYS = ("allocations", "bytes_allocated", "frees", "bytes_freed", "live_allocations",
             "live_bytes", "peak_live_bytes")


class Fail(Exception):
    """A check failed; the message is the one-line reason."""


def one_line(text):
    return " ".join(str(text).split())


def deadline_after(seconds=TIMEOUT):
    return time.monotonic() + seconds


def number(obj, key, where):
    """obj[key] as a number; a missing or non-numeric field is a failure, not a crash."""
    if not isinstance(obj, dict) or key not in obj:
        raise Fail(f"{where} has no \"{key}\"")
    value = obj[key]
    if isinstance(value, dict):  # events_lost may be broken down by kind
        return sum(number(value, k, f"{where}.{key}") for k in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Fail(f"{where}.{key} is not a number: {value!r}")
    return value


def one_error_line(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    if len(lines) != 1:
        return f"expected one line on stderr, got {len(lines)}: {one_line(stderr)[:200]!r}"
    return None


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def record(self, name, reason=None, logs=()):
        if reason is None:
            self.passed += 1
            print(f"PASS {name}", flush=True)
            return
        self.failed += 1
        print(f"FAIL {name}: {one_line(reason)}", flush=True)
        for line in logs:
            print(f"    | {line}", flush=True)


class Run:
    """One test: a temporary directory, the processes it started, and helpers to drive them."""

    def __init__(self, build, name, results):
        self.build = build
        self.name = name
        self.results = results
        self.memtraced = os.path.join(build, "memtraced")
        self.memtracectl = os.path.join(build, "memtracectl")
        self.pattern = os.path.join(build, "tests", "pattern")
        base = tempfile.gettempdir()
        if len(base) > 40:  # sun_path is 108 bytes
            base = "/tmp"
        self.tmp = tempfile.mkdtemp(prefix="memtrace-e2e-", dir=base)
        self.sock = os.path.join(self.tmp, "memtraced.sock")
        self.procs = []  # (Popen, kind) in start order
        self.extra_pids = set()  # targets memtraced started itself
        self.daemon_logs = []
        self.parts = 0

    # ---- parts: one PASS/FAIL line each -------------------------------------------------------

    @contextlib.contextmanager
    def part(self, suffix):
        self.parts += 1
        name = f"{self.name}.{suffix}"
        try:
            yield
        except Fail as e:
            self.results.record(name, str(e), self.log_tail())
        except Exception as e:  # a bug or a surprise: still one FAIL line, and cleanup runs
            self.results.record(name, f"{type(e).__name__}: {e}", self.log_tail())
        else:
            self.results.record(name)

    def log_tail(self, lines=8):
        out = []
        for path in self.daemon_logs:
            try:
                with open(path, errors="replace") as f:
                    text = f.read().splitlines()
            except OSError:
                continue
            out += [f"{os.path.basename(path)}: {l}" for l in text[-lines:]]
        return out

    # ---- processes ----------------------------------------------------------------------------

    def spawn(self, argv, kind, stdout_name, **kw):
        out = open(os.path.join(self.tmp, stdout_name), "wb")
        err_path = os.path.join(self.tmp, stdout_name.rsplit(".", 1)[0] + ".err")
        err = open(err_path, "wb")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                 start_new_session=True, **kw)
        finally:
            out.close()
            err.close()
        self.procs.append((p, kind))
        if kind == "daemon":
            self.daemon_logs.append(err_path)
        return p

    def start_pattern(self, *args, tag="pattern"):
        """Start tests/pattern and wait for its "ready" line: stdout's buffer then exists."""
        p = self.spawn([self.pattern, *args], "target", f"{tag}.out")
        self.wait_line(os.path.join(self.tmp, f"{tag}.out"), "ready ", p)
        return p

    def start_daemon(self, *args, sock=None, tag="memtraced", wait=True):
        sock = sock or self.sock
        p = self.spawn([self.memtraced, "--socket", sock, *args], "daemon", f"{tag}.out")
        if wait:
            self.wait_daemon(p, sock)
        return p

    def wait_daemon(self, daemon, sock):
        end = deadline_after()
        while True:
            if daemon.poll() is not None:
                raise Fail(f"memtraced exited with status {daemon.returncode} before serving "
                           f"its socket")
            if os.path.exists(sock):
                rc, _, _ = self.ctl("status", "--json", sock=sock)
                if rc == 0:
                    return
            if time.monotonic() > end:
                raise Fail(f"memtraced did not answer on its socket within {TIMEOUT:.0f} s")
            time.sleep(POLL)

    def wait_exit(self, proc, what, seconds=TIMEOUT):
        try:
            return proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise Fail(f"{what} did not exit within {seconds:.0f} s") from None

    def wait_line(self, path, prefix, proc=None):
        """The first line of file path that starts with prefix (without it)."""
        end = deadline_after()
        while True:
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        if line.startswith(prefix) and line.endswith("\n"):
                            return line[len(prefix):].strip()
            except FileNotFoundError:
                pass
            if proc is not None and proc.poll() is not None:
                raise Fail(f"{os.path.basename(path)}: process exited with status "
                           f"{proc.returncode} before printing \"{prefix.strip()}\"")
            if time.monotonic() > end:
                raise Fail(f"no \"{prefix.strip()}\" line in {os.path.basename(path)} "
                           f"within {TIMEOUT:.0f} s")
            time.sleep(POLL)

    def read_expect(self, path, proc=None):
        text = self.wait_line(path, "expect ", proc)
        try:
            expect = json.loads(text)
        except ValueError as e:
            raise Fail(f"the expect line is not JSON: {e}") from None
        if expect.get("ok") is not True:
            raise Fail(f"pattern's self-check failed: {expect.get('error')}")
        return expect

    def cleanup(self):
        for p, kind in reversed(self.procs):
            if p.poll() is not None:
                continue
            if kind == "daemon":  # let it detach cleanly first
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(p.pid, signal.SIGKILL)  # with a target memtraced started, if any
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for pid in self.extra_pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"pattern" not in f.read():
                        continue
                os.kill(pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- memtracectl --------------------------------------------------------------------------

    def ctl(self, *args, sock=None, timeout=15):
        argv = [self.memtracectl, "--socket", sock or self.sock, *args]
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Fail(f"memtracectl {' '.join(args)} did not return within {timeout} s") \
                from None
        return r.returncode, r.stdout, r.stderr

    def ctl_json(self, *args, sock=None):
        rc, out, err = self.ctl(*args, sock=sock)
        if rc != 0:
            raise Fail(f"memtracectl {' '.join(args)} exited {rc}: {one_line(err)[:200]}")
        try:
            return json.loads(out)
        except ValueError as e:
            raise Fail(f"memtracectl {' '.join(args)} printed invalid JSON ({e}): "
                       f"{one_line(out)[:200]}") from None

    def status_target(self, status, pid=None, where="status"):
        targets = status.get("targets") if isinstance(status, dict) else None
        if not isinstance(targets, list):
            raise Fail(f"{where} has no \"targets\" list")
        for t in targets:
            if pid is None or t.get("pid") == pid:
                return t
        return None

    def wait_state(self, state, pid=None, daemon=None):
        """Poll status until the target (pid, or the only one) is in state; return it."""
        end = deadline_after()
        seen = None
        while True:
            if daemon is not None and daemon.poll() is not None:
                raise Fail(f"memtraced exited with status {daemon.returncode} while waiting "
                           f"for the target to be {state}")
            t = self.status_target(self.ctl_json("status", "--json"), pid)
            if t is not None:
                seen = t.get("state")
                if isinstance(t.get("pid"), int):
                    self.extra_pids.add(t["pid"])
                if seen == state:
                    return t
            if time.monotonic() > end:
                raise Fail(f"target never reached state \"{state}\" within {TIMEOUT:.0f} s "
                           f"(last seen: {seen})")
            time.sleep(POLL)

    def wait_stats(self, expect):
        """Stats once the daemon has seen the expected allocations and stopped moving."""
        end = deadline_after()
        while True:
            stats = self.ctl_json("stats", "--json")
            if number(stats, "allocations", "stats") >= expect["allocations"]:
                time.sleep(0.3)  # the daemon drains its ring buffer on a ~10 ms timer
                again = self.ctl_json("stats", "--json")
                if counters_of(again) == counters_of(stats):
                    return again
                stats = again
            if time.monotonic() > end:
                raise Fail(f"stats at {counters_of(stats)} after {TIMEOUT:.0f} s; expected "
                           f"allocations={expect['allocations']} and no further change")
            time.sleep(POLL)

    def report(self, *args):
        rep = self.ctl_json("report", *args, "--format", "json")
        entries = rep.get("entries") if isinstance(rep, dict) else None
        if not isinstance(entries, list):
            raise Fail(f"report {' '.join(args)} has no \"entries\" list")
        return entries


def counters_of(stats):
    return {k: number(stats, k, "stats") for k in COUNTERS + ("events_lost",)}


def frame0_function(entry):
    frames = entry.get("frames")
    if not isinstance(frames, list) or not frames or not isinstance(frames[0], dict):
        return None
    return frames[0].get("function")


def site_sums(entries):
    """Report entries summed by frames[0].function (one site can have several stacks)."""
    sums = {}
    for i, e in enumerate(entries):
        acc = sums.setdefault(frame0_function(e), dict.fromkeys(SITE_KEYS, 0))
        for k in SITE_KEYS:
            acc[k] += number(e, k, f"entries[{i}]")
    return sums


def check_sites(entries, expect):
    sums = site_sums(entries)
    problems = []
    for site, want in expect["sites"].items():
        got = sums.get(site)
        if got is None:
            if want["allocations"] == 0:
                continue  # no allocation at this site: no entry is right
            deeper = sum(1 for e in entries
                         if any(isinstance(f, dict) and f.get("function") == site
                                for f in (e.get("frames") or [])[1:]))
            firsts = sorted({str(frame0_function(e)) for e in entries})[:6]
            problems.append(f"{site}: no entry with frames[0] = {site} ({deeper} entries have it "
                            f"deeper; frames[0] seen: {', '.join(firsts)})")
            continue
        diff = [f"{k}={got[k]} (expected {want[k]})" for k in SITE_KEYS if got[k] != want[k]]
        if diff:
            problems.append(f"{site}: {', '.join(diff)}")
    if problems:
        raise Fail("; ".join(problems))


def site_line_ranges():
    """Source lines of each site_* function in pattern.c: name -> (first, last)."""
    ranges = {}
    with open(PATTERN_SRC) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"SITE void (\w+)\(", line)
        if m:
            end = next((j for j in range(i, len(lines)) if lines[j] == "}"), len(lines) - 1)
            ranges[m.group(1)] = (i + 1, end + 1)
    return ranges


def check_exact_stats(stats, expect):
    got = counters_of(stats)
    diff = [f"{k}={got[k]} (expected {expect[k]})" for k in COUNTERS if got[k] != expect[k]]
    if got["events_lost"] != 0:
        diff.append(f"events_lost={got['events_lost']}")
    peak_time = number(stats, "peak_time", "stats")
    if not peak_time > 0:
        diff.append(f"peak_time={peak_time} (expected > 0)")
    if diff:
        raise Fail(", ".join(diff))


# ---- tests ------------------------------------------------------------------------------------

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
    """--pid of a process that does not exist."""
    check_refused(r, run_daemon_to_end(r, [r.memtraced, "--socket", r.sock,
                                           "--pid", str(unused_pid())]), "nonexistent pid")


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


TESTS = [
    ("attach_pid", test_attach_pid),
    ("cmd_mode", test_cmd_mode),
    ("bad_pid", test_bad_pid),
    ("static_binary", test_static_binary),
    ("socket_in_use", test_socket_in_use),
    ("stale_socket", test_stale_socket),
    ("not_root", test_not_root),
    ("ctl_no_daemon", test_ctl_no_daemon),
    ("ctl_usage", test_ctl_usage),
    ("sigterm", test_sigterm),
    ("sigint", test_sigint),
]


def main():
    ap = argparse.ArgumentParser(description="memtrace end-to-end tests (root, real BPF)")
    ap.add_argument("--build", required=True, metavar="DIR",
                    help="directory holding memtraced, memtracectl and tests/pattern")
    ap.add_argument("-k", action="append", default=[], metavar="NAME",
                    help="run only tests whose name contains NAME (repeatable)")
    args = ap.parse_args()

    if os.geteuid() != 0:
        print("e2e: needs root", flush=True)
        return 1
    build = os.path.abspath(args.build)
    results = Results()
    missing = [p for p in ("memtraced", "memtracectl", os.path.join("tests", "pattern"))
               if not os.access(os.path.join(build, p), os.X_OK)]
    if missing:
        results.record("setup", f"missing in {args.build}: {', '.join(missing)} (run make e2e)")
        print(f"e2e: {results.passed} passed, {results.failed} failed", flush=True)
        return 1

    selected = [(n, f) for n, f in TESTS if not args.k or any(k in n for k in args.k)]
    for name, fn in selected:
        r = Run(build, name, results)
        try:
            fn(r)
            if not r.parts:
                results.record(name)
        except Fail as e:
            results.record(name, str(e), r.log_tail())
        except Exception as e:
            results.record(name, f"{type(e).__name__}: {e}", r.log_tail())
        finally:
            r.cleanup()
    print(f"e2e: {results.passed} passed, {results.failed} failed", flush=True)
    return 1 if results.failed or not selected else 0


if __name__ == "__main__":
    sys.exit(main())
