#!/usr/bin/env python3
"""The kernel matrix (make check-kernels): memtraced on the kernels memtrace supports.

    python3 tests/kernels/run.py --build DIR [--only LABEL]... [--jobs N] [--list]

Each kernel of MATRIX is fetched from Debian (a private apt state per suite under the cache
folder: the host's own sources and package lists are never touched; the newest version of
each line is looked up at every run), unpacked there (nothing is installed, nothing goes into
/boot) and booted under qemu with the host's / shared read-only over 9p under a tmpfs overlay
(tests/kernels/init.sh, guest.sh): the guest sees this checkout and its build as they are.
In each guest, as root, with no network and no systemd: `memtraced --check --json`, then, on
the kernels that have one, a small subset of the end-to-end tests (tests/e2e/run.py --exact).
The host's own kernel gets the check directly.

Prints one line per kernel and step, a summary table, and writes DIR/kernels/results.json and
results.txt; each guest's console and each step's output are in DIR/kernels/LABEL/. Exits 1
when --check fails on a kernel that must load memtrace (all but 5.10), when an end-to-end
subset fails, when a kernel could not be fetched or booted, or when a guest's console shows
an oops or a panic. docs/kernels.md describes the matrix and its results.

A memtraced without --check gets `memtraced --help` in its place (the results say so).
Standard library only; needs root, qemu-system-x86, busybox-static, cpio, kmod, xz-utils,
zstd (the Makefile's check-kernels installs them).
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# What every end-to-end subset runs (names, exact): counts exact on the known pattern; stacks
# of a program built without frame pointers, down to main; a forked child that executes a new
# program; --comm matching; Python frames of Debian's python3.11; leaks --unreachable; the
# daemon SIGKILLed with its target unharmed. None needs PostgreSQL or Redis (a guest has no
# systemd to run them as the host does) or pyenv's interpreters.
E2E_SUBSET = ["attach_pid", "unwind_paths", "follow_forks_exec", "comm",
              "python_default_debian", "scan_known", "faults_daemon_sigkill"]
# A cgroup's processes traced (--cgroup, attach --cgroup) and an OOM kill's snapshot, on a host
# with the v2 hierarchy alone (a guest mounts only that; the host is hybrid: both are tried).
# On 7.2 too, where tracepoint programs run preemptible: a fork whose program the kernel
# skipped left a child untraced there, until a fork and an exec had two programs each
# (docs/reliability.md, "Two hooks for a fork and an exec")
E2E_CGROUP = ["cgroup_match", "cgroup_attach", "oom_snapshot"]
# Two threads' uprobe programs interleaved on one CPU (a real-time thread preempting an
# ordinary one mid-event): on 6.1-rt it passes with one scratch set too (there the uprobe
# dispatcher's per-CPU buffer, a mutex, still serializes them: tried with a build of one set),
# on 6.12-rt it fails with one set and passes with two; on the newest it runs beside the
# other tests (a real-time wake-up preempts at once under preempt=lazy too)
E2E_PREEMPT = ["preempt_scratch"]

# Debian's generic amd64 kernel packages: linux-image-VERSION (not -rt, -cloud, -dbg, -unsigned)
GENERIC = r"\d+\.\d+[.\d]*(?:-\d+|\+deb\d+)-amd64"

# label, suite (None: the host's kernel, run directly), version pattern (the newest match
# wins), e2e tests, must --check succeed there
MATRIX = [
    {"label": "5.10", "suite": "bullseye", "pattern": r"5\.10\.0-\d+-amd64", "e2e": [],
     "may_refuse": True, "what": "Debian 11's 5.10 (memtrace may refuse it)"},
    {"label": "6.1", "suite": "bookworm", "pattern": r"6\.1\.0-\d+-amd64",
     "e2e": E2E_SUBSET + E2E_CGROUP,
     "what": "Debian 12's 6.1"},
    {"label": "6.1-rt", "suite": "bookworm", "pattern": r"6\.1\.0-\d+-rt-amd64",
     "e2e": E2E_SUBSET + E2E_PREEMPT, "what": "Debian 12's 6.1, PREEMPT_RT"},
    {"label": "6.12", "suite": "bookworm", "pattern": r"6\.12\.\d+\+deb12-amd64", "e2e": [],
     "what": "Debian 12's 6.12"},
    {"label": "6.12-rt", "suite": "bookworm", "pattern": r"6\.12\.\d+\+deb12-rt-amd64",
     "e2e": E2E_PREEMPT, "what": "Debian 12's 6.12, PREEMPT_RT"},
    # preempt_scratch too: on 7.2 (PREEMPT(lazy)) it mixed two threads' events and crashed
    # the guest's kernel while our programs had private stacks (per CPU, shared by a
    # preempted program with the next run); every program has a tail call since
    # (bpf/nopriv.bpf.h), which the kernel gives no private stack
    {"label": "sid", "suite": "sid", "pattern": GENERIC,
     "e2e": E2E_SUBSET + E2E_PREEMPT + E2E_CGROUP,
     "what": "Debian unstable's newest"},
    {"label": "host", "suite": None, "e2e": [], "what": "this machine's kernel"},
]

SUITES = {  # suite -> the suites of its sources (security updates carry the newest kernels)
    "bookworm": (["bookworm", "bookworm-updates"], ["bookworm-security"]),
    "bullseye": (["bullseye", "bullseye-updates"], ["bullseye-security"]),
    "sid": (["sid"], []),
}
LISTS_MAX_AGE = 3600  # seconds: package lists younger than this are not fetched again

print_lock = threading.Lock()


def say(text):
    with print_lock:
        print(text, flush=True)


def version_key(v):
    return [int(x) for x in re.findall(r"\d+", v)]


class Error(Exception):
    """A kernel could not be fetched, unpacked or booted; the message says why."""


# ---- apt: a private state per suite -----------------------------------------------------------

def host_mirrors():
    """(mirror, security mirror) the host's apt sources name."""
    uris = []
    for path in ["/etc/apt/sources.list"] + sorted(
            os.path.join("/etc/apt/sources.list.d", n)
            for n in (os.listdir("/etc/apt/sources.list.d")
                      if os.path.isdir("/etc/apt/sources.list.d") else [])):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        uris += re.findall(r"^URIs:\s*(\S+)", text, re.M)
        uris += re.findall(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.M)
    main = next((u for u in uris if "security" not in u), "http://deb.debian.org/debian")
    sec = next((u for u in uris if "security" in u), "http://deb.debian.org/debian-security")
    return main.rstrip("/"), sec.rstrip("/")


class Apt:
    """apt-get and apt-cache on a private sources list, package lists and cache."""

    def __init__(self, cache, suite):
        self.suite = suite
        self.dir = os.path.join(cache, "apt", suite)
        self.lock = threading.Lock()
        self.opts = ["-o", f"Dir::Etc::sourcelist={self.dir}/debian.sources",
                     "-o", "Dir::Etc::sourceparts=-",
                     "-o", f"Dir::State::Lists={self.dir}/lists",
                     "-o", f"Dir::Cache={self.dir}/cache",
                     "-o", "Dir::Etc::preferences=/dev/null",
                     "-o", "Dir::Etc::preferencesparts=-",
                     "-o", "Acquire::Languages=none",
                     "-o", "APT::Sandbox::User=root"]

    def update(self, log):
        main, sec = host_mirrors()
        suites, security = SUITES[self.suite]
        text = (f"Types: deb\nURIs: {main}\nSuites: {' '.join(suites)}\nComponents: main\n"
                f"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
        if security:
            text += (f"\nTypes: deb\nURIs: {sec}\nSuites: {' '.join(security)}\n"
                     f"Components: main\n"
                     f"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n")
        for d in ("lists/partial", "cache/archives/partial"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        src = os.path.join(self.dir, "debian.sources")
        old = open(src).read() if os.path.exists(src) else None
        stamp = os.path.join(self.dir, "updated")
        if old == text and os.path.exists(stamp) and \
                time.time() - os.path.getmtime(stamp) < LISTS_MAX_AGE:
            return 0.0
        with open(src, "w") as f:
            f.write(text)
        t0 = time.monotonic()
        r = subprocess.run(["apt-get", *self.opts, "-q", "update"], stdin=subprocess.DEVNULL,
                           stdout=log, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise Error(f"apt-get update of {self.suite} failed (status {r.returncode})")
        with open(stamp, "w"):
            pass
        return time.monotonic() - t0

    def newest(self, pattern):
        r = subprocess.run(["apt-cache", *self.opts, "pkgnames", "linux-image-"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if r.returncode != 0:
            raise Error(f"apt-cache pkgnames on {self.suite} failed: {r.stderr.strip()[:200]}")
        found = [m.group(1) for m in (re.fullmatch(f"linux-image-({pattern})", n.strip())
                                      for n in r.stdout.splitlines()) if m]
        if not found:
            raise Error(f"no linux-image-{pattern} in {self.suite}")
        return max(found, key=version_key)

    def download(self, names, into, log):
        r = subprocess.run(["apt-get", *self.opts, "-q", "download", *names], cwd=into,
                           stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            raise Error(f"apt-get download {' '.join(names)} failed (status {r.returncode})")


# ---- a kernel: fetched, unpacked, an initramfs ------------------------------------------------

INITRD_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay", "virtio_rng"]


class Kernel:
    def __init__(self, cache, version):
        self.version = version
        self.root = os.path.join(cache, "kernels", version)
        self.vmlinuz = os.path.join(self.root, "boot", f"vmlinuz-{version}")
        self.initrd = os.path.join(self.root, "memtrace-initrd.img")
        self.moddir = os.path.join(self.root, "lib", "modules", version)

    def present(self):
        return os.path.exists(os.path.join(self.root, ".complete"))

    def fetch(self, apt, log):
        """Download and unpack; returns (download seconds, unpack seconds)."""
        parent = os.path.dirname(self.root)
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{self.version}.", dir=parent)
        try:
            debs = os.path.join(tmp, "debs")
            os.makedirs(debs)
            t0 = time.monotonic()
            with apt.lock:
                apt.download([f"linux-image-{self.version}"], debs, log)
                # newer suites split the image: linux-image-V depends on linux-binary-V (the
                # kernel) and linux-modules-V, under /usr/lib/modules/V
                deb = [n for n in os.listdir(debs) if n.endswith(".deb")][0]
                dep = subprocess.run(["dpkg-deb", "-f", os.path.join(debs, deb), "Depends"],
                                     capture_output=True, text=True).stdout
                more = [w for w in (p.strip().split(" ")[0] for p in re.split(r"[,|]", dep))
                        if re.match(r"linux-(binary|modules|base)-\d", w)]
                if more:
                    apt.download(more, debs, log)
            t1 = time.monotonic()
            tree = os.path.join(tmp, "tree")
            for n in sorted(os.listdir(debs)):
                r = subprocess.run(["dpkg-deb", "-x", os.path.join(debs, n), tree],
                                   stdout=log, stderr=subprocess.STDOUT)
                if r.returncode != 0:
                    raise Error(f"dpkg-deb -x {n} failed")
            shutil.rmtree(debs)
            v = self.version
            usr = os.path.join(tree, "usr", "lib", "modules", v)
            if not os.path.exists(os.path.join(tree, "boot", f"vmlinuz-{v}")) and \
                    os.path.exists(os.path.join(usr, "vmlinuz")):
                os.makedirs(os.path.join(tree, "boot"), exist_ok=True)
                os.makedirs(os.path.join(tree, "lib", "modules"), exist_ok=True)
                os.symlink(f"../usr/lib/modules/{v}/vmlinuz",
                           os.path.join(tree, "boot", f"vmlinuz-{v}"))
                if os.path.exists(os.path.join(usr, "config")):
                    shutil.copy(os.path.join(usr, "config"),
                                os.path.join(tree, "boot", f"config-{v}"))
                if not os.path.lexists(os.path.join(tree, "lib", "modules", v)):
                    os.symlink(f"../../usr/lib/modules/{v}", os.path.join(tree, "lib", "modules", v))
            if not os.path.exists(os.path.join(tree, "boot", f"vmlinuz-{v}")):
                raise Error(f"no kernel image in linux-image-{v}")
            subprocess.run(["depmod", "-b", tree, v], check=True, stdout=log,
                           stderr=subprocess.STDOUT)
            shutil.rmtree(self.root, ignore_errors=True)
            os.rename(tree, self.root)
            with open(os.path.join(self.root, ".complete"), "w"):
                pass
            return t1 - t0, time.monotonic() - t1
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def make_initrd(self, log):
        """A busybox initramfs with the modules that mount the host's root (tests/kernels/init.sh)."""
        if os.path.exists(self.initrd):
            return
        ird = tempfile.mkdtemp(prefix=".initrd.", dir=self.root)
        try:
            for d in ("bin", "proc", "sys", "dev", "lower", "rw", "newroot", "modules"):
                os.makedirs(os.path.join(ird, d))
            shutil.copy("/bin/busybox", os.path.join(ird, "bin", "busybox"))
            shutil.copy(os.path.join(HERE, "init.sh"), os.path.join(ird, "init"))
            os.chmod(os.path.join(ird, "init"), 0o755)
            order = []
            for m in INITRD_MODULES:
                r = subprocess.run(["modprobe", "-d", self.root, "-S", self.version,
                                    "--show-depends", m], capture_output=True, text=True)
                for line in r.stdout.splitlines():
                    w = line.split()
                    if len(w) >= 2 and w[0] == "insmod" and w[1] not in order:
                        order.append(w[1])
            names = []
            for ko in order:
                base = os.path.basename(ko)
                out = os.path.join(ird, "modules", re.sub(r"\.(xz|zst|gz)$", "", base))
                tool = {"xz": ["xz", "-dc"], "zst": ["zstd", "-qdc"],
                        "gz": ["gzip", "-dc"]}.get(base.rsplit(".", 1)[-1])
                with open(out, "wb") as f:
                    if tool:
                        subprocess.run([*tool, ko], stdout=f, check=True)
                    else:
                        with open(ko, "rb") as src:
                            shutil.copyfileobj(src, f)
                names.append(os.path.basename(out))
            config = os.path.join(self.root, "boot", f"config-{self.version}")
            builtin = os.path.exists(config) and "\nCONFIG_9P_FS=y" in open(config).read()
            if "9p.ko" not in names and not builtin:
                raise Error(f"kernel {self.version} has no 9p filesystem (a -cloud flavour?)")
            with open(os.path.join(ird, "modules", "order"), "w") as f:
                f.write("".join(n + "\n" for n in names))
            with open(self.initrd + ".tmp", "wb") as f:
                find = subprocess.Popen(["find", "."], cwd=ird, stdout=subprocess.PIPE)
                cpio = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"], cwd=ird,
                                        stdin=find.stdout, stdout=subprocess.PIPE)
                find.stdout.close()
                gz = subprocess.Popen(["gzip", "-1"], stdin=cpio.stdout, stdout=f)
                cpio.stdout.close()
                if gz.wait() or cpio.wait() or find.wait():
                    raise Error("building the initramfs failed")
            os.rename(self.initrd + ".tmp", self.initrd)
        finally:
            shutil.rmtree(ird, ignore_errors=True)


# ---- running the steps ------------------------------------------------------------------------

def accel():
    """KVM when usable at full speed; not when /dev/kvm is PVM nested virtualisation
    (kvm_pvm), which runs stock kernels far too slowly: TCG, single-threaded then
    (multi-threaded TCG was no faster, and raced the kernel's text patching on 7.2)."""
    if os.access("/dev/kvm", os.W_OK) and not os.path.isdir("/sys/module/kvm_pvm"):
        return ["-accel", "kvm", "-cpu", "host"]
    return ["-accel", "tcg,thread=single", "-cpu", "max"]


def steps_for(entry, args, check_argv):
    """[(name, seconds, argv)] of the kernel's steps: the check, then each end-to-end test
    on its own (its time and status of its own, a time-out that costs only it)."""
    steps = [("check", args.check_timeout, check_argv)]
    if entry["suite"] is None or args.no_e2e:
        return steps
    # under emulation the guest is 3-4x slower than the host the tests' bounds were set on
    slow = ["env", "MEMTRACE_E2E_SLOW=4"] if "tcg" in accel()[1] else []
    for name in entry["e2e"]:
        steps.append((f"e2e-{name}", args.e2e_timeout,
                      [*slow, "python3", "tests/e2e/run.py", "--build", args.build, "--exact",
                       "-k", name]))
    return steps


def boot(entry, kernel, steps, outdir, args):
    """Boot the kernel, run the steps, power off; per-step results and the boot time."""
    with open(os.path.join(outdir, "repo"), "w") as f:
        f.write(REPO + "\n")  # guest.sh: no tmpfs over /tmp when the checkout is there
    with open(os.path.join(outdir, "steps.sh"), "w") as f:
        f.write(f"cd {shlex.quote(REPO)} || exit 1\n")
        for name, seconds, argv in steps:
            f.write(f"step {name} {seconds} {shlex.join(argv)}\n")
    shutil.copy(os.path.join(HERE, "guest.sh"), os.path.join(outdir, "guest.sh"))
    budget = min(args.kernel_timeout,
                 args.boot_timeout + sum(s for _, s, _ in steps) + 30 * len(steps))
    cmd = ["qemu-system-x86_64", *accel(), "-m", args.mem, "-smp", str(entry.get("cpus", args.cpus)),
           "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
           "-serial", f"file:{os.path.join(outdir, 'console.log')}",
           "-kernel", kernel.vmlinuz, "-initrd", kernel.initrd,
           "-append", f"console=ttyS0 rdinit=/init panic=-1 quiet loglevel=4 "
                      f"mt.kroot={kernel.root}",
           "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
           "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
           "-fsdev", f"local,id=xchg,path={outdir},security_model=none",
           "-device", "virtio-9p-pci,fsdev=xchg,mount_tag=xchg",
           "-device", "virtio-rng-pci"]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=budget)
        qemu = f"qemu exited {r.returncode}" + (f": {r.stderr.strip()[:300]}"
                                                  if r.returncode else "")
    except subprocess.TimeoutExpired:
        qemu = f"qemu killed after {budget} s"
    wall = time.monotonic() - t0
    booted = read_float(os.path.join(outdir, "booted"))
    info = read_text(os.path.join(outdir, "guest.info")).splitlines()
    guest = {"release": info[0] if info else None, "build": info[1] if len(info) > 1 else None,
             "cpus": int(info[2]) if len(info) > 2 else None,
             "mem_kb": int(info[3]) if len(info) > 3 else None,
             "boot_s": round(booted, 1) if booted is not None else None,
             "wall_s": round(wall, 1), "qemu": qemu}
    results = {name: step_result(outdir, name) for name, _, _ in steps}
    guest["oops"], guest["warnings"] = console_errors(os.path.join(outdir, "console.log"))
    if booted is None:
        tail = read_text(os.path.join(outdir, "console.log")).splitlines()[-15:]
        raise Error(f"the guest did not boot ({qemu}); console: " + " | ".join(tail))
    return guest, results


OOPS = re.compile(r"\b(BUG:|Oops|general protection fault|Kernel panic|kernel BUG)")


def console_errors(path):
    """The kernel's own failures in the guest console: (oops lines, warning lines). An oops
    or panic fails the kernel; a WARNING is shown."""
    oops, warnings = [], []
    for line in read_text(path).splitlines():
        text = re.sub(r"^\[\s*[\d.]+\]\s*", "", line).strip()
        if OOPS.search(text) or text.startswith(("RIP: 0010:", "Comm:")) or \
                re.match(r"CPU: \d+ .*PID: \d+ Comm:", text) or \
                (oops and re.match(r"(\? )?\w+\+0x[0-9a-f]+/0x[0-9a-f]+", text) and
                 len(oops) < 24):
            if len(oops) < 24 and not text.startswith("? "):
                oops.append(text)
        elif text.startswith("WARNING:") and len(warnings) < 8:
            warnings.append(text)
    return oops, warnings


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def read_float(path):
    try:
        return float(read_text(path).split()[0])
    except (IndexError, ValueError):
        return None


def step_result(outdir, name):
    start = read_float(os.path.join(outdir, f"{name}.start"))
    end = read_float(os.path.join(outdir, f"{name}.end"))
    rc = read_float(os.path.join(outdir, f"{name}.rc"))
    return {"rc": int(rc) if rc is not None else None,
            "seconds": round(end - start, 1) if start is not None and end is not None else None,
            "stdout": read_text(os.path.join(outdir, f"{name}.out")),
            "stderr": read_text(os.path.join(outdir, f"{name}.err"))}


def run_on_host(steps, outdir):
    results = {}
    for name, seconds, argv in steps:
        t0 = time.monotonic()
        with open(os.path.join(outdir, f"{name}.out"), "w") as out, \
                open(os.path.join(outdir, f"{name}.err"), "w") as err:
            try:
                rc = subprocess.run(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, timeout=seconds).returncode
            except subprocess.TimeoutExpired:
                rc = 124
        for suffix, text in (("rc", str(rc)), ("start", "0"),
                             ("end", str(time.monotonic() - t0))):
            with open(os.path.join(outdir, f"{name}.{suffix}"), "w") as f:
                f.write(text + "\n")
        results[name] = step_result(outdir, name)
    return results


# ---- what a step's output says ----------------------------------------------------------------

def check_summary(res, placeholder):
    """The check step: status, what --check --json says (kernel, features, each program's
    processed instructions), the last lines of its stderr."""
    out = {"rc": res["rc"], "seconds": res["seconds"], "placeholder": placeholder}
    if placeholder:
        return out
    try:
        obj = json.loads(res["stdout"])
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        for k in ("kernel", "features", "features_required", "configs", "limit",
                  "headroom_insns", "max_processed_insns", "headroom_ok", "default_loads"):
            if k in obj:
                out[k] = obj[k]
        progs = obj.get("programs") if isinstance(obj.get("programs"), list) else []
        out["programs"] = [p for p in progs if isinstance(p, dict)]
    elif res["stdout"].strip():
        out["stdout_not_json"] = res["stdout"].strip()[-500:]
    err = [l for l in res["stderr"].splitlines() if l.strip()]
    if err:
        out["stderr_tail"] = err[-8:]
    return out


def e2e_summary(results):
    """The end-to-end steps together: counts of checks, each test's status and time."""
    out = {"rc": 0, "seconds": 0.0, "passed": 0, "failed": 0, "tests": {}, "failures": [],
           "skipped": []}
    for step, res in results.items():
        if not step.startswith("e2e-"):
            continue
        name = step[4:]
        lines = res["stdout"].splitlines()
        m = next((re.match(r"e2e: (\d+) passed, (\d+) failed", l) for l in reversed(lines)
                  if l.startswith("e2e: ")), None)
        passed, failed = (int(m.group(1)), int(m.group(2))) if m else (0, 1)
        rc = res["rc"] if res["rc"] is not None else -1
        out["tests"][name] = {"rc": rc, "seconds": res["seconds"], "passed": passed,
                              "failed": failed}
        out["passed"] += passed
        out["failed"] += failed if rc == 0 or failed else 1
        out["seconds"] += res["seconds"] or 0
        if rc != 0:
            out["rc"] = 1
            fails = []
            for i, l in enumerate(lines):  # each failure with the last lines of its logs
                if l.startswith("FAIL "):
                    logs = []
                    for x in lines[i + 1:]:
                        if not x.startswith("    | "):
                            break
                        logs.append(x[6:].strip())
                    logs = logs[-2:]  # a daemon's last lines say why it stopped
                    fails.append(" / ".join([l[5:]] + logs))
            if not fails:
                why = {124: "timed out", 137: "killed at its time-out", -1: "no status"}
                err = [l for l in res["stderr"].splitlines() if l.strip()]
                fails = [f"{name}: exit {rc}" + (f" ({why[rc]})" if rc in why else "") +
                         (f": {err[-1]}" if err else "")]
            out["failures"] += fails
        out["skipped"] += [l[5:] for l in lines if l.startswith("SKIP ")]
    out["seconds"] = round(out["seconds"], 1)
    return out


def fmt_s(s):
    return "-" if s is None else f"{s:.0f} s"


def step_line(label, name, ok, text):
    return f"kernels: {label:<7} {name:<9} {'ok  ' if ok else 'FAIL'} {text}"


def insns(p):
    n = p.get("processed_insns")
    return n if isinstance(n, int) else -1


def report_check(label, c, must):
    """One line for the check, then one a configuration: its programs loaded and its
    largest, each program refused with the verifier's line."""
    ok = c["rc"] == 0 or not must
    if c.get("placeholder"):
        text = f"(memtraced --help, no --check yet) exit {c['rc']}, {fmt_s(c['seconds'])}"
        say(step_line(label, "check", c["rc"] == 0, text))
        return c["rc"] == 0
    progs = c.get("programs", [])
    loaded = sum(1 for p in progs if p.get("loaded"))
    text = f"exit {c['rc']}, {fmt_s(c['seconds'])}"
    if progs:
        configs = list(dict.fromkeys(str(p.get("config")) for p in progs))
        top = max(progs, key=insns)
        text += f": {loaded}/{len(progs)} programs loaded in {len(configs)} configurations"
        if insns(top) >= 0:
            text += (f", the most processed instructions {insns(top):,} ({top.get('program')}, "
                     f"{top.get('config')}) of {c.get('limit') or top.get('limit')}")
        if "default_loads" in c:
            text += "; the default loads" if c["default_loads"] else "; the default does NOT load"
    if c["rc"] != 0 and not must:
        text += " (allowed to refuse here)"
    say(step_line(label, "check", ok, text))
    missing = [f for f in c.get("features_required") or []
               if not (c.get("features") or {}).get(f)]
    if missing:
        say(f"kernels: {label:<7}    features missing: {', '.join(missing)}")
    for cfg in dict.fromkeys(str(p.get("config")) for p in progs):
        mine = [p for p in progs if str(p.get("config")) == cfg]
        top = max(mine, key=insns)
        n = sum(1 for p in mine if p.get("loaded"))
        say(f"kernels: {label:<7}    {cfg:<14} {n:>3}/{len(mine):<3} loaded" +
            (f", largest {top.get('program')} {insns(top):,} insns" if insns(top) >= 0 else ""))
        for p in mine:
            if not p.get("loaded") and p.get("tried", True):
                say(f"kernels: {label:<7}      REFUSED {p.get('program')}: {p.get('error')}")
        untried = [p for p in mine if not p.get("loaded") and not p.get("tried", True)]
        conf = next((x for x in c.get("configs") or [] if x.get("config") == cfg), {})
        if untried:
            say(f"kernels: {label:<7}      {len(untried)} not tried: {conf.get('error')}")
    if c["rc"] != 0 or not progs:
        for l in c.get("stderr_tail", [])[-4:]:
            say(f"kernels: {label:<7}    | {l}")
    return ok


def report_e2e(label, e):
    ok = e["rc"] == 0
    tests = ", ".join(f"{n} {fmt_s(t['seconds'])}{'' if t['rc'] == 0 else ' FAIL'}"
                      for n, t in e["tests"].items())
    text = f"{e['passed']} passed, {e['failed']} failed, {fmt_s(e['seconds'])}: {tests}"
    say(step_line(label, "e2e", ok, text))
    for f in e["failures"]:
        say(f"kernels: {label:<7}    FAIL {f[:300]}")
    for s in e["skipped"]:
        say(f"kernels: {label:<7}    SKIP {s[:300]}")
    return ok


# ---- one kernel -------------------------------------------------------------------------------

def run_kernel(entry, args, apts, versions, check_argv, placeholder):
    label = entry["label"]
    outdir = os.path.join(args.out, label)
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    rec = {"label": label, "what": entry["what"], "suite": entry["suite"],
           "must_load": not entry.get("may_refuse"), "e2e_tests": entry["e2e"],
           "ok": False}
    steps = steps_for(entry, args, check_argv)
    try:
        if entry["suite"] is None:
            rec["version"] = os.uname().release
            results = run_on_host(steps, outdir)
            rec["guest"] = None
        else:
            version = versions[label]
            rec["version"] = version
            kernel = Kernel(args.cache, version)
            if kernel.present():
                rec["download_s"] = rec["unpack_s"] = 0.0
                rec["cached"] = True
            else:
                with open(os.path.join(outdir, "fetch.log"), "w") as log:
                    dl, up = kernel.fetch(apts[entry["suite"]], log)
                rec["download_s"], rec["unpack_s"], rec["cached"] = round(dl, 1), round(up, 1), False
                say(step_line(label, "fetch", True, f"linux-image-{version}: download "
                              f"{dl:.0f} s, unpack {up:.0f} s"))
            with open(os.path.join(outdir, "fetch.log"), "a") as log:
                kernel.make_initrd(log)
            rec["guest"], results = boot(entry, kernel, steps, outdir, args)
            g = rec["guest"]
            rt = " PREEMPT_RT" if "PREEMPT_RT" in (g["build"] or "") else ""
            say(step_line(label, "boot", True, f"{g['release']}{rt}, {g['cpus']} CPUs: "
                          f"booted in {fmt_s(g['boot_s'])}, {fmt_s(g['wall_s'])} in all"))
            if g["oops"]:
                say(step_line(label, "kernel", False, "oops in the guest (console.log):"))
                for l in g["oops"][:14]:
                    say(f"kernels: {label:<7}    | {l}")
            for l in g["warnings"]:
                say(f"kernels: {label:<7}    kernel {l}")
    except Error as e:
        rec["error"] = str(e)
        say(step_line(label, "boot", False, str(e)[:600]))
        return rec
    except Exception as e:  # a harness bug: still a result line, and the other kernels go on
        rec["error"] = f"{type(e).__name__}: {e}"
        say(step_line(label, "boot", False, rec["error"][:600]))
        return rec
    ok = True
    try:
        if "check" in results:
            rec["check"] = check_summary(results["check"], placeholder)
            if rec["check"]["rc"] is None:
                rec["check"]["rc"] = -1
            ok &= report_check(label, rec["check"], rec["must_load"])
        if any(n.startswith("e2e-") for n in results):
            rec["e2e"] = e2e_summary(results)
            ok &= report_e2e(label, rec["e2e"])
    except Exception as e:  # output the harness did not expect: a failure, not a crash
        rec["error"] = f"reading the results: {type(e).__name__}: {e}"
        say(step_line(label, "results", False, rec["error"][:600]))
        ok = False
    if (rec.get("guest") or {}).get("oops"):
        ok = False
    rec["ok"] = ok
    return rec


# ---- the matrix -------------------------------------------------------------------------------

def summary_table(records, total_s):
    rows = [("kernel", "version", "fetch", "boot", "check", "e2e", "result")]
    for r in records:
        g = r.get("guest") or {}
        fetch = "cached" if r.get("cached") else (
            f"{r['download_s'] + r['unpack_s']:.0f} s" if "download_s" in r else "-")
        c = r.get("check")
        if c is None:
            check = "-"
        elif c.get("placeholder"):
            check = f"help:{c['rc']} {fmt_s(c['seconds'])}"
        else:
            progs = c.get("programs", [])
            check = (f"exit {c['rc']} {sum(1 for p in progs if p.get('loaded'))}/{len(progs)} "
                     f"{fmt_s(c['seconds'])}")
        e = r.get("e2e")
        e2e = f"{e['passed']}/{e['passed'] + e['failed']} {fmt_s(e['seconds'])}" if e else "-"
        result = "ok" if r["ok"] else ("error" if "error" in r else
                                       "FAIL, oops" if g.get("oops") else "FAIL")
        rows.append((r["label"], r.get("version") or "?", fetch, fmt_s(g.get("boot_s")),
                     check, e2e, result))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    lines.append(f"total {total_s:.0f} s")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description="memtrace on a matrix of kernels under qemu (root)")
    ap.add_argument("--build", default="build", metavar="DIR",
                    help="the build (memtraced, memtracectl, tests/); relative to the checkout")
    ap.add_argument("--cache", default=os.environ.get("MEMTRACE_KERNELS_CACHE",
                                                      "/var/cache/memtrace-kernels"),
                    help="kernels and apt state (default /var/cache/memtrace-kernels)")
    ap.add_argument("--only", action="append", default=[], metavar="LABEL",
                    help="only these kernels (" + ", ".join(e["label"] for e in MATRIX) + ")")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="guests at once (default: 2, or 1 on one CPU)")
    ap.add_argument("--mem", default="3G", help="guest memory (default 3G)")
    ap.add_argument("--cpus", type=int, default=2, help="guest CPUs (default 2)")
    ap.add_argument("--no-e2e", action="store_true", help="the check alone")
    ap.add_argument("--e2e-tests", metavar="NAMES",
                    help="these end-to-end tests (names, space-separated) on every guest of "
                         "the selection, instead of the matrix's subsets")
    ap.add_argument("--check-timeout", type=int, default=900)
    ap.add_argument("--e2e-timeout", type=int, default=300, help="seconds a test (300)")
    ap.add_argument("--kernel-timeout", type=int, default=1200,
                    help="seconds a guest, boot to power-off (1200)")
    ap.add_argument("--boot-timeout", type=int, default=180)
    ap.add_argument("--list", action="store_true",
                    help="print the version each kernel of the matrix resolves to, and stop")
    ap.add_argument("--keep-old", action="store_true",
                    help="keep cached kernels that are no longer in the matrix")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("kernels: needs root (qemu's 9p share of / and apt)", flush=True)
        return 1
    unknown = set(args.only) - {e["label"] for e in MATRIX}
    if unknown:
        ap.error(f"no kernel labelled {', '.join(sorted(unknown))}")
    os.chdir(REPO)
    args.build = os.path.relpath(os.path.abspath(args.build), REPO)
    args.out = os.path.join(REPO, args.build, "kernels")
    os.makedirs(args.out, exist_ok=True)
    memtraced = os.path.join(args.build, "memtraced")
    if not os.access(memtraced, os.X_OK):
        print(f"kernels: no {memtraced} (make all first)", flush=True)
        return 1
    helptext = subprocess.run([memtraced, "--help"], capture_output=True, text=True)
    placeholder = "--check" not in helptext.stdout + helptext.stderr
    check_argv = [memtraced, "--help"] if placeholder else [memtraced, "--check", "--json"]
    matrix = [e for e in MATRIX if not args.only or e["label"] in args.only]
    if args.e2e_tests is not None:
        matrix = [dict(e, e2e=args.e2e_tests.split() if e["suite"] else []) for e in matrix]

    started = time.monotonic()
    os.makedirs(args.cache, exist_ok=True)
    apts, versions = {}, {}
    with open(os.path.join(args.out, "apt.log"), "w") as log:
        for e in matrix:
            s = e["suite"]
            if s is None:
                continue
            try:
                if s not in apts:
                    apts[s] = Apt(args.cache, s)
                    t = apts[s].update(log)
                    if t:
                        say(f"kernels: package lists of {s}: {t:.0f} s")
                versions[e["label"]] = apts[s].newest(e["pattern"])
            except Error as err:
                say(step_line(e["label"], "resolve", False, str(err)))
    lists_s = time.monotonic() - started
    for e in matrix:
        v = versions.get(e["label"], os.uname().release if e["suite"] is None else "?")
        say(f"kernels: {e['label']:<7} {v:<28} {e['what']}"
            f"{', e2e: ' + ' '.join(e['e2e']) if e['e2e'] and not args.no_e2e else ''}")
    if args.list:
        return 0

    records = {}
    # the longest first (those with end-to-end tests), so that the last guest to start is short
    todo = sorted((e for e in matrix if e["suite"] is None or e["label"] in versions),
                  key=lambda e: -len(e["e2e"]))
    for e in matrix:
        if e not in todo:
            records[e["label"]] = {"label": e["label"], "what": e["what"], "ok": False,
                                   "error": "no version found", "suite": e["suite"]}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futs = {pool.submit(run_kernel, e, args, apts, versions, check_argv, placeholder):
                e["label"] for e in todo}
        for f in concurrent.futures.as_completed(futs):
            records[futs[f]] = f.result()
    ordered = [records[e["label"]] for e in matrix]
    total = time.monotonic() - started

    if not args.keep_old and not args.only:
        keep = set(versions.values())
        kdir = os.path.join(args.cache, "kernels")
        for n in os.listdir(kdir) if os.path.isdir(kdir) else []:
            if n not in keep and not n.startswith("."):
                shutil.rmtree(os.path.join(kdir, n), ignore_errors=True)

    table = summary_table(ordered, total)
    say("kernels: summary\n" + table.rstrip())
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "host_kernel": os.uname().release, "jobs": args.jobs, "guest_mem": args.mem,
              "guest_cpus": args.cpus, "accel": accel()[1],
              "check_command": " ".join(check_argv[1:]) if not placeholder else "--help",
              "lists_s": round(lists_s, 1), "total_s": round(total, 1), "kernels": ordered}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "results.txt"), "w") as f:
        f.write(table)
    bad = [r["label"] for r in ordered if not r["ok"]]
    say(f"kernels: {len(ordered) - len(bad)} ok, {len(bad)} failed"
        f"{' (' + ', '.join(bad) + ')' if bad else ''}; {args.build}/kernels/results.json")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
