#!/usr/bin/env python3
"""make check-layers: the layering of docs/design.md, checked on the code.

    python3 tests/check-layers.py [--build DIR] [--root DIR]

Each source file belongs to a unit (its path without the extension: x.c and
x.h are one unit) and each unit to a layer (its folder; see LAYERS). The
dependencies are the #include lines of src/ and, when DIR holds the objects
(DIR/obj/...), the symbols each object file takes from another (nm). The
check fails, naming the files, on:

  - a dependency on a layer above (or beside, where LAYERS does not allow it),
  - a cycle between units, of includes or of calls,
  - a unit of one program (src/daemon/, src/ctl/) used by the other.

Standard library and binutils' nm only.
"""

import argparse
import os
import re
import subprocess
import sys

# Lowest first: a layer may depend only on the layers before it, and on itself.
LAYERS = [
    "include/memtrace",  # the contracts: event layout, counters, snapshot model
    "src/common",  # both programs: codec, protocol, helpers
    "src/daemon/core",  # the accounting: heap, stacks, tracker, families, rows
    "src/daemon/elf",  # the one ELF reader: files, segments, symbols, code (libelf)
    "src/daemon/proc",  # reading processes from outside
    "src/daemon/symbols",  # naming frames
    "src/daemon/unwind",  # unwind tables for the BPF walker
    "src/daemon/attach",  # which allocator, and the probes on it
    "src/daemon/ingest",  # the ring buffer into the core
    "src/daemon/scan",  # a leak scan: a stopped process's memory read, blocks marked
    "src/daemon/serve",  # the socket server, requests, snapshots, metrics
    "src/daemon",  # main, options, the loop, the targets' lifecycle
    "src/ctl/view",  # rows computed from a snapshot
    "src/ctl/render",  # text, JSON, folded, pprof, HTML
    "src/ctl",  # memtracectl: arguments, fetching, output
]
# Which programs a layer belongs to (a layer of one may not use the other's).
PROGRAM = {"src/daemon": "daemon", "src/ctl": "ctl"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """The layer of a source path (relative to the root), or None."""
    best = None
    for layer in LAYERS:
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


def program_of(layer):
    for prefix, prog in PROGRAM.items():
        if layer == prefix or layer.startswith(prefix + "/"):
            return prog
    return None


def unit_of(path):
    return os.path.splitext(path)[0]


def sources(root):
    out = []
    for top in ("src", "include/memtrace"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)


def resolve(root, src, name):
    """The file an #include "name" in src means, relative to root, or None (generated)."""
    for base in (os.path.dirname(src), "src", "include"):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.exists(os.path.join(root, cand)):
            return cand
    return None


def include_edges(root, files):
    edges = []
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            target = resolve(root, f, m.group(1))
            if target:
                edges.append((f, target, "includes"))
    return edges


def call_edges(root, build):
    """(file, file, 'calls') for each symbol an object takes from another object."""
    objs = []
    for dirpath, _, files in os.walk(os.path.join(build, "obj")):
        objs += [os.path.join(dirpath, f) for f in files if f.endswith(".o")]
    defined, wanted = {}, {}
    for o in objs:
        src = os.path.relpath(o, os.path.join(build, "obj"))[:-2] + ".c"
        src = os.path.join("src", src)
        if not os.path.exists(os.path.join(root, src)):
            continue
        out = subprocess.run(["nm", o], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                wanted.setdefault(src, set()).add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBR":
                defined[parts[2]] = src
    edges = []
    for src, syms in wanted.items():
        for s in sorted(syms):
            if s in defined and defined[s] != src:
                edges.append((src, defined[s], f"calls {s}"))
    return edges


def cycles(edges):
    """Strongly connected components of more than one unit (Tarjan, iterative)."""
    graph = {}
    for a, b, _ in edges:
        ua, ub = unit_of(a), unit_of(b)
        if ua != ub:
            graph.setdefault(ua, set()).add(ub)
            graph.setdefault(ub, set())
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--build", default=None, help="build directory with obj/ (calls)")
    args = ap.parse_args()
    root = args.root
    files = sources(root)
    edges = include_edges(root, files)
    if args.build and os.path.isdir(os.path.join(args.build, "obj")):
        edges += call_edges(root, args.build)
    problems = []
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    for a, b, how in edges:
        la, lb = layer_of(a), layer_of(b)
        if la is None or lb is None or la == lb:
            continue
        pa, pb = program_of(la), program_of(lb)
        if pb and pa != pb:
            problems.append(f"{a} {how.split()[0]} {b}: {la} may not use {lb} (another program)"
                            + (f" ({how})" if how != "includes" else ""))
        elif rank[lb] > rank[la]:
            problems.append(f"{a} {how.split()[0]} {b}: {la} is below {lb}"
                            + (f" ({how})" if how != "includes" else ""))
    for comp in cycles(edges):
        why = [f"{a} {how} {b}" for a, b, how in edges
               if unit_of(a) in comp and unit_of(b) in comp and unit_of(a) != unit_of(b)]
        problems.append("cycle between " + ", ".join(comp) + ": " + "; ".join(why[:6]))
    for p in problems:
        print(f"check-layers: {p}")
    nunits = len({unit_of(f) for f in files})
    print(f"check-layers: {len(files)} files, {nunits} units, {len(edges)} dependencies, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
