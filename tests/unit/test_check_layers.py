#!/usr/bin/env python3
"""The layering check can fail: tests/check-layers.py on small made-up trees.

    python3 tests/unit/test_check_layers.py

Each case writes a tree of a few files into a temporary directory (with the
objects compiled, for the calls), runs the checker on it, and checks its exit
status and that it names the files at fault: a clean tree passes; an upward
include, an include cycle, a call cycle (no include: only the objects show
it), an upward call and one program using the other's files each fail.
Prints one summary line, as the C unit tests do.
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(os.path.dirname(HERE), "check-layers.py")

passed = failed = 0


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)


def compile_objects(root):
    """Compile every src/**/*.c into root/build/obj/**.o, as the Makefile does."""
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if not f.endswith(".c"):
                continue
            src = os.path.join(dirpath, f)
            rel = os.path.relpath(src, os.path.join(root, "src"))[:-2] + ".o"
            obj = os.path.join(root, "build", "obj", rel)
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            subprocess.run(["cc", "-c", "-I", os.path.join(root, "src"), src, "-o", obj],
                           check=True)


def run_case(name, files, want_rc, want_in=(), objects=False):
    global passed, failed
    with tempfile.TemporaryDirectory(prefix="memtrace-layers.") as root:
        for path, text in files.items():
            write(root, path, text)
        args = [sys.executable, CHECKER, "--root", root]
        if objects:
            compile_objects(root)
            args += ["--build", os.path.join(root, "build")]
        out = subprocess.run(args, capture_output=True, text=True)
    text = out.stdout + out.stderr
    bad = []
    if out.returncode != want_rc:
        bad.append(f"exit status {out.returncode}, want {want_rc}")
    for needle in want_in:
        if needle not in text:
            bad.append(f"no {needle!r} in its output")
    if bad:
        failed += 1
        print(f"FAIL {name}: " + "; ".join(bad))
        print("  " + text.replace("\n", "\n  "))
    else:
        passed += 1


# A tree that holds: core below serve, both programs on common.
CLEAN = {
    "src/common/util.h": "int util_f(void);\n",
    "src/common/util.c": '#include "common/util.h"\nint util_f(void) { return 1; }\n',
    "src/daemon/core/heap.h": "int heap_f(void);\n",
    "src/daemon/core/heap.c": '#include "daemon/core/heap.h"\n#include "common/util.h"\n'
    "int heap_f(void) { return util_f(); }\n",
    "src/daemon/serve/server.c": '#include "daemon/core/heap.h"\n'
    "int server_f(void) { return heap_f(); }\n",
    "src/ctl/main.c": '#include "common/util.h"\nint ctl_f(void) { return util_f(); }\n',
}

run_case("clean tree passes", CLEAN, 0, ("0 problems",), objects=True)

run_case("upward include", dict(CLEAN, **{
    "src/daemon/core/tracker.c": '#include "daemon/serve/server.h"\n',
    "src/daemon/serve/server.h": "int server_f(void);\n",
}), 1, ("src/daemon/core/tracker.c includes src/daemon/serve/server.h",
        "src/daemon/core is below src/daemon/serve"))

run_case("include cycle", dict(CLEAN, **{
    "src/daemon/serve/a.h": '#include "daemon/serve/b.h"\n',
    "src/daemon/serve/a.c": '#include "daemon/serve/a.h"\n',
    "src/daemon/serve/b.h": "int b_f(void);\n",
    "src/daemon/serve/b.c": '#include "daemon/serve/b.h"\n#include "daemon/serve/a.h"\n',
}), 1, ("cycle between src/daemon/serve/a, src/daemon/serve/b",))

# No file includes the other's header: only the objects show the cycle.
run_case("call cycle", dict(CLEAN, **{
    "src/daemon/serve/worker.c": "int server_g(void);\n"
    "int worker_g(void) { return server_g(); }\n",
    "src/daemon/serve/server.c": "int worker_g(void);\n"
    "int server_g(void) { return 0; }\nint server_f(void) { return worker_g(); }\n",
}), 1, ("cycle between src/daemon/serve/server, src/daemon/serve/worker",
        "calls worker_g", "calls server_g"), objects=True)

run_case("upward call", dict(CLEAN, **{
    "src/daemon/core/tracker.c": "int server_f(void);\n"
    "int tracker_f(void) { return server_f(); }\n",
}), 1, ("src/daemon/core/tracker.c calls src/daemon/serve/server.c",
        "(calls server_f)"), objects=True)

run_case("one program uses the other's", dict(CLEAN, **{
    "src/ctl/fetch.c": '#include "daemon/core/heap.h"\n',
}), 1, ("src/ctl/fetch.c includes src/daemon/core/heap.h", "another program"))

print(f"{os.path.relpath(__file__)}: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
