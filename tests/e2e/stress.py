#!/usr/bin/env python3
"""Load beside the end-to-end tests (run.py --stress): the host a race shows on.

A busy host makes every window between what a process does and what the daemon reads of it
wider: the daemon's loop waits for a CPU, the target runs on. Load() starts, in a process
group of its own:

- busy loops (plain arithmetic, never sleeping): one per CPU unless told otherwise;
- a churn process: it maps and touches memory and gives it back (page faults, reclaim), makes
  short-lived syscalls (open, stat, read, close) and forks and executes `true` (process
  creation and exec, which the daemon's exec tracepoint sees for every process on the host).

Every loader asks the kernel to kill it when the runner dies (PR_SET_PDEATHSIG), and Load's
stop() kills the whole group: none is left behind, however the runner ends.

    python3 tests/e2e/stress.py busy|churn     (what Load starts; not meant to be run by hand)
"""

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1


def die_with_parent():
    """In the child before exec: SIGKILL when the process that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def busy():
    x = 0
    while True:
        for i in range(100000):
            x = (x * 1103515245 + i) & 0xffffffff


def churn():
    page = os.sysconf("SC_PAGE_SIZE")
    size = 64 << 20
    while True:
        buf = bytearray(size)  # mmap'd by the allocator, zero pages
        for off in range(0, size, page):
            buf[off] = 1  # touch every page: a fault each
        del buf  # munmap: given back
        for _ in range(200):
            fd = os.open("/proc/self/stat", os.O_RDONLY)
            os.read(fd, 512)
            os.close(fd)
            os.stat("/")
        subprocess.run(["true"], stdin=subprocess.DEVNULL)  # a fork and an exec
        time.sleep(0)


class Load:
    """The loaders as one process group; a context manager, and stop() is safe to call twice."""

    def __init__(self, cpus=None):
        self.cpus = cpus or os.cpu_count() or 1
        self.procs = []
        self.pgid = None

    def start(self):
        me = os.path.abspath(__file__)
        kinds = ["busy"] * self.cpus + ["churn"]
        for kind in kinds:
            kw = {"process_group": self.pgid or 0}
            p = subprocess.Popen([sys.executable, me, kind], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 preexec_fn=die_with_parent, **kw)
            if self.pgid is None:
                self.pgid = p.pid
            self.procs.append(p)
        return self

    def describe(self):
        return f"{self.cpus} busy loop{'s' if self.cpus != 1 else ''} and 1 memory/syscall/" \
               f"fork churn, process group {self.pgid}"

    def stop(self):
        if self.pgid is not None:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []
        self.pgid = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def main():
    what = sys.argv[1] if len(sys.argv) == 2 else ""
    if what == "busy":
        busy()
    elif what == "churn":
        churn()
    print("usage: stress.py busy|churn (started by run.py --stress)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
