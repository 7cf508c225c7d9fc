#!/usr/bin/env python3
"""End-to-end tests of symbolization: a library dlopened after attach, and an
executable deleted from disk while it runs (read through /proc/PID/map_files)."""

from harness import *  # noqa: F401,F403


def run_host(r, exe, lib, delete_exe=False):
    """Start dlopen_host (exe), optionally delete it, attach, let it dlopen lib
    and allocate, and return the JSON report."""
    host = subprocess.Popen([exe, lib], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    r.extra_pids.add(host.pid)
    try:
        if host.stdout.readline().strip() != "ready":
            raise Fail("dlopen_host did not start")
        if delete_exe:
            os.unlink(exe)
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
                return rep
            time.sleep(POLL)
        raise Fail("the plugin's allocations never arrived")
    finally:
        host.kill()
        host.wait()


def plugin_entry(rep):
    for e in rep["entries"]:
        if e["frames"] and e["frames"][0]["function"] == "plugin_alloc":
            return e
    raise Fail("no stack starts in plugin_alloc: "
               f"{[e['frames'][0]['function'] for e in rep['entries'] if e['frames']]}")


def test_dlopen(r):
    """Frames in a library mapped after attach are named (maps are re-read)."""
    rep = run_host(r, os.path.join(r.build, "tests", "dlopen_host"),
                   os.path.join(r.build, "tests", "libplugin.so"))
    e = plugin_entry(rep)
    f0 = e["frames"][0]
    if (e["allocations"], e["bytes_allocated"]) != (7, 7 * 4321):
        raise Fail(f"plugin_alloc: {e['allocations']} calls, {e['bytes_allocated']} bytes")
    if not (f0["module"] or "").endswith("libplugin.so") or \
            not (f0["file"] or "").endswith("plugin.c"):
        raise Fail(f"frame 0: module {f0['module']}, file {f0['file']}")
    if e["frames"][1]["function"] != "main":
        raise Fail(f"plugin_alloc's caller is {e['frames'][1]['function']}")


def test_deleted_executable(r):
    """An executable deleted while it runs still names its frames."""
    exe = os.path.join(r.tmp, "host-copy")
    shutil.copy(os.path.join(r.build, "tests", "dlopen_host"), exe)
    rep = run_host(r, exe, os.path.join(r.build, "tests", "libplugin.so"), delete_exe=True)
    e = plugin_entry(rep)
    caller = e["frames"][1]
    if caller["function"] != "main" or "host-copy" not in (caller["module"] or ""):
        raise Fail(f"caller frame in the deleted executable: {caller}")
