#!/usr/bin/env python3
"""End-to-end test of a real container (issue 33 item 5): podman from Debian's packages, with
runc and the cgroupfs manager, runs tests/e2e/ctalloc (static, bind-mounted) in a bookworm
minbase root file system that debootstrap builds from the Debian mirror the machine's apt
sources name (or MEMTRACE_DEBIAN_MIRROR): no image registry. memtraced traces it by its
container's cgroup and labels it with the container.

Setup, cached: the root file system and a podman store (--root) imported from it live under
CACHE_DIR (MEMTRACE_CONTAINER_CACHE, default /var/cache/memtrace-containers), made once per
machine under a lock (debootstrap 29-41 s here, the import 5 s); podman's run-time state
(--runroot, tmp_dir) is under /run, private to these tests. Its settings (a CONTAINERS_CONF
file) are those that work on hosts like these, Debian 12 with hybrid cgroups and root
without CAP_SYS_RESOURCE: runc (crun refuses hybrid mode), ulimits within the hard limits
root has, the cgroupfs manager (no systemd as pid 1). Every podman and debootstrap call is
bounded by a timeout; a host that cannot run them (no podman, no network for debootstrap)
fails with one line.

Two ways, one container each, with --memory 64m:
- from_start: memtraced --cgroup /libpod_parent started before the container, the user's
  way: the workload is traced from its exec (its static libc's start-up allocations too);
  hold_block's stack has exactly what it printed, and every other stack of it is libc's
  start-up, not main's.
- attach: memtraced idle, the container running (ctalloc --wait), then memtracectl attach
  --cgroup /libpod_parent/libpod-<id> (the container's v2 cgroup, from /proc/PID/cgroup): it
  allocates on SIGUSR1 and its counters equal what it printed, exactly.
Both: the target's cgroup names the container (its 64 hex id), runtime podman, nspid 1, the
memory limit 64 MiB; a process outside the container (cgalloc on the host) is not a target;
the daemon exits 0 on SIGTERM (in the sanitizer build, a finding is another status).
The container, its cgroups and libpod_parent (in each hierarchy, when empty) go after."""

import fcntl
import glob
import hashlib
import shutil
import subprocess

from harness import *  # noqa: F401,F403
from test_cgroup import proc_cgroup, unified_root

MIB = 1 << 20
LIMIT = 64 * MIB
BLOCKS = 16  # ctalloc's allocations, of BLOCK bytes each
BLOCK = MIB
SUITE = "bookworm"
IMAGE = f"localhost/memtrace-{SUITE}-minbase"
CACHE_DIR = os.environ.get("MEMTRACE_CONTAINER_CACHE") or "/var/cache/memtrace-containers"
# podman's run-time state, one for each store: gone at a reboot, as podman expects
RUN_DIR = "/run/memtrace-containers" + ("" if CACHE_DIR == "/var/cache/memtrace-containers" else
                                        "-" + hashlib.sha1(CACHE_DIR.encode()).hexdigest()[:8])
PARENT = "/libpod_parent"  # podman's cgroup parent with the cgroupfs manager
CONF = """[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "{tmp}"
"""
DEBOOTSTRAP_S = 180  # measured 41-65 s here
PODMAN_S = 60


def apt_mirror():
    """The Debian mirror the machine's apt sources name (not the security archive), or
    MEMTRACE_DEBIAN_MIRROR."""
    if os.environ.get("MEMTRACE_DEBIAN_MIRROR"):
        return os.environ["MEMTRACE_DEBIAN_MIRROR"]
    uris = []
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("URIs:"):
                    uris += line.split()[1:]
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    words = [w for w in line.split() if not w.startswith("[")]
                    if len(words) >= 3 and words[0] == "deb":
                        uris.append(words[1])
        except OSError:
            pass
    for u in uris:
        if u.startswith(("http://", "https://")) and "security" not in u:
            return u
    return "http://deb.debian.org/debian"


def run_bounded(argv, seconds, what):
    """argv's (status, output) in its own process group, killed whole (debootstrap's wget and
    dpkg too) at the bound; a timeout or a missing program is one Fail line."""
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace",
                             start_new_session=True)
    except OSError as e:
        raise Fail(f"{what}: cannot run {argv[0]}: {e}") from None
    try:
        out, _ = p.communicate(timeout=seconds * SLOW)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise Fail(f"{what}: {argv[0]} did not finish within {seconds * SLOW:.0f} s") from None
    return p.returncode, out


class Podman:
    """podman on the test's own store and run-time directories."""

    def __init__(self):
        self.store = os.path.join(CACHE_DIR, "store")
        self.runroot = os.path.join(RUN_DIR, "runroot")
        tmp = os.path.join(RUN_DIR, "tmp")
        os.makedirs(tmp, exist_ok=True)
        self.conf = os.path.join(RUN_DIR, "containers.conf")
        with open(self.conf, "w") as f:
            f.write(CONF.format(tmp=tmp))
        self.env = dict(os.environ, CONTAINERS_CONF=self.conf)

    def run(self, *args, seconds=PODMAN_S, check=True, stdin=None):
        argv = ["podman", "--root", self.store, "--runroot", self.runroot, *args]
        what = f"podman {args[0]}"
        try:
            p = subprocess.run(argv, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                               capture_output=True, text=True, errors="replace",
                               timeout=seconds * SLOW, env=self.env)
        except subprocess.TimeoutExpired:
            raise Fail(f"{what} did not finish within {seconds * SLOW:.0f} s") from None
        except OSError as e:
            raise Fail(f"cannot run podman ({e}): make deps installs podman, runc and "
                       f"debootstrap") from None
        if check and p.returncode != 0:
            raise Fail(f"{what} exited {p.returncode}: {one_line(p.stderr)[-300:]}")
        return p


def ensure_image(pm):
    """The image, made once per machine: debootstrap's root file system, then imported.
    Returns what it did ("cached", or the seconds each step took)."""
    for tool in ("podman", "runc", "debootstrap"):
        if shutil.which(tool) is None:
            raise Fail(f"{tool} is not installed (make deps installs podman, runc, debootstrap)")
    os.makedirs(CACHE_DIR, exist_ok=True)
    with open(os.path.join(CACHE_DIR, "lock"), "w") as lock:
        end = deadline_after((DEBOOTSTRAP_S + 150) * SLOW)
        while True:  # another run making it: wait for it, within what it may take
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    raise Fail(f"{CACHE_DIR}/lock: another run held it for "
                               f"{(DEBOOTSTRAP_S + 150) * SLOW:.0f} s") from None
                time.sleep(0.5)
        if pm.run("image", "exists", IMAGE, check=False).returncode == 0:
            return "cached"
        done = []
        rootfs = os.path.join(CACHE_DIR, f"{SUITE}-minbase")
        if not os.path.exists(os.path.join(rootfs, ".memtrace-complete")):
            partial = rootfs + ".partial"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.rmtree(rootfs, ignore_errors=True)
            mirror = apt_mirror()
            started = time.monotonic()
            try:
                rc, out = run_bounded(["debootstrap", "--variant=minbase", SUITE, partial,
                                       mirror], DEBOOTSTRAP_S,
                                      f"debootstrap {SUITE} from {mirror}")
            except Fail:
                shutil.rmtree(partial, ignore_errors=True)
                raise
            if rc != 0:
                last = out.strip().splitlines()[-1:] or [""]
                shutil.rmtree(partial, ignore_errors=True)
                raise Fail(f"debootstrap {SUITE} from {mirror} exited {rc}: "
                           f"{one_line(last[0])[:300]}")
            open(os.path.join(partial, ".memtrace-complete"), "w").close()
            os.rename(partial, rootfs)
            done.append(f"debootstrap {time.monotonic() - started:.1f} s")
        started = time.monotonic()
        tar = subprocess.Popen(["tar", "-C", rootfs, "--exclude=./.memtrace-complete", "-c",
                                "."], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            pm.run("import", "-", IMAGE, stdin=tar.stdout, seconds=120)
        finally:
            tar.stdout.close()
            tar.kill()
            tar.wait()
        done.append(f"import {time.monotonic() - started:.1f} s")
        return ", ".join(done)


def remove_parent_cgroups():
    """libpod_parent (and its conmon) in each cgroup hierarchy, where empty: runc makes them
    and leaves them. Another container's still there: left as they are."""
    with open("/proc/self/mountinfo") as f:
        mounts = [l.split()[4] for l in f if " - cgroup" in l]
    for m in mounts:
        for d in (m + PARENT + "/conmon", m + PARENT):
            try:
                os.rmdir(d)
            except OSError:
                pass


def inspect(pm, name):
    p = pm.run("inspect", name)
    try:
        return json.loads(p.stdout)[0]
    except (ValueError, IndexError) as e:
        raise Fail(f"podman inspect {name}: not its JSON ({e})") from None


def start_container(r, pm, name, *args):
    """The container running ctalloc: (its 64 hex id, host pid, v2 cgroup, log file)."""
    prog = os.path.join(os.path.abspath(r.build), "tests", "ctalloc")
    pm.run("run", "-d", "--name", name, "--network=none", "--memory", "64m",
           "-v", f"{prog}:/ctalloc:ro", IMAGE, "/ctalloc", str(BLOCKS), str(BLOCK), *args)
    info = inspect(pm, name)
    pid = info["State"]["Pid"]
    if not pid:
        raise Fail(f"container {name}: no pid ({info['State'].get('Status')}: "
                   f"{info['State'].get('Error')})")
    v2, _ = proc_cgroup(pid)
    return info["Id"], pid, v2, info["HostConfig"]["LogConfig"]["Path"]


def log_line(pm, name, path, prefix):
    """The first line of the container's output (k8s-file log: "TIME stdout F TEXT") that
    starts with prefix, without it."""
    end = deadline_after()
    while True:
        try:
            with open(path, errors="replace") as f:
                for line in f:
                    text = line.rstrip("\n").split(" ", 3)[-1]
                    if text.startswith(prefix):
                        return text[len(prefix):]
        except FileNotFoundError:
            pass
        if time.monotonic() > end:
            st = inspect(pm, name)["State"]
            raise Fail(f"container {name} printed no \"{prefix.strip()}\" line within "
                       f"{TIMEOUT:.0f} s (it is {st.get('Status')}, exit {st.get('ExitCode')})")
        time.sleep(0.1)


def newest(st, pid, command=None):
    """pid's newest target (with command in its command line, if given: the runtime's own
    process before its exec, runc init, is an older one of the same pid)."""
    gens = [t for t in st.get("targets", []) if t.get("pid") == pid
            and (command is None or command in (t.get("command") or ""))]
    return gens[-1] if gens else None


def check_labels(r, t, ident, v2):
    c = t.get("cgroup") or {}
    mem = c.get("memory") or {}
    bad = []
    if c.get("container") != ident:
        bad.append(f"container {c.get('container')} (podman's id {ident})")
    if c.get("runtime") != "podman":
        bad.append(f"runtime {c.get('runtime')}")
    if c.get("nspid") != 1:
        bad.append(f"nspid {c.get('nspid')} (it is pid 1 in the container)")
    if c.get("unified_path") != v2:
        bad.append(f"unified_path {c.get('unified_path')} (/proc says {v2})")
    if mem.get("cgroup_limit_bytes") != LIMIT:
        bad.append(f"memory limit {mem.get('cgroup_limit_bytes')} (podman --memory 64m: {LIMIT})")
    if bad:
        raise Fail("; ".join(bad))


def wait_labelled(r, pid, ident, v2, sock):
    """stats --json once the target's cgroup figures are read, checked."""
    end = deadline_after()
    while True:
        st = r.ctl_json("stats", "--json", sock=sock)
        t = newest(st, pid, "ctalloc")
        mem = ((t or {}).get("cgroup") or {}).get("memory") or {}
        if t and t.get("state") == "attached" and "cgroup_limit_bytes" in mem:
            check_labels(r, t, ident, v2)
            return st, t
        if time.monotonic() > end:
            raise Fail(f"pid {pid} never showed attached with its cgroup's limit: "
                       f"{(t or {}).get('state')}, {(t or {}).get('cgroup')}")
        time.sleep(0.2)


def stable_stats(r, pid, want_allocs, sock):
    """stats --json once pid has made want_allocs allocations or more and nothing moves."""
    end = deadline_after()
    last = None
    while True:
        st = r.ctl_json("stats", "--json", sock=sock)
        t = newest(st, pid, "ctalloc")
        c = (t or {}).get("counters") or {}
        if c.get("allocations", 0) >= want_allocs and c == last:
            return st, t
        last = c if c.get("allocations", 0) >= want_allocs else None
        if time.monotonic() > end:
            raise Fail(f"pid {pid}: counters {c} after {TIMEOUT:.0f} s, expected "
                       f"{want_allocs} allocations or more")
        time.sleep(0.3)


def outside_not_traced(r, outside_pid, sock):
    st = r.ctl_json("stats", "--json", sock=sock)
    if newest(st, outside_pid) is not None:
        raise Fail(f"pid {outside_pid}, a process outside the container, is a target")
    return st


def show_status(r, pid, ident, sock):
    rc, out, err = r.ctl("status", sock=sock)
    line = next((l for l in out.splitlines() if l.startswith(f"pid {pid}: cgroup ")), None)
    if rc != 0 or line is None or f"(container {ident} podman)" not in line:
        raise Fail(f"status text: no \"pid {pid}: cgroup ... (container {ident} podman)\" "
                   f"line: {line or one_line(out)[-300:]}")
    print(f"    status: {line}", flush=True)


def stop_daemon(r, daemon):
    """SIGTERM: it detaches and exits 0 (a sanitizer's finding is another status)."""
    if daemon is None:
        raise Fail("memtraced was not started")
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
    rc = r.wait_exit(daemon, "memtraced after SIGTERM", r.daemon_exit_budget())
    if rc != 0:
        raise Fail(f"memtraced exited {rc} on SIGTERM, expected 0")


def test_container_podman(r):
    root = unified_root()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    started = time.monotonic()
    pm = Podman()
    how = ensure_image(pm)  # a Fail here is the test's one line
    print(f"    image {IMAGE} in {CACHE_DIR}: {how} ({time.monotonic() - started:.1f} s)",
          flush=True)
    names = []
    daemon = None
    try:
        outside = r.spawn([os.path.join(r.build, "tests", "cgalloc"), "2"], "target",
                          "outside.out")
        r.wait_line(os.path.join(r.tmp, "outside.out"), "ready ", outside)

        # the user's way: the daemon on podman's parent cgroup before the container starts
        os.makedirs(root + PARENT, exist_ok=True)
        name = f"memtrace-e2e-{os.getpid()}-start"
        names.append(name)
        with r.part("from_start"):
            daemon = r.start_daemon("--sample-interval", "200", "--cgroup", PARENT,
                                    tag="memtraced-start")
            ident, pid, v2, log = start_container(r, pm, name)
            if v2 != f"{PARENT}/libpod-{ident}":
                raise Fail(f"the container's v2 cgroup is {v2}, not {PARENT}/libpod-{ident}")
            want = json.loads(log_line(pm, name, log, "expect "))
            if want["pid"] != 1:
                raise Fail(f"ctalloc says it is pid {want['pid']} in its container, not 1")
            st, t = wait_labelled(r, pid, ident, v2, r.sock)
            st, t = stable_stats(r, pid, BLOCKS, r.sock)
            c = t["counters"]
            # the pid's stacks: ctalloc's, and runc init's before its exec when it was
            # attached in time (it is in the container's cgroup first)
            entries = r.report("--pid", str(pid), "--top", "0")
            mine = [e for e in entries
                    if ((e.get("frames") or [{}])[0].get("module") or "").endswith("ctalloc")]
            sums = site_sums(mine)
            got = sums.get(want["function"]) or {}
            bad = [f"{k}={got.get(k)} (it printed {want[k]})"
                   for k in ("allocations", "bytes_allocated", "frees") if got.get(k) != want[k]]
            if bad:
                raise Fail(f"hold_block's stacks: {', '.join(bad)}")
            others = [e for e in mine if frame0_function(e) != want["function"]]
            from_main = [e for e in others
                         if any(f.get("function") == "main" for f in e.get("frames") or [])]
            if from_main:
                raise Fail(f"stacks through main besides hold_block: "
                           f"{[frame0_function(e) for e in from_main]}")
            total = sum(e["allocations"] for e in mine)
            if c["allocations"] != total or c["bytes_allocated"] < want["bytes_allocated"]:
                raise Fail(f"counters {c['allocations']} allocations, "
                           f"{c['bytes_allocated']} bytes; its stacks sum to {total}")
            gens = [g for g in st["targets"] if g.get("pid") == pid]
            before = sum(g["counters"]["allocations"] for g in gens) - c["allocations"]
            print(f"    pid {pid} (container {ident[:12]}): hold_block {got['allocations']} "
                  f"allocations, {got['bytes_allocated']} bytes as printed; "
                  f"{c['allocations'] - got['allocations']} more from libc's start-up "
                  f"({', '.join(sorted({str(frame0_function(e)) for e in others}))}); "
                  f"{len(gens) - 1} generation(s) of the pid before its exec "
                  f"({[g.get('command') for g in gens[:-1]]}), {before} allocations",
                  flush=True)
            st = outside_not_traced(r, outside.pid, r.sock)
            # every target whose cgroup was read is in the container's (runc init, the same
            # pid before its exec, may have ended before its labels were read: no cgroup)
            stray = [(t["pid"], t.get("state"), (t.get("cgroup") or {}).get("unified_path"))
                     for t in st["targets"]
                     if (t.get("cgroup") or {}).get("unified_path") is not None
                     and not t["cgroup"]["unified_path"].startswith(PARENT + "/")]
            if stray:
                raise Fail(f"targets outside {PARENT}: {stray}")
            show_status(r, pid, ident, r.sock)
            with open(os.path.join(r.tmp, "memtraced-start.err"), errors="replace") as f:
                for l in f:
                    if "cgroup" in l or f"pid {pid}" in l and "attached" in l:
                        print(f"    log: {l.rstrip()}", flush=True)
        pm.run("rm", "-f", "-t", "0", name, check=False)
        with r.part("from_start_exit"):
            stop_daemon(r, daemon)

        # a daemon already running, told the container's own cgroup
        daemon = None
        name = f"memtrace-e2e-{os.getpid()}-attach"
        names.append(name)
        sock = r.sock + ".2"
        with r.part("attach"):
            daemon = r.start_daemon("--sample-interval", "200", sock=sock,
                                    tag="memtraced-attach")
            ident, pid, v2, log = start_container(r, pm, name, "--wait")
            log_line(pm, name, log, "ready ")
            rc, out, err = r.ctl("attach", "--cgroup", v2, sock=sock)
            if rc != 0:
                raise Fail(f"attach --cgroup {v2} exited {rc}: {one_line(err)}")
            wait_labelled(r, pid, ident, v2, sock)
            os.kill(pid, signal.SIGUSR1)
            want = json.loads(log_line(pm, name, log, "expect "))
            st, t = stable_stats(r, pid, want["allocations"], sock)
            c = t["counters"]
            bad = [f"{k}={c[k]} (it printed {want[k]})"
                   for k in ("allocations", "bytes_allocated", "frees", "live_bytes")
                   if c[k] != want[k]]
            if bad:
                raise Fail(", ".join(bad))
            outside_not_traced(r, outside.pid, sock)
            show_status(r, pid, ident, sock)
        pm.run("rm", "-f", "-t", "0", name, check=False)
        with r.part("attach_exit"):
            stop_daemon(r, daemon)
    finally:
        for name in names:
            try:
                pm.run("rm", "-f", "-t", "0", name, check=False)
            except Fail as e:
                print(f"    cleanup: {e}", flush=True)
        for p, kind in reversed(r.procs):
            if p.poll() is None and kind == "daemon":
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        remove_parent_cgroups()
