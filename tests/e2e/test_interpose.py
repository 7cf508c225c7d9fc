#!/usr/bin/env python3
"""End-to-end tests of allocators that interpose malloc (LD_PRELOAD): jemalloc,
tcmalloc and mimalloc serve C++'s sized and aligned deletes without calling their free, and
jemalloc has an API of its own (mallocx, rallocx, sdallocx, dallocx). A C++ program
(tests/e2e/interpose.cc) hands blocks back every one of those ways from named sites;
each site's counts must be exact, with glibc as the control."""

from harness import *  # noqa: F401,F403
from test_faults import stop_daemon_clean

LIBDIR = "/usr/lib/x86_64-linux-gnu"
PRELOADS = {"glibc": None,
            "jemalloc": os.path.join(LIBDIR, "libjemalloc.so.2"),
            "tcmalloc": os.path.join(LIBDIR, "libtcmalloc_minimal.so.4"),
            "mimalloc": os.path.join(LIBDIR, "libmimalloc.so.2")}
KEYS = ("allocations", "frees", "bytes_allocated", "bytes_freed")


def site_of(entry):
    """The innermost site_* function of a stack (std::allocator's allocate may be a
    frame of its own above it)."""
    for f in entry.get("frames") or []:
        name = f.get("function") or ""
        if name.startswith("site_"):
            return name.split("(")[0]
    return None


def run_interposed(r, name, preload):
    prog = os.path.join(r.build, "tests", "interpose")
    env = dict(os.environ)
    if preload:
        env["LD_PRELOAD"] = preload
    out = os.path.join(r.tmp, f"interpose-{name}.out")
    target = r.spawn([prog], "target", os.path.basename(out), env=env)
    r.wait_line(out, "ready ", target)
    daemon = r.start_daemon("--pid", str(target.pid), tag=f"memtraced-{name}")
    st = r.ctl_json("status", "--json")
    alloc = st["targets"][0].get("allocator") or ""
    if preload and os.path.basename(preload) not in alloc:
        raise Fail(f"{name}: the daemon probes {alloc!r}, not {os.path.basename(preload)}")
    target.send_signal(signal.SIGUSR1)
    rc = r.wait_exit(target, "interpose")
    if rc != 0:
        raise Fail(f"{name}: interpose exited with status {rc}")
    expect = r.read_expect(out)
    want_sites = {"site_new_sized", "site_new_array", "site_allocator", "site_aligned",
                  "site_nothrow"} | ({"site_mallocx", "site_rallocx", "site_xallocx"}
                                     if name == "jemalloc"
                                     else set())
    if set(expect["sites"]) != want_sites:
        raise Fail(f"{name}: the program ran sites {sorted(expect['sites'])}")
    r.wait_state("exited", target.pid, daemon)
    check_interposed(r, name, expect, target.pid)
    stop_daemon_clean(r, daemon)


def check_interposed(r, name, expect, pid):
    """Every site of interpose exact, nothing lost or unknown, the allocator mix."""
    rep = r.ctl_json("report", "--pid", str(pid), "--top", "0", "--sort", "allocated",
                     "--format", "json")
    got = {}
    for e in rep["entries"]:
        site = site_of(e)
        if site:
            acc = got.setdefault(site, dict.fromkeys(KEYS, 0))
            for k in KEYS:
                acc[k] += e[k]
    bad = [f"{site}: " + ", ".join(f"{k}={got.get(site, {}).get(k)} (expected {v})"
                                   for k, v in want.items() if got.get(site, {}).get(k) != v)
           for site, want in expect["sites"].items()
           if any(got.get(site, {}).get(k) != v for k, v in want.items())]
    if bad:
        raise Fail(f"{name}: " + "; ".join(bad))
    stats = r.ctl_json("stats", "--json")
    if stats["events_lost"] or stats["unknown_frees"] or stats.get("missed_frees"):
        raise Fail(f"{name}: events_lost {stats['events_lost']}, unknown_frees "
                   f"{stats['unknown_frees']}, missed_frees {stats.get('missed_frees')}")
    mix = stats["allocator_mix"]
    if name == "jemalloc" and (mix.get("mallocx", {}).get("allocations") != 40 or
                               mix.get("rallocx", {}).get("allocations") != 40 or
                               mix.get("xallocx", {}).get("allocations") !=
                               expect["sites"]["site_xallocx"]["allocations"]):
        raise Fail(f"jemalloc: allocator_mix {mix}: expected 40 mallocx, 40 rallocx and "
                   f"{expect['sites']['site_xallocx']['allocations']} xallocx")


def test_interpose_exec_preload(r):
    """memtraced -- env LD_PRELOAD=libjemalloc.so.2 interpose: the target executes a new
    program that preloads jemalloc. The exec tracepoint stops it, a probe on its ld.so's
    _dl_debug_state stops it again once its libraries are mapped, and the daemon probes
    jemalloc before any of it runs: every site exact."""
    preload = PRELOADS["jemalloc"]
    if not os.path.exists(preload):
        raise Fail(f"{preload} is missing (make deps installs it)")
    prog = os.path.join(r.build, "tests", "interpose")
    out = os.path.join(r.tmp, "memtraced-exec.out")
    daemon = r.start_daemon("--", "env", f"LD_PRELOAD={preload}", prog, tag="memtraced-exec")
    # "ready" comes from main: held in ld.so before, the new program is resolved by now
    pid = int(r.wait_line(out, "ready ", daemon))
    os.kill(pid, signal.SIGUSR1)
    expect = r.read_expect(out)
    end = deadline_after()
    while True:  # the new program's entry: exited
        st = r.ctl_json("status", "--json")
        gens = [t for t in st["targets"] if t["pid"] == pid]
        if len(gens) == 2 and gens[-1]["state"] == "exited":
            break
        if time.monotonic() > end:
            raise Fail(f"entries of pid {pid}: {[(t['state'], t.get('allocator')) for t in gens]}")
        time.sleep(POLL)
    if "libjemalloc" not in (gens[-1].get("allocator") or ""):
        raise Fail(f"the new program's allocator is {gens[-1].get('allocator')!r}")
    check_interposed(r, "jemalloc", expect, pid)
    stop_daemon_clean(r, daemon)


def run_pattern_interposed(r, name, preload, cwd=None):
    """tests/pattern (malloc, calloc, the realloc chain, reallocarray, the memalign
    family, free, threads) with the allocator in LD_PRELOAD: every counter and every site
    exact, where each of its functions is probed past its entry when it can be
    (mimalloc's malloc reads the size from rsi there, docs/design.md)."""
    env = dict(os.environ)
    if preload:
        env["LD_PRELOAD"] = preload
    # jemalloc has no pvalloc: glibc's would hand it a block it cannot free
    args = ["--no-pvalloc"] if name.startswith("jemalloc") else []
    target = r.spawn([r.pattern, "--loops", "2", *args], "target", f"pattern-{name}.out",
                     env=env, cwd=cwd)
    r.wait_line(os.path.join(r.tmp, f"pattern-{name}.out"), "ready ", target)
    daemon = r.start_daemon("--pid", str(target.pid), tag=f"memtraced-pattern-{name}")
    t = r.wait_state("attached", target.pid, daemon)
    alloc = t.get("allocator") or ""
    if preload and os.path.basename(preload) not in alloc:
        raise Fail(f"{name}: the daemon probes {alloc!r}, not {os.path.basename(preload)}")
    sites = t.get("probe_sites") or []
    if not any(s.get("function") == "malloc" for s in sites):
        raise Fail(f"{name}: status names no probe site of malloc: {sites}")
    target.send_signal(signal.SIGUSR1)
    expect = r.read_expect(os.path.join(r.tmp, f"pattern-{name}.out"), target)
    stats = r.wait_stats(expect)
    check_exact_stats(stats, expect)
    # by count: a stack whose only block has 0 bytes (mimalloc's realloc(p, 0) returns one)
    # is left out of a report sorted by bytes
    check_sites(r.report("--top", "200", "--sort", "count"), expect)
    target.send_signal(signal.SIGUSR1)
    if r.wait_exit(target, "pattern") != 0:
        raise Fail(f"{name}: pattern exited with status {target.returncode}")
    stop_daemon_clean(r, daemon)


def test_interpose_relative_preload(r):
    """LD_PRELOAD=./libjemalloc.so.2 from the library's own directory: the link map names it
    by that relative path, which says nothing of where it is; the daemon finds it by its
    mapping and probes it, every counter and site exact (it probed glibc, counting nothing,
    when it skipped names that are not absolute)."""
    src = PRELOADS["jemalloc"]
    if not os.path.exists(src):
        raise Fail(f"{src} is missing (make deps installs it)")
    libdir = os.path.join(r.tmp, "preload")
    os.makedirs(libdir, exist_ok=True)
    shutil.copy(src, os.path.join(libdir, "libjemalloc.so.2"))
    run_pattern_interposed(r, "jemalloc-relative", "./libjemalloc.so.2", cwd=libdir)


def make_pattern_test(name):
    def test(r):
        preload = PRELOADS[name]
        if preload and not os.path.exists(preload):
            raise Fail(f"{preload} is missing (make deps installs it)")
        run_pattern_interposed(r, name, preload)
    test.__doc__ = f"The C allocator API exact per site and in total, {name}."
    return test


def make_test(name):
    def test(r):
        preload = PRELOADS[name]
        if preload and not os.path.exists(preload):
            raise Fail(f"{preload} is missing (make deps installs it)")
        run_interposed(r, name, preload)
    test.__doc__ = f"C++ deletes and jemalloc's API exact per site, {name}."
    return test


def generated_tests():
    """interpose.NAME and interpose_pattern.NAME for each allocator of PRELOADS: names no
    function can have, so made here (tests/e2e/run.py runs them at this place in the module)."""
    return [(f"interpose.{name}", make_test(name)) for name in PRELOADS] + \
        [(f"interpose_pattern.{name}", make_pattern_test(name)) for name in PRELOADS]
