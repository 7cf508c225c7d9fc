#!/usr/bin/env python3
"""End-to-end tests of an OOM kill of a traced process (issue 33, item 4). A memory cgroup made
by the test (the v1 memory controller of hybrid hosts like these, or the v2 unified hierarchy
where it has the memory controller) gets a 64 MiB limit and no swap; tests/e2e/oomhog.c, moved
into it before it runs, allocates and touches 1 MiB blocks in one function until the kernel's
OOM killer kills it. memtraced must mark the target oom-killed (the oom:mark_victim
tracepoint), keep the cgroup's usage and limit and the live heap of that moment, and write a
snapshot to --oom-snapshots whose top stack is the allocating function, holding nearly all of
the limit. A folder that is not there, or not writable, is one line and exit 2."""

import glob

from harness import *  # noqa: F401,F403

MIB = 1 << 20
LIMIT = 64 * MIB
V1_MEMORY = "/sys/fs/cgroup/memory"


def make_memory_cgroup(r):
    """A fresh memory cgroup with a LIMIT limit and no swap: its path and its kind ("v1",
    "v2"). The v1 memory controller first (hybrid hosts: v2 there has no memory controller)."""
    name = f"memtrace-test-oom-{os.getpid()}-{int(time.monotonic() * 1000) % 100000}"
    if os.path.isfile(os.path.join(V1_MEMORY, "memory.limit_in_bytes")):
        cg = os.path.join(V1_MEMORY, name)
        os.mkdir(cg)
        write(cg, "memory.limit_in_bytes", str(LIMIT))
        if os.path.exists(os.path.join(cg, "memory.swappiness")):
            write(cg, "memory.swappiness", "0")
        if os.path.exists(os.path.join(cg, "memory.memsw.limit_in_bytes")):
            write(cg, "memory.memsw.limit_in_bytes", str(LIMIT))
        return cg, "v1"
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        try:
            with open(os.path.join(root, "cgroup.controllers")) as f:
                if "memory" not in f.read().split():
                    continue
            with open(os.path.join(root, "cgroup.subtree_control")) as f:
                if "memory" not in f.read().split():
                    write(root, "cgroup.subtree_control", "+memory")  # its children get it
        except OSError:
            continue
        cg = os.path.join(root, name)
        os.mkdir(cg)
        write(cg, "memory.max", str(LIMIT))
        if os.path.exists(os.path.join(cg, "memory.swap.max")):
            write(cg, "memory.swap.max", "0")
        return cg, "v2"
    raise Fail("no memory cgroup controller on this host (v1 memory, or v2 with memory)")


def write(cg, name, value):
    with open(os.path.join(cg, name), "w") as f:
        f.write(value)


def remove_cgroup(cg):
    """Kill what is left in cg, then remove it (bounded)."""
    end = deadline_after(10)
    while True:
        try:
            with open(os.path.join(cg, "cgroup.procs")) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.rmdir(cg)
            return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(POLL)


def oom_target(status):
    for t in status.get("targets", []):
        if t.get("state") == "oom-killed":
            return t
    return None


def run_killed(r, cg, snapdir, tag="memtraced"):
    """oomhog started in cg by memtraced --oom-snapshots snapdir: its status entry once it is
    oom-killed and its exit seen, which must be a SIGKILL."""
    hog = os.path.join(r.build, "tests", "oomhog")
    r.start_daemon("--oom-snapshots", snapdir, "--sample-interval", "100", "--", "sh", "-c",
                   f"echo $$ > {cg}/cgroup.procs && exec {hog}", tag=tag)
    # the shell's entry ends at its exec (execed), oomhog's is the one killed; marked while
    # it dies, its exit comes right after
    end = deadline_after()
    while True:
        t = oom_target(r.ctl_json("status", "--json"))
        if t is not None and t.get("exit_signal") is not None:
            break
        if time.monotonic() > end:
            raise Fail(f"no target oom-killed and exited within {TIMEOUT:.0f} s "
                       f"(last seen: {t})")
        time.sleep(POLL)
    if t.get("exit_signal") != signal.SIGKILL:
        raise Fail(f"the target's exit is {t.get('exit_code')}/{t.get('exit_signal')}, "
                   f"not SIGKILL")
    return t


def test_oom_snapshot(r):
    """A traced program OOM-killed by its cgroup's 64 MiB limit: state oom-killed after a
    SIGKILL, the limit and the heap of that moment in status, and a snapshot whose top stack
    is hog_memory holding at least 80 % of the limit."""
    cg = None
    try:
        with r.part("cgroup"):
            cg, kind = make_memory_cgroup(r)
        if cg is None:
            return
        snapdir = os.path.join(r.tmp, "oom")
        os.mkdir(snapdir)
        status = None
        with r.part("killed"):
            status = run_killed(r, cg, snapdir)
        with r.part("figures"):
            if status is None:
                raise Fail("no oom-killed target")
            oom = status.get("oom")
            if not isinstance(oom, dict):
                raise Fail(f"status of the oom-killed target has no \"oom\" object: {status}")
            if oom.get("cgroup_limit_bytes") != LIMIT:
                raise Fail(f"the cgroup limit is {oom.get('cgroup_limit_bytes')}, "
                           f"expected {LIMIT} ({kind})")
            usage = number(oom, "cgroup_usage_bytes", "oom")
            if usage < LIMIT * 8 // 10:
                raise Fail(f"the cgroup usage at the kill is {usage}, under 80 % of the limit")
            if number(oom, "live_bytes", "oom") < LIMIT * 8 // 10:
                raise Fail(f"the live heap at the kill is {oom['live_bytes']}, under 80 % "
                           f"of the limit")
            rc, out, _ = r.ctl("status")
            line = [l for l in out.splitlines() if " oom-killed at " in l]
            if rc or not line or "64.0 MiB limit" not in line[0]:
                raise Fail(f"status text has no oom-killed line with the limit: "
                           f"{one_line(out)[:300]}")
        with r.part("snapshot"):
            end = deadline_after()
            while not glob.glob(os.path.join(snapdir, "oom-*.mts")):
                if time.monotonic() > end:
                    raise Fail(f"no oom-*.mts in --oom-snapshots within {TIMEOUT:.0f} s")
                time.sleep(POLL)
            path = glob.glob(os.path.join(snapdir, "oom-*.mts"))[0]
            p = subprocess.run([r.memtracectl, "report", "--from", path, "--top", "1",
                                "--format", "json"], capture_output=True, text=True,
                               timeout=TIMEOUT)
            if p.returncode:
                raise Fail(f"report --from {os.path.basename(path)} exited {p.returncode}: "
                           f"{one_line(p.stderr)[:200]}")
            entries = json.loads(p.stdout).get("entries") or []
            if not entries or frame0_function(entries[0]) != "hog_memory":
                raise Fail(f"the snapshot's top stack is "
                           f"{frame0_function(entries[0]) if entries else None}, "
                           f"not hog_memory")
            live = number(entries[0], "live_bytes", "the top stack")
            if live < LIMIT * 8 // 10:
                raise Fail(f"the top stack holds {live} bytes, under 80 % of the limit")
            st = subprocess.run([r.memtracectl, "stats", "--from", path, "--json"],
                                capture_output=True, text=True, timeout=TIMEOUT)
            if st.returncode or oom_target(json.loads(st.stdout)) is None:
                raise Fail(f"stats --from the snapshot shows no oom-killed target: "
                           f"{one_line(st.stdout + st.stderr)[:300]}")
    finally:
        if cg is not None:
            remove_cgroup(cg)


def test_oom_snapshot_folder_full(r):
    """--oom-snapshots on a folder that fills up (a 64 KiB tmpfs, full before the kill): one
    log line says the snapshot could not be written, no partial file is left, the target is
    still oom-killed with its figures, and the daemon goes on serving."""
    cg = None
    full = os.path.join(r.tmp, "full")
    os.mkdir(full)
    mounted = False
    try:
        with r.part("setup"):
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", full],
                           check=True, capture_output=True, timeout=TIMEOUT)
            mounted = True
            try:
                with open(os.path.join(full, "filler"), "wb") as f:
                    while True:
                        f.write(b"x" * 4096)
                        f.flush()
            except OSError:
                pass
            cg, _ = make_memory_cgroup(r)
        if cg is None:
            return
        with r.part("killed"):
            t = run_killed(r, cg, full, tag="memtraced-full")
            if number(t.get("oom") or {}, "live_bytes", "oom") < LIMIT * 8 // 10:
                raise Fail(f"the live heap at the kill is {t['oom']['live_bytes']}")
        with r.part("one_line"):
            log = os.path.join(r.tmp, "memtraced-full.err")
            end = deadline_after()
            while True:
                with open(log, errors="replace") as f:
                    lines = [l for l in f.read().splitlines() if "OOM snapshot" in l]
                if lines or time.monotonic() > end:
                    break
                time.sleep(POLL)
            if len(lines) != 1 or "no OOM snapshot" not in lines[0] or \
                    "No space left on device" not in lines[0]:
                raise Fail(f"expected one line saying the snapshot could not be written "
                           f"(no space), got {lines}")
            left = sorted(set(os.listdir(full)) - {"filler"})
            if left:
                raise Fail(f"the full folder holds {left} after the failed write")
            # tracing goes on: the daemon answers, the mark is still there
            if oom_target(r.ctl_json("status", "--json")) is None:
                raise Fail("after the failed write, status has no oom-killed target")
    finally:
        if cg is not None:
            remove_cgroup(cg)
        if mounted:  # the daemon holds nothing open there
            subprocess.run(["umount", "--lazy", full], capture_output=True, timeout=TIMEOUT)


def test_oom_snapshots_bad_dir(r):
    """--oom-snapshots on a folder that is not there, or not writable: one line, exit 2."""
    missing = os.path.join(r.tmp, "no-such-folder")
    for where, why in ((missing, "No such file"), ("/proc/self", "cannot write there")):
        with r.part(os.path.basename(where) if where == missing else "unwritable"):
            p = subprocess.run([r.memtraced, "--socket", r.sock, "--oom-snapshots", where],
                               capture_output=True, text=True, timeout=TIMEOUT)
            lines = p.stderr.strip().splitlines()
            if p.returncode != 2 or len(lines) != 1 or why not in lines[0]:
                raise Fail(f"exit {p.returncode}, stderr {p.stderr.strip()!r}: expected "
                           f"exit 2 and one line saying \"{why}\"")
