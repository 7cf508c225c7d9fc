#!/usr/bin/env python3
"""End-to-end tests of CPython targets: --python-allocators probes
PyObject_Malloc/Calloc/Realloc/Free and PyMem_* of pyenv builds 3.10-3.13, one
event per call (a block pymalloc hands on to malloc counts once)."""

from harness import *  # noqa: F401,F403

PYALLOC = os.path.join(HERE, "pyalloc.py")
PY_VERSIONS = ("3.10", "3.11", "3.12", "3.13")
DEBIAN_PYTHON = "/usr/bin/python3.11"
EVENT_RE = re.compile(r"^event kind=(\d+) func=(\S+) tid=\d+ addr=(0x[0-9a-f]+|0) "
                      r"old=(0x[0-9a-f]+|0) size=(\d+) frames=\d+$")


def pyenv_root():
    """pyenv's root: from `pyenv root` when pyenv is on PATH, else $PYENV_ROOT or ~/.pyenv."""
    exe = shutil.which("pyenv")
    if exe:
        r = subprocess.run([exe, "root"], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def pyenv_python(version):
    """The newest pyenv-installed CPython X.Y as a path, or None."""
    root = os.path.join(pyenv_root(), "versions")
    try:
        names = os.listdir(root)
    except OSError:
        return None
    found = []
    for n in names:
        m = re.fullmatch(re.escape(version) + r"\.(\d+)", n)
        exe = os.path.join(root, n, "bin", "python" + version)
        if m and os.access(exe, os.X_OK):
            found.append((int(m.group(1)), exe))
    return max(found)[1] if found else None


def debug_file_of(path):
    """The separate debug file of an ELF file by build-id under /usr/lib/debug, or None."""
    r = subprocess.run(["readelf", "-n", path], capture_output=True, text=True)
    m = re.search(r"Build ID: ([0-9a-f]{2})([0-9a-f]+)", r.stdout)
    if not m:
        return None
    f = f"/usr/lib/debug/.build-id/{m.group(1)}/{m.group(2)}.debug"
    return f if os.path.exists(f) else None


def check_offsets_source(log_path, pid, minor, want):
    """The daemon's "Python frames on" line names where the offsets came from, and no
    source disagreed with another (every CPython here is a release build the table
    was read from)."""
    with open(log_path, errors="replace") as f:
        log = f.read()
    m = re.search(rf"pid {pid}: CPython 3\.{minor} \((\S+)\), offsets from (.+): "
                  r"Python frames on$", log, re.M)
    if not m:
        raise Fail(f"no 'Python frames on' line for pid {pid}: {one_line(log)[:300]}")
    if m.group(2) != want:
        raise Fail(f"offsets from {m.group(2)!r}, expected {want!r}")
    bad = [l for l in log.splitlines()
           if "differ" in l or "not used" in l or "cannot read _Py_DebugOffsets" in l]
    if bad:
        raise Fail(f"offset sources disagree: {bad[0][:300]}")


def parse_events(path):
    events = []
    with open(path, errors="replace") as f:
        for line in f:
            m = EVENT_RE.match(line.strip())
            if m:
                events.append((int(m.group(1)), m.group(2), int(m.group(3), 16),
                               int(m.group(4), 16), int(m.group(5))))
    return events


def window(events, begin, end):
    """The events between the alloc of size begin and the alloc of size end."""
    starts = [i for i, e in enumerate(events) if e[0] == 1 and e[4] == begin]
    ends = [i for i, e in enumerate(events) if e[0] == 1 and e[4] == end]
    if len(starts) != 1 or len(ends) != 1:
        raise Fail(f"marker allocations seen {len(starts)} and {len(ends)} times, not once")
    return events[starts[0] + 1:ends[0]]


def check_probe_sites(t, malloc_placed):
    """status --json names where each function is probed, with the instruction there;
    one placed past its entry has no reason not to be. With malloc_placed, a pyenv
    build's PyObject_Malloc is probed at its js (after "mov %rdi,%rsi; test
    %rdi,%rdi"), which the kernel emulates."""
    sites = t.get("probe_sites") or []
    py = [s for s in sites if (s.get("via") or s.get("function") or "").startswith("PyObject_")]
    if not py:
        raise Fail(f"status names no probe site of PyObject_*: {sites}")
    for s in sites:
        if not s.get("instruction") or (s.get("at") and s.get("why")):
            raise Fail(f"probe site without its instruction, or placed with a reason: {s}")
    malloc = [s for s in py if s.get("function") == "PyObject_Malloc"]
    if malloc_placed and (not malloc or not malloc[0].get("at")):
        raise Fail(f"PyObject_Malloc probed at its entry: {malloc}")


def check_pyalloc(r, python, tag, args=(), env=None, log_says=None, start=False):
    """args: to pyalloc.py; env: the target's environment, added; log_says: a regular
    expression the daemon's log must match (how the frees were probed); start: the
    daemon starts the script (memtraced -- python ...) instead of attaching to it."""
    signal_file = os.path.join(r.tmp, "go")
    argv = [python, PYALLOC, signal_file, *args]
    denv = dict(os.environ, MEMTRACE_DEBUG_EVENTS="1")
    if start:
        out = os.path.join(r.tmp, f"memtraced-{tag}.out")
        daemon = r.spawn([r.memtraced, "--socket", r.sock, "--python-allocators", "--", *argv],
                         "daemon", f"memtraced-{tag}.out", env=dict(denv, **(env or {})))
        target = daemon
        r.wait_line(out, "ready", daemon)
        r.wait_daemon(daemon, r.sock)
    else:
        out = os.path.join(r.tmp, f"pyalloc-{tag}.out")
        target = r.spawn(argv, "target", f"pyalloc-{tag}.out",
                         env=dict(os.environ, **(env or {})))
        r.wait_line(out, "ready", target)
        daemon = r.spawn([r.memtraced, "--socket", r.sock, "--python-allocators", "--pid",
                          str(target.pid)], "daemon", f"memtraced-{tag}.out", env=denv)
        r.wait_daemon(daemon, r.sock)
    t = r.wait_state("attached", daemon=daemon)
    check_probe_sites(t, malloc_placed=python != DEBIAN_PYTHON)
    with open(signal_file, "w"):
        pass
    expect = r.read_expect(out, target)
    time.sleep(0.5)  # the daemon drains its ring buffer on a ~10 ms timer
    # the allocator mix of stats names the kinds (the interpreter's own calls add to ours;
    # traced from its start, the interpreter's stacks take the daemon long to symbolize)
    mix = r.ctl_json("stats", "--json").get("allocator_mix") or {} if not start else {}
    mine = {"pymalloc_malloc": 1000 + 20 + 30 + 2, "pymalloc_calloc": 50, "pymalloc_realloc": 1}
    for kind, least in mine.items() if not start else ():
        got = mix.get(kind, {}).get("allocations", 0) if isinstance(mix.get(kind), dict) \
            else mix.get(kind, 0)
        if got < least:
            raise Fail(f"stats allocator_mix {kind}: {got}, at least {least} expected: {mix}")
    # arenas are not traced with --python-allocators: PyObject_Malloc counts what they hold
    if "mmap" in mix:
        raise Fail(f"mmap in the allocator mix with --python-allocators: {mix['mmap']}")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail(f"memtraced exited {daemon.returncode} on SIGTERM")
    os.unlink(signal_file)
    if log_says:
        with open(r.daemon_logs[-1], errors="replace") as f:
            if not re.search(log_says, f.read(), re.M):
                raise Fail(f"the daemon's log does not say {log_says!r}")
    ev = window(parse_events(r.daemon_logs[-1]), 987651, 987652)

    def addrs(kind, func, size):
        return sorted(e[2] for e in ev if e[:2] == (kind, func) and e[4] == size)

    checks = [
        ("PyObject_Malloc(77)", addrs(1, "pymalloc_malloc", 77), sorted(expect["small"])),
        ("PyObject_Malloc(700001)", addrs(1, "pymalloc_malloc", 700001),
         sorted(expect["large"])),
        ("PyObject_Calloc(3, 111)", addrs(1, "pymalloc_calloc", 333),
         sorted([expect["calloc_first"]] + expect["calloc"][1:])),
        ("PyMem_Malloc(91)", addrs(1, "pymalloc_malloc", 91), sorted(expect["mem"])),
        # pymalloc hands blocks over 512 bytes on to malloc: one event, not two
        ("malloc(700001) inside PyObject_Malloc", addrs(1, "malloc", 700001), []),
    ]
    # replay the window: each of our blocks must be freed once, by pymalloc_free, and
    # the libc free inside PyObject_Free of a large block must not follow it
    mine = {(a, 77) for a in expect["small"]} | {(a, 700001) for a in expect["large"]} | \
        {(a, 91) for a in expect["mem"]}
    ours, freed, twice, just_freed = set(), [], [], set()
    for kind, func, addr, old, size in ev:
        if kind == 1 and (addr, size) in mine:
            ours.add(addr)
            just_freed.discard(addr)
        elif kind == 2 and addr in ours:
            freed.append((func, addr))
            ours.discard(addr)
            just_freed.add(addr)
        elif kind == 2 and addr in just_freed:
            twice.append((func, addr))
        elif kind in (1, 4) and addr:
            just_freed.discard(addr)
    want = set(expect["small"][:400] + expect["large"][:5] + expect["mem"][:10])
    checks.append(("PyObject_Free/PyMem_Free of our blocks", sorted(freed),
                   sorted(("pymalloc_free", a) for a in want)))
    checks.append(("a second free event for a block PyObject_Free released", twice, []))
    checks.append(("frees of NULL", [e for e in ev if e[0] == 2 and e[2] == 0], []))
    reallocs = [e for e in ev if e[0] == 4 and e[3] == expect["realloc_old"]]
    checks.append(("PyObject_Realloc(p, 5000)", reallocs,
                   [(4, "pymalloc_realloc", expect["realloc_new"], expect["realloc_old"],
                     5000)]))
    for what, got, want in checks:
        if got != want:
            raise Fail(f"{what}: {len(got)} events, expected {len(want)}"
                       f" (first differences: {sorted(set(map(str, got)) ^ set(map(str, want)))[:3]})")


def test_python_allocators(r):
    """Every PyObject_*/PyMem_* call of the script is one event with the right kind,
    address and size, on each pyenv CPython 3.10-3.13 present; the frees probed where
    the allocator table sends them (pymalloc's _PyObject_Free, src/daemon/attach/pydispatch.c)."""
    for v in PY_VERSIONS:
        python = pyenv_python(v)
        if not python:
            print(f"SKIP {r.name}.{v}: no pyenv CPython {v} under {pyenv_root()}", flush=True)
            continue
        with r.part(v):
            check_pyalloc(r, python, v,
                          log_says=r"PyObject_Free dispatches to _PyObject_Free, probed there")
    if not os.access(DEBIAN_PYTHON, os.X_OK):
        print(f"SKIP {r.name}.debian: {DEBIAN_PYTHON} is not installed", flush=True)
        return
    with r.part("debian"):
        # its PyObject_Free inlines pymalloc (the table is only its slow path): probed
        # past its first compare, at the jne the kernel emulates
        check_pyalloc(r, DEBIAN_PYTHON, "debian",
                      log_says=r"probe on PyObject_Free in python3\.11 at \+[1-9]")


def test_python_allocator_hooks(r):
    """PyObject_Free and PyMem_Free are probed where the live allocator table sends
    them (pymalloc's _PyObject_Free, or the debug hooks' _PyMem_DebugFree under
    PYTHONMALLOC=debug); a program that installs an allocator while traced
    (tracemalloc.start(), PyMem_SetAllocator) is stopped there and the dispatchers
    probed again before the table changes. Every call still one event, exactly."""
    for v in PY_VERSIONS:
        python = pyenv_python(v)
        if not python:
            print(f"SKIP {r.name}.{v}: no pyenv CPython {v} under {pyenv_root()}", flush=True)
            continue
        with r.part(f"{v}.tracemalloc"):
            check_pyalloc(r, python, f"{v}-tm", args=["tracemalloc"],
                          log_says=r"installs an allocator: PyObject_Free and PyMem_Free "
                                   r"probed themselves")
        with r.part(f"{v}.debug_hooks"):
            check_pyalloc(r, python, f"{v}-dbg", env={"PYTHONMALLOC": "debug"},
                          log_says=r"PyObject_Free dispatches to _PyMem_DebugFree")
        # started by the daemon: resolved before the interpreter runs, so before it
        # installs the debug hooks PYTHONMALLOC asks for (_PyMem_SetupAllocators): the
        # dispatchers are probed from the start (the table could not be read) or again
        # then
        with r.part(f"{v}.started_debug_hooks"):
            check_pyalloc(r, python, f"{v}-sdbg", env={"PYTHONMALLOC": "debug"}, start=True,
                          log_says=r"(PyObject_Free probed itself|installs an allocator: "
                                   r"PyObject_Free and PyMem_Free probed themselves)")


def status_note(r, python, tag, env=None):
    """Start python (waiting on a signal file), attach, and return (log, status text,
    status JSON target)."""
    signal_file = os.path.join(r.tmp, f"go-{tag}")
    out = os.path.join(r.tmp, f"wait-{tag}.out")
    code = ("import os, sys, time\nprint('ready', flush=True)\n"
            "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n")
    target = r.spawn([python, "-c", code, signal_file], "target", f"wait-{tag}.out",
                     env=dict(os.environ, **(env or {})))
    r.wait_line(out, "ready", target)
    daemon = r.start_daemon("--python-allocators", "--pid", str(target.pid), tag=f"d-{tag}")
    t = r.wait_state("attached", daemon=daemon)
    rc, text, err = r.ctl("status")
    if rc != 0:
        raise Fail(f"status exited {rc}: {one_line(err)}")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail(f"memtraced exited {daemon.returncode} on SIGTERM")
    with open(signal_file, "w"):
        pass
    r.wait_exit(target, "python")
    with open(r.daemon_logs[-1], errors="replace") as f:
        log = f.read()
    return log, text, t


def test_python_inlined_note(r):
    """Debian's LTO python3.11 inlines pymalloc: one line at attach and in status says
    so and names the way out; PYTHONMALLOC=malloc and a pyenv build get no note."""
    debian = "/usr/bin/python3.11"
    if not os.access(debian, os.X_OK):
        print(f"SKIP {r.name}: {debian} is not installed", flush=True)
    else:
        with r.part("debian"):
            log, text, t = status_note(r, debian, "debian")
            note = t.get("note")
            m = re.match(r"pymalloc is inlined at (\d+) call sites of (\S+):", note or "")
            if not m or int(m.group(1)) < 50 or m.group(2) != debian:
                raise Fail(f"status note: {note!r}")
            if "PYTHONMALLOC=malloc" not in note or "out of line" not in note:
                raise Fail(f"the note does not name the way out: {note!r}")
            if f"pid {t['pid']}: {note}\n" not in text:
                raise Fail("status text lacks the note line")
            if sum(note in line for line in log.splitlines()) != 1:
                raise Fail("the attach log does not say it in one line")
        with r.part("debian_pythonmalloc"):
            _, _, t = status_note(r, debian, "debian-malloc", {"PYTHONMALLOC": "malloc"})
            if t.get("note") is not None:
                raise Fail(f"note with PYTHONMALLOC=malloc: {t.get('note')!r}")
    python = pyenv_python("3.12")
    if not python:
        print(f"SKIP {r.name}.pyenv: no pyenv CPython 3.12", flush=True)
        return
    with r.part("pyenv"):
        _, text, t = status_note(r, python, "pyenv")
        if t.get("note") is not None or "inlined" in text:
            raise Fail(f"a note for a build that calls pymalloc out of line: {t.get('note')!r}")


PYLINES = os.path.join(HERE, "pylines.py")


def python_lines(entries, path):
    """Live bytes and blocks per line of path, each stack counted at its innermost
    Python frame (as tracemalloc and `report --by line` attribute them)."""
    lines = {}
    for e in entries:
        for f in e["frames"]:
            if f.get("module") is None and f.get("address") == 0 and f.get("file"):
                if f["file"] == path:
                    key = f["line"]
                    size, count = lines.get(key, (0, 0))
                    lines[key] = (size + e["live_bytes"], count + e["live_allocations"])
                break
    return lines


def check_tracemalloc(r, python, tag):
    """tracemalloc's top 10 lines of pylines.py, then memtrace's, attached."""
    # one frame a trace: tracemalloc's "lineno" statistics read the innermost frame alone
    tm = subprocess.run([python, "-X", "tracemalloc=1", PYLINES, "--tracemalloc"],
                        capture_output=True, text=True, timeout=120)
    top = [l for l in tm.stdout.splitlines() if l.startswith("top ")]
    if tm.returncode != 0 or len(top) != 1:
        raise Fail(f"the tracemalloc run failed: {one_line(tm.stderr)[:200]}")
    want = {e["line"]: e["size"] for e in json.loads(top[0][4:])}
    signal_file = os.path.join(r.tmp, f"go-{tag}")
    out = os.path.join(r.tmp, f"pylines-{tag}.out")
    target = r.spawn([python, PYLINES, signal_file], "target", f"pylines-{tag}.out")
    r.wait_line(out, "ready", target)
    daemon = r.start_daemon("--python-allocators", "--pid", str(target.pid), tag=f"d-{tag}")
    r.wait_state("attached", daemon=daemon)
    with open(signal_file, "w"):
        pass
    end = time.monotonic() + 120  # every PyObject_Malloc is a uprobe trap: slow
    while True:
        try:
            with open(out) as f:
                if "done\n" in f.read():
                    break
        except OSError:
            pass
        if target.poll() is not None or time.monotonic() > end:
            raise Fail("pylines.py did not finish allocating")
        time.sleep(0.1)
    time.sleep(0.5)
    entries = r.report("--top", "0")
    os.unlink(signal_file)
    r.wait_exit(target, "pylines.py")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail(f"memtraced exited {daemon.returncode} on SIGTERM")
    got = python_lines(entries, PYLINES)
    got_top = dict(sorted(((k, v[0]) for k, v in got.items()), key=lambda kv: -kv[1])[:10])
    if set(got_top) != set(want):
        raise Fail(f"top lines differ: memtrace {sorted(got_top)}, tracemalloc {sorted(want)}")
    for line, size in want.items():
        if abs(got_top[line] - size) > 0.05 * size:
            raise Fail(f"line {line}: memtrace {got_top[line]} bytes, tracemalloc {size}")
    return got_top, want


def test_python_tracemalloc(r):
    """--python-allocators on pyenv CPython 3.11-3.13: the top-10 lines of a script are
    tracemalloc's, with live sizes within 5 %."""
    for v in ("3.10", "3.11", "3.12", "3.13"):
        python = pyenv_python(v)
        if not python:
            print(f"SKIP {r.name}.{v}: no pyenv CPython {v} under {pyenv_root()}", flush=True)
            continue
        with r.part(v):
            check_tracemalloc(r, python, v)


BA_SCRIPT = """import os, sys, time
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
held = [bytearray(1 << 20) for i in range(50)]
print("done", flush=True)
while os.path.exists(sys.argv[1]):
    time.sleep(0.01)
"""


def test_python_default_debian(r):
    """Default mode (libc probes only) on Debian's python3.11, whose pymalloc is
    inlined: the line that builds 50 MiB of bytearrays leads, with exactly its 50
    buffers of 1 MiB + 1 bytes."""
    python = "/usr/bin/python3.11"
    if not os.access(python, os.X_OK):
        print(f"SKIP {r.name}: {python} is not installed", flush=True)
        return
    target = check_ba_lines(r, [python])
    # Debian's python3.11 is stripped: the table, unless its debug file is installed
    check_offsets_source(r.daemon_logs[-1], target.pid, 11,
                         "DWARF" if debug_file_of(python) else "the built-in table for 3.11")


EMBED_SRC = """#include <Python.h>
int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }
"""


def test_python_embedded_debian(r):
    """A program embedding Debian's shared libpython3.11: its link map names
    /lib/x86_64-linux-gnu/libpython3.11.so.1.0, its maps /usr/lib/... (merged /usr). The
    same exact bytearray line as test_python_default_debian, through the library's Python frames."""
    libpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"
    if not os.path.exists(libpython) or not os.path.exists("/usr/include/python3.11/Python.h"):
        print(f"SKIP {r.name}: libpython3.11-dev is not installed", flush=True)
        return
    src, binary = os.path.join(r.tmp, "embed.c"), os.path.join(r.tmp, "embed")
    with open(src, "w") as f:
        f.write(EMBED_SRC)
    b = subprocess.run([os.environ.get("CC", "cc"), "-O1", "-I/usr/include/python3.11", src,
                        "-o", binary, "-lpython3.11"], capture_output=True, text=True)
    if b.returncode != 0:
        raise Fail(f"cannot build the embedder: {one_line(b.stderr)[:200]}")
    target = check_ba_lines(r, [binary])
    check_offsets_source(r.daemon_logs[-1], target.pid, 11,
                         "DWARF" if debug_file_of(libpython) else "the built-in table for 3.11")


def check_ba_lines(r, argv):
    """Run BA_SCRIPT under argv (a python), attached by --pid in default mode: report --by
    line gives its bytearray line exactly, and its stack ends in <module>. Returns the
    target, the daemon stopped."""
    script = os.path.join(r.tmp, "ba.py")
    with open(script, "w") as f:
        f.write(BA_SCRIPT)
    signal_file = os.path.join(r.tmp, "go")
    out = os.path.join(r.tmp, "ba.out")
    target = r.spawn([*argv, script, signal_file], "target", "ba.out")
    r.wait_line(out, "ready", target)
    daemon = r.start_daemon("--pid", str(target.pid))
    r.wait_state("attached", daemon=daemon)
    with open(signal_file, "w"):
        pass
    r.wait_line(out, "done", target)
    time.sleep(0.5)
    entries = r.report("--top", "0")
    rc, text, err = r.ctl("report", "--by", "line", "--top", "1")
    os.unlink(signal_file)
    # tracemalloc's format, keyed by the Python line
    want_line = f"{script}:5: size=50.0 MiB, count=50, average=1024 KiB"
    if rc != 0 or want_line not in text.splitlines():
        raise Fail(f"report --by line: {one_line(text or err)[:300]}")
    lines = python_lines(entries, script)
    ranked = sorted(lines.items(), key=lambda kv: -kv[1][0])
    if not ranked or ranked[0][0] != 5:
        raise Fail(f"lines of ba.py by live bytes: {ranked[:3]}")
    if ranked[0][1] != (50 * ((1 << 20) + 1), 50):
        raise Fail(f"line 5 holds {ranked[0][1][0]} bytes in {ranked[0][1][1]} blocks, "
                   f"expected {50 * ((1 << 20) + 1)} in 50")
    frames = next(e["frames"] for e in entries
                  if any(f.get("file") == script for f in e["frames"]))
    names = [f["function"] for f in frames if f.get("file") == script]
    if names[-1] != "<module>":
        raise Fail(f"Python frames of the bytearray stack: {names}")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail(f"memtraced exited {daemon.returncode} on SIGTERM")
    return target


def test_python_running_server(r):
    """Attach to a Python server loop that is already running (pyenv 3.12, else
    Debian's 3.11), read a report with its Python lines, detach: it runs on and
    its output is exactly what it prints untraced."""
    python = pyenv_python("3.12") or ("/usr/bin/python3.11"
                                      if os.access("/usr/bin/python3.11", os.X_OK) else None)
    if not python:
        print(f"SKIP {r.name}: no CPython 3.11+", flush=True)
        return
    server = os.path.join(HERE, "pyserver.py")
    stop = os.path.join(r.tmp, "stop")
    out = os.path.join(r.tmp, "server.out")
    target = r.spawn([python, server, stop], "target", "server.out")
    r.wait_line(out, "0 ", target)
    daemon = r.start_daemon("--pid", str(target.pid))
    r.wait_state("attached", daemon=daemon)
    time.sleep(1.0)
    entries = r.report("--top", "0", "--sort", "allocated")
    funcs = {f["function"] for e in entries for f in e["frames"] if f.get("file") == server}
    if "line" not in funcs:
        raise Fail(f"no stack has line() of pyserver.py: {sorted(funcs)}")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail("memtraced did not exit 0 on SIGTERM")
    with open(out) as f:
        before = len(f.read().splitlines())
    time.sleep(0.5)
    with open(stop, "w"):
        pass
    if r.wait_exit(target, "pyserver.py") != 0:
        raise Fail(f"pyserver.py exited {target.returncode} after the detach")
    with open(out) as f:
        lines = f.read().splitlines()
    n = int(lines[-1].split()[1])
    if n <= before:
        raise Fail(f"the server did not run on after the detach ({n} iterations, "
                   f"{before} before)")
    # what it prints untraced: the same loop, run here
    want = subprocess.run([python, server, "--expect", str(n)], capture_output=True,
                          text=True).stdout.splitlines()
    if lines != want:
        diff = next(i for i, (a, b) in enumerate(zip(lines + [""], want + [""])) if a != b)
        raise Fail(f"output differs at line {diff + 1}: {lines[diff:diff + 1]} vs "
                   f"{want[diff:diff + 1]}")


THREADS_SCRIPT = """import os, sys, threading, time
held = []
def worker_a():
    held.append([bytearray(600000) for i in range(10)])
def worker_b():
    held.append([bytearray(700000) for i in range(20)])
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
ts = [threading.Thread(target=f) for f in (worker_a, worker_b, worker_a)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("done", flush=True)
while os.path.exists(sys.argv[1]):
    time.sleep(0.01)
"""


def check_threads(r, python, v, tag, want_source, env=None):
    """THREADS_SCRIPT attached: each worker's lines exactly, and the offsets' source."""
    script = os.path.join(r.tmp, f"threads{tag}.py")
    with open(script, "w") as f:
        f.write(THREADS_SCRIPT)
    signal_file = os.path.join(r.tmp, f"go{tag}")
    out = os.path.join(r.tmp, f"threads{tag}.out")
    target = r.spawn([python, script, signal_file], "target", f"threads{tag}.out",
                     env=dict(os.environ, **(env or {})))
    r.wait_line(out, "ready", target)
    daemon = r.start_daemon("--pid", str(target.pid), tag=f"d-threads{tag}")
    r.wait_state("attached", daemon=daemon)
    with open(signal_file, "w"):
        pass
    r.wait_line(out, "done", target)
    time.sleep(0.5)
    entries = r.report("--top", "0")
    os.unlink(signal_file)
    lines = python_lines(entries, script)
    want = {4: (20 * 600001, 20), 6: (20 * 700001, 20)}
    got = {k: lines.get(k) for k in want}
    if got != want:
        raise Fail(f"per line (bytes, blocks): {got}, expected {want}")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail(f"memtraced exited {daemon.returncode} on SIGTERM")
    check_offsets_source(r.daemon_logs[-1], target.pid, v.split(".")[1], want_source)


def test_python_threads(r):
    """Allocations from other threads get their own thread's Python stack (the
    thread state is found by pthread_self, not by who holds the GIL)."""
    for v in ("3.10", "3.11", "3.12", "3.13"):
        python = pyenv_python(v)
        if not python:
            print(f"SKIP {r.name}.{v}: no pyenv CPython {v}", flush=True)
            continue
        with r.part(v):
            # pyenv builds carry DWARF; 3.13 also _Py_DebugOffsets, which wins
            check_threads(r, python, v, v, "_Py_DebugOffsets" if v == "3.13" else "DWARF")


def test_python_stripped(r):
    """The same pyenv interpreters with their libpython stripped of debug info (a copy,
    loaded through LD_LIBRARY_PATH: their RUNPATH yields to it): the built-in table
    on 3.10-3.12, _Py_DebugOffsets on 3.13, and the same exact lines."""
    strip = shutil.which("strip")
    if not strip:
        print(f"SKIP {r.name}: no strip (binutils)", flush=True)
        return
    for v in ("3.10", "3.11", "3.12", "3.13"):
        python = pyenv_python(v)
        lib = python and os.path.join(os.path.dirname(os.path.dirname(python)), "lib",
                                      f"libpython{v}.so.1.0")
        if not python or not os.path.exists(lib):
            print(f"SKIP {r.name}.{v}: no pyenv CPython {v} with a shared libpython",
                  flush=True)
            continue
        with r.part(v):
            libdir = os.path.join(r.tmp, f"stripped{v}")
            os.makedirs(libdir, exist_ok=True)
            subprocess.run([strip, "--strip-debug", "-o",
                            os.path.join(libdir, os.path.basename(lib)), lib], check=True)
            check_threads(r, python, v, f"stripped{v}",
                          "_Py_DebugOffsets" if v == "3.13" else
                          f"the built-in table for {v}", env={"LD_LIBRARY_PATH": libdir})


PYARENAS = os.path.join(HERE, "pyarenas.py")


def marker_line(path, marker):
    with open(path) as f:
        lines = [i + 1 for i, l in enumerate(f) if marker in l]
    if len(lines) != 1:
        raise Fail(f"{marker} is on {len(lines)} lines of {path}")
    return lines[0]


def arena_stats(path):
    """Arenas pymalloc reports in a sys._debugmallocstats() dump: total allocated,
    reclaimed, current, and the arena size."""
    with open(path) as f:
        text = f.read()
    got = {}
    for key in ("allocated total", "reclaimed", "allocated current"):
        m = re.search(r"^# arenas " + key + r"\s*=\s*([\d,]+)$", text, re.M)
        if not m:
            raise Fail(f"no \"# arenas {key}\" in {os.path.basename(path)}")
        got[key] = int(m.group(1).replace(",", ""))
    m = re.search(r"^(\d+) arenas \* (\d+) bytes/arena", text, re.M)
    if not m or int(m.group(1)) != got["allocated current"]:
        raise Fail(f"no arena size line in {os.path.basename(path)}")
    got["size"] = int(m.group(2))
    return got


def line_row(text, path, line):
    """(size text, count) of `report --by line` for path:line, or None."""
    for l in text.splitlines():
        if l.startswith(f"{path}:{line}: "):
            m = re.search(r"count=(\d+)", l)
            return l, int(m.group(1))
    return None


def arena_lines(entries, path):
    """python_lines() of the stacks whose innermost native frame is libc's mmap (the
    arenas) and of the others (malloc & co.)."""
    def is_mmap(e):
        f = e["frames"][0] if e["frames"] else {}
        return "mmap" in (f.get("function") or "")
    return (python_lines([e for e in entries if is_mmap(e)], path),
            python_lines([e for e in entries if not is_mmap(e)], path))


def check_arenas(r, python, tag):
    signal_file = os.path.join(r.tmp, f"go-{tag}")
    prefix = os.path.join(r.tmp, f"mallocstats-{tag}")
    out = os.path.join(r.tmp, f"pyarenas-{tag}.out")
    sock = os.path.join(r.tmp, f"arenas-{tag}.sock")
    objects = marker_line(PYARENAS, "LINE_OBJECTS")
    big = marker_line(PYARENAS, "LINE_BIG")
    target = r.spawn([python, PYARENAS, signal_file, prefix], "target", f"pyarenas-{tag}.out")
    r.wait_line(out, "ready", target)
    daemon = r.start_daemon("--pid", str(target.pid), sock=sock, tag=f"d-{tag}")
    saved_sock, r.sock = r.sock, sock
    try:
        t = r.wait_state("attached", daemon=daemon)
        if "pymalloc arenas traced" not in (t.get("note") or ""):
            raise Fail(f"status note does not say arenas are traced: {t.get('note')!r}")
        with open(signal_file, "w"):
            pass
        r.wait_line(out, "built", target)
        time.sleep(0.5)
        before, built = arena_stats(prefix + ".before"), arena_stats(prefix + ".built")
        size = built["size"]
        if size != 1 << 20:
            raise Fail(f"arena size {size}, 1 MiB expected on 3.10+")
        if built["reclaimed"] != before["reclaimed"]:
            raise Fail("pymalloc freed arenas while the objects were built")
        new = built["allocated total"] - before["allocated total"]
        if new < 10:
            raise Fail(f"only {new} new arenas for 200000 tuples")
        # every arena pymalloc mapped for the line, as mmap blocks of that line; the
        # rest of the line is malloc (pymalloc's table of arenas grows by realloc)
        entries = r.report("--top", "0")
        maps, others = arena_lines(entries, PYARENAS)
        if maps.get(objects) != (new * size, new) or set(maps) != {objects}:
            raise Fail(f"mmap blocks by line: {maps}; pymalloc mapped {new} arenas of "
                       f"{size} bytes at line {objects}")
        rest = others.get(objects, (0, 0))
        if rest[0] > 64 << 10:
            raise Fail(f"line {objects} holds {rest} (bytes, blocks) besides its arenas")
        # the 8 MiB bytearray: one malloc (glibc maps it inside malloc), not also an mmap
        if others.get(big) != ((8 << 20) + 1, 1):
            raise Fail(f"line {big} holds {others.get(big)} (bytes, blocks), expected "
                       f"({(8 << 20) + 1}, 1)")
        rc, text, err = r.ctl("report", "--by", "line", "--top", "0")
        row = line_row(text, PYARENAS, objects)
        if rc != 0 or not row or row[1] != new + rest[1]:
            raise Fail(f"report --by line for line {objects}: {row}, {new} arenas and "
                       f"{rest[1]} other blocks expected")
        mix = r.ctl_json("stats", "--json").get("allocator_mix") or {}
        # every arena mapped since the attach (the interpreter's own ones too, if any)
        if mix.get("mmap", {}).get("allocations", 0) < new:
            raise Fail(f"allocator_mix has {mix.get('mmap')} mmap, at least {new} expected")
        with open(signal_file + ".2", "w"):
            pass
        r.wait_line(out, "dropped", target)
        time.sleep(0.5)
        dropped = arena_stats(prefix + ".dropped")
        freed = dropped["reclaimed"] - built["reclaimed"]
        if freed < new // 2:
            raise Fail(f"pymalloc freed {freed} of the {new} arenas: nothing to check")
        # the line's arenas still mapped: what pymalloc has now less what it had before
        # (those it keeps: they hold the interpreter's own objects)
        still = dropped["allocated current"] - before["allocated current"]
        maps, _ = arena_lines(r.report("--top", "0"), PYARENAS)
        if maps.get(objects, (0, 0)) != (still * size, still):
            raise Fail(f"after the drop line {objects} holds {maps.get(objects)} (bytes, "
                       f"blocks) of arenas; pymalloc freed {freed} and has {still} of the "
                       f"line's")
        with open(signal_file + ".3", "w"):
            pass
        r.wait_exit(target, "pyarenas.py")
    finally:
        r.sock = saved_sock
        daemon.send_signal(signal.SIGTERM)
        if r.wait_exit(daemon, "memtraced") != 0:
            raise Fail(f"memtraced exited {daemon.returncode} on SIGTERM")
    print(f"  {tag}: {new} arenas at line {objects}, {freed} freed, {still} left", flush=True)


def test_python_arenas(r):
    """Default mode: pymalloc's arenas (mmap outside malloc) are allocations of the Python
    line that filled them: exactly the arenas pymalloc reports, and their munmap frees
    them; Debian's python3.11 (pymalloc inlined) and pyenv 3.12."""
    pythons = [("debian", "/usr/bin/python3.11"), ("3.12", pyenv_python("3.12"))]
    for tag, python in pythons:
        if not python or not os.access(python, os.X_OK):
            print(f"SKIP {r.name}.{tag}: no such CPython", flush=True)
            continue
        with r.part(tag):
            check_arenas(r, python, tag)


def test_python_arenas_native(r):
    """A native target's own anonymous mmaps are not traced (only CPython targets have
    their arenas traced): its 8 mmaps of 1 MiB add nothing, its 4 MiB malloc counts once,
    as malloc."""
    prog = os.path.join(r.build, "tests", "anonmap")
    signal_file = os.path.join(r.tmp, "go-native")
    out = os.path.join(r.tmp, "anonmap.out")
    target = r.spawn([prog, signal_file], "target", "anonmap.out")
    r.wait_line(out, "ready", target)
    daemon = r.start_daemon("--pid", str(target.pid), tag="d-native")
    t = r.wait_state("attached", daemon=daemon)
    if t.get("note") is not None:
        raise Fail(f"a note for a native target: {t.get('note')!r}")
    with open(signal_file, "w"):
        pass
    r.wait_line(out, "done", target)
    time.sleep(0.5)
    stats = r.ctl_json("stats", "--json")
    entries = r.report("--top", "0")
    os.unlink(signal_file)
    mix = stats.get("allocator_mix") or {}
    if "mmap" in mix:
        raise Fail(f"mmap in the allocator mix of a native target: {mix['mmap']}")
    big = [e for e in entries if e["live_bytes"] >= 1 << 20]
    if [(e["live_bytes"], e["live_allocations"]) for e in big] != [(4 << 20, 1)]:
        raise Fail(f"stacks holding 1 MiB or more: "
                   f"{[(e['live_bytes'], e['live_allocations']) for e in big]}")
    r.wait_exit(target, "anonmap")
    daemon.send_signal(signal.SIGTERM)
    if r.wait_exit(daemon, "memtraced") != 0:
        raise Fail(f"memtraced exited {daemon.returncode} on SIGTERM")
