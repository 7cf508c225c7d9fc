"""A CPython program for the leak scan in default mode (tests/e2e/test_scan.py, scan_python):
what docs/usage.md says `leaks --unreachable` reports for a Python target.

usage: python3 pyleaks.py
Prints "ready PID"; on SIGUSR1 (memtraced attached) it makes, with the collector off,
objects it holds, garbage cycles of small objects (in pymalloc's arenas) and of large
ones (each its own malloc block, over 512 bytes), and a C-level leak: N blocks of SIZE
bytes malloc'd through ctypes whose pointers nothing keeps (the return value is dropped
in C: restype None). Prints "expect {...}" and exits 0 on SIGTERM.
"""
import ctypes
import gc
import json
import os
import signal

# a multiple of 16: glibc's pointers to the chunk after a block (its free lists, an arena's
# top) then never land inside it (docs/usage.md, "glibc's own pointers")
N, SIZE = 16, 3008
libc = ctypes.CDLL(None)
libc.malloc.restype = None  # the pointer is never made a Python object
libc.malloc.argtypes = [ctypes.c_size_t]
held = []


class Big:
    """An instance of 16 + 80 * 8 bytes and a GC header: malloc'd, not pymalloc's."""
    __slots__ = tuple(f"a{i}" for i in range(80))


def keep_objects():
    held.extend(b"x" * 1000 for _ in range(50))
    held.extend(list(range(100)) for _ in range(50))
    held.extend({f"k{i}": i} for i in range(200))


def make_cycles():
    for _ in range(100):
        a = []
        a.append([a])
    for _ in range(20):
        x, y = Big(), Big()
        x.a0, y.a0 = y, x


def c_leak():
    for _ in range(N):
        libc.malloc(SIZE)


go = False


def on_usr1(sig, frame):
    global go
    go = True


gc.disable()  # the cycles stay, garbage
signal.signal(signal.SIGUSR1, on_usr1)
print("ready", os.getpid(), flush=True)
while not go:
    signal.pause()
keep_objects()
make_cycles()
c_leak()
print("expect", json.dumps({"c_leak": [N, SIZE], "cycles_small": 100, "cycles_big": 20}),
      flush=True)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
signal.sigwait({signal.SIGTERM})
