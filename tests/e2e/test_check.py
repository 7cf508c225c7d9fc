#!/usr/bin/env python3
"""memtraced --check, and the stack walkers' fallback (issue 31): every program of the BPF
object loads on this kernel in every configuration, within a quarter of the verifier's limit;
a walker the verifier refuses gives way to the next (dwarf, fp, caller) with one line in the
log, and status, stats, reports and Prometheus say which walker runs and why.

The refusals are real (the kernel's verifier refuses the program), made by the test build
build/tests/memtraced-hooks: MEMTRACE_TEST_REFUSE=walk_dwarf,... loads those programs as
sleepable, which a uprobe or tracepoint program cannot be (src/daemon/attach/probes.c). The
daemon installed has no such hook: check_release_no_hooks holds build/memtraced to that (no
test hook's variable in it, none of make bench's BPF programs in its object), and test_check
runs it with MEMTRACE_TEST_REFUSE set, which it must ignore."""

import urllib.request

from harness import *  # noqa: F401,F403

CONFIGS = ["dwarf", "fp", "kernel", "caller", "dwarf-no-ids", "dwarf-comm", "dwarf-exe"]
WALKER_PROGRAM = {"dwarf": "walk_dwarf", "fp": "walk_fp", "kernel": "walk_kernel",
                  "caller": "walk_caller"}
FEATURES = ["btf", "ringbuf", "tail_calls", "task_storage", "global_functions",
            "get_current_task_btf", "attach_cookie", "task_pt_regs", "bpf_loop",
            "ringbuf_dynptr", "uprobe_pmu", "tracefs_uprobes"]
HEADROOM = 250000  # a quarter of the verifier's 1,000,000
# what only the test build may have: its hooks' variables (src/daemon) and make bench's
# programs (bpf/bench.bpf.c, an object of their own)
TEST_HOOK_VARS = ["MEMTRACE_TEST_REFUSE", "MEMTRACE_TEST_LAG_MS", "MEMTRACE_TEST_RESOLVE_LAG_MS",
                  "MEMTRACE_TEST_ATTACH_LAG_MS", "MEMTRACE_TEST_NO_HOLD",
                  "MEMTRACE_TEST_SCAN_STALL_MS",
                  "MEMTRACE_INFLIGHT_SLOTS", "MEMTRACE_BENCH_PROGRAMS",
                  "MEMTRACE_BENCH_EMPTY_PROGRAMS"]
BENCH_PROGRAMS = ["empty_enter", "empty_return", "minimal_enter", "minimal_return",
                  "minimal_free"]


def hooks(r):
    return r.daemon_binary(hooks=True)


def run_check(r, binary, *args, env=None, timeout=300):
    """memtraced --check ARGS: (exit code, stdout, stderr)."""
    try:
        p = subprocess.run([binary, "--check", *args], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, errors="replace", timeout=timeout,
                           env=dict(os.environ, **env) if env else None)
    except subprocess.TimeoutExpired:
        raise Fail(f"memtraced --check did not return within {timeout} s") from None
    return p.returncode, p.stdout, p.stderr


def check_json(r, binary, env=None):
    rc, out, err = run_check(r, binary, "--json", env=env)
    try:
        return rc, json.loads(out), err
    except ValueError as e:
        raise Fail(f"--check --json printed invalid JSON ({e}): {one_line(out)[:200]} "
                   f"{one_line(err)[:200]}") from None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        return resp.read().decode()


def test_check(r):
    """memtraced --check --json on this kernel: the default loads (exit 0), every program of
    every configuration loads within a quarter of the limit, every feature is listed and
    those required are present; the text names the verdict; without root, one line. Every
    walker refused by MEMTRACE_TEST_REFUSE changes nothing: memtraced has no test hook."""
    rc, rep, err = check_json(r, r.memtraced,
                              env={"MEMTRACE_TEST_REFUSE": "walk_dwarf,walk_fp,walk_caller"})
    with r.part("default_loads"):
        if rc != 0 or rep.get("default_loads") is not True:
            raise Fail(f"exit {rc}, default_loads {rep.get('default_loads')}: "
                       f"{one_line(err)[:200]}")
        if err.strip():
            raise Fail(f"--check wrote to stderr: {one_line(err)[:200]}")
    with r.part("configs"):
        names = [c.get("config") for c in rep.get("configs", [])]
        if names != CONFIGS:
            raise Fail(f"configurations {names}, expected {CONFIGS}")
        for c in rep["configs"]:
            if c.get("loaded") is not True or not isinstance(c.get("seconds"), (int, float)):
                raise Fail(f"configuration {c}")
    with r.part("programs"):
        progs = rep.get("programs")
        if not isinstance(progs, list) or not progs:
            raise Fail("no \"programs\" list")
        for p in progs:
            for key in ("config", "program", "loaded", "processed_insns", "limit", "states",
                        "peak_states", "verify_usec", "error"):
                if key not in p:
                    raise Fail(f"program entry without \"{key}\": {p}")
            if p["loaded"] is not True or p["error"] is not None:
                raise Fail(f"{p['config']} {p['program']} did not load: {p['error']}")
            if not isinstance(p["processed_insns"], int) or p["processed_insns"] <= 0:
                raise Fail(f"{p['config']} {p['program']}: processed_insns "
                           f"{p['processed_insns']}")
            if p["limit"] != 1000000:
                raise Fail(f"{p['config']} {p['program']}: limit {p['limit']}")
        for cfg in CONFIGS:
            mine = {p["program"] for p in progs if p["config"] == cfg}
            walker = WALKER_PROGRAM[cfg.split("-")[0]]
            # the walker chosen, its tracepoint copy, the stages and the control programs
            for want in (walker, walker + "_tp", "stage_python", "stage_emit", "alloc_return",
                         "on_exec"):
                if want not in mine:
                    raise Fail(f"{cfg}: no {want} among {sorted(mine)}")
            # the DWARF walker's own fallback, for a process without tables, is walk_fp
            allowed = {walker, "walk_fp"} if walker == "walk_dwarf" else {walker}
            if walker == "walk_dwarf" and "walk_fp" not in mine:
                raise Fail(f"{cfg}: no walk_fp (the DWARF walker's fallback) among {sorted(mine)}")
            others = {w for w in WALKER_PROGRAM.values() if w not in allowed} & mine
            if others:
                raise Fail(f"{cfg}: other walkers' programs loaded: {sorted(others)}")
        bench = sorted({p["program"] for p in progs} & set(BENCH_PROGRAMS))
        if bench:
            raise Fail(f"make bench's programs in memtraced's object: {bench}")
    with r.part("headroom"):
        over = [(p["config"], p["program"], p["processed_insns"]) for p in rep["programs"]
                if p["processed_insns"] > HEADROOM]
        if over or rep.get("headroom_ok") is not True:
            raise Fail(f"past {HEADROOM} processed instructions: {over}")
        most = max(p["processed_insns"] for p in rep["programs"])
        if rep.get("max_processed_insns") != most:
            raise Fail(f"max_processed_insns {rep.get('max_processed_insns')}, the most "
                       f"is {most}")
    with r.part("features"):
        feats = rep.get("features")
        if not isinstance(feats, dict) or sorted(feats) != sorted(FEATURES) or \
                not all(isinstance(v, bool) for v in feats.values()):
            raise Fail(f"features {feats}")
        missing = [k for k in rep.get("features_required", []) if not feats.get(k)]
        if missing:
            raise Fail(f"required features missing on a kernel that loads: {missing}")
        kernel = rep.get("kernel", {})
        if kernel.get("release") != os.uname().release or not kernel.get("version"):
            raise Fail(f"kernel {kernel}")
    with r.part("text"):
        rc, out, err = run_check(r, r.memtraced)
        if rc != 0 or "the default configuration (dwarf) loads" not in out or \
                "headroom ok" not in out:
            raise Fail(f"exit {rc}: {out[-300:]!r}")
    with r.part("not_root"):
        p = subprocess.run([r.memtraced, "--check"], capture_output=True, text=True,
                           user=65534, group=65534, timeout=30)
        if p.returncode != 1 or p.stdout or len(p.stderr.splitlines()) != 1 or \
                "root" not in p.stderr:
            raise Fail(f"exit {p.returncode}: {p.stderr!r} {p.stdout!r}")


def test_check_refused(r):
    """The verifier refuses walk_dwarf (test build): --check exits 1, says so in JSON
    (default_loads false, the dwarf configurations not loaded, walk_dwarf's error the
    verifier's own line) and loads the rest: every other program gets its verdict."""
    rc, rep, err = check_json(r, hooks(r), env={"MEMTRACE_TEST_REFUSE": "walk_dwarf"})
    with r.part("exit"):
        if rc != 1 or rep.get("default_loads") is not False:
            raise Fail(f"exit {rc}, default_loads {rep.get('default_loads')}")
    with r.part("configs"):
        loaded = {c["config"]: c["loaded"] for c in rep["configs"]}
        want = {c: not c.startswith("dwarf") for c in CONFIGS}
        if loaded != want:
            raise Fail(f"loaded {loaded}, expected {want}")
        dwarf = rep["configs"][0]
        if not str(dwarf.get("error")).startswith("walk_dwarf: "):
            raise Fail(f"dwarf's error: {dwarf.get('error')!r}")
    with r.part("programs"):
        for p in rep["programs"]:
            refused = p["program"] in ("walk_dwarf", "walk_dwarf_tp")
            if p["loaded"] == refused:
                raise Fail(f"{p['config']} {p['program']}: loaded {p['loaded']}")
            if refused and (not p["error"] or "sleepable" not in p["error"].lower()):
                raise Fail(f"{p['program']}: error {p['error']!r}, not the verifier's line")


def test_walker_reported(r):
    """The walker in use and why, from a real daemon: --stack-walker fp says fp, chosen, in
    status (text, JSON), stats (text, JSON), report (text, JSON) and Prometheus, with no
    unwind tables; the default says dwarf, default."""
    port = free_port()
    daemon = r.start_daemon("--stack-walker", "fp", "--metrics-listen", f"127.0.0.1:{port}")
    want = {"name": "fp", "reason": "chosen", "refused": 0}
    with r.part("json"):
        st = r.ctl_json("status", "--json")
        if st.get("stack_walker") != want:
            raise Fail(f"status --json stack_walker {st.get('stack_walker')}")
        if st.get("unwind") is not None:
            raise Fail(f"unwind tables under the fp walker: {st.get('unwind')}")
        sj = r.ctl_json("stats", "--json")
        if sj.get("stack_walker") != want:
            raise Fail(f"stats --json stack_walker {sj.get('stack_walker')}")
        rj = r.ctl_json("report", "--format", "json")
        if rj.get("stack_walker") != want:
            raise Fail(f"report --format json stack_walker {rj.get('stack_walker')}")
    with r.part("text"):
        for args in (("status",), ("report",)):
            rc, out, err = r.ctl(*args)
            if rc or "stack walker: fp (chosen)" not in out.splitlines():
                raise Fail(f"memtracectl {' '.join(args)}: {out[:300]!r}")
        rc, out, err = r.ctl("stats")
        if rc or not any(l.split() == ["stack_walker", "fp", "(chosen)"]
                         for l in out.splitlines()):
            raise Fail(f"stats: {out[-300:]!r}")
    with r.part("prometheus"):
        text = metrics(port)
        if 'memtrace_stack_walker_info{walker="fp",reason="chosen"} 1\n' not in text:
            raise Fail("no memtrace_stack_walker_info{walker=\"fp\",reason=\"chosen\"} 1")
    stop_daemon(r, daemon)
    sock = os.path.join(r.tmp, "default.sock")
    r.start_daemon(sock=sock, tag="default")
    with r.part("default"):
        st = r.ctl_json("status", "--json", sock=sock)
        if st.get("stack_walker") != {"name": "dwarf", "reason": "default", "refused": 0}:
            raise Fail(f"status --json stack_walker {st.get('stack_walker')}")
        if st.get("unwind") is None:
            raise Fail("no unwind tables under the dwarf walker")


def stop_daemon(r, daemon):
    """SIGTERM: exit 0 (under ASan, a leak makes it non-zero)."""
    daemon.send_signal(signal.SIGTERM)
    rc = r.wait_exit(daemon, "memtraced after SIGTERM", r.daemon_exit_budget())
    if rc != 0:
        raise Fail(f"memtraced exited {rc} on SIGTERM, expected 0 (see its log)")


def start_hooks(r, refuse, *args, tag):
    sock = os.path.join(r.tmp, f"{tag}.sock")
    d = r.spawn([hooks(r), "--socket", sock, *args], "daemon", f"{tag}.out",
                env=dict(os.environ, MEMTRACE_TEST_REFUSE=refuse))
    r.wait_daemon(d, sock)
    return d, sock


def log_lines(r, tag):
    with open(os.path.join(r.tmp, f"{tag}.err"), errors="replace") as f:
        return f.read().splitlines()


def test_walker_fallback(r):
    """The verifier refuses the dwarf walker (test build): the daemon says so in one line,
    runs fp, traces with it (the target's sites in its stacks), makes no unwind tables, and
    says why everywhere; a chosen walker refused falls back too; nothing loading is one
    line naming the oldest kernel supported, no libbpf or verifier noise."""
    pattern = os.path.join(r.build, "tests", "pattern")
    d, sock = start_hooks(r, "walk_dwarf", "--", pattern, "--no-wait", tag="fallback")
    with r.part("one_line"):
        lines = [l for l in log_lines(r, "fallback") if "stack walker" in l]
        if len(lines) != 1 or not re.match(
                r"memtraced: the dwarf stack walker's programs do not load on this kernel "
                r"\(walk_dwarf: .+\); using fp$", lines[0]):
            raise Fail(f"log: {lines}")
    with r.part("reported"):
        st = r.ctl_json("status", "--json", sock=sock)
        w = st.get("stack_walker", {})
        if w.get("name") != "fp" or w.get("refused") != 1 or \
                not w.get("reason", "").startswith("dwarf refused by the verifier: walk_dwarf: "):
            raise Fail(f"stack_walker {w}")
        if st.get("unwind") is not None:
            raise Fail(f"unwind tables after the fallback to fp: {st.get('unwind')}")
        rc, out, err = r.ctl("report", sock=sock)
        if rc or not any(l.startswith("stack walker: fp (dwarf refused by the verifier: ")
                         for l in out.splitlines()):
            raise Fail(f"report: {out[:300]!r}")
    with r.part("traces"):
        end = deadline_after()
        while True:
            st = r.ctl_json("status", "--json", sock=sock)
            if st["targets"] and st["targets"][0]["state"] == "exited":
                break
            if time.monotonic() > end:
                raise Fail("the target did not exit")
            time.sleep(POLL)
        rep = r.ctl_json("report", "--top", "0", "--format", "json", sock=sock)
        funcs = {f.get("function") for e in rep["entries"] for f in e.get("frames", [])}
        if not any(str(f).startswith("site_") for f in funcs):
            raise Fail(f"no site_ function in the fp walker's stacks: {sorted(map(str, funcs))[:20]}")
    stop_daemon(r, d)
    d, sock = start_hooks(r, "walk_fp", "--stack-walker", "fp", tag="chosen")
    with r.part("chosen"):
        lines = [l for l in log_lines(r, "chosen") if "stack walker" in l]
        if len(lines) != 1 or "the fp stack walker chosen (--stack-walker fp) does not load" \
                not in lines[0] or not lines[0].endswith("; using caller"):
            raise Fail(f"log: {lines}")
        w = r.ctl_json("status", "--json", sock=sock).get("stack_walker", {})
        if w.get("name") != "caller" or \
                not w.get("reason", "").startswith("fp (chosen) refused by the verifier: walk_fp"):
            raise Fail(f"stack_walker {w}")
    stop_daemon(r, d)
    with r.part("nothing_loads"):
        p = subprocess.run([hooks(r), "--socket", os.path.join(r.tmp, "none.sock")],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, MEMTRACE_TEST_REFUSE="walk_dwarf,walk_fp,walk_caller"))
        lines = p.stderr.splitlines()
        if p.returncode != 1 or len(lines) != 3 or "libbpf" in p.stderr:
            raise Fail(f"exit {p.returncode}: {lines}")
        if not lines[2].startswith("memtraced: no stack walker's programs load on this kernel") \
                or "memtrace needs Linux 6.1 or newer" not in lines[2]:
            raise Fail(f"last line: {lines[2]!r}")


def test_check_release_no_hooks(r):
    """The daemon built for release has no test hook: none of their variables' names in
    memtraced (the strings the hooks would getenv), none of make bench's programs in the BPF
    object it embeds (build/memtrace.bpf.o, its skeleton's bytes). The test build has them
    all, so that the names searched for are the ones the code uses."""
    def found(path, names):
        with open(path, "rb") as f:
            data = f.read()
        return [n for n in names if n.encode() in data]

    obj = os.path.join(r.build, "memtrace.bpf.o")
    with r.part("memtraced"):
        bad = found(r.memtraced, TEST_HOOK_VARS + BENCH_PROGRAMS)
        if bad:
            raise Fail(f"{r.memtraced} has {bad}")
    with r.part("bpf_object"):
        bad = found(obj, BENCH_PROGRAMS)
        if bad:
            raise Fail(f"{obj} has {bad}")
        p = subprocess.run(["llvm-objdump", "-t", obj], capture_output=True, text=True)
        if p.returncode or "alloc_enter" not in p.stdout:
            raise Fail(f"llvm-objdump -t {obj}: exit {p.returncode}, {one_line(p.stderr)[:200]}")
        bad = [l.split()[-1] for l in p.stdout.splitlines()
               if l.split() and l.split()[-1].startswith(("empty_", "minimal_"))]
        if bad:
            raise Fail(f"{obj}'s symbols: {bad}")
    with r.part("test_build_has_them"):
        missing = sorted(set(TEST_HOOK_VARS + BENCH_PROGRAMS) -
                         set(found(hooks(r), TEST_HOOK_VARS + BENCH_PROGRAMS)))
        if missing:
            raise Fail(f"{hooks(r)} lacks {missing}")
