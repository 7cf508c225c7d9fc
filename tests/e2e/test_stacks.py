#!/usr/bin/env python3
"""End-to-end tests of stacks: the BPF frame-pointer and DWARF walkers against the kernel's,
the depth limit, C++ (operator new probed as the allocation, demangled names),
and source lines."""

from harness import *  # noqa: F401,F403


def frames_key(entry):
    """A stack as (function, module basename, offset) tuples: stable across runs
    and address-space layouts."""
    return tuple((f["function"], os.path.basename(f["module"] or ""), f["offset"])
                 for f in entry["frames"])


def run_cmd_report(r, tag, *daemon_args, cmd):
    sock = os.path.join(r.tmp, f"{tag}.sock")
    d = r.start_daemon(*daemon_args, "--", *cmd, sock=sock, tag=tag, wait=False)
    r.wait_daemon(d, sock)
    deadline = deadline_after()
    while time.monotonic() < deadline:
        st = r.ctl_json("status", "--json", sock=sock)
        if st["targets"] and st["targets"][0]["state"] == "exited":
            break
        time.sleep(POLL)
    else:
        raise Fail(f"{tag}: target did not exit")
    rep = r.ctl_json("report", "--top", "0", "--sort", "count", "--format", "json", sock=sock)
    stats = r.ctl_json("stats", "--json", sock=sock)
    return rep, stats


def test_walkers_agree(r):
    """Our frame-pointer walk, the DWARF walk and bpf_get_stack give the same
    stacks on code built with frame pointers."""
    pattern = os.path.join(r.build, "tests", "pattern")
    reports = {}
    for walker in ("fp", "kernel", "dwarf"):
        rep, stats = run_cmd_report(r, walker, "--stack-walker", walker,
                                    cmd=[pattern, "--no-wait"])
        if stats["events_lost"]:
            raise Fail(f"{walker}: events lost")
        # up to main or start_thread: below them, libc has no frame pointers,
        # and the DWARF walker goes on to _start or clone3 where the others stop
        reports[walker] = {}
        for e in rep["entries"]:
            if e["frames"] and os.path.basename(e["frames"][0]["module"] or "") == "pattern":
                key = frames_key(e)
                ends = [i for i, f in enumerate(key) if f[0] in ("main", "start_thread")]
                key = key[:ends[0] + 1] if ends else key
                reports[walker][key] = reports[walker].get(key, 0) + e["allocations"]
    if not reports["fp"]:
        raise Fail("no stacks from the pattern's own code")
    for other in ("kernel", "dwarf"):
        if reports["fp"] != reports[other]:
            only_fp = set(reports["fp"]) - set(reports[other])
            only_k = set(reports[other]) - set(reports["fp"])
            raise Fail(f"walkers differ: fp-only {sorted(only_fp)[:2]}, {other}-only "
                       f"{sorted(only_k)[:2]}")


def test_stack_depth(r):
    pattern = os.path.join(r.build, "tests", "pattern")
    rep, _ = run_cmd_report(r, "depth", "--stack-depth", "2", cmd=[pattern, "--no-wait"])
    # inlined functions add frames at one address: count return addresses
    deepest = max(len({f["address"] for f in e["frames"]}) for e in rep["entries"])
    if deepest != 2:
        raise Fail(f"--stack-depth 2 gave stacks of {deepest} frames")


def test_cxx(r):
    """operator new is the allocation: its caller is frame 0 (libstdc++'s new has
    no frame pointer, so a stack taken at malloc would lose it), names demangled,
    counts exact."""
    prog = os.path.join(r.build, "tests", "cxx_target")
    rep, stats = run_cmd_report(r, "cxx", cmd=[prog])
    by_fn = {}
    for e in rep["entries"]:
        if e["frames"]:
            by_fn.setdefault(e["frames"][0]["function"], []).append(e)
    ins = by_fn.get("demo::Cache::insert(int)")
    fill = by_fn.get("demo::Buffer::fill(int)")
    if not ins or not fill:
        raise Fail(f"demangled sites missing; frame-0 functions: {sorted(map(str, by_fn))}")
    ins, fill = ins[0], fill[0]
    if (ins["allocations"], ins["live_bytes"], ins["live_allocations"]) != (100, 4800, 100):
        raise Fail(f"Cache::insert: {ins['allocations']} calls, {ins['live_bytes']} live bytes")
    if (fill["allocations"], fill["bytes_allocated"], fill["frees"], fill["live_bytes"]) != \
            (50, 50000, 50, 0):
        raise Fail(f"Buffer::fill: {fill['allocations']} calls, {fill['frees']} frees")
    if ins["frames"][1]["function"] != "main":
        raise Fail(f"Cache::insert's caller is {ins['frames'][1]['function']}")
    if not (ins["frames"][0]["file"] or "").endswith("cxx_target.cc"):
        raise Fail(f"no source file for Cache::insert: {ins['frames'][0]['file']}")
    # the allocator mix names every call the program made, operator new included
    sock = os.path.join(r.tmp, "cxx.sock")
    stats = r.ctl_json("stats", "--json", sock=sock)
    mix = stats["allocator_mix"]
    if sum(v["allocations"] for v in mix.values()) != stats["allocations"] or \
            mix.get("operator new", {}).get("allocations") != 100 or \
            mix.get("operator new[]", {}).get("allocations") != 50:
        raise Fail(f"allocator_mix {mix} against {stats['allocations']} allocations")
    # operator new nests malloc: one call, one allocation, never two
    if any(f["function"] == "operator new(unsigned long)"
           for e in rep["entries"] for f in e["frames"][:1]):
        raise Fail("operator new appears as a caller of malloc: counted twice?")


def test_broken_chain(r):
    """A module that uses %rbp as a plain register ends stacks there: the stack
    is marked broken and status/report name the module."""
    prog = os.path.join(r.build, "tests", "brokenfp")
    rep, _ = run_cmd_report(r, "brokenfp", cmd=[prog])
    site = [e for e in rep["entries"] if e["frames"] and e["frames"][0]["function"] == "alloc_cb"]
    if len(site) != 1:
        raise Fail(f"expected one alloc_cb stack, got {len(site)}")
    e = site[0]
    fns = [f["function"] for f in e["frames"]]
    if fns != ["alloc_cb", "call_with_bad_fp"] or e["stack_end"] != "broken":
        raise Fail(f"frames {fns}, stack_end {e['stack_end']}")
    if (e["allocations"], e["bytes_allocated"]) != (10, 3330):
        raise Fail(f"alloc_cb: {e['allocations']} calls, {e['bytes_allocated']} bytes")
    tr = [t for t in rep["truncated_stacks"] if os.path.basename(t["module"]) == "brokenfp"]
    if not tr or tr[0]["allocations"] != 10 or tr[0]["stacks"] != 1:
        raise Fail(f"truncated_stacks: {rep['truncated_stacks']}")
    sock = os.path.join(r.tmp, "brokenfp.sock")
    rc, text, _ = r.ctl("status", sock=sock)
    if rc or "stop in brokenfp" not in text:
        raise Fail(f"status does not name the module: {one_line(text)[:300]}")


def test_call_paths(r):
    """A->helper, B->helper, C->D->helper: one stack each, exact counts; with
    frame pointers the whole path is there; without them helper is still the
    first frame and the report says stacks were cut short, naming the module."""
    prog = os.path.join(r.build, "tests", "paths")
    rep, _ = run_cmd_report(r, "paths", cmd=[prog])
    got = {}
    for e in rep["entries"]:
        fns = [f["function"] for f in e["frames"]]
        if fns and fns[0] == "helper":
            # a loop unrolled in main gives a path several call sites: sum them
            key = tuple(fns[1:fns.index("main") + 1] if "main" in fns else fns[1:])
            n, live, ends = got.get(key, (0, 0, set()))
            got[key] = (n + e["allocations"], live + e["live_bytes"], ends | {e["stack_end"]})
    got = {k: (n, live, "/".join(sorted(ends))) for k, (n, live, ends) in got.items()}
    want = {("path_a", "main"): (3, 300, "complete"), ("path_b", "main"): (5, 500, "complete"),
            ("path_d", "path_c", "main"): (7, 700, "complete")}
    if got != want:
        raise Fail(f"with frame pointers: {got}")

    nofp = os.path.join(r.tmp, "paths_nofp")
    src = os.path.join(HERE, "paths.c")
    subprocess.run(["cc", "-O2", "-g", "-fomit-frame-pointer", src, "-o", nofp], check=True)
    # the frame-pointer walker's view (the DWARF walker's: test_unwind.py)
    rep, _ = run_cmd_report(r, "paths_nofp", "--stack-walker", "fp", cmd=[nofp])
    helper = [e for e in rep["entries"] if e["frames"] and e["frames"][0]["function"] == "helper"]
    if sum(e["allocations"] for e in helper) != 15 or sum(e["live_bytes"] for e in helper) != 1500:
        raise Fail(f"without frame pointers: helper entries {[(e['allocations'], e['live_bytes']) for e in helper]}")
    if not all(e["stack_end"] == "broken" for e in helper):
        raise Fail(f"stacks not marked cut short: {[e['stack_end'] for e in helper]}")
    named = [t for t in rep["truncated_stacks"] if os.path.basename(t["module"]) == "paths_nofp"]
    if not named or named[0]["allocations"] != 15:
        raise Fail(f"truncated_stacks does not name paths_nofp: {rep['truncated_stacks']}")


def test_stack_ids(r):
    """Known stacks sent as ids (the default) give the same report as every
    stack sent in full (MEMTRACE_STACK_IDS=0): every stack, count and byte,
    with both walkers; and ids were used, none unknown."""
    pattern = os.path.join(r.build, "tests", "pattern")
    for walker in ("dwarf", "fp"):
        reports = {}
        for ids in ("1", "0"):
            old = os.environ.get("MEMTRACE_STACK_IDS")
            os.environ["MEMTRACE_STACK_IDS"] = ids
            try:
                rep, stats = run_cmd_report(r, f"ids{ids}_{walker}", "--stack-walker", walker,
                                            cmd=[pattern, "--no-wait"])
            finally:
                if old is None:
                    del os.environ["MEMTRACE_STACK_IDS"]
                else:
                    os.environ["MEMTRACE_STACK_IDS"] = old
            if stats["events_lost"]:
                raise Fail(f"{walker}, ids {ids}: events lost")
            dm = stats.get("daemon") or {}
            if ids == "1" and (not dm.get("stack_id_events") or dm.get("stack_ids_unknown")):
                raise Fail(f"{walker}: stack ids not used, or unknown: {dm}")
            if ids == "0" and dm.get("stack_id_events"):
                raise Fail(f"{walker}: stack ids used with MEMTRACE_STACK_IDS=0: {dm}")
            reports[ids] = {}
            for e in rep["entries"]:
                got = reports[ids].setdefault(frames_key(e), [0, 0, 0, set()])
                got[0] += e["allocations"]
                got[1] += e["bytes_allocated"]
                got[2] += e["frees"]
                got[3].add(e["stack_end"])
            if stats["stackless_allocations"]:
                raise Fail(f"{walker}, ids {ids}: stackless allocations")
        if reports["1"] != reports["0"]:
            only = set(reports["1"]) ^ set(reports["0"])
            raise Fail(f"{walker}: reports differ; stacks in one only: {sorted(only)[:3]}")
