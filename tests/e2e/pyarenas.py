"""Small objects in pymalloc arenas (test python_arenas): builds 200,000
tuples of an int and a short string at one known line, reporting the arenas
pymalloc really has (sys._debugmallocstats) before and after, then drops them.

    pyarenas.py SIGNAL_FILE OUT_PREFIX

Waits for SIGNAL_FILE, allocates, prints "built"; waits for SIGNAL_FILE.2,
drops the objects, prints "dropped"; exits when SIGNAL_FILE.3 exists."""
import os
import sys
import time

N = 200000


def wait(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def mallocstats(tag):
    """sys._debugmallocstats() (it writes to fd 2) into OUT_PREFIX.tag."""
    sys.stderr.flush()
    fd = os.open(sys.argv[2] + "." + tag, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    saved = os.dup(2)
    os.dup2(fd, 2)
    sys._debugmallocstats()
    os.dup2(saved, 2)
    os.close(saved)
    os.close(fd)


data = [None] * N
big = None
print("ready", flush=True)
wait(sys.argv[1])
mallocstats("before")
for i in range(N): data[i] = (i, str(i))  # noqa: E701  (LINE_OBJECTS: one line)
mallocstats("built")
big = bytearray(8 << 20)  # LINE_BIG: malloc maps it itself: one malloc, no mmap block
print("built", flush=True)
wait(sys.argv[1] + ".2")
del data
mallocstats("dropped")
print("dropped", flush=True)
wait(sys.argv[1] + ".3")
