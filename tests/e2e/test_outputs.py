#!/usr/bin/env python3
"""End-to-end tests of the outputs other tools read: stats extras, folded stacks, pprof (read by
`go tool pprof`), the HTML report (opened in headless Chromium) and the Prometheus endpoint
(scraped by a real Prometheus, checked by promtool). Every number is compared with the exact
tally of the known pattern; each format is produced live and from a snapshot file."""

import struct
import urllib.request

from harness import *  # noqa: F401,F403

SITE_PREFIX = "site_"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def save_snapshot(r, path, sort="allocated"):
    """Ask the daemon for every stack over its socket (a report of them all) and keep its bytes
    (the snapshot file format is the wire format)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(TIMEOUT)
        s.connect(r.sock)
        s.sendall(f"report v=2 pid=0 sort={sort} top=0 ages=0\n".encode())
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    if len(data) < 9 or data[:4] != b"MTR1" or data[4] != 0:
        raise Fail(f"the daemon's snapshot reply is not a good one: {data[:60]!r}")
    (size,) = struct.unpack("<I", data[5:9])
    if len(data) != 9 + size:
        raise Fail(f"snapshot reply has {len(data) - 9} bytes, its header says {size}")
    with open(path, "wb") as f:
        f.write(data[9:])


def ctl_ok(r, *args):
    rc, out, err = r.ctl(*args)
    if rc != 0:
        raise Fail(f"memtracectl {' '.join(args)} exited {rc}: {one_line(err)[:200]}")
    return out


def ctl_from(r, path, *args):
    argv = [r.memtracectl, "--from", path, *args]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       errors="replace", timeout=60)
    if p.returncode != 0:
        raise Fail(f"memtracectl --from {' '.join(args)} exited {p.returncode}: "
                   f"{one_line(p.stderr)[:200]}")
    return p.stdout


def expect_sites(expect, key):
    return {s: v[key] for s, v in expect["sites"].items() if v[key]}


# ---- stats ------------------------------------------------------------------------------------

def check_stats_extras(stats, expect):
    hist = stats.get("size_histogram")
    if not isinstance(hist, list) or not hist:
        raise Fail(f"stats has no size_histogram list: {hist!r}")
    n = sum(number(b, "allocations", "size_histogram[]") for b in hist)
    if n != expect["allocations"]:
        raise Fail(f"size_histogram counts add up to {n}, expected {expect['allocations']}")
    for b in hist:
        lo, hi = number(b, "min_size", "bin"), number(b, "max_size", "bin")
        if not (lo == hi == 0 or (lo & (lo - 1) == 0 and hi == 2 * lo - 1)):
            raise Fail(f"size_histogram bin [{lo}, {hi}] is not a power-of-two bin")
    spike = [b for b in hist if b["min_size"] == 65536]
    if not spike or spike[0]["allocations"] < 128:
        raise Fail(f"no 64 KiB bin with the 128 spike pieces: {spike}")
    mix = stats.get("allocator_mix")
    if not isinstance(mix, dict) or "malloc" not in mix:
        raise Fail(f"allocator_mix is {mix!r}")
    for key in ("allocations", "bytes_allocated"):
        total = sum(number(v, key, "allocator_mix") for v in mix.values())
        if total != expect[key]:
            raise Fail(f"allocator_mix {key} adds up to {total}, expected {expect[key]}")
    for name in ("calloc", "realloc", "reallocarray", "posix_memalign", "valloc", "pvalloc"):
        if name not in mix:
            raise Fail(f"allocator_mix has no {name} (pattern calls it)")
    top = stats.get("top_sites_by_bytes_allocated")
    if not isinstance(top, list) or not top or top[0].get("function") != "site_spike" or \
            top[0].get("bytes_allocated") != expect["sites"]["site_spike"]["bytes_allocated"]:
        raise Fail(f"top_sites_by_bytes_allocated starts with {top[:1]!r}, expected site_spike "
                   f"with {expect['sites']['site_spike']['bytes_allocated']} bytes")
    top = stats.get("top_sites_by_allocations")
    want = expect["sites"]["site_thread_alloc"]["allocations"]
    if not isinstance(top, list) or not top or top[0].get("function") != "site_thread_alloc" \
            or top[0].get("allocations") != want:
        raise Fail(f"top_sites_by_allocations starts with {top[:1]!r}, expected "
                   f"site_thread_alloc with {want}")


# ---- folded -----------------------------------------------------------------------------------

FOLDED_LINE = re.compile(r"^(.*\S)\s+(\d+)$")  # what flamegraph.pl and inferno accept


def parse_folded(text):
    total, leaves = 0, {}
    for i, line in enumerate(text.splitlines()):
        m = FOLDED_LINE.match(line)
        if not m:
            raise Fail(f"folded line {i + 1} is not 'frames value': {line!r}")
        frames, value = m.group(1).split(";"), int(m.group(2))
        if value <= 0:
            raise Fail(f"folded line {i + 1} has value {value}")
        total += value
        leaves[frames[-1]] = leaves.get(frames[-1], 0) + value
        if frames[-1].startswith(SITE_PREFIX) and (len(frames) < 2 or
                                                   frames[0].startswith(SITE_PREFIX)):
            raise Fail(f"folded line {i + 1} does not go from the root: {line!r}")
    return total, leaves


def check_folded(text, expect, total_key, site_key):
    total, leaves = parse_folded(text)
    if total != expect[total_key]:
        raise Fail(f"folded values add up to {total}, expected {total_key}={expect[total_key]}")
    want = expect_sites(expect, site_key)
    got = {k: v for k, v in leaves.items() if k.startswith(SITE_PREFIX)}
    if got != want:
        bad = sorted(set(got) | set(want))
        raise Fail("per-site sums differ: " + ", ".join(
            f"{s}={got.get(s)} (expected {want.get(s)})" for s in bad
            if got.get(s) != want.get(s)))


# ---- pprof ------------------------------------------------------------------------------------

PPROF_ROW = re.compile(r"^\s*(\d+)(B)?\s+\S+%\s+\S+%\s+(\d+)(B)?\s+\S+%\s+(\S+)\s*$")


def go_pprof(r, path, *args):
    env = dict(os.environ, HOME=r.tmp, PPROF_TMPDIR=r.tmp, GOCACHE=os.path.join(r.tmp, "gocache"))
    p = subprocess.run(["go", "tool", "pprof", *args, path], capture_output=True, text=True,
                       errors="replace", timeout=120, env=env, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise Fail(f"go tool pprof {' '.join(args)} exited {p.returncode}: "
                   f"{one_line(p.stderr)[:300]}")
    return p.stdout


def pprof_flat(r, path, index):
    """go tool pprof -top: flat value of every function, and the header lines."""
    out = go_pprof(r, path, "-top", "-nodefraction=0", "-nodecount=100000", "-unit=B"
                   if index.endswith("space") else "-unit=count", f"-sample_index={index}")
    flat, header = {}, []
    for line in out.splitlines():
        m = PPROF_ROW.match(line)
        if m:
            flat[m.group(5)] = flat.get(m.group(5), 0) + int(m.group(1))
        else:
            header.append(line)
    return flat, header, out


def check_pprof(r, path, expect, index, site_key, total_key):
    flat, header, out = pprof_flat(r, path, index)
    got = {k: v for k, v in flat.items() if k.startswith(SITE_PREFIX) and v}
    want = expect_sites(expect, site_key)
    if got != want:
        bad = sorted(set(got) | set(want))
        raise Fail(f"{index}: " + ", ".join(f"{s}={got.get(s)} (expected {want.get(s)})"
                                            for s in bad if got.get(s) != want.get(s)))
    total = sum(flat.values())
    if total != expect[total_key]:
        raise Fail(f"{index}: flat values add up to {total}, expected {expect[total_key]}")
    if not any(line.startswith(f"Type: {index}") for line in header):
        raise Fail(f"go tool pprof does not say 'Type: {index}': {header[:6]}")
    return out


def elf_build_id(path):
    p = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, timeout=30)
    m = re.search(r"Build ID:\s*([0-9a-f]+)", p.stdout)
    return m.group(1) if m else None


def pprof_body(out):
    """-top output without the lines that name when the profile was taken."""
    return [l for l in out.splitlines() if not l.startswith(("Time:", "Duration:"))]


# ---- Prometheus -------------------------------------------------------------------------------

def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()


def exposition_value(text, name, pid):
    # (then the labels of its cgroup: docs/metrics.md, "Cgroup")
    m = re.search(rf'^{name}\{{pid="{pid}",command="[^"]*"(?:,[a-z_]+="[^"]*")*\}} (\S+)$', text,
                  re.M)
    if not m:
        raise Fail(f"no {name}{{pid=\"{pid}\"}} in the exposition")
    return float(m.group(1))


def check_exposition(r, port, expect, pid):
    status, ctype, text = http_get(f"http://127.0.0.1:{port}/metrics")
    if status != 200 or not ctype.startswith("text/plain; version=0.0.4"):
        raise Fail(f"GET /metrics: {status} {ctype!r}")
    for name, key in (("memtrace_live_bytes", "live_bytes"),
                      ("memtrace_allocations_total", "allocations"),
                      ("memtrace_frees_total", "frees"),
                      ("memtrace_bytes_allocated_total", "bytes_allocated"),
                      ("memtrace_bytes_freed_total", "bytes_freed"),
                      ("memtrace_live_allocations", "live_allocations"),
                      ("memtrace_peak_live_bytes", "peak_live_bytes"),
                      ("memtrace_unknown_frees_total", "unknown_frees")):
        got = exposition_value(text, name, pid)
        if got != expect[key]:
            raise Fail(f"{name} is {got:.0f}, expected {key}={expect[key]}")
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        raise Fail(f"promtool check metrics: {one_line(p.stdout + p.stderr)[:300]}")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /nothing HTTP/1.0\r\n\r\n")
        if not s.recv(100).startswith(b"HTTP/1.1 404"):
            raise Fail("GET /nothing is not 404")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\nX: " + b"a" * 20000)
        reply = s.recv(100)
        if not reply.startswith(b"HTTP/1.1 431"):
            raise Fail(f"a 20 kB request head is answered {reply[:40]!r}, not 431")


def scrape_with_prometheus(r, port, expect, pid):
    """A real Prometheus server scrapes the endpoint; its query API returns the value."""
    web = free_port()
    conf = os.path.join(r.tmp, "prometheus.yml")
    with open(conf, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: memtrace\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{port}']\n")
    p = subprocess.run(["promtool", "check", "config", conf], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        raise Fail(f"promtool check config: {one_line(p.stdout + p.stderr)[:300]}")
    r.spawn(["prometheus", f"--config.file={conf}",
             f"--storage.tsdb.path={os.path.join(r.tmp, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{web}"], "helper", "prometheus.out")
    query = f"http://127.0.0.1:{web}/api/v1/query?query=memtrace_live_bytes"
    end, last = deadline_after(60), None
    while time.monotonic() < end:
        try:
            _, _, body = http_get(query, timeout=5)
            res = json.loads(body).get("data", {}).get("result", [])
            for s in res:
                if s.get("metric", {}).get("pid") == str(pid):
                    value = float(s["value"][1])
                    if value != expect["live_bytes"]:
                        raise Fail(f"Prometheus has memtrace_live_bytes={value:.0f}, "
                                   f"expected {expect['live_bytes']}")
                    if "pattern" not in s["metric"].get("command", ""):
                        raise Fail(f"command label is {s['metric'].get('command')!r}")
                    return
            last = body[:200]
        except (OSError, ValueError) as e:
            last = str(e)
        time.sleep(0.5)
    raise Fail(f"Prometheus never returned memtrace_live_bytes for pid {pid}: {last}")


# ---- HTML -------------------------------------------------------------------------------------

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--no-first-run", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1400,1800")


def chromium(r, page, what, tag):
    """Open page in headless Chromium (no network); returns stdout, and the console lines."""
    argv = ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={os.path.join(r.tmp, 'chrome-' + tag)}",
            what, "file://" + page]
    p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=120,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise Fail(f"chromium {what} exited {p.returncode}: {one_line(p.stderr)[-300:]}")
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    return p.stdout, console


TOP_ROW = re.compile(r'<tr><td>\d+</td><td>([\d,]+)(?: \([^)]*\))?</td><td>[\d,]+</td>'
                     r'<td>[\d,]+</td><td class="site">(\w+)')


def check_html(r, page, expect, tag, site_key="live_bytes"):
    with open(page, "rb") as f:
        html = f.read().decode()
    if re.search(r'(src|href)\s*=\s*"(https?:)?//', html):
        raise Fail("the page refers to something on the network")
    dom, console = chromium(r, page, "--dump-dom", tag)
    if console:
        raise Fail(f"the page logged to the console: {one_line(console[0])[:300]}")
    if 'data-memtrace="ready"' not in dom:
        raise Fail("report.js did not finish (no data-memtrace=ready on <body>)")
    if "d3-flame-graph" not in dom:
        raise Fail("no flame graph in the page")
    frames = re.findall(r'<g [^>]*width="([\d.]+)"[^>]*name="([^"]*)"[^>]*><rect [^>]*width="([\d.]+)"',
                        dom)
    svg = re.search(r'<svg width="(\d+)" class="partition d3-flame-graph"', dom)
    if not frames or not svg:
        raise Fail("no flame graph frames in the page")
    for gw, name, rw in frames:
        if abs(float(gw) - float(rw)) > 0.01:
            raise Fail(f"frame {name} is drawn {rw} px wide, laid out {gw} px")
    if dict((n, w) for w, n, _ in frames).get("all") != svg.group(1):
        raise Fail("the root frame does not span the flame graph")
    want = expect_sites(expect, site_key)
    for site in want:  # frames narrower than a pixel are not drawn
        if want[site] * 1400 >= 2 * sum(want.values()) and f'name="{site}"' not in dom:
            raise Fail(f"the flame graph has no frame named {site}")
    got = {}
    for value, site in TOP_ROW.findall(dom):
        got[site] = got.get(site, 0) + int(value.replace(",", ""))
    got = {k: v for k, v in got.items() if k.startswith(SITE_PREFIX)}
    if got != want:
        raise Fail(f"top table {site_key} per site {got}, expected {want}")
    if "no samples" not in dom and "<polyline" not in dom:
        raise Fail("memory over time shows neither a chart nor 'no samples'")
    return dom


# ---- the test ---------------------------------------------------------------------------------

def test_outputs(r):
    """One traced pattern run, every output format checked against its exact tally."""
    target = r.start_pattern()
    port = free_port()
    daemon = r.start_daemon("--pid", str(target.pid), "--metrics-listen", f"127.0.0.1:{port}")
    r.wait_state("attached", target.pid, daemon)
    target.send_signal(signal.SIGUSR1)
    expect = r.read_expect(os.path.join(r.tmp, "pattern.out"), target)
    r.wait_stats(expect)
    snap = os.path.join(r.tmp, "all.mts")

    with r.part("snapshot_file"):
        save_snapshot(r, snap)

    with r.part("stats"):
        stats = r.ctl_json("stats", "--json")
        check_stats_extras(stats, expect)
        text = ctl_ok(r, "stats")
        for word in ("size_histogram", "allocator_mix", "top_sites_by_bytes_allocated",
                     "top_sites_by_allocations", "site_spike"):
            if word not in text:
                raise Fail(f"stats text has no '{word}'")

    with r.part("stats_from_file"):
        check_stats_extras(json.loads(ctl_from(r, snap, "stats", "--json")), expect)

    samples = (("live", "live_bytes", "live_bytes"),
               ("allocated", "bytes_allocated", "bytes_allocated"),
               ("count", "allocations", "allocations"),
               ("peak", "peak_live_bytes", "peak_live_bytes"))
    for sample, total_key, site_key in samples:
        with r.part(f"folded_{sample}"):
            live = ctl_ok(r, "report", "--format", "folded", "--sample", sample)
            check_folded(live, expect, total_key, site_key)
            offline = ctl_from(r, snap, "report", "--format", "folded", "--sample", sample)
            # the same lines; stacks with equal values may come in another order
            if sorted(offline.splitlines()) != sorted(live.splitlines()):
                raise Fail("folded from the snapshot file differs from the live daemon's")

    pb = os.path.join(r.tmp, "heap.pb.gz")
    with r.part("pprof"):
        ctl_ok(r, "report", "--format", "pprof", "-o", pb)
        with open(pb, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                raise Fail("heap.pb.gz is not gzip")
        out = check_pprof(r, pb, expect, "inuse_space", "live_bytes", "live_bytes")
        check_pprof(r, pb, expect, "alloc_space", "bytes_allocated", "bytes_allocated")
        check_pprof(r, pb, expect, "alloc_objects", "allocations", "allocations")
        check_pprof(r, pb, expect, "inuse_objects", "live_allocations", "live_allocations")
        want = elf_build_id(r.pattern)
        if not want or f"Build ID: {want}" not in out:
            raise Fail(f"go tool pprof does not show the pattern's build-id {want}: "
                       f"{out.splitlines()[:3]}")
        raw = go_pprof(r, pb, "-raw")
        types = re.search(r"^\s*(alloc_objects/count.*)$", raw, re.M)
        if not types or types.group(1).split() != ["alloc_objects/count", "alloc_space/bytes",
                                                   "inuse_objects/count",
                                                   "inuse_space/bytes[dflt]"]:
            raise Fail(f"sample types are not Go's four in order: "
                       f"{types.group(1) if types else raw[:200]!r}")
        if not re.search(r"pattern\.c:\d+", go_pprof(r, pb, "-traces", "-lines")):
            raise Fail("pprof -traces -lines shows no pattern.c:LINE")

    with r.part("pprof_peak"):
        peak = os.path.join(r.tmp, "peak.pb.gz")
        ctl_ok(r, "report", "--format", "pprof", "--peak", "-o", peak)
        check_pprof(r, peak, expect, "inuse_space", "peak_live_bytes", "peak_live_bytes")

    with r.part("pprof_from_file"):
        off = os.path.join(r.tmp, "offline.pb.gz")
        ctl_from(r, snap, "report", "--format", "pprof", "-o", off)
        a = pprof_body(pprof_flat(r, pb, "inuse_space")[2])
        b = pprof_body(pprof_flat(r, off, "inuse_space")[2])
        if a != b:
            raise Fail("pprof from the snapshot file reads differently from the live one")
        check_pprof(r, off, expect, "alloc_space", "bytes_allocated", "bytes_allocated")

    with r.part("html"):
        page = os.path.join(r.tmp, "report.html")
        ctl_ok(r, "report", "--format", "html", "-o", page)
        check_html(r, page, expect, "live")
        shots = os.path.join(r.build, "e2e-output")
        os.makedirs(shots, exist_ok=True)
        shot = os.path.join(shots, "report.png")
        if os.path.exists(shot):
            os.unlink(shot)
        chromium(r, page, f"--screenshot={shot}", "shot")
        with open(shot, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                raise Fail(f"no PNG screenshot at {shot}")

    with r.part("html_search_zoom"):
        # what typing in the search box and clicking a frame do, set from the URL fragment
        dom, console = chromium(r, page + "#search=site_leak_&zoom=leak_b_caller_one",
                                "--dump-dom", "zoom")
        if console:
            raise Fail(f"the page logged to the console: {one_line(console[0])[:300]}")
        leaks = sum(v["live_bytes"] for k, v in expect["sites"].items()
                    if k.startswith("site_leak_"))
        want = f"search: {leaks} of {expect['live_bytes']} total samples"
        if want not in dom:
            found = re.search(r'<div id="details">([^<]*)</div>', dom)
            raise Fail(f"search shows {found.group(1) if found else None!r}, expected "
                       f"'{want} ...'")
        svg = re.search(r'<svg width="(\d+)" class="partition d3-flame-graph"', dom)
        drawn = {n: (float(w), rest) for w, n, rest in re.findall(
            r'<g [^>]*width="([\d.]+)"[^>]*name="([^"]*)"[^>]*>(<rect [^>]*>)', dom)}
        if not svg or drawn.get("leak_b_caller_one", (0,))[0] != float(svg.group(1)):
            raise Fail(f"zoom on leak_b_caller_one: it is {drawn.get('leak_b_caller_one')} "
                       f"wide, the graph {svg.group(1) if svg else None}")
        if "#E600E6" not in drawn.get("site_leak_b", (0, ""))[1]:
            raise Fail("site_leak_b is not highlighted by the search")
        if "site_spike" in drawn or "site_calloc" in drawn:
            raise Fail("frames outside the zoomed one are still drawn")

    with r.part("html_from_file"):
        page = os.path.join(r.tmp, "offline.html")
        with open(page, "w") as f:
            f.write(ctl_from(r, snap, "report", "--format", "html", "--sample", "peak"))
        dom = check_html(r, page, expect, "offline", "peak_live_bytes")
        if "<th>live bytes at the peak</th>" not in dom:
            raise Fail("--sample peak does not show the peak view")

    with r.part("metrics_endpoint"):
        check_exposition(r, port, expect, target.pid)

    with r.part("prometheus_scrape"):
        scrape_with_prometheus(r, port, expect, target.pid)

    with r.part("usage_errors"):
        for args, want in ((("report", "--format", "pdf"), "bad --format"),
                           (("report", "--format", "folded", "--sample", "x"), "bad --sample"),
                           (("report", "--peak"), "--peak applies"),
                           (("stats", "--format", "pprof"), "applies to report"),
                           (("report", "--format", "pprof", "--sort", "live"), "--sort")):
            rc, _, err = r.ctl(*args)
            if rc != 2 or want not in err or one_error_line(err):
                raise Fail(f"memtracectl {' '.join(args)}: exit {rc}, stderr {err!r}; "
                           f"expected 2 and one line with '{want}'")
        for addr, code in (("localhost:9464", 2), ("127.0.0.1:99999", 2), ("[::1]9464", 2),
                           (f"127.0.0.1:{port}", 1)):  # the last one is in use
            other = r.start_daemon("--pid", str(target.pid), "--metrics-listen", addr,
                                   sock=os.path.join(r.tmp, "other.sock"), tag="other",
                                   wait=False)
            rc = r.wait_exit(other, "memtraced with a bad --metrics-listen")
            with open(os.path.join(r.tmp, "other.err"), errors="replace") as f:
                err = f.read()
            if rc != code or one_error_line(err) or "metrics-listen" not in err:
                raise Fail(f"memtraced --metrics-listen {addr}: exit {rc}, stderr {err!r}; "
                           f"expected {code} and one line")
        rc, _, err = r.ctl("report", "--format", "folded", "-o",
                           os.path.join(r.tmp, "no", "such", "dir", "x"))
        if rc != 1 or one_error_line(err):
            raise Fail(f"-o into a missing directory: exit {rc}, stderr {err!r}")

    with r.part("daemon_exit"):
        # after metrics requests and snapshots: a clean exit (leak-free under ASan)
        daemon.send_signal(signal.SIGTERM)
        rc = r.wait_exit(daemon, "memtraced")
        with open(os.path.join(r.tmp, "memtraced.err"), errors="replace") as f:
            err = f.read()
        if rc != 0 or "Sanitizer" in err:
            raise Fail(f"memtraced exited {rc}: {one_line(err)[-300:]}")
