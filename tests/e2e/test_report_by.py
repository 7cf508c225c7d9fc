#!/usr/bin/env python3
"""End-to-end tests of report --by (tracemalloc's statistics): grouped by
function the rows equal the known pattern's per-site tally; cumulative rows
count a stack under every function once; the text form is tracemalloc's."""

from harness import *  # noqa: F401,F403


def run_pattern(r):
    expect_file = os.path.join(r.tmp, "expect.txt")
    daemon = r.start_daemon("--", r.pattern, "--no-wait", "--expect-file", expect_file,
                            wait=False)
    r.wait_daemon(daemon, r.sock)
    expect = r.read_expect(expect_file)
    r.wait_state("exited", None, daemon)
    return expect


def test_report_by(r):
    expect = run_pattern(r)
    by_fn = r.ctl_json("report", "--by", "function", "--top", "0", "--format", "json")
    rows = {e["key"]: e for e in by_fn["entries"]}
    problems = []
    for site, want in expect["sites"].items():
        if not want["live_allocations"]:
            if site in rows:
                problems.append(f"{site}: listed with nothing live")
            continue
        got = rows.get(site)
        if not got:
            problems.append(f"{site}: no row")
            continue
        for k in ("live_bytes", "live_allocations", "allocations", "bytes_allocated"):
            if got[k] != want[k]:
                problems.append(f"{site}.{k}={got[k]} (expected {want[k]})")
    if by_fn["groups_total"] != len(by_fn["entries"]):
        problems.append("--top 0 did not list every group")
    # rows partition the live heap (not cumulative)
    if sum(e["live_bytes"] for e in by_fn["entries"]) != by_fn["live_bytes"]:
        problems.append("rows do not sum to live_bytes")
    if problems:
        raise Fail("; ".join(problems[:6]))

    cum = r.ctl_json("report", "--by", "function", "--cumulative", "--top", "0", "--json")
    crow = {e["key"]: e for e in cum["entries"]}
    # every stack of the pattern runs through main (or a worker thread's start):
    # main's cumulative row holds every site reached from main, at least
    site_live = sum(w["live_bytes"] for s, w in expect["sites"].items()
                    if s not in ("site_thread_alloc", "site_thread_free"))
    if crow.get("main", {}).get("live_bytes", 0) < site_live:
        raise Fail(f"cumulative main row {crow.get('main')} below the sites' {site_live}")
    if crow.get("site_leak_a", {}).get("live_bytes") != expect["sites"]["site_leak_a"]["live_bytes"]:
        raise Fail("cumulative row of a leaf function differs from its plain row")

    rc, text, err = r.ctl("report", "--by", "function", "--top", "3")
    if rc:
        raise Fail(f"text report --by exited {rc}: {one_line(err)}")
    lines = text.splitlines()[1:]
    pat = re.compile(r"^[\w:.]+: size=[\d.]+ (B|KiB|MiB|GiB), count=\d+, average=[\d.]+ (B|KiB|MiB)$")
    if len(lines) != 3 or not all(pat.match(line) for line in lines):
        raise Fail(f"not tracemalloc's form: {lines}")
    line = [l for l in lines if l.startswith("site_leak_a:")]
    want = expect["sites"]["site_leak_a"]
    if line and line[0] != (f"site_leak_a: size={want['live_bytes']} B, count="
                            f"{want['live_allocations']}, average="
                            f"{want['live_bytes'] // want['live_allocations']} B"):
        raise Fail(f"site_leak_a line: {line[0]}")

    rc, _, err = r.ctl("report", "--by", "nonsense")
    if rc != 2:
        raise Fail(f"--by nonsense exited {rc}, expected 2")
