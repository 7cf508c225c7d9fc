#!/usr/bin/env python3
"""End-to-end tests of memtraced and memtracectl on real BPF (needs root).

    python3 tests/e2e/run.py --build DIR [-k NAME]...

DIR holds memtraced, memtracectl and tests/pattern (`make e2e` builds them). Each test starts
its own daemon on a socket in a fresh temporary directory, bounds every wait and kills what it
started in a finally block. Prints "PASS name" or "FAIL name: reason" per check, then
"e2e: N passed, N failed". Standard library only.
"""

import argparse
import glob
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Fail, Results, Run  # noqa: E402


def load_tests():
    """Every tests/e2e/test_*.py module's TESTS list, in file name order."""
    tests = []
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "test_*.py"))):
        mod = importlib.import_module(os.path.splitext(os.path.basename(path))[0])
        tests.extend(mod.TESTS)
    return tests


def main():
    ap = argparse.ArgumentParser(description="memtrace end-to-end tests (root, real BPF)")
    ap.add_argument("--build", required=True, metavar="DIR",
                    help="directory holding memtraced, memtracectl and tests/pattern")
    ap.add_argument("-k", action="append", default=[], metavar="NAME",
                    help="run only tests whose name contains NAME (repeatable)")
    args = ap.parse_args()

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

    selected = [(n, f) for n, f in load_tests() if not args.k or any(k in n for k in args.k)]
    for name, fn in selected:
        r = Run(build, name, results)
        try:
            fn(r)
            if not r.parts:
                results.record(name)
        except Fail as e:
            results.record(name, str(e), r.log_tail())
        except Exception as e:
            results.record(name, f"{type(e).__name__}: {e}", r.log_tail())
        finally:
            r.cleanup()
    print(f"e2e: {results.passed} passed, {results.failed} failed", flush=True)
    return 1 if results.failed or not selected else 0


if __name__ == "__main__":
    sys.exit(main())
