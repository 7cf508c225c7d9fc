#!/usr/bin/env python3
"""Shared helpers of the end-to-end tests: processes, daemons, waits, checks.

Test modules (tests/e2e/test_*.py) do `from harness import *`; each of their functions
test_NAME(r) is the test named NAME (tests/e2e/run.py finds them).
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

# MEMTRACE_E2E_SLOW=N: this machine is N times slower than the bounds below were set for (a
# guest under emulation, tests/kernels/run.py); every wait bound is N times longer
SLOW = max(1.0, float(os.environ.get("MEMTRACE_E2E_SLOW") or 1))
TIMEOUT = 30.0 * SLOW  # seconds: the bound on every wait
POLL = 0.05
PROBE_CLOSE_S = 0.3  # seconds: the bound on the kernel's closing of one uprobe (kill_daemon)
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
        self.tally = {}  # name -> [passed, failed], in first-seen order

    def record(self, name, reason=None, logs=(), seconds=None):
        """seconds: what the check took, printed after its name ("PASS name [1.2 s]")."""
        t = self.tally.setdefault(name, [0, 0])
        t[0 if reason is None else 1] += 1
        took = f" [{seconds:.1f} s]" if seconds is not None else ""
        if reason is None:
            self.passed += 1
            print(f"PASS {name}{took}", flush=True)
            return
        self.failed += 1
        print(f"FAIL {name}{took}: {one_line(reason)}", flush=True)
        for line in logs:
            print(f"    | {line}", flush=True)


class Run:
    """One test: a temporary directory, the processes it started, and helpers to drive them."""

    def __init__(self, build, name, results):
        self.build = build
        self.name = name
        self.results = results
        self.memtraced = os.path.join(build, "memtraced")
        # the daemon with test hooks (MEMTRACE_TEST_HOOKS: the Makefile's tests/memtraced-hooks),
        # for the tests that set MEMTRACE_TEST_*, MEMTRACE_INFLIGHT_SLOTS or
        # MEMTRACE_BENCH_PROGRAMS: memtraced itself has none of them
        self.memtraced_hooks = os.path.join(build, "tests", "memtraced-hooks")
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
        started = time.monotonic()
        try:
            yield
        except Fail as e:
            self.results.record(name, str(e), self.log_tail(), time.monotonic() - started)
        except Exception as e:  # a bug or a surprise: still one FAIL line, and cleanup runs
            self.results.record(name, f"{type(e).__name__}: {e}", self.log_tail(),
                                time.monotonic() - started)
        else:
            self.results.record(name, seconds=time.monotonic() - started)

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

    def daemon_binary(self, hooks=False):
        """memtraced, or with hooks=True the build with test hooks (memtraced_hooks)."""
        return self.memtraced_hooks if hooks else self.memtraced

    def start_daemon(self, *args, sock=None, tag="memtraced", wait=True, env=None, hooks=False):
        """env: variables added to memtraced's environment; hooks: run the daemon with test
        hooks (daemon_binary), which the MEMTRACE_TEST_* variables of env need."""
        sock = sock or self.sock
        p = self.spawn([self.daemon_binary(hooks), "--socket", sock, *args], "daemon",
                       f"{tag}.out",
                       env=dict(os.environ, **env) if env else None)
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

    def daemon_exit_budget(self):
        """Seconds the last daemon may take to exit. The kernel closes each of its
        uprobes after a grace period, one probe after another (under its trace event
        mutex; closing them from several threads gains nothing): about 0.1 s a probe
        here, so a daemon that held hundreds of probes takes tens of seconds to go,
        SIGKILL or not. Sized by the probes its log says it attached (an upper bound:
        some may be closed already)."""
        probes = 0
        with open(self.daemon_logs[-1], errors="replace") as f:
            for line in f:
                m = re.search(r": (\d+) probes[ ,]", line)
                if m and line.startswith("memtraced: "):
                    probes += int(m.group(1))
        return max(TIMEOUT, PROBE_CLOSE_S * probes)

    def kill_daemon(self, daemon, what="memtraced after SIGKILL"):
        """SIGKILL daemon (the last one started) and wait for it to go."""
        daemon.kill()
        return self.wait_exit(daemon, what, self.daemon_exit_budget())

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

    def ctl(self, *args, sock=None, timeout=15 * SLOW):
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
