#!/usr/bin/env python3
"""The DWARF walker on Debian's own binaries, built without frame pointers:
redis-server (with jemalloc) under redis-benchmark, whose stacks must reach
main through the command handlers, and python3.11, whose native frames must
reach main around the Python frames. The packages are in the Makefile's test
package list (make check installs them)."""

import socket

from harness import *  # noqa: F401,F403
from test_stacks import run_cmd_report

REDIS = "/usr/bin/redis-server"
BENCH = "/usr/bin/redis-benchmark"
PYTHON = "/usr/bin/python3.11"


def functions(entry):
    return [f["function"] or "" for f in entry["frames"]]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unwind_redis(r):
    """redis-benchmark -t set,lpush against Debian's redis-server: the
    allocations of SET and LPUSH have stacks through setCommand and
    pushGenericCommand (lpushCommand tail-calls it) down to main."""
    for exe in (REDIS, BENCH):
        if not os.access(exe, os.X_OK):
            raise Fail(f"{exe} is missing (make deps installs redis-server and redis-tools)")
    port = free_port()
    server = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--daemonize", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r.extra_pids.add(server.pid)
    try:
        deadline = deadline_after()
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(POLL)
        else:
            raise Fail("redis-server did not listen")
        r.start_daemon("--pid", str(server.pid))
        r.wait_state("attached")
        subprocess.run([BENCH, "-h", "127.0.0.1", "-p", str(port), "-t", "set,lpush", "-n",
                        "5000", "-c", "4", "-q"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True, timeout=120)
        rep = r.ctl_json("report", "--top", "0", "--sort", "count", "--format", "json")
        stats = r.ctl_json("stats", "--json")
        st = r.ctl_json("status", "--json")
    finally:
        server.kill()
        server.wait()
    if stats["events_lost"]:
        raise Fail("events lost")
    found = {}
    for e in rep["entries"]:
        fns = functions(e)
        for handler in ("setCommand", "pushGenericCommand"):
            if handler in fns:
                if "main" not in fns or e["stack_end"] != "complete":
                    raise Fail(f"{handler} stack: {fns}, {e['stack_end']}")
                found[handler] = found.get(handler, 0) + e["allocations"]
    # at least one allocation per command (the reply list node, the value)
    if found.get("setCommand", 0) < 5000 or found.get("pushGenericCommand", 0) < 5000:
        raise Fail(f"allocations under the command handlers: {found}")
    deep = [e for e in rep["entries"] if e["frames"] and e["stack_end"] != "complete"]
    if sum(e["allocations"] for e in deep) > rep["totals"]["allocations"] // 100:
        raise Fail(f"{len(deep)} stacks are not whole: "
                   f"{[(functions(e)[:3], e['stack_end']) for e in deep[:3]]}")
    if not st["unwind"] or st["unwind"]["tables"] < 3:
        raise Fail(f"status unwind: {st['unwind']}")


PY_WORKLOAD = """
import json
def build(i):
    return {"k%d" % j: [j] * 40 for j in range(20)}
def work():
    keep = []
    for i in range(1000):
        keep.append(json.loads(json.dumps(build(i))))
    return keep
work()
"""


def test_unwind_python311(r):
    """Debian's python3.11: the Python frames are merged in place of the
    interpreter's, and the native frames around them reach main."""
    if not os.access(PYTHON, os.X_OK):
        raise Fail(f"{PYTHON} is missing (make deps installs python3.11)")
    script = os.path.join(r.tmp, "work.py")
    with open(script, "w") as f:
        f.write(PY_WORKLOAD)
    rep, stats = run_cmd_report(r, "py311", cmd=[PYTHON, script])
    if stats["events_lost"]:
        raise Fail("events lost")
    merged = [e for e in rep["entries"] if any(f["function"] == "work" and
                                              (f["file"] or "").endswith("work.py")
                                              for f in e["frames"])]
    if not merged:
        raise Fail("no stack has the Python frame work()")
    for e in merged:
        fns = functions(e)
        if e["stack_end"] != "complete" or not ({"main", "Py_BytesMain"} & set(fns)):
            raise Fail(f"native frames do not reach main: {fns}, {e['stack_end']}")
        if "_PyEval_EvalFrameDefault" in fns:
            raise Fail(f"an interpreter frame was not replaced: {fns}")
    whole = sum(e["allocations"] for e in rep["entries"] if e["stack_end"] == "complete")
    if whole < rep["totals"]["allocations"] * 0.99:
        raise Fail(f"only {whole} of {rep['totals']['allocations']} allocations have whole "
                   f"stacks")
