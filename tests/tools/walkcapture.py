#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""
Records the stacks tests/unit/test_walk.c walks (`make walk-test-data`, by
hand; the outputs are committed in tests/unit/data/walk/).

    walkcapture.py OUTDIR NAME=PROGRAM:FUNCTION[*N] ...

Runs PROGRAM under gdb (batch mode, this file as its script) with
breakpoints on the first instruction of malloc and calloc, and stops at the
first call whose backtrace (gdb's) holds FUNCTION (N times). Writes OUTDIR/NAME.stack:
the registers there (rip, rsp, rbp), the code mappings of every module and
its load bias, and the bytes of the thread's stack from rsp to the end of
its mapping, the process's strings (path, arguments, environment) at its
top zeroed, and this machine's paths wherever they were left (scrub). At
the allocator's entry [rsp] is the return address, and
rsp + 8 and rbp are the caller's: what the return probe sees, where the
walk starts.

Then, per module with code on a recorded stack, OUTDIR/MODULE.cfi.gz: the
module's .eh_frame alone (objcopy -j .eh_frame), every FDE that covers no
code address found on the recorded stacks (nor rip) zeroed in place (an FDE
of address 0 and length 0 covers nothing, for libdw as for the table
builder), gzipped: 17 KiB for libc, whose .eh_frame is 150. The test builds
its tables from these, not from the host's files, so that a new toolchain
or libc changes nothing until the stacks are recorded again.
"""
import gzip
import json
import os
import struct
import subprocess
import sys

try:
    import gdb  # noqa: F401  (run inside gdb: the capture itself)
except ImportError:
    gdb = None


def gdb_capture():
    want, _, times = os.environ["WALKCAP_WANT"].partition("*")
    out = os.environ["WALKCAP_OUT"]
    gdb.execute("unset environment")  # the stack's layout from run to run
    gdb.execute("set breakpoint pending on")
    gdb.execute("set pagination off")
    gdb.execute("set print thread-events off")
    gdb.execute("break main")  # libc's malloc once libc is there, not ld.so's
    gdb.execute("run")
    # their first instruction: [rsp] is the return address (gcc makes
    # malloc and memset a calloc)
    gdb.execute("break *__libc_malloc")
    gdb.execute("break *__libc_calloc")
    gdb.execute("continue")
    for _ in range(100000):
        if not gdb.selected_inferior().pid:
            raise SystemExit("walkcapture: %s never allocates" % want)
        names = []
        f = gdb.newest_frame()
        while f is not None:
            names.append(f.name() or "?")
            f = f.older()
        if names.count(want) >= int(times or 1):
            break
        gdb.execute("continue")
    else:
        raise SystemExit("walkcapture: %s never allocates" % want)
    regs = {r: int(gdb.parse_and_eval("$" + r)) & (2**64 - 1) for r in ("rip", "rsp", "rbp")}
    pid = gdb.selected_inferior().pid
    maps = []
    with open("/proc/%d/maps" % pid) as fh:
        for line in fh:
            p = line.split()
            lo, hi = (int(x, 16) for x in p[0].split("-"))
            maps.append([lo, hi, p[1], int(p[2], 16), p[5] if len(p) > 5 else ""])
    top = next(m[1] for m in maps if m[0] <= regs["rsp"] < m[1])
    mem = bytearray(gdb.selected_inferior().read_memory(regs["rsp"], top - regs["rsp"]))
    # the process's strings (its path, arguments, environment) and its 16
    # random bytes at the top of the main thread's stack: zeroed, from the
    # random bytes (AT_RANDOM) up, the lowest of them
    with open("/proc/%d/auxv" % pid, "rb") as fh:
        auxv = fh.read()
    for i in range(0, len(auxv) - 15, 16):
        key, val = struct.unpack_from("<QQ", auxv, i)
        if key == 25 and regs["rsp"] <= val < top:
            mem[val - regs["rsp"]:] = bytes(top - val)
    with open(out, "w") as fh:
        json.dump({"regs": regs, "maps": maps, "stack": bytes(mem).hex(), "gdb_frames": names}, fh)
    gdb.execute("kill")


def uleb(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i


def sleb(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            if c & 0x40:
                v -= 1 << s
            return v, i


def read_ptr(b, i, enc, field_addr):
    fmt = enc & 0x0F
    size, code = {0x0: (8, "<Q"), 0x2: (2, "<H"), 0x3: (4, "<I"), 0x4: (8, "<Q"),
                  0xA: (2, "<h"), 0xB: (4, "<i"), 0xC: (8, "<q")}[fmt]
    v = struct.unpack_from(code, b, i)[0]
    if enc & 0x70 == 0x10:
        v += field_addr
    return v & (2**64 - 1), i + size


def section(path, want):
    """(file offset, address, size) of section want."""
    with open(path, "rb") as fh:
        d = fh.read()
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        name, _, _, addr, off, size = sh(i)[:6]
        end = d.index(b"\0", stroff + name)
        if d[stroff + name:end].decode() == want:
            return off, addr, size
    raise SystemExit("walkcapture: %s: no %s" % (path, want))


def first_load_vaddr(path):
    with open(path, "rb") as fh:
        d = fh.read(1 << 16)
    phoff, = struct.unpack_from("<Q", d, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", d, 0x36)
    for i in range(phnum):
        ptype, _, _, vaddr = struct.unpack_from("<IIQQ", d, phoff + i * phentsize)
        if ptype == 1:
            return vaddr & ~0xFFF
    raise SystemExit("walkcapture: %s: no PT_LOAD" % path)


def reduce_cfi(src, dst, pcs):
    """dst: src's .eh_frame alone, FDEs covering none of pcs zeroed; returns the FDEs kept."""
    tmp = dst + ".tmp"
    subprocess.run(["objcopy", "-j", ".eh_frame", src, tmp], check=True, stderr=subprocess.DEVNULL)
    off, addr, size = section(tmp, ".eh_frame")
    with open(tmp, "rb") as fh:
        data = bytearray(fh.read())
    sec = memoryview(data)[off:off + size]
    cies, i, kept = {}, 0, 0
    while i + 4 <= size:
        length, = struct.unpack_from("<I", sec, i)
        if length == 0:
            break
        assert length != 0xFFFFFFFF, "64-bit .eh_frame entries"
        body, nxt = i + 4, i + 4 + length
        cid, = struct.unpack_from("<I", sec, body)
        if cid == 0:  # a CIE: its FDE pointer encoding
            j = body + 5
            aug_end = bytes(sec[j:]).index(b"\0")
            aug = bytes(sec[j:j + aug_end]).decode()
            j += aug_end + 1
            _, j = uleb(sec, j)
            _, j = sleb(sec, j)
            j = j + 1 if sec[body + 4] == 1 else uleb(sec, j)[1]
            enc = 0
            if aug.startswith("z"):
                _, j = uleb(sec, j)
                for c in aug[1:]:
                    if c == "R":
                        enc = sec[j]
                        j += 1
                    elif c == "P":
                        penc = sec[j]
                        _, j = read_ptr(sec, j + 1, penc & 0x0F, 0)
                    elif c == "L":
                        j += 1
            cies[i] = enc
        else:
            enc = cies[body - cid]
            start, j = read_ptr(sec, body + 4, enc, addr + body + 4)
            rng, _ = read_ptr(sec, j, enc & 0x0F, 0)
            if any(start <= pc < start + rng for pc in pcs):
                kept += 1
            else:
                sec[body + 4:nxt] = bytes(nxt - body - 4)
        i = nxt
    with open(dst, "wb") as fh:
        fh.write(gzip.compress(bytes(data), 9, mtime=0))
    os.unlink(tmp)
    return kept


def scrub(mem, private):
    """mem with this machine's paths zeroed: the dynamic linker leaves the
    program's path, and parts of it, on any stack it ran on. Every
    occurrence of 5 or more leading characters of a private string is zeroed
    with the printable characters that follow it."""
    mem = bytearray(mem)
    for p in {x.encode() for x in private if len(x) >= 5}:
        at = mem.find(p[:5])
        while at >= 0:
            end = at
            while end < len(mem) and 0x20 <= mem[end] < 0x7F:
                end += 1
            mem[at:end] = bytes(end - at)
            at = mem.find(p[:5], at + 1)
    return bytes(mem)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    modules = {}  # path -> [tag, load bias, set of vaddrs]
    for spec in sys.argv[2:]:
        name, rest = spec.split("=", 1)
        prog, want = rest.rsplit(":", 1)
        raw = os.path.join(outdir, name + ".json.tmp")
        env = dict(os.environ, WALKCAP_WANT=want, WALKCAP_OUT=raw)
        subprocess.run(["gdb", "--batch", "-nx", "-q", "-x", os.path.abspath(__file__),
                        "--args", prog], env=env, check=True, stdout=subprocess.DEVNULL)
        with open(raw) as fh:
            cap = json.load(fh)
        os.unlink(raw)
        stack = scrub(bytes.fromhex(cap["stack"]),
                      [os.getcwd(), os.path.realpath(prog), os.path.expanduser("~")])
        rsp = cap["regs"]["rsp"]
        words = [cap["regs"]["rip"]] + [w for (w,) in struct.iter_unpack("<Q", stack[:len(stack) // 8 * 8])]
        prog_real = os.path.realpath(prog)
        lines = ["# walk capture %s: %s stopped in malloc under %s (tests/tools/walkcapture.py)"
                 % (name, os.path.basename(prog), want),
                 "# gdb's frames: " + " ".join(cap["gdb_frames"]),
                 "regs %#x %#x %#x" % (cap["regs"]["rip"], rsp, cap["regs"]["rbp"])]
        code = [m for m in cap["maps"] if "x" in m[2] and m[4].startswith("/")]
        for path in sorted({m[4] for m in code}, key=lambda p: min(m[0] for m in code if m[4] == p)):
            if path not in modules:
                tag = name if os.path.realpath(path) == prog_real else os.path.basename(path)
                modules[path] = [tag, None, set()]
            mod = modules[path]
            base = min(m[0] - m[3] for m in cap["maps"] if m[4] == path and m[3] == 0)
            bias = base - first_load_vaddr(path)
            mod[1] = bias
            for w in words:
                if any(m[0] <= w < m[1] for m in code if m[4] == path):
                    mod[2].update((w - bias, w - 1 - bias))
            lines.append("module %s %#x" % (mod[0], bias))
            for m in code:
                if m[4] == path:
                    lines.append("map %s %#x %#x" % (mod[0], m[0], m[1]))
        lines.append("stack %#x %d" % (rsp, len(stack)))
        for i in range(0, len(stack), 32):
            lines.append(stack[i:i + 32].hex())
        with open(os.path.join(outdir, name + ".stack"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
        print("%s: %d stack bytes, gdb: %s" % (name, len(stack), " ".join(cap["gdb_frames"])))
    for path, (tag, _, pcs) in modules.items():
        dst = os.path.join(outdir, tag + ".cfi.gz")
        if reduce_cfi(path, dst, pcs) == 0:
            os.unlink(dst)  # on no stack: the test gives it no table
        else:
            print("%s: %s" % (tag, os.path.basename(path)))


if __name__ == "__main__":
    if gdb is not None:
        gdb_capture()
    else:
        main()
