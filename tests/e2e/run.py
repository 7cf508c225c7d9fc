#!/usr/bin/env python3
"""End-to-end tests of memtraced and memtracectl on real BPF (needs root).

    python3 tests/e2e/run.py --build DIR [-k NAME]... [--exact] [--repeat N] [--stress]
    python3 tests/e2e/run.py --list

DIR holds memtraced, memtracectl and tests/pattern (`make e2e` builds them). Each test starts
its own daemon on a socket in a fresh temporary directory, bounds every wait and kills what it
started in a finally block. Prints "PASS name [S s]" or "FAIL name [S s]: reason" per check
(S: the seconds the check took), then the slowest tests (--slowest N, default 20: each test's
seconds from its start to the end of its cleanup, summed over rounds, and its share of the
run), then "e2e: N passed, N failed". --times FILE also writes every test's seconds there,
one "seconds<TAB>name" line a test, slowest first. Standard library only. With --exact, -k names whole
tests (-k comm is comm alone, not comm_daemon_killed); a name no test has is then an error.

--repeat N runs the selected tests N times over (all of them, then all again: a daemon's
state never carries from one run to the next) and ends with each check's count, "name
passed 19/20". --stress [N] runs them beside load (tests/e2e/stress.py: N busy loops per CPU,
default 1, and a memory, syscall and fork churn), started before the first test and killed
after the last: a race between a target and the daemon shows there, where an idle machine
hides it (`make e2e K=NAME REPEAT=20 STRESS=1`).

--list prints every test's name, one a line, in run order, and exits (no root, no --build).

A test is one function, written once: `def test_NAME(r):` at the top level of a module
tests/e2e/test_*.py is the test named NAME (the function's name without "test_"), given a
Run. Modules are taken in file name order, the tests of a module in the order they are
defined (the line each starts on). Functions a module imports are not its tests, and a
helper never starts with "test_". Tests whose names no function can have (interpose.glibc)
are generated: a module's `generated_tests()` returns (name, function) pairs, run at the
place the function is defined. A module that still has a TESTS list, or two tests of one
name, is an error (tests/unit/test_e2e_registry.py checks both without root).
"""

import argparse
import glob
import importlib
import inspect
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Fail, Results, Run  # noqa: E402
from stress import Load  # noqa: E402


def module_tests(mod):
    """A module's tests, (name, function) pairs in the order they are defined: each
    top-level function test_NAME it defines, and the pairs its generated_tests() returns, at
    the place that function is defined."""
    if hasattr(mod, "TESTS"):
        raise SystemExit(f"e2e: {mod.__name__} has a TESTS list: a test is a function "
                         "test_NAME (tests/e2e/run.py)")
    found = []
    for attr, obj in vars(mod).items():
        if not inspect.isfunction(obj) or obj.__module__ != mod.__name__:
            continue
        line = obj.__code__.co_firstlineno
        if attr == "generated_tests":
            found.extend((line, i, name, fn) for i, (name, fn) in enumerate(obj()))
        elif attr.startswith("test_"):
            found.append((line, 0, attr[len("test_"):], obj))
    return [(name, fn) for _, _, name, fn in sorted(found, key=lambda t: t[:2])]


def load_tests(here=os.path.dirname(os.path.abspath(__file__))):
    """Every test_*.py module's tests in here (tests/e2e), modules in file name order."""
    tests = []
    for path in sorted(glob.glob(os.path.join(here, "test_*.py"))):
        tests.extend(module_tests(importlib.import_module(
            os.path.splitext(os.path.basename(path))[0])))
    seen = set()
    for name in [n for n, _ in tests]:
        if name in seen:
            raise SystemExit(f"e2e: two tests named {name}")
        seen.add(name)
    return tests


def main():
    ap = argparse.ArgumentParser(description="memtrace end-to-end tests (root, real BPF)")
    ap.add_argument("--build", metavar="DIR",
                    help="directory holding memtraced, memtracectl and tests/pattern")
    ap.add_argument("-k", action="append", default=[], metavar="NAME",
                    help="run only tests whose name contains NAME (repeatable)")
    ap.add_argument("--exact", action="store_true",
                    help="-k NAME selects the test named NAME only")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run the selected tests N times and print each check's pass count")
    ap.add_argument("--stress", type=int, nargs="?", const=1, default=0, metavar="N",
                    help="run them beside CPU, memory, syscall and fork load: N busy loops "
                         "per CPU (default 1)")
    ap.add_argument("--slowest", type=int, default=20, metavar="N",
                    help="list the N slowest tests at the end (default 20; 0: none)")
    ap.add_argument("--times", metavar="FILE",
                    help="write each test's seconds to FILE (seconds<TAB>name, slowest first)")
    ap.add_argument("--list", action="store_true",
                    help="print every test's name, one a line, and exit")
    args = ap.parse_args()
    if args.list:
        for name, _ in load_tests():
            print(name)
        return 0
    if not args.build:
        ap.error("--build DIR is required (or --list)")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    if os.geteuid() != 0:
        print("e2e: needs root", flush=True)
        return 1
    build = os.path.abspath(args.build)
    results = Results()
    missing = [p for p in ("memtraced", "memtracectl", os.path.join("tests", "pattern"))
               if not os.access(os.path.join(build, p), os.X_OK)]
    if missing:
        results.record("setup", f"missing in {args.build}: {', '.join(missing)} (run make e2e)")
        print(f"e2e: {results.passed} passed, {results.failed} failed", flush=True)
        return 1

    tests = load_tests()
    if args.exact:
        unknown = sorted(set(args.k) - {n for n, _ in tests})
        if unknown:
            results.record("setup", f"no test named {', '.join(unknown)}")
        selected = [(n, f) for n, f in tests if n in args.k]
    else:
        selected = [(n, f) for n, f in tests if not args.k or any(k in n for k in args.k)]
    if args.stress < 0:
        ap.error("--stress takes a number of busy loops per CPU")
    load = Load((os.cpu_count() or 1) * args.stress) if args.stress else None
    # SIGTERM (a CI job cancelled) ends the run through the finally blocks: each test's
    # processes and the load are killed, never left behind
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    times = {}  # test name -> seconds, summed over rounds, in run order
    try:
        if load:
            load.start()
            print(f"e2e: under load: {load.describe()}", flush=True)
        for round_ in range(args.repeat):
            if args.repeat > 1:
                print(f"e2e: round {round_ + 1} of {args.repeat}", flush=True)
            for name, fn in selected:
                t0 = time.monotonic()
                run_one(build, name, fn, results)
                times[name] = times.get(name, 0.0) + time.monotonic() - t0
    finally:
        if load:
            load.stop()
    print_slowest(times, time.monotonic() - started, args.slowest, args.repeat)
    if args.times:
        with open(args.times, "w") as f:
            for name, secs in sorted(times.items(), key=lambda kv: -kv[1]):
                f.write(f"{secs:.1f}\t{name}\n")
    print(f"e2e: {results.passed} passed, {results.failed} failed", flush=True)
    if args.repeat > 1 or args.stress:
        under = " under load" if args.stress else ""
        print(f"e2e: {args.repeat} round{'s' if args.repeat > 1 else ''}{under} in "
              f"{time.monotonic() - started:.0f} s:", flush=True)
        for name, (ok, bad) in results.tally.items():
            print(f"    {name} passed {ok}/{ok + bad}", flush=True)
    return 1 if results.failed or not selected else 0


def print_slowest(times, wall, count, rounds):
    """The count slowest tests: seconds, share of the run's wall time, name."""
    if count <= 0 or not times:
        return
    over = f", {rounds} rounds" if rounds > 1 else ""
    print(f"e2e: slowest tests (of {len(times)}, {wall:.0f} s in all{over}):", flush=True)
    for name, secs in sorted(times.items(), key=lambda kv: -kv[1])[:count]:
        print(f"    {secs:7.1f} s {100 * secs / max(wall, 1e-9):5.1f}%  {name}", flush=True)


def run_one(build, name, fn, results):
    r = Run(build, name, results)
    started = time.monotonic()
    try:
        fn(r)
        if not r.parts:
            results.record(name, seconds=time.monotonic() - started)
    except Fail as e:
        results.record(name, str(e), r.log_tail(), time.monotonic() - started)
    except Exception as e:
        results.record(name, f"{type(e).__name__}: {e}", r.log_tail(),
                       time.monotonic() - started)
    finally:
        r.cleanup()


if __name__ == "__main__":
    sys.exit(main())
