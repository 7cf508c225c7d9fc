#!/usr/bin/env python3
"""End-to-end tests of memtrace as installed: `make install` into a DESTDIR, the systemd unit,
readiness notification, the unit's capability set, man pages, bash completion, and the Debian
package built, installed, used and removed (see docs/packaging.md)."""

import grp
import stat

from harness import *  # noqa: F401,F403

REPO = os.path.dirname(os.path.dirname(HERE))
UNIT = "memtraced@.service"
IDLE_UNIT = "memtraced.service"


def sh(argv, timeout=600, **kw):
    """Run argv; (returncode, stdout, stderr) as text."""
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise Fail(f"{' '.join(argv)} did not finish within {timeout} s") from None
    return r.returncode, r.stdout, r.stderr


def must(argv, what, timeout=600, **kw):
    rc, out, err = sh(argv, timeout, **kw)
    if rc != 0:
        tail = one_line((err or out)[-400:])
        raise Fail(f"{what}: {' '.join(argv[:3])}... exited {rc}: {tail}")
    return out


def version():
    with open(os.path.join(REPO, "Makefile")) as f:
        m = re.search(r"^VERSION\s*:=\s*(\S+)", f.read(), re.M)
    if not m:
        raise Fail("no VERSION in the Makefile")
    return m.group(1)


def make(r, *targets, timeout=900):
    return must(["make", "-s", "-C", REPO, f"O={r.build}", *targets], f"make {targets[0]}",
                timeout=timeout)


def trace_pattern(r, memtraced, memtracectl, wrap=(), tag="installed"):
    """The known pattern traced by these binaries: every number must be exact."""
    r.memtraced, r.memtracectl = memtraced, memtracectl
    target = r.start_pattern(tag=f"pattern-{tag}")
    daemon = r.spawn([*wrap, memtraced, "--socket", r.sock, "--pid", str(target.pid)],
                     "daemon", f"memtraced-{tag}.out")
    r.wait_daemon(daemon, r.sock)
    r.wait_state("attached", target.pid, daemon)
    target.send_signal(signal.SIGUSR1)
    expect = r.read_expect(os.path.join(r.tmp, f"pattern-{tag}.out"), target)
    check_exact_stats(r.wait_stats(expect), expect)
    check_sites(r.report("--top", "0", "--sort", "allocated"), expect)
    daemon.send_signal(signal.SIGTERM)
    rc = r.wait_exit(daemon, "memtraced")
    if rc != 0:
        raise Fail(f"memtraced exited {rc} after SIGTERM")
    return daemon


def help_options(binary):
    out = must([binary, "--help"], f"{os.path.basename(binary)} --help")
    return out, sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", out)))


def help_commands(memtracectl):
    out = must([memtracectl, "--help"], "memtracectl --help")
    section = out.split("Commands:", 1)[1].split("Options:", 1)[0]
    return sorted(set(re.findall(r"^  ([a-z][a-z-]*)", section, re.M)))


def check_man(page, binary, commands=()):
    """groff renders the page without a warning, and it names every option and command."""
    rc, out, err = sh(["groff", "-man", "-Tutf8", "-ww", "-z", page])
    if rc != 0 or err.strip():
        raise Fail(f"groff warns about {os.path.basename(page)}: {one_line(err)[:300]}")
    with open(page) as f:
        text = f.read().replace("\\-", "-")
    _, options = help_options(binary)
    missing = [o for o in options if o not in text]
    missing += [c for c in commands if not re.search(rf"^\.B[RI]? {c}\b", text, re.M)]
    if missing:
        raise Fail(f"{os.path.basename(page)} does not document {', '.join(missing)}")


def complete(script, function, words):
    """COMPREPLY of a completion function for words (the last one being completed)."""
    quoted = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; "
            f"{function}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    out = must(["bash", "--norc", "--noprofile", "-c", prog], f"completion {' '.join(words)}")
    return set(out.split())


def check_completion(compdir, memtraced, memtracectl):
    ctl = os.path.join(compdir, "memtracectl")
    daemon = os.path.join(compdir, "memtraced")
    _, d_opts = help_options(memtraced)
    offered = complete(daemon, "_memtraced", ["memtraced", "--"])
    missing = [o for o in d_opts if o not in offered]
    if missing:
        raise Fail(f"memtraced completion does not offer {', '.join(missing)}")
    if complete(daemon, "_memtraced", ["memtraced", "--stack-walker", ""]) != \
            {"dwarf", "fp", "kernel", "caller"}:
        raise Fail("memtraced --stack-walker does not complete to dwarf, fp, kernel, caller")
    commands = help_commands(memtracectl)
    offered = complete(ctl, "_memtracectl", ["memtracectl", ""])
    missing = [c for c in commands if c not in offered]
    if missing:
        raise Fail(f"memtracectl completion does not offer the commands {', '.join(missing)}")
    _, c_opts = help_options(memtracectl)
    offered = set()
    for c in commands:
        offered |= complete(ctl, "_memtracectl", ["memtracectl", c, "--"])
    missing = [o for o in c_opts if o not in offered]
    if missing:
        raise Fail(f"memtracectl completion does not offer {', '.join(missing)}")
    got = complete(ctl, "_memtracectl", ["memtracectl", "report", "--sort", ""])
    if got != {"live", "allocated", "count", "peak", "temporary"}:
        raise Fail(f"report --sort completes to {sorted(got)}")


def unit_capabilities(unit_path):
    with open(unit_path) as f:
        m = re.search(r"^CapabilityBoundingSet=(.*)$", f.read(), re.M)
    if not m:
        raise Fail(f"{unit_path} has no CapabilityBoundingSet")
    return m.group(1).split()


def bounded(caps):
    """setpriv argv that runs a root process with exactly caps in its bounding set."""
    spec = ",".join(["-all"] + ["+" + c.lower().removeprefix("cap_") for c in caps])
    return ["setpriv", f"--bounding-set={spec}", "--inh-caps=-all"]


def verify_unit(unit_path, env=None):
    rc, out, err = sh(["systemd-analyze", "verify", unit_path], env=env)
    if rc != 0 or (out + err).strip():
        raise Fail(f"systemd-analyze verify {os.path.basename(unit_path)} exited {rc}: "
                   f"{one_line(out + err)[:400]}")


# ---- tests ------------------------------------------------------------------------------------


def test_install_destdir(r):
    """make install into a DESTDIR, then everything runs from there; make uninstall removes it."""
    root = os.path.join(r.tmp, "root")
    prefix = "/usr/local"
    base = root + prefix
    sbin, bin_ = f"{base}/sbin/memtraced", f"{base}/bin/memtracectl"
    unit = f"{base}/lib/systemd/system/{UNIT}"
    with r.part("files"):
        make(r, "install", f"DESTDIR={root}", f"PREFIX={prefix}")
        want = {sbin: 0o755, bin_: 0o755, unit: 0o644,
                f"{base}/share/man/man8/memtraced.8": 0o644,
                f"{base}/share/man/man1/memtracectl.1": 0o644,
                f"{base}/share/bash-completion/completions/memtraced": 0o644,
                f"{base}/share/bash-completion/completions/memtracectl": 0o644,
                f"{base}/share/doc/memtrace/README.md": 0o644,
                f"{base}/share/doc/memtrace/metrics.md": 0o644}
        for path, mode in want.items():
            if not os.path.isfile(path):
                raise Fail(f"{path[len(root):]} was not installed")
            if stat.S_IMODE(os.stat(path).st_mode) != mode:
                raise Fail(f"{path[len(root):]} has mode {oct(os.stat(path).st_mode)}, "
                           f"expected {oct(mode)}")
        oom = "--oom-snapshots /var/lib/memtrace/oom"
        with open(unit) as f:
            if f"ExecStart={prefix}/sbin/memtraced {oom} --pid %i" not in f.read():
                raise Fail(f"the installed unit does not run {prefix}/sbin/memtraced")
        with open(f"{base}/lib/systemd/system/{IDLE_UNIT}") as f:
            if f"ExecStart={prefix}/sbin/memtraced {oom}\n" not in f.read():
                raise Fail(f"the idle unit does not run {prefix}/sbin/memtraced without a "
                           "target")
        oomdir = f"{root}/var/lib/memtrace/oom"
        if not os.path.isdir(oomdir) or stat.S_IMODE(os.stat(oomdir).st_mode) != 0o700:
            raise Fail("make install did not make /var/lib/memtrace/oom (mode 0700), the "
                       "units' --oom-snapshots folder")

    with r.part("version_help"):
        out = must([sbin, "--version"], "memtraced --version")
        if out.strip() != f"memtraced {version()}":
            raise Fail(f"memtraced --version printed {out.strip()!r}")
        out = must([bin_, "--help"], "memtracectl --help")
        if "Usage: memtracectl" not in out:
            raise Fail("memtracectl --help does not start with its usage")

    with r.part("trace"):
        trace_pattern(r, sbin, bin_, tag="destdir")

    with r.part("man"):
        check_man(f"{base}/share/man/man8/memtraced.8", sbin)
        check_man(f"{base}/share/man/man1/memtracectl.1", bin_, help_commands(bin_))

    with r.part("completion"):
        check_completion(f"{base}/share/bash-completion/completions", sbin, bin_)

    with r.part("unit_verify"):
        # the unit as installed, pointed at this DESTDIR; man: references resolve in it too
        for name in (UNIT, IDLE_UNIT):
            copy = os.path.join(r.tmp, name)
            with open(f"{base}/lib/systemd/system/{name}") as f, open(copy, "w") as out:
                out.write(f.read().replace(f"ExecStart={prefix}/", f"ExecStart={base}/"))
            verify_unit(copy, env=dict(os.environ, MANPATH=f"{base}/share/man"))

    with r.part("uninstall"):
        make(r, "uninstall", f"DESTDIR={root}", f"PREFIX={prefix}")
        left = [os.path.join(d, f)[len(root):] for d, _, fs in os.walk(root) for f in fs]
        if left:
            raise Fail(f"make uninstall left {', '.join(sorted(left)[:5])}")


def test_notify_ready(r):
    """Type=notify: READY=1 arrives from memtraced's own pid once the socket answers."""
    target = r.start_pattern()
    path = os.path.join(r.tmp, "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        listener.bind(path)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        listener.settimeout(TIMEOUT)
        daemon = r.spawn([r.memtraced, "--socket", r.sock, "--pid", str(target.pid)], "daemon",
                         "memtraced.out", env=dict(os.environ, NOTIFY_SOCKET=path))
        with r.part("ready"):
            try:
                msg, anc, _, _ = listener.recvmsg(4096, socket.CMSG_SPACE(12))
            except socket.timeout:
                raise Fail(f"no notification within {TIMEOUT:.0f} s") from None
            if msg != b"READY=1":
                raise Fail(f"notification is {msg!r}, expected b'READY=1'")
            creds = [d for lvl, t, d in anc
                     if lvl == socket.SOL_SOCKET and t == socket.SCM_CREDENTIALS]
            sender = int.from_bytes(creds[0][:4], "little") if creds else None
            if sender != daemon.pid:
                raise Fail(f"sent by pid {sender}, not memtraced's {daemon.pid} "
                           f"(systemd's NotifyAccess=main would ignore it)")
            # ready means ready: the socket answers and the probes are in place, no retry
            rc, out, err = r.ctl("status", "--json")
            if rc != 0:
                raise Fail(f"status right after READY=1 exited {rc}: {one_line(err)}")
            t = r.status_target(json.loads(out), target.pid)
            if not t or t.get("state") != "attached":
                raise Fail(f"target state right after READY=1 is {t and t.get('state')!r}")
        with r.part("bad_notify_socket"):
            # no service manager listening: one log line, and the daemon serves all the same
            other = os.path.join(r.tmp, "other.sock")
            missing = os.path.join(r.tmp, "nobody-listens.sock")
            d2 = r.spawn([r.memtraced, "--socket", other, "--pid", str(target.pid)], "daemon",
                         "memtraced2.out", env=dict(os.environ, NOTIFY_SOCKET=missing))
            r.wait_daemon(d2, other)
            with open(os.path.join(r.tmp, "memtraced2.err")) as f:
                lines = [l for l in f.read().splitlines() if "readiness" in l]
            if len(lines) != 1 or missing not in lines[0]:
                raise Fail(f"expected one line about readiness naming {missing}, got {lines}")
    finally:
        listener.close()


def test_unit_capabilities(r):
    """memtraced traces exactly with no capability but the unit's CapabilityBoundingSet."""
    caps = unit_capabilities(os.path.join(REPO, "packaging", "systemd", UNIT))
    with r.part("trace"):
        trace_pattern(r, r.memtraced, r.memtracectl, wrap=bounded(caps), tag="bounded")
        with open(os.path.join(r.tmp, "memtraced-bounded.err")) as f:
            log = f.read()
        if "cannot" in log:
            raise Fail(f"memtraced logged a failure with the unit's capabilities: "
                       f"{one_line(log)[:300]}")
    # --comm with the unit's set: a match of user nobody, in a session of its own, is stopped
    # at its exec and must be continued (SIGCONT to another user's process needs CAP_KILL)
    name = f"mc{os.getpid() % 100000}x{int(time.time()) % 10000}"
    pub = tempfile.mkdtemp(prefix="memtrace-comm-")
    try:
        os.chmod(pub, 0o755)
        prog = os.path.join(pub, name)
        shutil.copy(r.pattern, prog)
        os.chmod(prog, 0o755)
        with r.part("comm"):
            daemon = r.spawn([*bounded(caps), r.memtraced, "--socket", r.sock, "--comm", name],
                             "daemon", "memtraced-comm.out")
            r.wait_daemon(daemon, r.sock)
            p = r.spawn(["setpriv", "--reuid", "nobody", "--regid", "nogroup",
                         "--clear-groups", prog, "--no-wait"], "target", "comm-pattern.out")
            rc = r.wait_exit(p, "a match of user nobody under the unit's capabilities")
            if rc != 0:
                raise Fail(f"the match exited with status {rc}")
            expect = r.read_expect(os.path.join(r.tmp, "comm-pattern.out"))
            r.wait_state("exited", p.pid, daemon)
            got = [t["counters"]["allocations"] for t in r.ctl_json("stats", "--json")["targets"]
                   if t["pid"] == p.pid]
            if not got or got[0] < expect["allocations"]:
                raise Fail(f"the match was traced for {got} allocations, it made "
                           f"{expect['allocations']}")
            daemon.send_signal(signal.SIGTERM)
            r.wait_exit(daemon, "memtraced")
        with r.part("comm_no_kill"):
            rc, _, err = sh([*bounded([c for c in caps if c != "CAP_KILL"]), r.memtraced,
                             "--socket", os.path.join(r.tmp, "nokill.sock"), "--comm", name])
            if rc == 0 or "CAP_KILL" not in err or len(err.strip().splitlines()) != 1:
                raise Fail(f"without CAP_KILL, --comm exited {rc}: {one_line(err)[:200]}")
    finally:
        shutil.rmtree(pub, ignore_errors=True)


def package_state(name):
    rc, out, _ = sh(["dpkg-query", "-W", "-f=${Status}", name])
    return out.strip() if rc == 0 else "not-installed"


def test_deb(r):
    """make deb builds a .deb; it installs, traces through /usr/sbin, and is removed cleanly."""
    if package_state("memtrace").endswith(" installed"):
        raise Fail("a memtrace package is installed already; this test will not replace it")
    group_existed = True
    try:
        grp.getgrnam("memtrace")
    except KeyError:
        group_existed = False
    deb = None
    installed = False
    try:
        with r.part("build"):
            make(r, "deb", timeout=1200)
            debs = sorted(glob_debs(r.build))
            if len(debs) != 1:
                raise Fail(f"expected one memtrace_{version()}-*.deb in the build directory, "
                           f"found {debs}")
            deb = debs[0]
            listing = must(["dpkg-deb", "-c", deb], "dpkg-deb -c")
            for path in ("./usr/sbin/memtraced", "./usr/bin/memtracectl",
                         f"./lib/systemd/system/{UNIT}", f"./lib/systemd/system/{IDLE_UNIT}",
                         "./usr/share/man/man8/memtraced.8.gz",
                         "./usr/share/man/man1/memtracectl.1.gz",
                         "./usr/share/bash-completion/completions/memtracectl",
                         "./usr/share/doc/memtrace/copyright", "./var/lib/memtrace/oom/"):
                if f" {path}" not in listing:
                    raise Fail(f"the package has no {path}")
        if deb is None:
            return
        with r.part("install"):
            must(["dpkg", "-i", deb], "dpkg -i", env=dict(os.environ,
                                                           DEBIAN_FRONTEND="noninteractive"))
            installed = True
            if package_state("memtrace") != "install ok installed":
                raise Fail(f"dpkg says {package_state('memtrace')!r}")
            try:
                grp.getgrnam("memtrace")
            except KeyError:
                raise Fail("the package did not create group memtrace") from None
            out = must(["/usr/sbin/memtraced", "--version"], "memtraced --version")
            if out.strip() != f"memtraced {version()}":
                raise Fail(f"/usr/sbin/memtraced --version printed {out.strip()!r}")
            must(["/usr/bin/memtracectl", "--help"], "memtracectl --help")
            man = must(["man", "-w", "memtraced"], "man -w memtraced").strip()
            if man != "/usr/share/man/man8/memtraced.8.gz":
                raise Fail(f"man -w memtraced is {man!r}")

        with r.part("unit_verify"):
            verify_unit(f"/lib/systemd/system/{UNIT}")
            verify_unit(f"/lib/systemd/system/{IDLE_UNIT}")

        with r.part("trace"):
            # as the service runs it: the unit's capabilities only; the socket goes to the group
            caps = unit_capabilities(f"/lib/systemd/system/{UNIT}")
            seen = {}

            orig_wait_state = r.wait_state

            def wait_state_and_check_group(state, pid=None, daemon=None):
                seen["gid"] = os.stat(r.sock).st_gid
                return orig_wait_state(state, pid, daemon)

            r.wait_state = wait_state_and_check_group
            trace_pattern(r, "/usr/sbin/memtraced", "/usr/bin/memtracectl", wrap=bounded(caps),
                          tag="deb")
            if seen.get("gid") != grp.getgrnam("memtrace").gr_gid:
                raise Fail(f"the socket's group is {seen.get('gid')}, not memtrace's "
                           f"{grp.getgrnam('memtrace').gr_gid} (CAP_CHOWN missing?)")

        with r.part("remove"):
            must(["dpkg", "--purge", "memtrace"], "dpkg --purge")
            installed = False
            if package_state("memtrace") not in ("not-installed", "unknown ok not-installed"):
                raise Fail(f"dpkg says {package_state('memtrace')!r} after purge")
            left = [p for p in ("/usr/sbin/memtraced", "/usr/bin/memtracectl",
                                f"/lib/systemd/system/{UNIT}",
                                f"/lib/systemd/system/{IDLE_UNIT}",
                                "/usr/share/man/man8/memtraced.8.gz",
                                "/usr/share/doc/memtrace", "/var/lib/memtrace")
                    if os.path.exists(p)]
            if left:
                raise Fail(f"left behind after purge: {', '.join(left)}")
    finally:
        if installed:
            sh(["dpkg", "--purge", "memtrace"])
        if not group_existed:
            sh(["groupdel", "memtrace"])


def glob_debs(build):
    return [os.path.join(build, f) for f in os.listdir(build)
            if f.startswith(f"memtrace_{version()}-") and f.endswith(".deb")]
