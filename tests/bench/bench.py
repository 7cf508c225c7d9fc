#!/usr/bin/env python3
"""make bench: what tracing costs the target, per malloc+free pair, and whether
the daemon keeps up. Runs tests/bench/allocbench untraced and traced with each
stack walker at several call depths, checks the daemon counted every call with
no event lost, then the scale section (tests/bench/scalebench.py: views of a
million live blocks over 131 072 stacks, memory per block, drain gaps while
clients take snapshots), the fork section (tests/bench/forkbench.py: what
forks of a parent holding a million live blocks cost the daemon), then a
Python workload (tests/bench/pybench.py:
untraced, tracemalloc, memtrace's two modes), then the leak scan's pause
(tests/bench/scanbench.py), and writes the tables to docs/performance.md.

    python3 tests/bench/bench.py --build DIR [--pairs N] [--py-n N] [--out FILE]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import forkbench
import pybench
import replaybench
import scalebench
import scanbench

# the programs on the allocator's probes: ours, the floor's, the minimal tracer's
PROBE_PROGRAMS = ("alloc_enter", "alloc_return", "free_enter", "outer_free_enter", "empty_enter",
                  "empty_return", "minimal_enter", "minimal_return", "minimal_free")


def prog_stats(daemon_pid):
    """Run counts and times of this daemon's BPF programs on the allocator's
    probes (kernel.bpf_stats_enabled), by name: {name: (run_cnt, run_time_ns)}.
    Only the programs the daemon holds: other daemons on the machine have
    programs of the same names."""
    ours = pybench.prog_ids_of(daemon_pid)
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True)
    res = {}
    if out.returncode:
        return res
    for p in json.loads(out.stdout):
        if p["id"] in ours and p.get("name") in PROBE_PROGRAMS and p.get("run_cnt", 0):
            cnt, ns = res.get(p["name"], (0, 0))
            res[p["name"]] = (cnt + p["run_cnt"], ns + p["run_time_ns"])
    return res


def bpf_per_pair(progs, pairs):
    """BPF time per malloc+free pair: every probe program's run time over the pairs."""
    return sum(ns for _, ns in progs.values()) / pairs if progs else None


def stack_frames(build, sock):
    """Return addresses in the stack that allocated most (inlined frames not counted)."""
    out = subprocess.run([os.path.join(build, "memtracectl"), "--socket", sock, "report", "--top",
                          "1", "--sort", "count", "--format", "json"], capture_output=True,
                         text=True)
    if out.returncode:
        return None
    entries = json.loads(out.stdout).get("entries") or [{}]
    return sum(1 for f in entries[0].get("frames", []) if not f.get("inlined"))


def daemon_binary(build, daemon_env):
    """memtraced, or for make bench's own programs (MEMTRACE_BENCH_PROGRAMS: bpf/bench.bpf.c)
    the daemon with test hooks (the Makefile's tests/memtraced-hooks): memtraced has neither
    the programs nor the variable."""
    if "MEMTRACE_BENCH_PROGRAMS" in (daemon_env or {}):
        return os.path.join(build, "tests", "memtraced-hooks")
    return os.path.join(build, "memtraced")


def run_bench(build, pairs, depth, tracer_args, tmp, cxx=False, preload=None, threads=1,
              daemon_env=None, prog_name="allocbench"):
    """One run; returns (ns_per_pair, stats or None, {program: (runs, ns)}). cxx: new+delete pairs
    (cxxbench) instead of malloc+free; preload: an allocator in LD_PRELOAD;
    threads: allocbench threads; daemon_env: extra environment of memtraced;
    prog_name: allocbench, or allocbench_nofp (built without frame pointers)."""
    env = dict(os.environ)
    if preload:
        env["LD_PRELOAD"] = preload
    argv = ([os.path.join(build, "tests", "cxxbench"), str(pairs)] if cxx else
            [os.path.join(build, "tests", prog_name), str(pairs), str(depth), str(threads)])
    prog = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)
    assert prog.stdout.readline().strip() == "ready"
    daemon = None
    sock = os.path.join(tmp, "bench.sock")
    try:
        if tracer_args is not None:
            daemon = subprocess.Popen([daemon_binary(build, daemon_env), "--socket", sock,
                                       "--pid", str(prog.pid)] + tracer_args,
                                      stderr=open(os.path.join(tmp, "daemon.err"), "w"),
                                      env=dict(os.environ, **(daemon_env or {})))
            deadline = time.time() + 30
            while time.time() < deadline:
                out = subprocess.run([os.path.join(build, "memtracectl"), "--socket", sock,
                                      "status", "--json"], capture_output=True, text=True)
                if out.returncode == 0 and '"attached"' in out.stdout:
                    break
                time.sleep(0.05)
            else:
                with open(os.path.join(tmp, "daemon.err")) as f:
                    raise RuntimeError("daemon did not attach: " + f.read().strip())
        prog.stdin.write("go\n")
        prog.stdin.flush()
        line = prog.stdout.readline()
        prog.wait(timeout=600)
        ns = float(line.split("ns_per_pair=")[1])
        stats = None
        progs = {}
        if daemon:
            progs = prog_stats(daemon.pid)
            out = subprocess.run([os.path.join(build, "memtracectl"), "--socket", sock, "stats",
                                  "--json"], capture_output=True, text=True, check=True)
            stats = json.loads(out.stdout)
            stats["stack_frames"] = stack_frames(build, sock)
        return ns, stats, progs
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait(timeout=30)
        if prog.poll() is None:
            prog.kill()


EMPTY = {"MEMTRACE_BENCH_PROGRAMS": "empty"}
MINIMAL = {"MEMTRACE_BENCH_PROGRAMS": "minimal"}
AT_ENTRY = {"MEMTRACE_PROBE_AT_ENTRY": "1"}
# name, memtraced arguments (None: untraced), memtraced environment, counts checked
FLOOR_CONFIGS = [
    ("untraced", None, {}, False),
    ("naive floor: empty programs, entry probes at +0", [], dict(EMPTY, **AT_ENTRY), False),
    ("floor: empty programs, probes placed", [], EMPTY, False),
    ("minimal tracer: a record per call, no stack", [], MINIMAL, True),
    ("memtrace with stacks, probes at +0 (before)", ["--stack-walker", "fp"], AT_ENTRY, True),
    ("memtrace without stacks (--stack-depth 1)", ["--stack-depth", "1"], {}, True),
    ("memtrace with stacks (fp walker)", ["--stack-walker", "fp"], {}, True),
    ("memtrace default (dwarf walker)", [], {}, True),
]
NAIVE = FLOOR_CONFIGS[1][0]
FLOOR = FLOOR_CONFIGS[2][0]
MINIMAL_TRACER = FLOOR_CONFIGS[3][0]
# the reference programs measured in the depth table's rounds
REF_EMPTY, REF_MINIMAL = "empty programs", "minimal tracer"
# call depths of the walker table: 2 is a 5-frame stack (allocbench's frames, then
# start_thread and clone3)
DEPTHS = (2, 10, 40)
# issue 21: BPF ns per pair with the default walker on a 5-frame stack, ns per further frame
BPF_PAIR_TARGET, BPF_FRAME_TARGET = 900, 25
# the targets this run missed (shown in bold; the run still succeeds): a loaded machine
# misses the wall-time ones
MISSED = []
# issue 21: memtrace's wall time per pair at most this times the placed floor's
FLOOR_TARGETS = {"memtrace with stacks (fp walker)": 1.25, "memtrace default (dwarf walker)": 1.35}


def floor_rows(args, tmp, problems):
    """(threads, configuration, median ns per pair, min, max) for 1 and 2 threads, every
    configuration of FLOOR_CONFIGS run in turn in each round, so that the machine's
    other load falls on all of them alike."""
    rows = []
    for threads in (1, 2):
        samples = {name: [] for name, _, _, _ in FLOOR_CONFIGS}
        bpf = {name: [] for name, _, _, _ in FLOOR_CONFIGS}
        for _ in range(args.floor_repeat):
            for name, targs, denv, checked in FLOOR_CONFIGS:
                ns, stats, progs = run_bench(args.build, args.pairs, 1, targs, tmp,
                                             threads=threads, daemon_env=denv)
                samples[name].append(ns)
                if progs:
                    bpf[name].append(bpf_per_pair(progs, args.pairs * threads))
                want = args.pairs * threads
                if checked and (stats["allocations"] < want or stats["frees"] < want or
                                stats["events_lost"]):
                    problems.append(f"{name}, {threads} threads: allocations="
                                    f"{stats['allocations']} frees={stats['frees']} "
                                    f"events_lost={stats['events_lost']} (want {want})")
        for name, _, _, _ in FLOOR_CONFIGS:
            med = statistics.median(samples[name])
            # the ratios within each round, where the load was the same for all
            ratio = statistics.median(a / b for a, b in zip(samples[name], samples[NAIVE]))
            placed = statistics.median(a / b for a, b in zip(samples[name], samples[FLOOR]))
            b = statistics.median(bpf[name]) if bpf[name] else None
            rows.append((threads, name, med, ratio, placed, min(samples[name]),
                         max(samples[name]), b))
            print(f"{threads} thread(s)  {name:50s} {med:8.0f} ns/pair  {ratio:.2f}  "
                  f"{placed:.2f}" + (f"  BPF {b:.0f} ns/pair" if b else ""), flush=True)
            target = FLOOR_TARGETS.get(name)
            if target and placed > target:
                MISSED.append(f"{name}, {threads} threads: {placed:.2f}x the placed floor "
                              f"(target {target}x)")
    return rows


def floor_lines(args, rows, load):
    lines = [
        "## The uprobe floor",
        "",
        f"Each figure is the median of {args.floor_repeat} runs of {args.pairs} `malloc(64)`+"
        "`free` pairs per thread (tests/bench/allocbench at call depth 1), every "
        "configuration run once in each round, in turn, so that the machine's other load "
        f"(load average {load:.1f} when the run began) falls on all alike. The floor is the "
        "same probe set with empty BPF programs (`empty_enter`, `empty_return` in "
        "bpf/bench.bpf.c, an object of their own that only the daemon's test build "
        "(build/tests/memtraced-hooks) loads, attached instead of ours with "
        "`MEMTRACE_BENCH_PROGRAMS=empty`): what the traps alone cost. The naive floor "
        "probes every function at its entry (`MEMTRACE_PROBE_AT_ENTRY=1`): entry probes "
        "on malloc and free, the return probe on malloc. The minimal tracer is the placed "
        "probes with a minimal ring buffer tracer's programs (`minimal_*` in "
        "bpf/bench.bpf.c, `MEMTRACE_BENCH_PROGRAMS=minimal`, its records in memtrace's own "
        "ring buffer): the size stashed in a hash "
        "map keyed by thread id, one record per call, no stack, no wakeup. With threads, each "
        "thread makes its pairs and the figure is the mean time per pair of a thread. The "
        "ratios are the median over rounds of the ratio within a round. BPF ns per pair is "
        "the kernel's accounting of the programs on the allocator's probes "
        "(kernel.bpf_stats_enabled: run time over the pairs). Targets (issue 21): memtrace "
        "default at most 1.35x, the fp walker at most 1.25x the placed floor, every call "
        "counted, no event lost.",
        "",
        "| threads | configuration | ns per pair | ratio to the naive floor "
        "| ratio to the placed floor | min | max | BPF ns per pair |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for threads, name, med, ratio, placed, lo, hi, bpf in rows:
        r = "" if name == "untraced" else f"{ratio:.2f}"
        p = "" if name == "untraced" else f"{placed:.2f}"
        if name in FLOOR_TARGETS:
            p = f"**{p}**" if placed > FLOOR_TARGETS[name] else p
        b = f"{bpf:.0f}" if bpf else ""
        lines.append(f"| {threads} | {name} | {med:.0f} | {r} | {p} | {lo:.0f} | {hi:.0f} | "
                     f"{b} |")
    lines += [
        "",
        "glibc's `malloc` begins with `push %r12`, which the kernel emulates: one trap at",
        "entry (shared by the entry and return probes) and the return through the",
        "kernel's uretprobe trampoline. Its `free` begins with `test %rdi,%rdi`, which",
        "the kernel cannot emulate: a probe there single-steps it out of line, a second",
        "trap (a debug exception). Placed at the `je` that follows (+3, emulated), the",
        "probe costs one trap (docs/design.md, \"Cheaper traps\"). memtrace's counts",
        "were checked in every run: every allocation and free received, `events_lost` 0.",
        "",
    ]
    return lines


def bpf_lines(args, frows, bpf_rows):
    """The BPF time per pair and per further frame, beside the empty programs' and
    the minimal tracer's measured in the same rounds, with the targets of issue 21."""
    floor_bpf = {name: bpf for threads, name, *_, bpf in frows if threads == 1}
    empty = bpf_rows.get((DEPTHS[0], REF_EMPTY), (0,))[0]
    minimal = bpf_rows.get((DEPTHS[0], REF_MINIMAL), (0,))[0]
    lines = [
        "## BPF time per event",
        "",
        "The kernel's accounting of the programs on the allocator's probes "
        "(kernel.bpf_stats_enabled), per `malloc(64)`+`free` pair: the run time of every "
        "program that ran (entry, return, free) over the pairs, median of "
        f"{args.depth_rounds} rounds of {args.pairs} pairs at each call depth (tests/bench/allocbench, "
        "one thread; its stack is the call depth, then `worker`, `start_thread` and, for "
        "the DWARF walker, `clone3`: frames as the daemon received them). Each round runs "
        "every depth and walker once, in turn, with the empty programs and the minimal "
        "tracer on the same probes and stack; per further frame is the median over rounds "
        "of the difference to the 5-frame stack within a round of the return probe's program "
        "(where the walk runs: the entry and free programs do not depend on the depth), over "
        "the frames added, so that a host whose speed drifts during the run weighs on all "
        "alike. A program's run "
        "time does not include waiting for a CPU, but it does include the host's other "
        "load (cache, memory bandwidth, the clock reads the accounting itself makes): "
        "compare with the reference programs of the same run. Targets (issue 21): at most "
        f"{BPF_PAIR_TARGET} ns per pair with the default walker on a 5-frame stack, at "
        f"most {BPF_FRAME_TARGET} ns per further frame at depths 10 and 40.",
        "",
        f"The reference programs in the same rounds, 5-frame stack: empty programs "
        f"{empty:.0f} ns per pair (the programs' entry and the accounting itself), the "
        f"minimal tracer (a record per call, no stack) {minimal:.0f} ns."
        + (f" In the floor table (call depth 1, measured earlier in the run): "
           f"{floor_bpf.get(FLOOR) or 0:.0f} and {floor_bpf.get(MINIMAL_TRACER) or 0:.0f} ns."
           if floor_bpf else ""),
        "",
        "| call depth | walker | frames | BPF ns per pair | ratio to the minimal tracer "
        "| ns per further frame |",
        "| ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for walker in ("dwarf walker", "dwarf walker, no frame pointers", "fp walker"):
        for depth in DEPTHS:
            got = bpf_rows.get((depth, walker))
            if not got:
                continue
            ns, frames, per_frame = got
            per = ""
            if per_frame is not None:
                per = f"{per_frame:.1f}"
                if walker == "dwarf walker" and per_frame > BPF_FRAME_TARGET:
                    per = f"**{per}**"
                    MISSED.append(f"{walker} depth {depth}: {per_frame:.1f} ns per further "
                                  f"frame (target {BPF_FRAME_TARGET})")
            pair = f"{ns:.0f}"
            if walker == "dwarf walker" and depth == DEPTHS[0] and ns > BPF_PAIR_TARGET:
                pair = f"**{pair}**"
                MISSED.append(f"{walker}: {ns:.0f} ns of BPF per pair on a {frames:.0f}-frame "
                              f"stack (target {BPF_PAIR_TARGET}; the minimal tracer "
                              f"{minimal:.0f} in the same rounds)")
            ratio = f"{ns / minimal:.2f}" if minimal else ""
            lines.append(f"| {depth} | {walker} | {frames:.0f} | {pair} | {ratio} | {per} |")
    lines += [
        "",
        "Figures over a target are in bold. What each change to the programs saved, and why, "
        "is in docs/design.md (\"The walk\", \"One user call, one event\").",
        "",
    ]
    return lines


LIBDIR = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = [("glibc", None), ("jemalloc", f"{LIBDIR}/libjemalloc.so.2"),
              ("tcmalloc", f"{LIBDIR}/libtcmalloc_minimal.so.4"),
              ("mimalloc", f"{LIBDIR}/libmimalloc.so.2")]


def allocator_rows(args, tmp, problems):
    """(allocator, pair kind, untraced ns, traced ns) for each installed allocator."""
    rows = []
    for alloc, preload in ALLOCATORS:
        if preload and not os.path.exists(preload):
            continue
        for kind, cxx in (("malloc+free", False), ("new+delete", True)):
            med = {}
            for name, targs in (("untraced", None), ("traced", [])):
                samples = []
                for _ in range(args.repeat):
                    ns, stats, _ = run_bench(args.build, args.pairs, 1, targs, tmp, cxx=cxx,
                                             preload=preload)
                    samples.append(ns)
                    if stats is not None and (stats["frees"] < args.pairs or
                                              stats["events_lost"]):
                        problems.append(f"{alloc} {kind}: frees={stats['frees']} "
                                        f"events_lost={stats['events_lost']}")
                med[name] = statistics.median(samples)
            rows.append((alloc, kind, med["untraced"], med["traced"]))
            print(f"{alloc:9s} {kind:12s} untraced {med['untraced']:7.0f} ns/pair, traced "
                  f"{med['traced']:7.0f} ns/pair", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--py-n", type=int, default=20000,
                    help="iterations of the Python workload")
    ap.add_argument("--floor-repeat", type=int, default=5)
    ap.add_argument("--depth-rounds", type=int, default=5,
                    help="rounds of the call depth table (every depth and walker in each)")
    ap.add_argument("--out", default="docs/performance.md")
    ap.add_argument("--only-floor", action="store_true",
                    help="measure the floor table only and print it")
    ap.add_argument("--only-depth", action="store_true",
                    help="measure the call depth rounds only and print the BPF table")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench: needs root", file=sys.stderr)
        return 1
    configs = [("untraced", None, "allocbench"),
               ("fp walker", ["--stack-walker", "fp"], "allocbench"),
               ("dwarf walker", ["--stack-walker", "dwarf"], "allocbench"),
               ("dwarf walker, no frame pointers", ["--stack-walker", "dwarf"],
                "allocbench_nofp"),
               ("kernel walker", ["--stack-walker", "kernel"], "allocbench")]
    load = os.getloadavg()[0]
    rows = []
    bpf_rows = {}  # (depth, configuration): (BPF ns per pair, frames of its stack)
    problems = []
    subprocess.run(["sysctl", "-q", "-w", "kernel.bpf_stats_enabled=1"], check=False)
    if args.only_floor:
        with tempfile.TemporaryDirectory(prefix="memtrace-bench-") as tmp:
            frows = floor_rows(args, tmp, problems)
        print("\n".join(floor_lines(args, frows, load)))
        print("\n".join(problems) if problems else "all counts exact, nothing lost")
        return 1 if problems else 0
    with tempfile.TemporaryDirectory(prefix="memtrace-bench-") as tmp:
        frows = [] if args.only_depth else floor_rows(args, tmp, problems)
        # every depth and configuration once in each round, in turn, so that a
        # machine whose speed drifts during the run (a shared host) weighs on all
        # alike, and the cost of a further frame is taken within a round
        runs = [(depth, name, targs, prog_name, None)
                for depth in DEPTHS for name, targs, prog_name in configs]
        # the empty and minimal programs on the same probes and stack, in the
        # same rounds: what the BPF figures of this run compare with
        runs += [(DEPTHS[0], REF_EMPTY, [], "allocbench", EMPTY),
                 (DEPTHS[0], REF_MINIMAL, [], "allocbench", MINIMAL)]
        got = {}  # (depth, name): [(ns, BPF ns per pair or None, frames or None, ret)]
        for _ in range(args.depth_rounds):
            for depth, name, targs, prog_name, denv in runs:
                ns, stats, p = run_bench(args.build, args.pairs, depth, targs, tmp,
                                         prog_name=prog_name, daemon_env=denv)
                ret = p.get("alloc_return")
                got.setdefault((depth, name), []).append(
                    (ns, bpf_per_pair(p, args.pairs) if p else None,
                     stats["stack_frames"] if stats is not None and denv is None else None,
                     ret[1] / ret[0] if ret and ret[0] else None))
                # libc's stdio buffer adds one allocation before the loop
                if stats is not None and denv is None and (stats["frees"] < args.pairs or
                                                           stats["events_lost"]):
                    problems.append(f"{name} depth {depth}: frees={stats['frees']} "
                                    f"events_lost={stats['events_lost']}")
        for depth, name, targs, prog_name, denv in runs:
            rs = got[(depth, name)]
            samples = [r[0] for r in rs]
            med = statistics.median(samples)
            rets = [r[3] for r in rs if r[3] is not None]
            ret = statistics.median(rets) if rets else None
            pair_bpf = [r[1] for r in rs if r[1] is not None]
            frames = [r[2] for r in rs if r[2] is not None]
            if pair_bpf:
                per_frame = None
                base = got.get((DEPTHS[0], name))
                if depth != DEPTHS[0] and frames and base:
                    # within each round: the return program's time (where the walk
                    # runs; the entry and free programs' does not depend on the
                    # depth, only adds its noise) less the 5-frame stack's
                    diffs = [(r[3] - b[3]) / (r[2] - b[2]) for r, b in zip(rs, base)
                             if r[3] is not None and b[3] is not None and r[2] and b[2]
                             and r[2] > b[2]]
                    per_frame = statistics.median(diffs) if diffs else None
                bpf_rows[(depth, name)] = (statistics.median(pair_bpf),
                                           statistics.median(frames) if frames else None,
                                           per_frame)
            if denv is not None:
                continue
            rows.append((depth, name, med, min(samples), max(samples), ret))
            print(f"depth {depth:3d}  {name:14s} {med:9.0f} ns/pair "
                  f"(min {min(samples):.0f}, max {max(samples):.0f})"
                  + (f", return probe program {ret:.0f} ns" if ret else ""), flush=True)
        if args.only_depth:
            print("\n".join(bpf_lines(args, frows, bpf_rows)))
            print("\n".join(problems) if problems else "all counts exact, nothing lost")
            return 1 if problems else 0
        arows = allocator_rows(args, tmp, problems)
    base = {d: m for d, n, m, _, _, _ in rows if n == "untraced"}
    lines = [
        "# Performance",
        "",
        "Written by `make bench` (tests/bench/bench.py); do not edit by hand.",
        "",
        f"Machine: {platform.machine()}, kernel {platform.release()}, {os.cpu_count()} CPUs "
        f"(shared with other work, load average {load:.1f} when the run began). "
        f"Each figure is the median of {args.depth_rounds} rounds of {args.pairs} `malloc(64)`+`free` "
        "pairs made at the given call depth (frames above the allocation).",
        "",
        "| call depth | configuration | ns per pair | added by tracing | min | max "
        "| return-probe BPF program, ns per run |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for depth, name, med, lo, hi, ret in rows:
        added = "" if name == "untraced" else f"{med - base[depth]:.0f}"
        prog = f"{ret:.0f}" if ret else ""
        lines.append(f"| {depth} | {name} | {med:.0f} | {added} | {lo:.0f} | {hi:.0f} | {prog} |")
    lines += [
        "",
        "The last column is the kernel's own accounting of the BPF program run at",
        "the allocation's return (kernel.bpf_stats_enabled): stack walk, in-flight",
        "lookup and ring buffer write, without the trap around it. The whole stack is",
        "walked: the call depth plus main and libc's start (about 4 frames more).",
        "\"no frame pointers\" is tests/bench/allocbench built `-O2 -fomit-frame-pointer`",
        "(its \"added by tracing\" is against the frame-pointer build's untraced run).",
        "",
        "The DWARF walker's cost beside the frame-pointer walker's on the same program",
        "(target: at most 2x). The frame-pointer walk stops in libc, which has no frame",
        "pointers (at `start_thread`); the DWARF walk goes one frame further, to `clone3`.",
        "",
        "| call depth | fp walker, ns | dwarf walker, ns | ratio | dwarf, no frame pointers, ns |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    ret_of = {(d, n): ret for d, n, _, _, _, ret in rows}
    for depth in sorted({d for d, *_ in rows}):
        fp, dw = ret_of.get((depth, "fp walker")), ret_of.get((depth, "dwarf walker"))
        nf = ret_of.get((depth, "dwarf walker, no frame pointers"))
        if fp and dw:
            lines.append(f"| {depth} | {fp:.0f} | {dw:.0f} | {dw / fp:.2f} | "
                         f"{nf:.0f} |" if nf else f"| {depth} | {fp:.0f} | {dw:.0f} | "
                         f"{dw / fp:.2f} | |")
    lines += [
        "",
        "A traced pair is two uprobe traps (malloc entry and return) plus one for",
        "free; most of the added time is the kernel's trap handling, the same for",
        "every uprobe tracer. What memtrace adds inside the trap is the stack walk",
        "and one ring buffer write: compare the two walkers at depth 40.",
        "",
        "Every traced run was checked: all calls counted, `events_lost` = 0."
        if not problems else "Problems seen: " + "; ".join(problems),
        "",
        "## Allocators that interpose malloc",
        "",
        f"Median of {args.repeat} runs of {args.pairs} pairs each, untraced and traced (the",
        "default walker, dwarf), with the allocator in `LD_PRELOAD` (glibc: none). `malloc+free` is",
        "tests/bench/allocbench at call depth 1; `new+delete` is tests/bench/cxxbench, whose",
        "`delete` of a 64-byte object is the sized one. glibc's sized delete reaches `free`",
        "(one trap); jemalloc's, tcmalloc's and mimalloc's do not, so theirs is probed itself,",
        "at entry and return (docs/design.md), where the unsized ones cost nothing extra.",
        "A trap's cost also depends on the instruction probed: the kernel emulates some and",
        "single-steps others out of line, which costs a second trap. Each probe sits on the",
        "first one it emulates where that is safe (docs/design.md, \"Cheaper traps\"):",
        "jemalloc's `malloc` at its `ja` (+7), tcmalloc's after a load and a test (+10),",
        "mimalloc's at +21; jemalloc's `free` stays at its entry (it reads memory through a",
        "register before anything emulated), a single-step on every free.",
        "",
        "| allocator | pair | untraced ns | traced ns | added by tracing |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for alloc, kind, un, tr in arows:
        lines.append(f"| {alloc} | {kind} | {un:.0f} | {tr:.0f} | {tr - un:.0f} |")
    lines += [""]
    # the floor first: it is what the issue of cheaper traps is measured by
    lines = (lines[:4] + floor_lines(args, frows, load) +
             bpf_lines(args, frows, bpf_rows) +
             ["## Call depth and stack walkers", ""] + lines[4:])
    lines += scalebench.measure(args.build, [10000, 100000, 1000000], 17, args.repeat)[0]
    replay_lines, streams = replaybench.measure(args.build)
    lines += replay_lines
    MISSED.extend(replaybench.missed(streams))
    fork_lines, fork_rows = forkbench.measure(args.build)
    lines += fork_lines
    problems += [f"fork bench at {r['blocks']} blocks, F={r['frees']}: counts not exact"
                 for r in fork_rows if not r["exact"]]
    lines += pybench.measure(args.build, args.py_n)
    lines += scanbench.measure(args.build, [10000, 100000, 1000000], 100, args.repeat)[0]
    if MISSED:
        lines += ["## Targets missed in this run", ""] + [f"- {m}" for m in MISSED] + [""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"bench: wrote {args.out}")
    for m in MISSED:
        print(f"bench: target missed: {m}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
