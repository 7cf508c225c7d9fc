#!/usr/bin/env python3
"""End-to-end tests of the views over time: snapshot files, diff, peak, reset-peak, leaks,
timeline and watch, on the known pattern and on tests/e2e/ages.c (two generations of blocks
separated by a pause). Every number is compared with what the program did."""

import select

from harness import *  # noqa: F401,F403

AGES_OLD_COUNT, AGES_OLD_SIZE = 7, 4000  # as in tests/e2e/ages.c
AGES_NEW_COUNT, AGES_NEW_SIZE = 3, 12345
PAUSE = 3.0  # seconds between the two generations; leaks splits them at 2 s
AGES_TEMP_COUNT, AGES_TEMP_SIZE = 5, 77
AGES_HELD_COUNT, AGES_HELD_SIZE = 4, 55


def ctl_plain(r, *args, timeout=15):
    """memtracectl without --socket (for --from FILE and usage checks)."""
    try:
        p = subprocess.run([r.memtracectl, *args], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail(f"memtracectl {' '.join(args)} did not return within {timeout} s") from None
    return p.returncode, p.stdout, p.stderr


def json_of(rc, out, err, what):
    if rc != 0:
        raise Fail(f"{what} exited {rc}: {one_line(err)[:200]}")
    try:
        return json.loads(out)
    except ValueError as e:
        raise Fail(f"{what} printed invalid JSON ({e}): {one_line(out)[:200]}") from None


def snapshot_to(r, name):
    path = os.path.join(r.tmp, name)
    rc, _, err = r.ctl("snapshot", "-o", path)
    if rc != 0:
        raise Fail(f"snapshot -o {name} exited {rc}: {one_line(err)[:200]}")
    return path


def fmt_size(size, sign=False):
    """tracemalloc's _format_size, the reference for the text lines."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 100 and unit != "B":
            return ("%+.1f %s" if sign else "%.1f %s") % (size, unit)
        if abs(size) < 10 * 1024 or unit == "TiB":
            return ("%+.0f %s" if sign else "%.0f %s") % (size, unit)
        size /= 1024


def entries_of(obj, where):
    entries = obj.get("entries") if isinstance(obj, dict) else None
    if not isinstance(entries, list):
        raise Fail(f"{where} has no \"entries\" list")
    return entries


def expect_error(rc, err, want_rc, what):
    if rc != want_rc:
        raise Fail(f"{what}: exit {rc}, expected {want_rc}")
    bad = one_error_line(err)
    if bad:
        raise Fail(f"{what}: {bad}")


def test_views_pattern(r):
    """The known pattern: diff of one phase, peak, reset-peak, files equal to live views."""
    target = r.start_pattern()
    daemon = r.start_daemon("--pid", str(target.pid), "--sample-interval", "50")
    r.wait_state("attached", target.pid, daemon)
    before = snapshot_to(r, "before.mts")
    target.send_signal(signal.SIGUSR1)
    expect = r.read_expect(os.path.join(r.tmp, "pattern.out"), target)
    r.wait_stats(expect)
    after = snapshot_to(r, "after.mts")
    live_sites = {s: v for s, v in expect["sites"].items() if v["live_allocations"]}

    with r.part("diff_json"):
        d = json_of(*ctl_plain(r, "diff", before, after, "--by", "function", "--top", "0",
                               "--json"), "diff --json")
        if number(d, "live_bytes_diff", "diff") != expect["live_bytes"]:
            raise Fail(f"live_bytes_diff={d['live_bytes_diff']}, the phase left "
                       f"{expect['live_bytes']} live")
        got = {e.get("key"): e for e in entries_of(d, "diff")}
        problems = []
        for site, want in live_sites.items():
            e = got.get(site)
            if e is None:
                problems.append(f"{site}: no entry")
                continue
            for k in ("live_bytes", "live_allocations"):
                if e.get(k + "_diff") != want[k] or e.get(k) != want[k]:
                    problems.append(f"{site}: {k}={e.get(k)} ({e.get(k + '_diff')}), "
                                    f"expected {want[k]}")
            if e.get("status") != "new":
                problems.append(f"{site}: status {e.get('status')}, expected new")
        dead = [s for s, v in expect["sites"].items() if not v["live_allocations"] and s in got]
        if dead:
            problems.append(f"sites with nothing live are listed: {', '.join(dead)}")
        growth = [abs(number(e, "live_bytes_diff", "entry")) for e in entries_of(d, "diff")]
        if growth != sorted(growth, reverse=True):
            problems.append(f"not ordered by absolute growth: {growth}")
        if problems:
            raise Fail("; ".join(problems))

    with r.part("diff_text"):
        rc, out, err = ctl_plain(r, "diff", before, after, "--top", "0")
        if rc != 0:
            raise Fail(f"diff exited {rc}: {one_line(err)[:200]}")
        lines = out.splitlines()
        for site, want in live_sites.items():
            size, count = want["live_bytes"], want["live_allocations"]
            line = (f"{site}: size={fmt_size(size)} ({fmt_size(size, True)}), count={count} "
                    f"(+{count}), average={fmt_size(size / count)} [new]")
            if line not in lines:
                raise Fail(f"no line {line!r} in: {one_line(out)[:300]}")
        rc, out, _ = ctl_plain(r, "diff", after, after, "--top", "0", "--json")
        same = json_of(rc, out, "", "diff of a file with itself")
        moved = [e["key"] for e in entries_of(same, "diff") if e.get("live_bytes_diff")]
        if moved:
            raise Fail(f"a file diffed with itself shows growth at {moved}")

    with r.part("peak"):
        p = r.ctl_json("peak", "--by", "function", "--top", "0", "--json")
        entries = entries_of(p, "peak")
        total = sum(number(e, "peak_live_bytes", "peak entry") for e in entries)
        if not (p.get("peak_live_bytes") == expect["peak_live_bytes"] == total ==
                p.get("groups_peak_live_bytes")):
            raise Fail(f"peak_live_bytes={p.get('peak_live_bytes')}, groups sum to {total}, "
                       f"the pattern's peak is {expect['peak_live_bytes']}")
        got = {e.get("key"): e.get("peak_live_bytes") for e in entries}
        want = {s: v["peak_live_bytes"] for s, v in expect["sites"].items()
                if v["peak_live_bytes"]}
        wrong = [f"{s}={got.get(s)} (expected {v})" for s, v in want.items() if got.get(s) != v]
        if wrong:
            raise Fail("at the peak: " + ", ".join(wrong))
        if not want.get("site_spike"):
            raise Fail("the pattern's spike is not part of its peak")
        live = {frame0_function(e) for e in r.report("--top", "0", "--sort", "live")}
        if "site_spike" in live:
            raise Fail("the freed spike appears in report --sort live")
        by_stack = r.ctl_json("peak", "--top", "0", "--json")
        stack_sum = sum(e["peak_live_bytes"] for e in entries_of(by_stack, "peak"))
        if stack_sum != expect["peak_live_bytes"]:
            raise Fail(f"peak by stack sums to {stack_sum}")

    with r.part("live_equals_file"):
        for view in (("peak", "--json"), ("peak", "--by", "line", "--json"),
                     ("report", "--json", "--top", "5")):
            live = r.ctl_json(*view)
            saved = json_of(*ctl_plain(r, "--from", after, *view), f"--from {' '.join(view)}")
            # resident memory is read anew for every answer (a measure of the
            # moment, not a count of calls): the file has the file's
            live.pop("resident", None)
            saved.pop("resident", None)
            if live != saved:
                keys = sorted(k for k in set(live) | set(saved) if live.get(k) != saved.get(k))
                raise Fail(f"{' '.join(view)} differs between the socket and the file in "
                           f"{keys}")
        saved = json_of(*ctl_plain(r, "--from", after, "stats", "--json"), "--from stats")
        if counters_of(saved) != counters_of(r.ctl_json("stats", "--json")):
            raise Fail("stats counters differ between the socket and the file")

    with r.part("reset_peak"):
        st = r.ctl_json("reset-peak", "--json")
        if st.get("peak_live_bytes") != expect["live_bytes"]:
            raise Fail(f"after reset-peak peak_live_bytes={st.get('peak_live_bytes')}, "
                       f"expected the live {expect['live_bytes']}")
        p = r.ctl_json("peak", "--by", "function", "--top", "0", "--json")
        keys = {e["key"]: e["peak_live_bytes"] for e in entries_of(p, "peak")}
        if sum(keys.values()) != expect["live_bytes"] or "site_spike" in keys:
            raise Fail(f"peak after reset: {keys}")
        # the file taken before keeps the old peak
        old = json_of(*ctl_plain(r, "--from", after, "stats", "--json"), "--from stats")
        if old.get("peak_live_bytes") != expect["peak_live_bytes"]:
            raise Fail("the snapshot file changed with the reset")

    with r.part("bad_files"):
        with open(after, "rb") as f:
            data = f.read()
        variants = {
            "truncated.mts": data[: len(data) // 2],
            "flipped.mts": data[:60] + bytes([data[60] ^ 0x10]) + data[61:],
            "version.mts": data[:8] + (99).to_bytes(4, "little") + data[12:],
            "empty.mts": b"",
        }
        for name, content in variants.items():
            path = os.path.join(r.tmp, name)
            with open(path, "wb") as f:
                f.write(content)
            for view in (("peak",), ("leaks",), ("timeline",)):
                rc, _, err = ctl_plain(r, "--from", path, *view)
                expect_error(rc, err, 1, f"--from {name} {view[0]}")
            rc, _, err = ctl_plain(r, "diff", before, path)
            expect_error(rc, err, 1, f"diff with {name}")
        rc, _, err = ctl_plain(r, "--from", os.path.join(r.tmp, "version.mts"), "peak")
        if "version 99" not in err:
            raise Fail(f"wrong-version message: {one_line(err)}")
        for args in (("diff", before), ("leaks", "--older-than", "soon"), ("snapshot",),
                     ("peak", "--by", "colour"), ("peak", "--cumulative", "--by", "stack"),
                     ("diff", "-", "-"), ("watch", "--interval", "1ms"),
                     ("timeline", "--rows", "0"), ("--from", after, "watch")):
            rc, _, err = ctl_plain(r, *args)
            expect_error(rc, err, 2, f"memtracectl {' '.join(args)}")

    with r.part("killed_daemon"):
        # the file written before a SIGKILL is whole, and no temporary file is left
        final = snapshot_to(r, "final.mts")
        daemon.send_signal(signal.SIGKILL)
        r.wait_exit(daemon, "memtraced")
        st = json_of(*ctl_plain(r, "--from", final, "stats", "--json"), "--from stats")
        check = {k: st.get(k) for k in ("allocations", "frees", "live_bytes", "live_allocations")}
        want = {k: expect[k] for k in check}
        if check != want:
            raise Fail(f"the file says {check}, the pattern did {want}")
        left = [n for n in os.listdir(r.tmp) if ".tmp." in n]
        if left:
            raise Fail(f"temporary files left: {left}")


def start_ages(r):
    path = os.path.join(r.build, "tests", "ages")
    p = r.spawn([path], "target", "ages.out")
    r.wait_line(os.path.join(r.tmp, "ages.out"), "ready ", p)
    return p


def settle(r, allocations):
    """Stats once the daemon has seen this many allocations."""
    end = deadline_after()
    while True:
        st = r.ctl_json("stats", "--json")
        if number(st, "allocations", "stats") >= allocations:
            return st
        if time.monotonic() > end:
            raise Fail(f"the daemon saw {st.get('allocations')} allocations, expected "
                       f"{allocations}")
        time.sleep(POLL)


def leak_sites(obj):
    """(blocks, bytes) by frames[0].function: one site can have several stacks (unrolled)."""
    sums = {}
    for e in entries_of(obj, "leaks"):
        blocks, size = sums.get(frame0_function(e), (0, 0))
        sums[frame0_function(e)] = (blocks + number(e, "blocks", "leak"),
                                    size + number(e, "bytes", "leak"))
    return sums


def test_views_ages(r):
    """Blocks made before and after a pause: leaks --older-than, timeline, watch."""
    target = start_ages(r)
    daemon = r.start_daemon("--pid", str(target.pid), "--sample-interval", "50")
    r.wait_state("attached", target.pid, daemon)
    ages_out = os.path.join(r.tmp, "ages.out")
    time.sleep(0.2)
    target.send_signal(signal.SIGUSR1)
    r.wait_line(ages_out, "old", target)
    settle(r, AGES_OLD_COUNT)
    time.sleep(PAUSE)
    target.send_signal(signal.SIGUSR1)
    r.wait_line(ages_out, "new", target)
    settle(r, AGES_OLD_COUNT + AGES_NEW_COUNT)
    path = snapshot_to(r, "ages.mts")  # first: the new blocks are young
    old = (AGES_OLD_COUNT, AGES_OLD_COUNT * AGES_OLD_SIZE)
    new = (AGES_NEW_COUNT, AGES_NEW_COUNT * AGES_NEW_SIZE)

    with r.part("leaks_older_than"):
        l1 = r.ctl_json("leaks", "--older-than", "2s", "--json")
        if leak_sites(l1) != {"site_old": old}:
            raise Fail(f"leaks --older-than 2s: {leak_sites(l1)}, expected site_old {old}")
        if (l1.get("blocks"), l1.get("bytes")) != old:
            raise Fail(f"leaks --older-than 2s totals: {l1.get('blocks')}, {l1.get('bytes')}")
        e = entries_of(l1, "leaks")[0]
        if not PAUSE <= e.get("youngest_age", 0) <= e.get("oldest_age", 0) < 60:
            raise Fail(f"age range {e.get('youngest_age')}..{e.get('oldest_age')}")
        l0 = r.ctl_json("leaks", "--json")
        if leak_sites(l0) != {"site_old": old, "site_new": new}:
            raise Fail(f"leaks: {leak_sites(l0)}")
        none = r.ctl_json("leaks", "--older-than", "1h", "--json")
        if entries_of(none, "leaks") or none.get("blocks") != 0:
            raise Fail("leaks --older-than 1h lists blocks")
        rc, text, _ = r.ctl("leaks", "--older-than", "2000ms")
        if rc != 0 or f"{old[0]} live blocks ({fmt_size(old[1])}) older than 2.0s" not in text:
            raise Fail(f"leaks text: {one_line(text)[:200]}")

    with r.part("report_oldest"):
        for where, args in (("live", ()), ("file", ("--from", path))):
            run = r.ctl if where == "live" else (lambda *a: ctl_plain(r, *a))
            rep = json_of(*run(*args, "report", "--oldest", "--top", "0", "--json"),
                          f"report --oldest ({where})")
            ages = {}
            for e in entries_of(rep, "report"):
                ages[frame0_function(e)] = max(ages.get(frame0_function(e), 0),
                                               number(e, "oldest_live_age", "entry"))
            if not (ages.get("site_old", 0) >= PAUSE > ages.get("site_new", PAUSE)):
                raise Fail(f"oldest live block ages ({where}): {ages}")
        rc, text, _ = r.ctl("report", "--oldest", "--top", "1")
        if rc != 0 or not re.search(r"  oldest \d+\.\ds\n", text):
            raise Fail(f"report --oldest text: {one_line(text)[:200]}")

    with r.part("leaks_from_file"):
        got = json_of(*ctl_plain(r, "--from", path, "leaks", "--older-than", "2s", "--json"),
                      "--from leaks")
        if leak_sites(got) != {"site_old": old}:
            raise Fail(f"--from leaks --older-than 2s: {leak_sites(got)}")
        got = json_of(*ctl_plain(r, "--from", path, "leaks", "--json"), "--from leaks")
        if leak_sites(got) != {"site_old": old, "site_new": new}:
            raise Fail(f"--from leaks: {leak_sites(got)}")

    with r.part("timeline"):
        tl = r.ctl_json("timeline", "--json")
        points = tl.get("points")
        if not isinstance(points, list) or len(points) < 20:
            raise Fail(f"timeline has {len(points or [])} points after ~3 s at 50 ms")
        lives = [number(p, "live_bytes", "point") for p in points]
        times = [number(p, "time", "point") for p in points]
        allocs = [number(p, "allocations", "point") for p in points]
        if times != sorted(times) or allocs != sorted(allocs):
            raise Fail("timeline points are not in time order")
        if lives[0] != 0 or lives[-1] != old[1] + new[1] or old[1] not in lives:
            raise Fail(f"live_bytes over time {sorted(set(lives))}: expected 0, "
                       f"{old[1]} during the pause, then {old[1] + new[1]}")
        if lives.count(old[1]) < 10:
            raise Fail(f"only {lives.count(old[1])} points in the {PAUSE:.0f} s pause")
        rc, text, _ = r.ctl("timeline", "--rows", "5")
        rows = [l for l in text.splitlines() if "|" in l]
        if rc != 0 or not text.startswith("memory over time:") or len(rows) != 5:
            raise Fail(f"timeline text: {one_line(text)[:300]}")

    with r.part("watch_plain"):
        rc, text, err = r.ctl("watch", "--count", "2", "--interval", "200ms", "--top", "5")
        if rc != 0:
            raise Fail(f"watch exited {rc}: {one_line(err)[:200]}")
        if "\033" in text:
            raise Fail("watch wrote escape sequences to a pipe")
        heads = [l for l in text.splitlines() if re.match(r"\d\d:\d\d:\d\d live ", l)]
        total = fmt_size(old[1] + new[1])
        if len(heads) != 2 or any(f"live {total} in {old[0] + new[0]} blocks" not in h
                                  for h in heads):
            raise Fail(f"watch lines: {heads}")
        first = text.split("\n\n")[0]
        for site, (count, size) in (("site_old", old), ("site_new", new)):
            line = f"{site}: size={fmt_size(size)}, count={count}"
            if line not in first:
                raise Fail(f"first refresh lacks {line!r}: {one_line(first)[:300]}")

    with r.part("watch_sigint"):
        p = subprocess.Popen([r.memtracectl, "--socket", r.sock, "watch"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            # SIGINT once the first refresh is out, while it waits for the next
            ready, _, _ = select.select([p.stdout], [], [], TIMEOUT)
            first = p.stdout.readline() if ready else ""
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise Fail("watch did not quit on SIGINT") from None
        if p.returncode != 0 or err.strip():
            raise Fail(f"watch after SIGINT: exit {p.returncode}, stderr {one_line(err)!r}")
        if not re.match(r"\d\d:\d\d:\d\d live ", first):
            raise Fail(f"watch printed {one_line(first + out)[:200]!r}")

    if shutil.which("tmux"):
        with r.part("watch_tty_q"):
            watch_tty(r)

    with r.part("temporary"):
        before = r.ctl_json("stats", "--json")
        target.send_signal(signal.SIGUSR1)
        r.wait_line(ages_out, "temp", target)
        settle(r, before["allocations"] + AGES_TEMP_COUNT + AGES_HELD_COUNT)
        got = temporary_sites(r)
        # threshold 1: only the malloc/free pairs; site_held frees each block after others
        want = {"site_temporary": (AGES_TEMP_COUNT, AGES_TEMP_COUNT * AGES_TEMP_SIZE)}
        if got != want:
            raise Fail(f"report --sort temporary: {got}, expected {want}")
        st = r.ctl_json("stats", "--json")
        gained = st["temporary_allocations"] - before["temporary_allocations"]
        if gained != AGES_TEMP_COUNT:
            raise Fail(f"temporary_allocations grew by {gained}, expected {AGES_TEMP_COUNT}")


def temporary_sites(r):
    sums = {}
    for e in r.report("--top", "0", "--sort", "temporary"):
        n, b = sums.get(frame0_function(e), (0, 0))
        sums[frame0_function(e)] = (n + number(e, "temporary_allocations", "entry"),
                                    b + number(e, "temporary_bytes", "entry"))
    return {k: v for k, v in sums.items() if k in ("site_temporary", "site_held", "site_old",
                                                  "site_new")}


def test_views_temporary_threshold(r):
    """--temporary-threshold 3: blocks freed after 1 or 2 more allocations are temporary too."""
    ages = os.path.join(r.build, "tests", "ages")
    daemon = r.start_daemon("--temporary-threshold", "3", "--", ages, "--no-wait", wait=False)
    r.wait_daemon(daemon, r.sock)
    r.wait_state("exited", None, daemon)
    got = temporary_sites(r)
    want = {"site_temporary": (AGES_TEMP_COUNT, AGES_TEMP_COUNT * AGES_TEMP_SIZE),
            "site_held": (2, 2 * AGES_HELD_SIZE)}
    if got != want:
        raise Fail(f"report --sort temporary: {got}, expected {want}")
    rc, text, _ = r.ctl("report", "--sort", "temporary", "--top", "1")
    if rc != 0 or "temporary 5 (385 B)" not in text:
        raise Fail(f"report --sort temporary text: {one_line(text)[:300]}")


def watch_tty(r):
    """On a terminal (tmux): the screen is redrawn, and q quits with the terminal restored."""
    session = f"memtrace-{os.getpid()}-{int(time.monotonic() * 1000)}"
    done = os.path.join(r.tmp, "watch.rc")
    # the shell creates the file before it writes the status: write it aside, then rename
    cmd = (f"{r.memtracectl} --socket {r.sock} watch --interval 300ms; echo $? > {done}.tmp; "
           f"mv {done}.tmp {done}")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", cmd],
                   check=True, timeout=10)
    try:
        end = deadline_after(10)
        screen = ""
        while "q or Ctrl-C quits" not in screen:
            if time.monotonic() > end:
                raise Fail(f"watch on a terminal shows {one_line(screen)[:200]!r}")
            time.sleep(0.2)
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session],
                                    capture_output=True, text=True, timeout=10).stdout
        if not re.search(r"^\d\d:\d\d:\d\d live ", screen, re.M):
            raise Fail(f"no status line on the terminal: {one_line(screen)[:200]!r}")
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True, timeout=10)
        end = deadline_after(10)
        while not os.path.exists(done):
            if time.monotonic() > end:
                raise Fail("watch did not quit on q")
            time.sleep(0.1)
        with open(done) as f:
            rc = f.read().strip()
        if rc != "0":
            raise Fail(f"watch exited {rc} after q")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, timeout=10)
