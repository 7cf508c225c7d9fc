"""Allocates from known lines and holds the memory, for the Python-frames tests.

usage: pylines.py SIGNAL_FILE          wait for SIGNAL_FILE, allocate, print "done",
                                       then wait until SIGNAL_FILE is removed
       pylines.py --tracemalloc        (under python -X tracemalloc=1) allocate and
                                       print tracemalloc's top 10 lines as JSON
"""
import json
import os
import sys
import time


class Point:
    def __init__(self, x):
        self.x = x
        self.label = "p%d" % x


def bytes_objects():
    return [bytes(1000 + i % 50) for i in range(6000)]


def bytearrays():
    return [bytearray(3000) for i in range(1500)]


def dicts():
    return [{"key": i, "value": i * 2, "more": None} for i in range(8000)]


def points():
    return [Point(i) for i in range(8000)]


def strings():
    return ["%08d-%s" % (i, "x" * 100) for i in range(10000)]


def tuples():
    return [(i, i + 1, i + 2, i + 3, i + 4, i + 5) for i in range(12000)]


def big_buffer():
    return bytearray(4 << 20)


def nested():
    return [[j for j in range(20)] for i in range(3000)]


def allocate():
    return [bytes_objects(), bytearrays(), dicts(), points(), strings(), tuples(),
            big_buffer(), nested()]


if sys.argv[1] == "--tracemalloc":
    import tracemalloc
    tracemalloc.clear_traces()  # what a tracer attached now would see
    held = allocate()
    # this file's lines: what the interpreter allocated while importing is
    # before a tracer that attaches later. Grouped by line, then kept by file: the
    # same rows as filter_traces() before the grouping (both look at a trace's
    # innermost frame alone, the only one -X tracemalloc=1 keeps), without its
    # pass over 170,000 traces in Python: 4-11 s a run on a busy 2-CPU host, 0.7-1.2 s now
    snap = tracemalloc.take_snapshot()  # first, alone: nothing of this line is live yet
    mine = [s for s in snap.statistics("lineno") if s.traceback[0].filename == __file__]
    top = [{"file": s.traceback[0].filename, "line": s.traceback[0].lineno, "size": s.size,
            "count": s.count} for s in mine[:10]]
    print("top " + json.dumps(top), flush=True)
    sys.exit(0)

print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
held = allocate()
print("done", flush=True)
while os.path.exists(sys.argv[1]):
    time.sleep(0.01)
