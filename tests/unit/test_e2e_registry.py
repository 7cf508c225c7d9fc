#!/usr/bin/env python3
"""The end-to-end tests are found by name: tests/e2e/run.py's load_tests, without root.

    python3 tests/unit/test_e2e_registry.py

The real suite loads: no module has a TESTS list, no two tests share a name, and
every name the Makefile (STRESS_TESTS, PLAIN_E2E_TESTS) and tests/kernels/run.py
(E2E_SUBSET, E2E_PREEMPT) give selects a test. Then small made-up modules in a
temporary directory: tests in definition order with generated_tests() at its
place, imported functions not taken; a TESTS list and a name given twice each
fail. Prints one summary line, as the C unit tests do.
"""

import contextlib
import io
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.dirname(HERE)
ROOT = os.path.dirname(TESTS_DIR)
sys.path.insert(0, os.path.join(TESTS_DIR, "e2e"))
import run  # noqa: E402

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def load(files):
    """load_tests on a directory of the given modules: (names, error or None)."""
    with tempfile.TemporaryDirectory(prefix="memtrace-e2e-registry.") as d:
        for path, text in files.items():
            with open(os.path.join(d, path), "w") as f:
                f.write(text)
        sys.path.insert(0, d)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                return [n for n, _ in run.load_tests(d)], None
        except SystemExit as e:
            return None, str(e)
        finally:
            sys.path.remove(d)
            for mod in [m[:-3] for m in files]:
                sys.modules.pop(mod, None)


def make_var(name):
    """A Makefile variable's words, its continuation lines joined."""
    text = open(os.path.join(ROOT, "Makefile")).read().replace("\\\n", " ")
    m = re.search(rf"^{name}\s*:?=(.*)$", text, re.M)
    return m.group(1).split() if m else []


def kernels_lists():
    """tests/kernels/run.py's E2E_* lists of test names."""
    text = open(os.path.join(TESTS_DIR, "kernels", "run.py")).read()
    names = []
    for m in re.finditer(r"^E2E_\w+\s*=\s*\[(.*?)\]", text, re.M | re.S):
        names += re.findall(r'"([^"]+)"', m.group(1))
    return names


# The real suite.
try:
    real = [n for n, _ in run.load_tests()]
    err = None
except SystemExit as e:
    real, err = [], str(e)
check("the suite loads", err is None, err)
if err is None:  # else each check below would fail for the same reason
    check("the suite has tests", len(real) > 100, f"{len(real)} tests")
    check("no two tests share a name", len(real) == len(set(real)),
          sorted({n for n in real if real.count(n) > 1}))
    stress = make_var("STRESS_TESTS")
    check("STRESS_TESTS found", bool(stress), "no STRESS_TESTS in the Makefile")
    check("each STRESS_TESTS word selects a test (-k)",
          all(any(k in n for n in real) for k in stress),
          [k for k in stress if not any(k in n for n in real)])
    plain = make_var("PLAIN_E2E_TESTS")
    check("each PLAIN_E2E_TESTS name is a test (--exact)", plain and set(plain) <= set(real),
          sorted(set(plain) - set(real)))
    kern = kernels_lists()
    check("each tests/kernels/run.py E2E name is a test (--exact)",
          kern and set(kern) <= set(real), sorted(set(kern) - set(real)))

# Made-up modules.
names, err = load({
    "test_reg_a.py": "from test_reg_b import test_b_one  # noqa\n\n\n"
                     "def test_zeta(r):\n    pass\n\n\n"
                     "def helper(r):\n    pass\n\n\n"
                     "def generated_tests():\n"
                     "    return [('gen.one', helper), ('gen.two', helper)]\n\n\n"
                     "def test_alpha(r):\n    pass\n",
    "test_reg_b.py": "def test_b_one(r):\n    pass\n",
})
check("definition order, generated at its place, imports not taken",
      names == ["zeta", "gen.one", "gen.two", "alpha", "b_one"], err or names)

names, err = load({"test_reg_c.py": "def test_c(r):\n    pass\n\n\nTESTS = [('c', test_c)]\n"})
check("a TESTS list fails", names is None and "TESTS" in (err or ""), err or names)

names, err = load({
    "test_reg_d.py": "def test_same(r):\n    pass\n",
    "test_reg_e.py": "def generated_tests():\n    return [('same', print)]\n",
})
check("two tests of one name fail", names is None and "same" in (err or ""), err or names)

print(f"{os.path.relpath(__file__)}: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
