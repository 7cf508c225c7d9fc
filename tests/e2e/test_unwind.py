#!/usr/bin/env python3
"""End-to-end tests of the DWARF stack walker (the default): programs built
without frame pointers (build/tests/nofp/, as distributions build) must give
the same per-site report as their frame-pointer builds, with frames through
libc and libstdc++ (which have none either) down to main or a thread's start;
a library dlopened after attach is unwound from its first call; status shows
the tables' memory."""

from harness import *  # noqa: F401,F403
from test_stacks import run_cmd_report


def nofp(r, name):
    path = os.path.join(r.build, "tests", "nofp", name)
    if not os.access(path, os.X_OK):
        raise Fail(f"{path} is missing (make e2e builds it)")
    return path


def functions(entry):
    return [f["function"] for f in entry["frames"]]


def check_whole(entry, what):
    """The stack is whole: it ends where the program or thread began."""
    if entry["stack_end"] != "complete":
        raise Fail(f"{what}: stack_end {entry['stack_end']}, frames {functions(entry)}")


def run_output(r, tag, cmd, *daemon_args):
    """Run cmd under the daemon; the report, stats and the program's stdout
    (the daemon's, which the command inherits)."""
    rep, stats = run_cmd_report(r, tag, *daemon_args, cmd=[cmd])
    with open(os.path.join(r.tmp, f"{tag}.out")) as f:
        text = f.read()
    if stats["events_lost"]:
        raise Fail(f"{tag}: events lost")
    return rep, stats, text


def path_sites(rep):
    """helper's stacks by call path (caller functions up to main): counts, live
    bytes and how they end."""
    got = {}
    for e in rep["entries"]:
        fns = functions(e)
        if not fns or fns[0] != "helper":
            continue
        if "main" not in fns:
            raise Fail(f"a helper stack does not reach main: {fns}")
        key = tuple(fns[1:fns.index("main") + 1])
        n, live, ends = got.get(key, (0, 0, set()))
        got[key] = (n + e["allocations"], live + e["live_bytes"], ends | {e["stack_end"]})
    return {k: (n, live, "/".join(sorted(ends))) for k, (n, live, ends) in got.items()}


def test_unwind_paths(r):
    """A->helper, B->helper, C->D->helper built -O2 -fomit-frame-pointer: the
    same per-site report as the frame-pointer build, exact counts, to main."""
    want = {("path_a", "main"): (3, 300, "complete"), ("path_b", "main"): (5, 500, "complete"),
            ("path_d", "path_c", "main"): (7, 700, "complete")}
    reports = {}
    for tag, prog, walker in (("fp_build", os.path.join(r.build, "tests", "paths"), "fp"),
                              ("fp_build_dwarf", os.path.join(r.build, "tests", "paths"),
                               "dwarf"),
                              ("nofp_build_dwarf", nofp(r, "paths"), "dwarf")):
        rep, _ = run_cmd_report(r, tag, "--stack-walker", walker, cmd=[prog])
        reports[tag] = path_sites(rep)
        if reports[tag] != want:
            raise Fail(f"{tag}: {reports[tag]}")
        if rep["truncated_stacks"]:
            raise Fail(f"{tag}: truncated_stacks {rep['truncated_stacks']}")


def test_unwind_debug_frame(r):
    """A program whose call frame information is only in a separate debug
    file (.debug_frame, found through .gnu_debuglink): the same report."""
    src = os.path.join(HERE, "paths.c")
    full = os.path.join(r.tmp, "paths_full")
    debug = os.path.join(r.tmp, "paths_sep.debug")
    prog = os.path.join(r.tmp, "paths_sep")
    subprocess.run(["cc", "-O2", "-g", "-fomit-frame-pointer", "-fno-optimize-sibling-calls",
                    "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", src, "-o", full],
                   check=True)
    subprocess.run(["objcopy", "--only-keep-debug", full, debug], check=True)
    subprocess.run(["objcopy", "--strip-debug", "--remove-section=.eh_frame",
                    "--remove-section=.eh_frame_hdr", f"--add-gnu-debuglink={debug}", full, prog],
                   check=True)
    rep, _ = run_cmd_report(r, "debug_frame", cmd=[prog])
    want = {("path_a", "main"): (3, 300, "complete"), ("path_b", "main"): (5, 500, "complete"),
            ("path_d", "path_c", "main"): (7, 700, "complete")}
    got = path_sites(rep)
    if got != want:
        raise Fail(f"paths from .debug_frame: {got}")


def test_unwind_qsort(r):
    """An allocation in qsort's comparator, libc in between: frames on both
    sides of libc down to main, every call counted."""
    rep, stats, out = run_output(r, "qsort", nofp(r, "qsort_cb"))
    m = re.search(r"compares (\d+)", out)
    if not m:
        raise Fail(f"qsort_cb printed {out!r}")
    compares = int(m.group(1))
    site = [e for e in rep["entries"] if functions(e)[:2] == ["record_compare", "compare_items"]]
    total = sum(e["allocations"] for e in site)
    if total != compares or sum(e["frees"] for e in site) != compares:
        raise Fail(f"comparator site: {total} allocations for {compares} compares")
    for e in site:
        fns = functions(e)
        modules = [os.path.basename(f["module"] or "") for f in e["frames"]]
        i = 2
        while i < len(fns) and modules[i].startswith("libc.so"):
            i += 1
        if i == 2 or fns[i:i + 2] != ["sort_items", "main"]:
            raise Fail(f"comparator stack: {fns}")
        check_whole(e, "comparator stack")


def test_unwind_threads(r):
    """Two threads: each one's stack reaches its start in libc."""
    rep, stats, _ = run_output(r, "threads", nofp(r, "threads"))
    by_thread = {}
    for e in rep["entries"]:
        fns = functions(e)
        if fns and fns[0] == "leaf_alloc":
            th = "thread_a" if "thread_a" in fns else "thread_b" if "thread_b" in fns else None
            if not th:
                raise Fail(f"leaf_alloc stack without its thread: {fns}")
            check_whole(e, th)
            by_thread[th] = by_thread.get(th, 0) + e["allocations"]
    if by_thread != {"thread_a": 3000, "thread_b": 3000}:
        raise Fail(f"allocations by thread: {by_thread}")


def test_unwind_cxx(r):
    """std::vector growth (operator new from the program's instantiation) and
    std::string growth (from libstdc++'s own code): exact counts, to main."""
    rep, stats, out = run_output(r, "cxx", nofp(r, "cxx_vector"))
    m = re.search(r"vector (\d+) string (\d+)", out)
    if not m:
        raise Fail(f"cxx_vector printed {out!r}")
    want = {"grow_vector": int(m.group(1)), "grow_string": int(m.group(2))}
    got = {}
    for e in rep["entries"]:
        fns = [f or "" for f in functions(e)]
        for fn in want:
            if any(f.startswith(fn + "(") for f in fns):
                got[fn] = got.get(fn, 0) + e["allocations"]
                if "main" not in fns:
                    raise Fail(f"{fn} stack does not reach main: {fns}")
                check_whole(e, fn)
                if fn == "grow_string" and not any(
                        "libstdc++" in (f["module"] or "") for f in e["frames"]):
                    raise Fail(f"grow_string stack not through libstdc++: {fns}")
    if got != want:
        raise Fail(f"allocations {got}, the program counted {want}")


def test_unwind_dlopen(r):
    """A library without frame pointers dlopened after attach: its stacks are
    whole from its first allocation (ld.so's report holds the process until
    the table is in); status shows the tables while it runs."""
    host = subprocess.Popen([nofp(r, "dlopen_host"), nofp(r, "libplugin.so")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    r.extra_pids.add(host.pid)
    try:
        if host.stdout.readline().strip() != "ready":
            raise Fail("dlopen_host did not start")
        r.start_daemon("--pid", str(host.pid))
        r.wait_state("attached")
        host.stdin.write("go\n")
        host.stdin.flush()
        if host.stdout.readline().strip() != "done":
            raise Fail("dlopen_host failed to load its plugin")
        deadline = deadline_after()
        while time.monotonic() < deadline:
            rep = r.ctl_json("report", "--top", "0", "--sort", "count", "--format", "json")
            if rep["totals"]["allocations"] >= 7:
                break
            time.sleep(POLL)
        st = r.ctl_json("status", "--json")
    finally:
        host.kill()
        host.wait()
    site = [e for e in rep["entries"] if functions(e)[:1] == ["plugin_alloc"]]
    if sum(e["allocations"] for e in site) != 7 or len(site) != 1:
        raise Fail(f"plugin_alloc stacks: {[(functions(e), e['allocations']) for e in site]}")
    if functions(site[0])[1] != "main":
        raise Fail(f"plugin_alloc's caller: {functions(site[0])}")
    check_whole(site[0], "plugin_alloc")
    uw = st.get("unwind")
    # dlopen_host, libplugin.so, libc, ld.so at least
    if not uw or uw["tables"] < 4 or not uw["memory_used"] or \
            uw["memory_used"] > uw["memory_limit"] or not uw["table_bytes"]:
        raise Fail(f"status unwind: {uw}")
    # no traced process maps them any more: unloaded
    r.wait_state("exited")
    uw = r.ctl_json("status", "--json")["unwind"]
    if uw["tables"] or uw["memory_used"] or uw["table_bytes"]:
        raise Fail(f"tables still loaded after the target exited: {uw}")


def test_unwind_dlreopen(r):
    """A library closed and another of the same code with a larger frame
    opened where it was (tests/e2e/dlreopen.c): the same return addresses,
    other rules; the walker's cached rows of the first must not be used for
    the second (they are keyed by the mapping list's number), so both stacks
    are whole."""
    libs = [nofp(r, "libreopen_a.so"), nofp(r, "libreopen_b.so")]
    host = subprocess.Popen([os.path.join(r.build, "tests", "dlreopen")] + libs,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    r.extra_pids.add(host.pid)
    try:
        if host.stdout.readline().strip() != "ready":
            raise Fail("dlreopen did not start")
        r.start_daemon("--pid", str(host.pid))
        r.wait_state("attached")
        host.stdin.write("go\n")
        host.stdin.flush()
        lines = [host.stdout.readline().strip() for _ in range(3)]
        if lines[2] != "done" or not lines[0].startswith("base "):
            raise Fail(f"dlreopen printed {lines}")
        if lines[0] != lines[1]:
            raise Fail(f"the second library was not mapped where the first was: {lines}")
        deadline = deadline_after()
        while time.monotonic() < deadline:
            rep = r.ctl_json("report", "--top", "0", "--sort", "count", "--format", "json")
            if rep["totals"]["allocations"] >= 7:
                break
            time.sleep(POLL)
    finally:
        host.kill()
        host.wait()
    got = {}
    for e in rep["entries"]:
        fns = functions(e)
        if fns[:1] != ["reopen_alloc"]:
            continue
        if fns[1:3] != ["call", "main"]:
            raise Fail(f"reopen_alloc stack of {e['bytes_allocated']} bytes: {fns}")
        check_whole(e, "reopen_alloc")
        got[e["bytes_allocated"]] = got.get(e["bytes_allocated"], 0) + e["allocations"]
    if got != {3 * 1111: 3, 4 * 2222: 4}:
        raise Fail(f"reopen_alloc stacks by bytes: {got}")


def test_unwind_signal_frame(r):
    """An allocation in a signal handler: the walk goes through the kernel's
    signal frame (libc's __restore_rt, a known layout) to the interrupted
    code (raise) and main."""
    rep, stats, _ = run_output(r, "sigalloc", nofp(r, "sigalloc"))
    site = [e for e in rep["entries"] if functions(e)[:1] == ["on_signal"]]
    if sum(e["allocations"] for e in site) != 5:
        raise Fail(f"on_signal stacks: {[(functions(e), e['allocations']) for e in site]}")
    for e in site:
        fns = functions(e)
        if e["stack_end"] != "complete" or "raise" not in fns or "main" not in fns or \
                fns.index("raise") > fns.index("main"):
            raise Fail(f"on_signal stack: {fns}, {e['stack_end']}")
    if rep["truncated_stacks"]:
        raise Fail(f"truncated_stacks: {rep['truncated_stacks']}")


def test_unwind_cfi_expression(r):
    """Call frame information the rows cannot hold (a DWARF expression): the
    walk stops there, marked truncated, and status names the module."""
    rep, stats, _ = run_output(r, "cfiexpr", nofp(r, "cfiexpr"))
    site = [e for e in rep["entries"] if functions(e)[:1] == ["alloc_cb"]]
    if len(site) != 1 or (site[0]["allocations"], site[0]["bytes_allocated"]) != (10, 4440):
        raise Fail(f"alloc_cb stacks: {[(functions(e), e['allocations']) for e in site]}")
    e = site[0]
    if functions(e) != ["alloc_cb", "call_through_expression"] or e["stack_end"] != "truncated":
        raise Fail(f"frames {functions(e)}, stack_end {e['stack_end']}")
    named = [t for t in rep["truncated_stacks"] if os.path.basename(t["module"]) == "cfiexpr"]
    if not named or named[0]["allocations"] != 10:
        raise Fail(f"truncated_stacks: {rep['truncated_stacks']}")
    _, text, _ = r.ctl("report", "--top", "1", sock=os.path.join(r.tmp, "cfiexpr.sock"))
    if "unwinding stops here" not in text:
        raise Fail(f"report text: {one_line(text)[:300]}")


def test_unwind_memory_limit(r):
    """--unwind-memory 1M, python3.11 with ssl (libcrypto's table alone is
    larger): the tables that do not fit are refused and counted in status,
    the pool stays within the limit."""
    script = os.path.join(r.tmp, "wait.py")
    with open(script, "w") as f:
        f.write("import json, ssl, sys\n"
                "keep = [json.dumps({'k': [i] * 50}) for i in range(2000)]\n"
                "print('ready', flush=True)\n"
                "sys.stdin.readline()\n")
    py = subprocess.Popen(["/usr/bin/python3.11", script], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    r.extra_pids.add(py.pid)
    try:
        if py.stdout.readline().strip() != "ready":
            raise Fail("python3.11 did not start")
        r.start_daemon("--pid", str(py.pid), "--unwind-memory", "1M")
        r.wait_state("attached")
        uw = r.ctl_json("status", "--json")["unwind"]
        _, text, _ = r.ctl("status")
    finally:
        py.kill()
        py.wait()
    if uw["memory_limit"] != 1 << 20 or uw["memory_used"] > 1 << 20 or \
            not uw["modules_refused"] or not uw["tables"]:
        raise Fail(f"status unwind with --unwind-memory 1M: {uw}")
    if "over the limit (--unwind-memory)" not in text:
        raise Fail(f"status text does not say so: {one_line(text)[:300]}")


def test_unwind_stack_top(r):
    """A stack whose top page is followed by an inaccessible page
    (tests/e2e/stacktop.c, a makecontext stack): the walker reads the user
    stack in pieces, and none reaches into that page, so every stack is whole,
    frames straddling page boundaries included, with either build."""
    want = {d: (5, 5 * (100 + d)) for d in range(1, 7)}
    for tag, prog in (("stacktop_fp_build", os.path.join(r.build, "tests", "stacktop")),
                      ("stacktop_nofp_build", nofp(r, "stacktop"))):
        rep, stats, out = run_output(r, tag, prog)
        if "allocations 30" not in out:
            raise Fail(f"{tag}: stacktop printed {out!r}")
        got = {}
        for e in rep["entries"]:
            fns = functions(e)
            if not fns or fns[0] != "descend":
                continue
            depth = fns.index("on_stack") if "on_stack" in fns else -1
            if depth < 1 or fns[:depth] != ["descend"] * depth:
                raise Fail(f"{tag}: stack {fns}")
            check_whole(e, f"{tag} depth {depth}")
            n, size = got.get(depth, (0, 0))
            got[depth] = (n + e["allocations"], size + e["bytes_allocated"])
        if got != want:
            raise Fail(f"{tag}: (allocations, bytes) by depth {got}")
