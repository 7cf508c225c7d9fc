#!/usr/bin/env python3
"""End-to-end tests of a target's cgroup (issue 33 items 2 and 3): labels and the memory limit
beside the heap, on the real kernel's cgroup filesystems. The test makes a cgroup under the v1
memory controller with a 64 MiB limit and one in the unified (v2) hierarchy, starts
tests/e2e/cgalloc in each (it holds N MiB written page by page, so they are charged), and reads
what memtraced says: the cgroup path, the limit equal to what the test wrote, usage and headroom
beside it, in status and stats JSON and text and in Prometheus; a process outside labelled with
its own cgroup, as /proc/PID/cgroup says. On hosts whose unified hierarchy has no memory
controller (these machines: only hugetlb), the v2 cgroup's figures are absent, and the output
must say so and fall back to the v1 memory cgroup, not fail. The cgroups are removed after."""

import urllib.request

from harness import *  # noqa: F401,F403
from test_outputs import chromium, free_port

MIB = 1 << 20
V1_MEMORY = "/sys/fs/cgroup/memory"
LIMIT = 64 * MIB
HOLD_MIB = 24


def proc_cgroup(pid):
    """(v2 path, v1 memory path) from /proc/PID/cgroup, as the test reads it itself."""
    v2 = mem = None
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            ident, ctl, path = line.rstrip("\n").split(":", 2)
            if ident == "0" and ctl == "":
                v2 = path
            elif "memory" in ctl.split(","):
                mem = path
    return v2, mem


def unified_root():
    """Where the unified hierarchy is mounted, or None."""
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if parts[2] == "cgroup2":
                return parts[1]
    return None


def make_cgroup(parent, name):
    path = os.path.join(parent, name)
    os.mkdir(path)
    return path


def remove_cgroup(r, path):
    """rmdir once its processes are gone (killed by the caller)."""
    end = deadline_after()
    while os.path.isdir(path):
        try:
            os.rmdir(path)
        except OSError:
            if time.monotonic() > end:
                raise Fail(f"cannot remove {path}: its processes did not go")
            time.sleep(0.1)


def stop_all(r):
    """Every process of the test gone (the daemons after SIGTERM, so they detach; with the
    programs they started, in their process groups), so that its cgroups can be removed."""
    for p, kind in reversed(r.procs):
        if p.poll() is None and kind == "daemon":
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    for p, _ in r.procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(timeout=r.daemon_exit_budget())
        except subprocess.TimeoutExpired:
            pass


def wait_attached(r, daemon):
    """The pid of the target memtraced started, once its program (after the shell's exec)
    is attached."""
    end = deadline_after()
    while True:
        if daemon.poll() is not None:
            raise Fail(f"memtraced exited with status {daemon.returncode}")
        for t in r.ctl_json("status", "--json").get("targets", []):
            if t.get("state") == "attached" and "cgalloc" in (t.get("command") or ""):
                r.extra_pids.add(t["pid"])
                return t["pid"]
        if time.monotonic() > end:
            raise Fail("the program was never attached")
        time.sleep(0.1)


def cgalloc_in(r, cgroup_dir, mib, tag):
    """memtraced starting cgalloc MIB inside cgroup_dir (the shell moves itself in, then
    executes it): the daemon and the pid, once the program holds its memory."""
    prog = os.path.join(r.build, "tests", "cgalloc")
    daemon = r.start_daemon("--sample-interval", "200", "--", "sh", "-c",
                            f"echo $$ > {cgroup_dir}/cgroup.procs; exec {prog} {mib}",
                            tag=f"memtraced-{tag}")
    out = os.path.join(r.tmp, f"memtraced-{tag}.out")
    r.wait_line(out, "ready ", daemon)
    return daemon, wait_attached(r, daemon)


def attached(status, pid):
    for t in status.get("targets", []):
        if t.get("pid") == pid and t.get("state") == "attached":
            return t
    seen = [(t.get("pid"), t.get("state")) for t in status.get("targets", [])]
    raise Fail(f"no attached target {pid} in {seen}")


def wait_cgroup(r, pid, want_path, what="stats"):
    """The target's cgroup member once it names want_path and has figures read since."""
    end = deadline_after()
    while True:
        t = attached(r.ctl_json(what, "--json"), pid)
        cg = t.get("cgroup") or {}
        mem = cg.get("memory") or {}
        if cg.get("path") == want_path and (mem.get("version") or mem.get("note")):
            return t
        if time.monotonic() > end:
            raise Fail(f"pid {pid}: its cgroup never showed as {want_path}: {cg}")
        time.sleep(0.2)


def stats_block(out, pid):
    """The lines stats text prints under its attached target pid."""
    lines, inside = [], False
    for l in out.splitlines():
        if l.startswith("target "):
            inside = l.startswith(f"target {pid} attached")
        elif not l.startswith("  "):
            inside = False
        elif inside:
            lines.append(l)
    return lines


def test_cgroup_v1_limit(r):
    """A cgroup of the v1 memory controller limited to 64 MiB, cgalloc holding 24 MiB in it:
    status, stats, watch and timeline --pid show its path, the limit as written, usage and
    headroom, and timeline of every target each cgroup's usage and limit; a process
    outside it is labelled with its own cgroup; Prometheus has the cgroup's series."""
    if not os.path.isdir(V1_MEMORY):
        raise Fail(f"no v1 memory controller at {V1_MEMORY} (this test is for hybrid hosts)")
    name = f"memtrace-e2e-{os.getpid()}"
    cg = make_cgroup(V1_MEMORY, name)
    try:
        with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
            f.write(str(LIMIT))
        daemon, pid = cgalloc_in(r, cg, HOLD_MIB, "v1")
        prog = os.path.join(r.build, "tests", "cgalloc")
        outside = r.spawn([prog, "4"], "target", "outside.out")
        r.wait_line(os.path.join(r.tmp, "outside.out"), "ready ", outside)
        rc, _, err = r.ctl("attach", str(outside.pid))
        if rc != 0:
            raise Fail(f"attach {outside.pid}: {one_line(err)}")
        r.wait_state("attached", outside.pid)
        want = "/" + name
        with r.part("stats_json"):
            t = wait_cgroup(r, pid, want)
            mem = t["cgroup"]["memory"]
            if mem.get("version") != "v1" or mem.get("path") != want:
                raise Fail(f"memory cgroup: {mem}, expected v1 {want}")
            if mem.get("cgroup_limit_bytes") != LIMIT:
                raise Fail(f"cgroup_limit_bytes {mem.get('cgroup_limit_bytes')}, the test "
                           f"wrote {LIMIT}")
            usage = mem.get("cgroup_usage_bytes", 0)
            if not HOLD_MIB * MIB <= usage <= LIMIT:
                raise Fail(f"cgroup_usage_bytes {usage}: cgalloc holds {HOLD_MIB} MiB in it")
            if mem.get("cgroup_headroom_bytes") != LIMIT - usage:
                raise Fail(f"headroom {mem.get('cgroup_headroom_bytes')} is not "
                           f"{LIMIT} - {usage}")
            if mem.get("cgroup_oom_kills") != 0:
                raise Fail(f"cgroup_oom_kills {mem.get('cgroup_oom_kills')}")
            if t["cgroup"].get("nspid") != pid:
                raise Fail(f"nspid {t['cgroup'].get('nspid')}: the test runs in the host's "
                           f"pid namespace, so it is the pid {pid}")
        with r.part("timeline"):
            end = deadline_after()
            while True:
                tl = r.ctl_json("timeline", "--pid", str(pid), "--json")
                got = [p for p in tl.get("points", []) if p.get("cgroup_limit_bytes") == LIMIT]
                if got and got[-1].get("cgroup_usage_bytes", 0) >= HOLD_MIB * MIB:
                    break
                if time.monotonic() > end:
                    raise Fail(f"timeline --pid {pid}: no point with the cgroup's limit and "
                               f"usage: {tl.get('points', [])[-3:]}")
                time.sleep(0.2)
        with r.part("timeline_all"):
            # every target together: each memory cgroup's usage and limit beside the heap,
            # the test's with the limit it wrote, the outside process's own
            _, outside_mem = proc_cgroup(outside.pid)
            end = deadline_after()
            while True:
                tl = r.ctl_json("timeline", "--json")
                last = {c["path"]: c for p in tl.get("points", []) for c in p.get("cgroups", [])}
                mine = last.get(want) or {}
                if mine.get("cgroup_limit_bytes") == LIMIT and \
                        mine.get("cgroup_usage_bytes", 0) >= HOLD_MIB * MIB and \
                        outside_mem in last and want in tl.get("cgroups", []):
                    break
                if time.monotonic() > end:
                    raise Fail(f"timeline: no point with {want}'s limit and usage and "
                               f"{outside_mem}'s: cgroups {tl.get('cgroups')}, last {last}")
                time.sleep(0.2)
            if sorted(tl["cgroups"]) != sorted({want, outside_mem}):
                raise Fail(f"timeline: cgroups {tl['cgroups']}, expected {want} and "
                           f"{outside_mem}")
            rc, out, err = r.ctl("timeline")
            line = next((l for l in reversed(out.splitlines()) if f" {want} " in l), None)
            if rc != 0 or line is None or "of 64.0 MiB" not in line:
                raise Fail(f"timeline text: no row with {want} of 64.0 MiB: "
                           f"{one_line(out)[-300:]}")
            print(f"    timeline: {line.strip()}", flush=True)
        with r.part("status_json"):
            t = attached(r.ctl_json("status", "--json"), pid)
            if (t.get("cgroup") or {}).get("path") != want:
                raise Fail(f"status: cgroup {t.get('cgroup')}, expected {want}")
        with r.part("outside"):
            v2, mem_path = proc_cgroup(outside.pid)
            t = wait_cgroup(r, outside.pid, mem_path)
            c = t["cgroup"]
            if c.get("unified_path") != v2 or c["memory"].get("path") != mem_path:
                raise Fail(f"outside: {c}; /proc/{outside.pid}/cgroup says v2 {v2}, "
                           f"memory {mem_path}")
            if c["memory"].get("path") == want:
                raise Fail("the process outside is labelled with the test's cgroup")
        with r.part("text"):
            rc, out, err = r.ctl("stats")
            block = stats_block(out, pid)
            line = next((l for l in block if l.startswith(f"  memory cgroup {want} (v1)")),
                        None)
            if rc != 0 or line is None or "of 64.0 MiB" not in line or \
                    "headroom" not in line or "oom_kill 0" not in line:
                raise Fail(f"stats text: no memory cgroup line of {want} with its limit: "
                           f"{line or one_line(out)[-300:]}")
            for l in block:
                print(f"    stats: {l}", flush=True)
            rc, out, err = r.ctl("watch", "--count", "1", "--pid", str(pid))
            line = next((l for l in out.splitlines() if l.startswith(f"  cgroup {want}: ")),
                        None)
            if rc != 0 or line is None or "of 64.0 MiB" not in line:
                raise Fail(f"watch: no \"  cgroup {want}: ...\" line: {one_line(out)[-300:]}")
            print(f"    watch: {line.strip()}", flush=True)
            rc, out, err = r.ctl("status")
            line = next((l for l in out.splitlines()
                         if l.startswith(f"pid {pid}: cgroup {want}, ")), None)
            if rc != 0 or line is None or "of 64.0 MiB" not in line:
                raise Fail(f"status text has no \"pid {pid}: cgroup {want}\" line with the limit: "
                           f"{one_line(out)[-300:]}")
            print(f"    status: {line.strip()}", flush=True)
    finally:
        stop_all(r)
        remove_cgroup(r, cg)


def test_cgroup_prometheus(r):
    """The Prometheus endpoint: each target's series labelled with its cgroup, and the
    memory cgroup's limit once, as written."""
    if not os.path.isdir(V1_MEMORY):
        raise Fail(f"no v1 memory controller at {V1_MEMORY} (this test is for hybrid hosts)")
    name = f"memtrace-e2e-prom-{os.getpid()}"
    cg = make_cgroup(V1_MEMORY, name)
    try:
        with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
            f.write(str(LIMIT))
        port = free_port()
        prog = os.path.join(r.build, "tests", "cgalloc")
        daemon = r.start_daemon("--sample-interval", "200", "--metrics-listen", str(port),
                                "--", "sh", "-c",
                                f"echo $$ > {cg}/cgroup.procs; exec {prog} 8",
                                tag="memtraced-prom")
        r.wait_line(os.path.join(r.tmp, "memtraced-prom.out"), "ready ", daemon)
        pid = wait_attached(r, daemon)
        wait_cgroup(r, pid, "/" + name)
        time.sleep(0.5)  # a sample on the loop's side too
        want = f'memtrace_cgroup_limit_bytes{{cgroup="/{name}",version="v1"}} {LIMIT}'
        end = deadline_after()
        while True:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                          timeout=10).read().decode()
            if want in text.splitlines():
                break
            if time.monotonic() > end:
                got = [l for l in text.splitlines() if l.startswith("memtrace_cgroup_limit")]
                raise Fail(f"no line {want}: {got}")
            time.sleep(0.3)
        label = f'memtrace_resident_bytes{{pid="{pid}",command="{prog} 8",cgroup="/{name}",'
        if not any(l.startswith(label) for l in text.splitlines()):
            got = [l for l in text.splitlines() if l.startswith("memtrace_resident_bytes")]
            raise Fail(f"no series starting {label}: {got}")
        print(f"    {want}", flush=True)
    finally:
        stop_all(r)
        remove_cgroup(r, cg)


def test_cgroup_v2_unified(r):
    """A cgroup of the unified hierarchy: with its memory controller, its figures (memory.max
    set to 64 MiB); without one (these hosts: only hugetlb), the output says that this
    cgroup has no memory controller files and gives the v1 memory cgroup's figures."""
    root = unified_root()
    if root is None:
        raise Fail("no cgroup2 hierarchy mounted")
    name = f"memtrace-e2e-v2-{os.getpid()}"
    cg = make_cgroup(root, name)
    want = "/" + name
    try:
        has_memory = os.path.exists(os.path.join(cg, "memory.max"))
        if has_memory:
            with open(os.path.join(cg, "memory.max"), "w") as f:
                f.write(str(LIMIT))
        daemon, pid = cgalloc_in(r, cg, 8, "v2")
        v2, mem_path = proc_cgroup(pid)
        if v2 != want:
            raise Fail(f"the program is in {v2}, not {want}")
        t = wait_cgroup(r, pid, want if has_memory else mem_path)
        c = t["cgroup"]
        mem = c["memory"]
        if c.get("unified_path") != want:
            raise Fail(f"unified_path {c.get('unified_path')}, expected {want}")
        if has_memory:
            if mem.get("version") != "v2" or mem.get("cgroup_limit_bytes") != LIMIT:
                raise Fail(f"v2 memory cgroup: {mem}, expected the limit {LIMIT}")
        else:
            note = f"the unified cgroup {want} has no memory controller files"
            if not (mem.get("note") or "").startswith(note):
                raise Fail(f"note {mem.get('note')!r}: expected it to say \"{note}\"")
            if mem.get("version") != "v1" or mem.get("path") != mem_path:
                raise Fail(f"memory {mem}: expected the v1 memory cgroup {mem_path}")
            rc, out, _ = r.ctl("stats")
            block = stats_block(out, pid)
            if rc != 0 or not any(l.startswith(f"  ({note}") for l in block):
                raise Fail(f"stats text does not say \"{note}\": {block}")
            for l in block:
                print(f"    stats: {l}", flush=True)
        if daemon.poll() is not None:
            raise Fail(f"memtraced exited with status {daemon.returncode}")
    finally:
        stop_all(r)
        remove_cgroup(r, cg)



def test_cgroup_container_labels(r):
    """A cgroup shaped as podman's with cgroupfs makes it (libpod_parent/libpod-<64 hex>, here
    under a parent of the test's own, in the v1 memory controller): the target is labelled
    with the container id and runtime podman, its cgroup with the full path, and Prometheus
    puts them on its series. (No container runtime runs: a real one is issue 33's item 5.)"""
    if not os.path.isdir(V1_MEMORY):
        raise Fail(f"no v1 memory controller at {V1_MEMORY} (this test is for hybrid hosts)")
    ident = f"{os.getpid():08x}" * 8
    parent = make_cgroup(V1_MEMORY, f"memtrace-e2e-libpod_parent-{os.getpid()}")
    cg = make_cgroup(parent, f"libpod-{ident}")
    want = cg[len(V1_MEMORY):]
    try:
        port = free_port()
        prog = os.path.join(r.build, "tests", "cgalloc")
        daemon = r.start_daemon("--sample-interval", "200", "--metrics-listen", str(port),
                                "--", "sh", "-c",
                                f"echo $$ > {cg}/cgroup.procs; exec {prog} 4",
                                tag="memtraced-libpod")
        r.wait_line(os.path.join(r.tmp, "memtraced-libpod.out"), "ready ", daemon)
        pid = wait_attached(r, daemon)
        c = wait_cgroup(r, pid, want)["cgroup"]
        if c.get("container") != ident or c.get("runtime") != "podman" or c.get("unit"):
            raise Fail(f"labels {c}: expected container {ident}, runtime podman, no unit")
        rc, out, _ = r.ctl("status")
        line = next((l for l in out.splitlines() if l.startswith(f"pid {pid}: cgroup {want} ")),
                    None)
        if rc != 0 or line is None or f"(container {ident} podman)" not in line:
            raise Fail(f"status text: {line or one_line(out)[-300:]}")
        print(f"    status: {line}", flush=True)
        end = deadline_after()
        label = f'container="{ident}",runtime="podman"'
        while True:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                          timeout=10).read().decode()
            if any(l.startswith(f'memtrace_live_bytes{{pid="{pid}"') and label in l
                   for l in text.splitlines()):
                break
            if time.monotonic() > end:
                raise Fail(f"no memtrace_live_bytes series of {pid} with {label}")
            time.sleep(0.3)
    finally:
        stop_all(r)
        remove_cgroup(r, cg)
        remove_cgroup(r, parent)


def test_cgroup_html(r):
    """The HTML report of tests/golden/cgroup.mts (frag in a 64 MiB v1 memory cgroup), opened
    in headless Chromium: each target of the list names its cgroup, and with --pid a chart of
    its memory cgroup's usage and limit has a point for every point the file read them at."""
    snap = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden", "cgroup.mts")
    pid = "24417"
    tl = json.loads(subprocess.run([r.memtracectl, "--from", snap, "timeline", "--json", "--pid",
                                    pid], capture_output=True, text=True, check=True).stdout)
    want = [p for p in tl["points"] if p.get("cgroup_usage_bytes") is not None]
    page = os.path.join(r.tmp, "cgroup.html")
    subprocess.run([r.memtracectl, "--from", snap, "report", "--format", "html", "-o", page,
                    "--pid", pid], check=True, capture_output=True)
    dom, console = chromium(r, page, "--dump-dom", "cgroup")
    with r.part("page"):
        if console:
            raise Fail(f"the page logged to the console: {one_line(console[0])[:300]}")
    with r.part("labels"):
        labels = re.findall(r'<span class="cgroup">([^<]*)</span>', dom)
        if not labels or not all("cgroup /" in l for l in labels):
            raise Fail(f"the targets' cgroup labels: {labels}")
    with r.part("chart"):
        if not want:
            raise Fail("timeline --pid --json gives no cgroup figures to compare with")
        usage = re.search(r'<polyline class="cgroup-usage" points="([^"]*)"', dom)
        limit = re.search(r'<polyline class="cgroup-limit" points="([^"]*)"', dom)
        if not usage or len(usage.group(1).split()) != len(want):
            raise Fail(f"the usage line has {usage and len(usage.group(1).split())} points, "
                       f"the file {len(want)}")
        if not limit or "64.0 MiB" not in dom:
            raise Fail("no limit line, or the 64 MiB limit is not said")


def test_cgroup_report_by(r):
    """Two programs in two v1 memory cgroups, traced by one daemon (--comm, from their exec,
    so every block they hold is seen): report --by cgroup --json (rows the daemon makes) has a
    row per cgroup whose live bytes are that process's, the 1 MiB blocks cgalloc says it holds
    and its stdout buffer, and peak --by cgroup the same bytes at the peak; the client's rows
    of a saved snapshot are the same; report --by function --cgroup PATH keeps that cgroup's
    stacks only (the daemon filters; from the file, the client: the same rows), its hold_block
    row exactly what the program holds; --by unit and --by container put both in "(none)"
    (no unit, no container)."""
    if not os.path.isdir(V1_MEMORY):
        raise Fail(f"no v1 memory controller at {V1_MEMORY} (this test is for hybrid hosts)")
    comm = f"cgby{os.getpid() % 100000}x{int(time.time()) % 1000}"
    prog = os.path.join(r.tmp, comm)
    shutil.copy(os.path.join(r.build, "tests", "cgalloc"), prog)
    held_mib = {"a": 6, "b": 10}
    cgs = {k: make_cgroup(V1_MEMORY, f"memtrace-e2e-by-{k}-{os.getpid()}") for k in held_mib}
    try:
        daemon = r.start_daemon("--comm", comm, "--sample-interval", "200")
        pids, held = {}, {}
        for k, mib in held_mib.items():
            p = r.spawn(["sh", "-c", f"echo $$ > {cgs[k]}/cgroup.procs; exec {prog} {mib}"],
                        "target", f"cgby-{k}.out")
            held[k] = int(r.wait_line(os.path.join(r.tmp, f"cgby-{k}.out"), "ready ", p))
            if held[k] != mib * MIB:
                raise Fail(f"cgalloc {mib} says it holds {held[k]} bytes")
            pids[k] = p.pid
            r.wait_state("attached", p.pid, daemon)
        paths = {k: "/" + os.path.basename(cgs[k]) for k in cgs}
        for k in cgs:
            wait_cgroup(r, pids[k], paths[k])
        st = r.ctl_json("stats", "--json")
        with r.part("daemon_rows"):
            rows = {e["key"]: e for e in r.ctl_json("report", "--by", "cgroup", "--top", "0",
                                                    "--json")["entries"]}
            for k in cgs:
                e = rows.get(paths[k])
                live = attached(st, pids[k])["counters"]["live_bytes"]
                if e is None or e["live_bytes"] != live:
                    raise Fail(f"row {paths[k]}: {e}; pid {pids[k]} holds {live} live bytes")
                if not held[k] <= live < held[k] + 64 * 1024:
                    raise Fail(f"pid {pids[k]}: {live} live bytes, it says it holds {held[k]}")
                print(f"    {paths[k]}: live_bytes={e['live_bytes']} (cgalloc holds "
                      f"{held[k]}), {e['stacks']} stacks", flush=True)
        with r.part("peak_rows"):
            # the daemon's rows of the stacks live at the peak: both programs held all
            # their blocks at once, and never freed one
            peak = {e["key"]: e for e in r.ctl_json("peak", "--by", "cgroup", "--top", "0",
                                                    "--json")["entries"]}
            for k in cgs:
                e = peak.get(paths[k])
                if e is None or e["peak_live_bytes"] != rows[paths[k]]["live_bytes"]:
                    raise Fail(f"peak row {paths[k]}: {e}; live now "
                               f"{rows[paths[k]]['live_bytes']}")
        with r.part("client_rows"):
            snap = os.path.join(r.tmp, "cgby.mts")
            rc, _, err = r.ctl("snapshot", "-o", snap)
            if rc != 0:
                raise Fail(f"snapshot: {one_line(err)}")
            out = subprocess.run([r.memtracectl, "--from", snap, "report", "--by", "cgroup",
                                  "--top", "0", "--json"], capture_output=True, text=True,
                                 check=True).stdout
            mine = {e["key"]: e["live_bytes"] for e in json.loads(out)["entries"]}
            for k in cgs:
                if mine.get(paths[k]) != rows[paths[k]]["live_bytes"]:
                    raise Fail(f"the client's row {paths[k]}: {mine.get(paths[k])}, the "
                               f"daemon's {rows[paths[k]]['live_bytes']}")
        with r.part("filter"):
            for k in cgs:
                # the daemon's filter (cgroup= after the line), then the client's of the file
                got = r.ctl_json("report", "--by", "function", "--cgroup", paths[k], "--top",
                                 "0", "--json")
                fn = {e["key"]: e["live_bytes"] for e in got["entries"]}
                out = subprocess.run([r.memtracectl, "--from", snap, "report", "--by",
                                      "function", "--cgroup", paths[k], "--top", "0", "--json"],
                                     capture_output=True, text=True, check=True).stdout
                if json.loads(out)["entries"] != got["entries"]:
                    raise Fail(f"--cgroup {paths[k]}: the file's rows {one_line(out)[:300]} "
                               f"are not the daemon's {got['entries']}")
                if fn.get("hold_block") != held[k] or got["live_bytes"] != \
                        rows[paths[k]]["live_bytes"]:
                    raise Fail(f"--cgroup {paths[k]}: hold_block {fn.get('hold_block')}, total "
                               f"{got['live_bytes']}; expected {held[k]} and "
                               f"{rows[paths[k]]['live_bytes']}")
        with r.part("labels"):
            for by in ("unit", "container"):
                rows2 = {e["key"]: e["live_bytes"] for e in
                         r.ctl_json("report", "--by", by, "--top", "0", "--json")["entries"]}
                if rows2.get("(none)", 0) < held["a"] + held["b"]:
                    raise Fail(f"--by {by}: {rows2}; both programs have none")
        if daemon.poll() is not None:
            raise Fail(f"memtraced exited with status {daemon.returncode}")
    finally:
        stop_all(r)
        for cg in cgs.values():
            remove_cgroup(r, cg)


def test_cgroup_forked_labels(r):
    """Labels of targets that end at once (issue 33): tests/e2e/forkloop in a v2 cgroup the
    test makes forks a child every 2 ms, each makes 50 malloc+free pairs and exits, reaped
    by the parent within a few ms, long before the daemon's next drain tick or sample. After
    they all ended, stats --json must show every one of them (and the parent) with the
    cgroup's path and its own NSpid (the test runs in the host's pid namespace: its pid),
    and the 50 allocations each made."""
    root = unified_root()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    rel = f"/memtrace-e2e-fl-{os.getpid()}-{int(time.time()) % 100000}"
    cg = root + rel
    os.mkdir(cg)
    try:
        prog = os.path.join(r.build, "tests", "forkloop")
        # a sample every minute: only the labels read at the fork can be there
        daemon = r.start_daemon("--follow-forks", "--sample-interval", "60000", "--", "sh",
                                "-c", f"echo $$ > {cg}/cgroup.procs; exec {prog} 2",
                                tag="memtraced-fl")
        out = os.path.join(r.tmp, "memtraced-fl.out")
        parent = int(r.wait_line(out, "ready ", daemon))
        time.sleep(2.0)
        os.kill(parent, signal.SIGUSR1)
        forked = int(r.wait_line(out, "forked ", daemon))
        if forked < 5:
            raise Fail(f"forkloop forked only {forked} children in two seconds")
        with r.part("all_labelled"):
            end = deadline_after()
            while True:
                st = r.ctl_json("stats", "--json")
                kids = [t for t in st["targets"] if t["pid"] != parent]
                done = [t for t in kids if t["state"] == "exited"]
                if len(done) == forked:
                    break
                if time.monotonic() > end:
                    raise Fail(f"{len(done)} children exited of the {forked} forked "
                               f"({len(kids)} targets)")
                time.sleep(POLL)
            bad = []
            for t in kids:
                c = t.get("cgroup") or {}
                if c.get("unified_path") != rel or c.get("nspid") != t["pid"] or \
                        t["counters"]["allocations"] != 50:
                    bad.append(f"pid {t['pid']}: cgroup {c.get('unified_path')!r} nspid "
                               f"{c.get('nspid')} allocations {t['counters']['allocations']}")
            if bad:
                raise Fail(f"{len(bad)} of {len(kids)} children: " + "; ".join(bad[:5]))
            p = [t for t in st["targets"] if t["pid"] == parent]
            if not p or (p[-1].get("cgroup") or {}).get("unified_path") != rel:
                raise Fail(f"the parent {parent}: {p[-1].get('cgroup') if p else 'no target'}")
            print(f"    {len(kids)} children, every one labelled {rel}", flush=True)
    finally:
        stop_all(r)
        remove_cgroup(r, cg)


def test_cgroup_stats_filter(r):
    """stats --cgroup PATH: three copies of cgalloc in v2 cgroups the test makes, /A (6 MiB),
    /A/sub (3 MiB) and /B (10 MiB), traced from their exec (--comm). stats --cgroup /A --json
    lists the targets of /A and /A/sub only, and its totals are exactly their counters added
    up (allocations, live bytes and blocks); /A/sub and /B their own; the text the same
    targets; a cgroup with no target none, and zero totals; the same from a saved snapshot;
    with --memory each kept target's breakdown is its own (its live bytes); a bad path one
    error line and exit status 2."""
    root = unified_root()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    comm = f"cgst{os.getpid() % 100000}x{int(time.time()) % 1000}"
    prog = os.path.join(r.tmp, comm)
    shutil.copy(os.path.join(r.build, "tests", "cgalloc"), prog)
    top = f"/memtrace-e2e-st-{os.getpid()}"
    rel = {"a": top + "-A", "sub": top + "-A/sub", "b": top + "-B"}
    held_mib = {"a": 6, "sub": 3, "b": 10}
    made = []
    try:
        for k in ("a", "sub", "b"):
            os.mkdir(root + rel[k])
            made.append(root + rel[k])
        r.start_daemon("--comm", comm, "--sample-interval", "200")
        pids = {}
        for k, mib in held_mib.items():
            p = r.spawn(["sh", "-c", f"echo $$ > {root + rel[k]}/cgroup.procs; exec {prog} {mib}"],
                        "target", f"cgst-{k}.out")
            held = int(r.wait_line(os.path.join(r.tmp, f"cgst-{k}.out"), "ready ", p))
            if held != mib * MIB:
                raise Fail(f"cgalloc {mib} says it holds {held} bytes")
            pids[k] = p.pid
            r.wait_state("attached", p.pid)
        # labelled at the attach, from the exec: no sample needed, but the figures wait for one
        for k in pids:
            t = attached(r.ctl_json("stats", "--json"), pids[k])
            if (t.get("cgroup") or {}).get("unified_path") != rel[k]:
                raise Fail(f"pid {pids[k]}: cgroup {t.get('cgroup')}, expected {rel[k]}")
        whole = r.ctl_json("stats", "--json")
        mine = {k: attached(whole, pids[k])["counters"] for k in pids}
        for k in pids:
            if not held_mib[k] * MIB <= mine[k]["live_bytes"] < held_mib[k] * MIB + 64 * 1024:
                raise Fail(f"pid {pids[k]}: live {mine[k]['live_bytes']}, it holds "
                           f"{held_mib[k]} MiB")
        snap = os.path.join(r.tmp, "cgst.mts")
        rc, _, err = r.ctl("snapshot", "-o", snap)
        if rc != 0:
            raise Fail(f"snapshot: {one_line(err)}")
        keys = ("allocations", "frees", "bytes_allocated", "live_bytes", "live_allocations")
        for path, members in ((rel["a"], ("a", "sub")), (rel["sub"], ("sub",)),
                              (rel["b"], ("b",)), (top + "-A/", ("a", "sub")),
                              (top, ()), (top + "-A/none", ())):
            with r.part(f"json {path}"):
                for src, st in (("daemon", r.ctl_json("stats", "--cgroup", path, "--json")),
                                ("file", json.loads(subprocess.run(
                                    [r.memtracectl, "--from", snap, "stats", "--cgroup", path,
                                     "--json"], capture_output=True, text=True,
                                    check=True).stdout))):
                    got = sorted(t["pid"] for t in st["targets"])
                    want = sorted(pids[k] for k in members)
                    if got != want:
                        raise Fail(f"{src}: targets {got}, expected {want}")
                    for key in keys:
                        total = sum(mine[k][key] for k in members)
                        if st[key] != total:
                            raise Fail(f"{src}: {key} {st[key]}, its targets' sum {total}")
            print(f"    --cgroup {path}: targets {got}, live_bytes {st['live_bytes']}",
                  flush=True)
        with r.part("memory"):
            # --memory: the kept targets with their own breakdowns (renumbered with them)
            for path, members in ((rel["a"], ("a", "sub")), (rel["b"], ("b",))):
                st = r.ctl_json("stats", "--cgroup", path, "--memory", "--json")
                got = {t["pid"]: t for t in st["targets"]}
                if sorted(got) != sorted(pids[k] for k in members):
                    raise Fail(f"--memory --cgroup {path}: targets {sorted(got)}")
                for k in members:
                    kinds = (got[pids[k]].get("memory") or {}).get("kinds") or {}
                    live = sum(v.get("live_bytes", 0) for v in kinds.values())
                    if live != mine[k]["live_bytes"]:
                        raise Fail(f"--memory --cgroup {path}: pid {pids[k]}'s breakdown holds "
                                   f"{live} live bytes, not its {mine[k]['live_bytes']}")
        with r.part("text"):
            rc, out, err = r.ctl("stats", "--cgroup", rel["a"])
            shown = sorted(int(l.split()[1]) for l in out.splitlines()
                           if l.startswith("target "))
            live = next((l for l in out.splitlines() if l.startswith("live_bytes ")), "")
            want_live = mine["a"]["live_bytes"] + mine["sub"]["live_bytes"]
            if rc != 0 or shown != sorted((pids["a"], pids["sub"])) or \
                    live.split()[1:2] != [str(want_live)]:
                raise Fail(f"stats --cgroup {rel['a']}: status {rc}, targets {shown}, "
                           f"{live!r} (expected live_bytes {want_live})")
        with r.part("bad"):
            for bad in ("relative/path", "", "/" + "x" * 5000):
                rc, out, err = r.ctl("stats", "--cgroup", bad)
                lines = [l for l in err.splitlines() if l.strip()]
                if rc != 2 or len(lines) != 1 or "--cgroup" not in lines[0] or out:
                    raise Fail(f"stats --cgroup {bad[:20]!r}: status {rc}, stderr {err!r}")
    finally:
        stop_all(r)
        for cg in reversed(made):
            remove_cgroup(r, cg)


def test_cgroup_forked_nspid(r):
    """NSpid of forked children in a pid namespace of their own (a container's, made here by
    unshare --pid --fork): tests/e2e/forkloop runs as pid 1 of the namespace in a v2 cgroup
    the test makes, and forks children that exit at once. Its entry (its exec, in the
    namespace) must say NSpid 1; each child's NSpid is read at its fork event (its parent
    is not in the host's namespace, so it cannot be derived): its own, not its host pid,
    or null when the child was reaped before the read; and every child has the cgroup."""
    root = unified_root()
    if root is None:
        raise Fail("no cgroup v2 hierarchy mounted on this host")
    rel = f"/memtrace-e2e-ns-{os.getpid()}-{int(time.time()) % 100000}"
    cg = root + rel
    os.mkdir(cg)
    try:
        prog = os.path.join(r.build, "tests", "forkloop")
        daemon = r.start_daemon("--follow-forks", "--sample-interval", "60000", "--", "sh",
                                "-c", f"echo $$ > {cg}/cgroup.procs; "
                                f"exec unshare --pid --fork {prog} 2", tag="memtraced-ns")
        out = os.path.join(r.tmp, "memtraced-ns.out")
        if int(r.wait_line(out, "ready ", daemon)) != 1:
            raise Fail("forkloop is not pid 1 of its namespace")
        host = None  # forkloop, not one of its children: the one that is pid 1 there
        for d in os.listdir("/proc"):
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if f.read().split(b"\0")[0] != prog.encode():
                        continue
                with open(f"/proc/{d}/status") as f:
                    if any(l.startswith("NSpid:") and l.split()[-1] == "1" for l in f):
                        host = int(d)
            except (OSError, ValueError):
                pass
        if host is None:
            raise Fail("forkloop's host pid not found")
        r.extra_pids.add(host)
        time.sleep(2.0)
        os.kill(host, signal.SIGUSR1)
        forked = int(r.wait_line(out, "forked ", daemon))
        with r.part("nspid"):
            end = deadline_after()
            while True:
                st = r.ctl_json("stats", "--json")
                mine = [t for t in st["targets"] if t["pid"] == host]
                # forkloop's children run its program: its command line is theirs
                kids = [t for t in st["targets"]
                        if t["pid"] != host and (t.get("command") or "").startswith(prog)]
                if len([t for t in kids if t["state"] == "exited"]) >= forked:
                    break
                if time.monotonic() > end:
                    raise Fail(f"{len(kids)} children of the {forked} forked are targets")
                time.sleep(POLL)
            top = mine[-1].get("cgroup") or {}
            if top.get("nspid") != 1 or top.get("unified_path") != rel:
                raise Fail(f"forkloop (host pid {host}): {top}; expected NSpid 1 in {rel}")
            bad, read = [], 0
            for t in kids:
                c = t.get("cgroup") or {}
                ns = c.get("nspid")
                read += ns is not None
                if c.get("unified_path") != rel or (ns is not None and
                                                    (ns <= 1 or ns == t["pid"])):
                    bad.append(f"pid {t['pid']}: cgroup {c.get('unified_path')!r} nspid {ns}")
            if bad:
                raise Fail(f"{len(bad)} of {len(kids)} children: " + "; ".join(bad[:5]))
            print(f"    {len(kids)} children in {rel}, {read} with their own NSpid read, "
                  f"none with a wrong one", flush=True)
    finally:
        stop_all(r)
        remove_cgroup(r, cg)
