#!/usr/bin/env python3
"""End-to-end tests of resident memory beside the heap (issue 23). tests/e2e/frag.c allocates
100 MiB in 1 KiB blocks and frees nine of every ten, so that the allocator cannot give the pages
back: the live heap falls to 10 MiB, resident memory stays. memtraced must show both, with a heap
overhead that accounts for the difference, its resident figures equal to the kernel's VmRSS read
at the same moment, under glibc and under jemalloc; the timeline, the Prometheus endpoint, a
snapshot file and the HTML chart (in headless Chromium) carry the resident series.
tests/e2e/mappings.c has a mapping of each kind the breakdown tells apart."""

import urllib.request

from harness import *  # noqa: F401,F403
from test_outputs import chromium, free_port

MIB = 1 << 20
JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
# VmRSS is the kernel's counter, read a few system calls away from ours: a few pages apart
SAME_MOMENT = 1 * MIB


def vm_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise Fail(f"pid {pid} has no VmRSS")


def target_of(stats, pid):
    for t in stats.get("targets", []):
        if t.get("pid") == pid and t.get("state") == "attached":
            return t
    raise Fail(f"stats has no attached target {pid}")


def near(what, got, want, slack):
    if abs(got - want) > slack:
        raise Fail(f"{what} is {got} ({got / MIB:.1f} MiB), expected {want} "
                   f"({want / MIB:.1f} MiB) within {slack / MIB:.1f} MiB")


def start_frag(r, preload=None, tag="frag"):
    """frag waiting for SIGUSR1, memtraced attached to it (sampling every 200 ms), the pattern
    run; returns (pid, expect) once the daemon has seen every allocation and free of it."""
    env = dict(os.environ)
    if preload:
        if not os.path.exists(preload):
            raise Fail(f"{preload} is not installed (make deps)")
        env["LD_PRELOAD"] = preload
    frag = os.path.join(r.build, "tests", "frag")
    target = r.spawn([frag], "target", f"{tag}.out", env=env)
    r.wait_line(os.path.join(r.tmp, f"{tag}.out"), "ready ", target)
    r.metrics_port = free_port()
    r.start_daemon("--pid", str(target.pid), "--sample-interval", "200", "--metrics-listen",
                   str(r.metrics_port), tag=f"memtraced-{tag}")
    r.wait_state("attached", target.pid)
    os.kill(target.pid, signal.SIGUSR1)
    expect = r.read_expect(os.path.join(r.tmp, f"{tag}.out"), target)
    wait_pattern_seen(r, target.pid, expect)
    time.sleep(0.5)  # a few more samples of the held state
    return target.pid, expect


def wait_pattern_seen(r, pid, expect):
    """Until the daemon has seen every free of frag's pattern, and sampled its resident
    memory since."""
    end = deadline_after()
    while True:
        stats = r.ctl_json("stats", "--json")
        t = target_of(stats, pid)
        res = t.get("resident") or {}
        if (t["counters"]["frees"] >= expect["blocks"] - expect["kept_blocks"] and
                res.get("resident_bytes", 0) >= expect["allocated_bytes"] // 2):
            return
        if time.monotonic() > end:
            raise Fail(f"the daemon never saw the pattern whole: {t['counters']}, {res}")
        time.sleep(0.2)


def stats_now(r, pid):
    """stats --json --memory between two reads of VmRSS: (stats, before, after)."""
    before = vm_rss(pid)
    stats = r.ctl_json("stats", "--json", "--memory")
    return stats, before, vm_rss(pid)


def check_resident_now(now, pid, expect, stays):
    """The resident figures are VmRSS's, the live heap a tenth of what was allocated; with
    stays, the allocator kept (nearly) all of it resident."""
    stats, before, after = now
    t = target_of(stats, pid)
    res = t.get("resident")
    if not isinstance(res, dict) or res.get("current") is not True:
        raise Fail(f"target {pid} has no current resident figures: {res!r}")
    rss = number(res, "resident_bytes", "resident")
    if not min(before, after) - SAME_MOMENT <= rss <= max(before, after) + SAME_MOMENT:
        raise Fail(f"resident_bytes {rss} is not VmRSS read at the same moment "
                   f"({before}, then {after})")
    parts = sum(number(res, k, "resident") for k in
                ("resident_anon_bytes", "resident_file_bytes", "resident_shmem_bytes"))
    if parts != rss:
        raise Fail(f"anon + file + shmem = {parts}, resident_bytes {rss}")
    if not 0 < number(res, "pss_bytes", "resident") <= rss + SAME_MOMENT:
        raise Fail(f"pss_bytes {res['pss_bytes']} against resident_bytes {rss}")
    if number(res, "peak_resident_bytes", "resident") < rss:
        raise Fail(f"peak_resident_bytes {res['peak_resident_bytes']} below {rss}")
    live = t["counters"]["live_bytes"]
    if not expect["kept_bytes"] <= live <= expect["kept_bytes"] + 64 * 1024:
        raise Fail(f"live_bytes {live}, the program holds {expect['kept_bytes']}")
    if stays and rss < 0.9 * expect["allocated_bytes"]:
        raise Fail(f"resident_bytes {rss}: the pattern should keep ~{expect['allocated_bytes']} "
                   f"resident (the allocator cannot give it back)")
    if rss <= live:
        raise Fail(f"resident_bytes {rss} is not above live_bytes {live}")
    tot = stats.get("resident")
    if not isinstance(tot, dict) or tot.get("targets") != 1:
        raise Fail(f"stats has no resident totals over 1 target: {tot!r}")
    near("the totals' resident_bytes", number(tot, "resident_bytes", "resident"), rss, 0)


def check_breakdown(stats, pid, expect, heap_kind, stays):
    """The breakdown's mappings add up to VmRSS; the live heap is all in heap regions, of
    heap_kind; the heap overhead is what those regions hold beyond it: with stays, every
    byte freed."""
    t = target_of(stats, pid)
    mem = t.get("memory")
    if not isinstance(mem, dict) or mem.get("error") is not None:
        raise Fail(f"target {pid} has no breakdown: {mem!r}")
    kinds = mem["kinds"]
    rss = t["resident"]["resident_bytes"]
    total = sum(number(k, "resident_bytes", "kind") for k in kinds.values())
    near("the mappings' resident bytes summed", total, rss, SAME_MOMENT)
    live = t["counters"]["live_bytes"]
    heap_live = number(mem, "heap_live_bytes", "memory")
    if heap_live != live or mem.get("unmapped_bytes") != 0:
        raise Fail(f"heap regions hold {heap_live} live bytes (and {mem.get('unmapped_bytes')} "
                   f"in no mapping), the target {live}")
    if kinds[heap_kind]["live_bytes"] < expect["kept_bytes"]:
        raise Fail(f"{heap_kind} holds {kinds[heap_kind]['live_bytes']} live bytes, expected the "
                   f"{expect['kept_bytes']} kept: {kinds}")
    heap_res = number(mem, "heap_resident_bytes", "memory")
    over = number(mem, "heap_overhead_bytes", "memory")
    if over != heap_res - heap_live:
        raise Fail(f"heap_overhead_bytes {over} is not {heap_res} - {heap_live}")
    freed = expect["allocated_bytes"] - expect["kept_bytes"]
    if (stays and over < 0.9 * freed) or over <= 0:
        raise Fail(f"heap_overhead_bytes {over}, {freed} bytes freed")
    # resident = live + heap overhead + the rest, which is small here
    rest = total - heap_res
    if rest > 16 * MIB:
        raise Fail(f"{rest} resident bytes outside the heap regions: {kinds}")


def test_resident_glibc(r):
    """glibc: resident stays at 100 MiB with 10 MiB live; stats, the breakdown, timeline,
    Prometheus, a snapshot file and the HTML chart all say so."""
    pid, expect = start_frag(r)
    now = stats_now(r, pid)
    with r.part("stats"):
        check_resident_now(now, pid, expect, stays=True)
    with r.part("breakdown"):
        check_breakdown(now[0], pid, expect, "brk_heap", stays=True)
        rc, out, err = r.ctl("stats", "--memory")
        if rc != 0 or not re.search(r"heap_overhead \d+\.\d MiB", out) or \
                not re.search(r"^  brk_heap +1 ", out, re.M):
            raise Fail(f"stats --memory text: rc {rc}, {one_line(out)[-400:]} {one_line(err)}")
    with r.part("timeline"):
        tl = r.ctl_json("timeline", "--json")
        pts = [p for p in tl["points"] if p.get("resident_bytes") is not None]
        if len(pts) < 3:
            raise Fail(f"only {len(pts)} timeline points have resident figures")
        near("the last point's resident_bytes", pts[-1]["resident_bytes"], vm_rss(pid),
             SAME_MOMENT)
        if tl.get("peak_resident_bytes") != max(p["resident_bytes"] for p in pts):
            raise Fail(f"peak_resident_bytes {tl.get('peak_resident_bytes')} is not the "
                       f"series' largest")
        rc, out, _ = r.ctl("timeline", "--rows", "5")
        if rc != 0 or "resident" not in out.splitlines()[1] or ".." not in out:
            raise Fail(f"timeline text has no resident column: {out[:300]!r}")
    with r.part("watch"):
        rc, out, err = r.ctl("watch", "--count", "1")
        m = re.search(r"^\d\d:\d\d:\d\d live 10\.0 MiB in \d+ blocks, resident ([\d.]+) MiB, ",
                      out, re.M)
        if rc != 0 or not m or abs(float(m.group(1)) * MIB - vm_rss(pid)) > 2 * MIB:
            raise Fail(f"watch does not show resident memory beside live: {one_line(out)[:200]}")
    with r.part("prometheus"):
        with urllib.request.urlopen(f"http://127.0.0.1:{r.metrics_port}/metrics",
                                    timeout=10) as resp:
            body = resp.read().decode()
        # (then the labels of its cgroup: docs/metrics.md, "Cgroup")
        m = re.search(r'^memtrace_resident_bytes\{pid="%d",command="[^"]*"(?:,[a-z_]+="[^"]*")*\} '
                      r'(\d+)$' % pid, body, re.M)
        if not m:
            raise Fail("no memtrace_resident_bytes series for the target")
        near("memtrace_resident_bytes", int(m.group(1)), vm_rss(pid), SAME_MOMENT)
        for name in ("memtrace_resident_anon_bytes", "memtrace_resident_file_bytes",
                     "memtrace_resident_shmem_bytes", "memtrace_swap_bytes", "memtrace_pss_bytes",
                     "memtrace_lazyfree_bytes", "memtrace_peak_resident_bytes"):
            if not re.search(r'^%s\{pid="%d",' % (name, pid), body, re.M):
                raise Fail(f"no {name} series for the target")
        p = subprocess.run(["promtool", "check", "metrics"], input=body, text=True,
                           capture_output=True, timeout=30)
        if p.returncode != 0:
            raise Fail(f"promtool check metrics: {one_line(p.stdout + p.stderr)[:300]}")
    snap = os.path.join(r.tmp, "frag.mts")
    with r.part("snapshot_file"):
        rc, _, err = r.ctl("snapshot", "-o", snap)
        if rc != 0:
            raise Fail(f"snapshot -o: {one_line(err)}")
        saved = json.loads(subprocess.run([r.memtracectl, "--from", snap, "stats", "--json",
                                           "--memory"], capture_output=True, text=True,
                                          check=True).stdout)
        check_breakdown(saved, pid, expect, "brk_heap", stays=True)
        # the file against itself: no change in resident memory
        diff = json.loads(subprocess.run([r.memtracectl, "diff", snap, snap, "--json"],
                                         capture_output=True, text=True, check=True).stdout)
        if diff.get("resident_bytes_diff") != 0 or \
                diff.get("resident_bytes") != saved["resident"]["resident_bytes"]:
            raise Fail(f"diff of the file with itself: resident {diff.get('resident_bytes')} "
                       f"({diff.get('resident_bytes_diff')})")
    with r.part("html"):
        check_html_chart(r, snap)
    with r.part("exit"):  # an exited target holds nothing: its last figures are not added up
        os.kill(pid, signal.SIGKILL)
        r.wait_state("exited", pid)
        stats = r.ctl_json("stats", "--json")
        t = [t for t in stats["targets"] if t["pid"] == pid][0]
        if t["resident"]["current"] is not False or stats["resident"]["targets"] != 0 or \
                stats["resident"]["resident_bytes"] != 0:
            raise Fail(f"after the exit: {t['resident']}, totals {stats['resident']}")
        with urllib.request.urlopen(f"http://127.0.0.1:{r.metrics_port}/metrics",
                                    timeout=10) as resp:
            if re.search(r'^memtrace_resident_bytes\{', resp.read().decode(), re.M):
                raise Fail("Prometheus still has a resident series for the exited target")


def check_html_chart(r, snap, pid=None):
    """The HTML report of the snapshot file, opened in headless Chromium: the chart has a
    resident line through every resident point of the file's timeline and a live line, the
    peak of each marked where the file says. With pid, the report's --pid: the chart is of
    that pid's own series, as timeline --pid gives it, and the page says so."""
    by_pid = ["--pid", str(pid)] if pid else []
    tl = json.loads(subprocess.run([r.memtracectl, "--from", snap, "timeline", "--json",
                                    *by_pid], capture_output=True, text=True, check=True).stdout)
    page = os.path.join(r.tmp, f"resident{pid or ''}.html")
    subprocess.run([r.memtracectl, "--from", snap, "report", "--format", "html", "-o", page,
                    *by_pid], check=True, capture_output=True)
    dom, console = chromium(r, page, "--dump-dom", f"resident{pid or ''}")
    if console:
        raise Fail(f"the page logged to the console: {one_line(console[0])[:300]}")
    if 'data-memtrace-resident="ready"' not in dom:
        raise Fail("memory.js did not draw the chart")
    lines = dict(re.findall(r'<polyline class="(live|resident)" points="([^"]*)"', dom))
    want = sum(1 for p in tl["points"] if p.get("resident_bytes") is not None)
    if len(lines.get("resident", "").split()) != want or \
            len(lines.get("live", "").split()) != len(tl["points"]):
        raise Fail(f"the chart's lines have {len(lines.get('resident', '').split())} resident "
                   f"and {len(lines.get('live', '').split())} live points, the file "
                   f"{want} and {len(tl['points'])}")
    peak = re.search(r'<circle class="peak-resident"[^>]*data-bytes="(\d+)"', dom)
    if not peak or int(peak.group(1)) != tl["peak_resident_bytes"]:
        raise Fail(f"the resident peak is marked at {peak and peak.group(1)}, the file's is "
                   f"{tl['peak_resident_bytes']}")
    # the marker is the line's highest point
    ys = [float(p.split(",")[1]) for p in lines["resident"].split()]
    cy = float(re.search(r'<circle class="peak-resident"[^>]*cy="([\d.]+)"', dom).group(1))
    if abs(cy - min(ys)) > 0.11:
        raise Fail(f"the resident peak is drawn at y={cy}, the line's top at {min(ys)}")
    peak = re.search(r'<circle class="peak-live"[^>]*data-bytes="(\d+)"', dom)
    if not peak or int(peak.group(1)) != tl["peak_live_bytes"]:
        raise Fail(f"the live peak is marked at {peak and peak.group(1)}, the file's is "
                   f"{tl['peak_live_bytes']}")
    if "resident_bytes" not in re.sub(r"<[^>]+>", " ", dom.split('id="totals"')[1][:4000]):
        raise Fail("the totals table has no resident_bytes row")
    if pid and (f'data-memtrace-pid="{pid}"' not in dom or
                f"<h2>Memory over time of pid {pid}</h2>" not in dom):
        raise Fail(f"the page does not say its chart is of pid {pid}")


def last_series_point(r, pid, snap=None):
    """The last point with resident figures of timeline --pid PID --json (of the daemon, or
    of file snap: the newest point's may still be being read), and the series."""
    if snap:
        p = subprocess.run([r.memtracectl, "--from", snap, "timeline", "--json", "--pid",
                            str(pid)], capture_output=True, text=True)
        rc, out, err = p.returncode, p.stdout, p.stderr
    else:
        rc, out, err = r.ctl("timeline", "--json", "--pid", str(pid))
    if rc != 0:
        raise Fail(f"timeline --pid {pid}: rc {rc}, {one_line(err)}")
    tl = json.loads(out)
    read = [p for p in tl.get("points", []) if p.get("resident_bytes") is not None]
    if tl.get("pid") != pid or not read:
        raise Fail(f"timeline --pid {pid} has no points of its own: {one_line(out)[:300]}")
    return read[-1], tl


def test_resident_per_target(r):
    """Two targets with different heaps (frag: 100 MiB allocated, 10 MiB kept; and 40 MiB
    allocated, 20 MiB kept), the second attached later: each one's series (timeline --pid)
    is its own live heap and VmRSS, the total's points are their sums, the second's begins
    when it was attached; watch --pid, a snapshot file and its HTML report with --pid say
    the same, and a file written before the section says plainly it cannot."""
    pid_a, expect_a = start_frag(r, tag="frag-a")
    prog = os.path.join(r.build, "tests", "frag")
    b = r.spawn([prog, "--total-mb", "40", "--keep", "2"], "target", "frag-b.out")
    r.wait_line(os.path.join(r.tmp, "frag-b.out"), "ready ", b)
    rc, _, err = r.ctl("attach", str(b.pid))
    if rc != 0:
        raise Fail(f"attach {b.pid}: {one_line(err)}")
    r.wait_state("attached", b.pid)
    os.kill(b.pid, signal.SIGUSR1)
    expect_b = r.read_expect(os.path.join(r.tmp, "frag-b.out"), b)
    wait_pattern_seen(r, b.pid, expect_b)
    time.sleep(0.5)  # a few samples of both held
    pid_b = b.pid
    with r.part("series"):
        before = {p: vm_rss(p) for p in (pid_a, pid_b)}
        stats = r.ctl_json("stats", "--json")
        last = {p: last_series_point(r, p)[0] for p in (pid_a, pid_b)}
        after = {p: vm_rss(p) for p in (pid_a, pid_b)}
        for pid, expect in ((pid_a, expect_a), (pid_b, expect_b)):
            p = last[pid]
            live = target_of(stats, pid)["counters"]["live_bytes"]
            if p["live_bytes"] != live or not \
                    expect["kept_bytes"] <= live <= expect["kept_bytes"] + 64 * 1024:
                raise Fail(f"pid {pid}: its series ends at {p['live_bytes']} live bytes, it "
                           f"holds {live} (the program {expect['kept_bytes']})")
            rss = p["resident_bytes"]
            if not min(before[pid], after[pid]) - SAME_MOMENT <= rss <= \
                    max(before[pid], after[pid]) + SAME_MOMENT:
                raise Fail(f"pid {pid}: its series' last resident_bytes {rss} is not its "
                           f"VmRSS ({before[pid]}, then {after[pid]})")
            if rss - live < 0.8 * (expect["allocated_bytes"] - expect["kept_bytes"]):
                raise Fail(f"pid {pid}: resident {rss} beside live {live}: the freed "
                           f"memory should stay resident")
        if abs(last[pid_a]["live_bytes"] - last[pid_b]["live_bytes"]) < 5 * MIB:
            raise Fail(f"the two series have the same live heap: {last}")
    snap = os.path.join(r.tmp, "two.mts")
    with r.part("sums"):  # the totals are the two targets' figures, point by point
        # all three series of one snapshot: the daemon adds points between two requests
        rc, _, err = r.ctl("snapshot", "-o", snap)
        if rc != 0:
            raise Fail(f"snapshot -o: {one_line(err)}")
        tl = json.loads(subprocess.run([r.memtracectl, "--from", snap, "timeline", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
        series = {p: {q["time"]: q for q in last_series_point(r, p, snap)[1]["points"]}
                  for p in (pid_a, pid_b)}
        both = 0
        for q in tl["points"]:
            a, b2 = series[pid_a].get(q["time"]), series[pid_b].get(q["time"])
            if a is None:
                raise Fail(f"pid {pid_a} has no point at {q['time']} s")
            if b2 is None:
                if q["live_bytes"] != a["live_bytes"]:
                    raise Fail(f"at {q['time']} s only pid {pid_a} was traced: live "
                               f"{q['live_bytes']}, its own {a['live_bytes']}")
                continue
            both += 1
            if q["live_bytes"] != a["live_bytes"] + b2["live_bytes"]:
                raise Fail(f"at {q['time']} s: live {q['live_bytes']} is not "
                           f"{a['live_bytes']} + {b2['live_bytes']}")
            if q["resident_bytes"] is not None and \
                    q["resident_bytes"] != a["resident_bytes"] + b2["resident_bytes"]:
                raise Fail(f"at {q['time']} s: resident {q['resident_bytes']} is not "
                           f"{a['resident_bytes']} + {b2['resident_bytes']}")
        if both < 3 or len(series[pid_b]) != both or len(series[pid_a]) <= both:
            raise Fail(f"{len(tl['points'])} points, pid {pid_a} at {len(series[pid_a])}, "
                       f"pid {pid_b} (attached later) at {len(series[pid_b])}, both at {both}")
        rc, out, _ = r.ctl("timeline", "--pid", str(pid_b), "--rows", "4")
        if rc != 0 or not out.startswith(f"memory of pid {pid_b} over time: ") or \
                "resident" not in out.splitlines()[1]:
            raise Fail(f"timeline --pid text: {out[:300]!r}")
    with r.part("watch"):
        rc, out, err = r.ctl("watch", "--count", "1", "--pid", str(pid_b))
        m = re.search(r"^\d\d:\d\d:\d\d pid %d live 20\.0 MiB in \d+ blocks, resident ([\d.]+) "
                      r"MiB, " % pid_b, out, re.M)
        if rc != 0 or not m or abs(float(m.group(1)) * MIB - vm_rss(pid_b)) > 2 * MIB:
            raise Fail(f"watch --pid {pid_b}: {one_line(out + err)[:300]}")
    with r.part("snapshot_file"):
        for pid, expect in ((pid_a, expect_a), (pid_b, expect_b)):
            p, _ = last_series_point(r, pid, snap)
            if not expect["kept_bytes"] <= p["live_bytes"] <= expect["kept_bytes"] + 64 * 1024:
                raise Fail(f"the file's series of pid {pid} ends at {p}")
        p = subprocess.run([r.memtracectl, "--from", snap, "timeline", "--pid", "1"],
                           capture_output=True, text=True)
        if p.returncode != 1 or p.stdout or p.stderr != "memtracectl: pid 1 is not traced\n":
            raise Fail(f"timeline --pid of a pid not in the file: rc {p.returncode}, "
                       f"{one_line(p.stderr)}")
        old = os.path.join(os.path.dirname(__file__), "..", "golden", "frag.mts")
        p = subprocess.run([r.memtracectl, "--from", old, "timeline", "--pid", "23530"],
                           capture_output=True, text=True)
        if p.returncode != 1 or p.stdout or one_error_line(p.stderr) or \
                "has no memory over time of its own" not in p.stderr:
            raise Fail(f"timeline --pid of a file older than the section: rc {p.returncode}, "
                       f"{one_line(p.stderr)}")
    with r.part("html"):
        check_html_chart(r, snap, pid_b)


def test_resident_jemalloc(r):
    """The same under jemalloc (LD_PRELOAD): its extents are mappings of its own, found by the
    live blocks in them. It keeps the slabs that hold a live block, gives back the pages of
    the slabs it empties (as they decay) but keeps their addresses: resident falls somewhere
    between the live heap and what was allocated, the virtual size does not."""
    pid, expect = start_frag(r, preload=JEMALLOC, tag="frag-jemalloc")
    now = stats_now(r, pid)
    with r.part("stats"):
        check_resident_now(now, pid, expect, stays=False)
        t = target_of(now[0], pid)
        if "libjemalloc" not in (t.get("allocator") or ""):
            raise Fail(f"the allocator is {t.get('allocator')}, not jemalloc")
    with r.part("breakdown"):
        check_breakdown(now[0], pid, expect, "allocator_mmap", stays=False)
        kinds = target_of(now[0], pid)["memory"]["kinds"]
        if kinds["brk_heap"]["live_bytes"]:
            raise Fail(f"jemalloc put {kinds['brk_heap']['live_bytes']} live bytes in the brk "
                       f"heap")
        if kinds["allocator_mmap"]["virtual_bytes"] < expect["allocated_bytes"]:
            raise Fail(f"jemalloc's extents span {kinds['allocator_mmap']['virtual_bytes']} "
                       f"bytes, it allocated {expect['allocated_bytes']}")


def test_resident_mappings(r):
    """Each kind of mapping found in a real process (tests/e2e/mappings.c), traced from its
    start: the live heap in the brk heap, the arenas and the large block's own mapping; two
    thread stacks; the shared memory RssShmem counts."""
    prog = os.path.join(r.build, "tests", "mappings")
    daemon = r.start_daemon("--", prog, tag="memtraced-mappings", wait=True)
    expect = r.read_expect(os.path.join(r.tmp, "memtraced-mappings.out"), daemon)
    t = r.wait_state("attached")
    pid = t["pid"]
    end = deadline_after()
    while True:
        stats = r.ctl_json("stats", "--json", "--memory")
        t = target_of(stats, pid)
        if t.get("resident") and t["counters"]["live_bytes"] >= expect["thread_bytes"] + \
                expect["large_bytes"] + expect["brk_bytes"]:
            break
        if time.monotonic() > end:
            raise Fail(f"never saw the program's blocks: {t['counters']}")
        time.sleep(0.2)
    kinds = t["memory"]["kinds"]
    if kinds["arena"]["mappings"] < 2 * expect["threads"] or \
            kinds["arena"]["live_bytes"] != expect["thread_bytes"]:
        raise Fail(f"arenas: {kinds['arena']}, the threads hold {expect['thread_bytes']}")
    if kinds["allocator_mmap"]["live_bytes"] != expect["large_bytes"] or \
            kinds["allocator_mmap"]["resident_bytes"] < expect["large_bytes"]:
        raise Fail(f"allocator_mmap: {kinds['allocator_mmap']}, the block {expect['large_bytes']}")
    if kinds["brk_heap"]["live_bytes"] < expect["brk_bytes"]:
        raise Fail(f"brk_heap: {kinds['brk_heap']}, at least {expect['brk_bytes']} live")
    if kinds["thread_stack"]["mappings"] < 1 + 2 * expect["threads"]:
        raise Fail(f"thread_stack: {kinds['thread_stack']}: [stack] and {expect['threads']} "
                   f"threads with their guards")
    shm = expect["shared_bytes"] + expect["memfd_bytes"]
    if kinds["shared_memory"]["resident_bytes"] != shm or \
            t["resident"]["resident_shmem_bytes"] < shm:
        raise Fail(f"shared_memory: {kinds['shared_memory']}, resident_shmem_bytes "
                   f"{t['resident']['resident_shmem_bytes']}, the program maps {shm}")
    if kinds["image"]["resident_bytes"] < expect["file_bytes"]:
        raise Fail(f"image {kinds['image']}: the program mapped again is {expect['file_bytes']}")
