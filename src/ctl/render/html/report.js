// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// memtrace HTML report: builds the page from the JSON that memtracectl put in
// #memtrace-data. The flame graph is d3-flame-graph's (global `flamegraph`,
// with `d3.select` from d3-selection); the rest is plain DOM and SVG.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("memtrace-data").textContent);
  for (const st of data.stacks) st.frames = st.frames.map((i) => data.names[i]);
  const root = document.getElementById("report");
  const SAMPLES = {
    live: { label: "live bytes", unit: "bytes" },
    peak: { label: "live bytes at the peak", unit: "bytes" },
    allocated: { label: "bytes allocated", unit: "bytes" },
    count: { label: "allocations", unit: "count" },
  };
  // The URL's fragment may set the view: #sample=peak&search=REGEX&zoom=FUNCTION
  const params = new URLSearchParams(location.hash.slice(1));
  let sample = SAMPLES[params.get("sample")] ? params.get("sample")
    : SAMPLES[data.sample] ? data.sample : "live";
  let chart = null;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }

  function bytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let v = n, u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return u ? v.toFixed(1) + " " + units[u] : n + " B";
  }

  function show(n, unit) {
    return unit === "bytes" ? n.toLocaleString("en") + " (" + bytes(n) + ")" : n.toLocaleString("en");
  }

  // ---- header and totals ----------------------------------------------------------------------
  const created = new Date(Number(BigInt(data.created_unix_ns) / 1000000n));
  root.append(el("h1", {}, "memtrace report"));
  root.append(el("p", { class: "meta" }, "memtrace " + (data.tracer_version || "?") +
    ", snapshot taken " + created.toISOString().replace("T", " ").replace(/\..*/, " UTC")));
  if (data.stack_walker)
    root.append(el("p", { class: "meta", id: "walker" }, "stack walker: " + data.stack_walker.name +
      " (" + data.stack_walker.reason + ")"));
  const targets = el("ul", { id: "targets" });
  for (const t of data.targets) targets.append(el("li", {}, "pid " + t.pid + " (" + t.state + "): " + (t.command || "?")));
  root.append(targets);
  const totals = el("table", { id: "totals", class: "numbers" });
  const bytesKeys = new Set(["bytes_allocated", "bytes_freed", "live_bytes", "peak_live_bytes"]);
  for (const [k, v] of Object.entries(data.totals)) {
    const text = k === "peak_time" ? v.toFixed(3) + " s" : show(v, bytesKeys.has(k) ? "bytes" : "count");
    totals.append(el("tr", {}, el("th", {}, k), el("td", {}, text)));
  }
  root.append(totals);
  if (data.events_lost > 0)
    root.append(el("p", { class: "warning" }, "warning: " + data.events_lost +
      " events were lost (ring buffer full); frees, live and peak numbers may be distorted"));

  // ---- flame graph ----------------------------------------------------------------------------
  root.append(el("h2", {}, "Flame graph"));
  const select = el("select", { id: "sample" });
  for (const [k, s] of Object.entries(SAMPLES)) {
    const o = el("option", { value: k }, s.label);
    if (k === sample) o.selected = true;
    select.append(o);
  }
  const search = el("input", { id: "search", type: "search", placeholder: "search functions (regex)" });
  search.value = params.get("search") || "";
  const reset = el("button", { id: "reset", type: "button" }, "reset zoom");
  const details = el("div", { id: "details" });
  root.append(el("div", { id: "controls" }, el("label", {}, "show ", select), " ", search, " ", reset));
  const chartDiv = el("div", { id: "chart" });
  root.append(chartDiv, details);

  function tree(key) {
    const top = { name: "all", value: 0, children: [] };
    for (const st of data.stacks) {
      const v = st[key];
      if (!v) continue;
      let node = top;
      for (const f of (st.frames.length ? st.frames : ["[unknown]"])) {
        node.index = node.index || new Map();
        let child = node.index.get(f);
        if (!child) {
          child = { name: f, value: 0, children: [] };
          node.index.set(f, child);
          node.children.push(child);
        }
        node = child;
      }
      node.value += v;
    }
    (function strip(n) {
      delete n.index;
      n.children.forEach(strip);
    })(top);
    return top;
  }

  function drawFlame() {
    chartDiv.textContent = "";
    const t = tree(sample);
    const unit = SAMPLES[sample].unit;
    if (!t.children.length) {
      chartDiv.append(el("p", { class: "empty" }, "no " + SAMPLES[sample].label + " to show"));
      chart = null;
      return;
    }
    chart = flamegraph()
      .width(Math.max(600, chartDiv.clientWidth || 1200))
      .cellHeight(18)
      .minFrameSize(1)
      .selfValue(true)
      .transitionDuration(0)
      .sort(true)
      .setDetailsElement(details)
      .label((d) => d.data.name + ": " + show(d.value, unit) + ", " +
        (100 * (d.x1 - d.x0)).toFixed(2) + "%");
    d3.select(chartDiv).datum(t).call(chart);
    settle();
    if (search.value) chart.search(search.value);
  }

  // d3-flame-graph grows new frames from zero width over 250 ms. Draw them at
  // their width at once (what d3-transition's interrupt() does: end the
  // scheduled transitions), so the page is right however slowly timers run.
  function settle() {
    for (const g of chartDiv.querySelectorAll("g.frame")) {
      const rect = g.querySelector("rect");
      if (!rect) continue;
      for (const k in rect.__transition || {}) {
        const sch = rect.__transition[k];
        if (sch.timer) sch.timer.stop();
        sch.state = 6;
      }
      delete rect.__transition;
      rect.setAttribute("width", g.getAttribute("width"));
    }
  }
  select.addEventListener("change", () => {
    sample = select.value;
    drawFlame();
    drawTop();
  });
  search.addEventListener("input", () => {
    if (!chart) return;
    if (search.value) chart.search(search.value);
    else chart.clear();
  });
  reset.addEventListener("click", () => chart && chart.resetZoom());

  // ---- memory over time -----------------------------------------------------------------------
  root.append(el("h2", {}, "Memory over time"));
  const timeline = el("div", { id: "timeline" });
  root.append(timeline);
  (function drawTimeline() {
    const pts = data.timeline;
    if (!pts.length) {
      timeline.append(el("p", { class: "empty" }, "no samples (this snapshot has no memory-over-time series)"));
      return;
    }
    const W = 900, H = 240, L = 80, B = 30;
    const t0 = pts[0][0], t1 = Math.max(pts[pts.length - 1][0], t0 + 1e-9);
    const vmax = Math.max(1, ...pts.map((p) => p[1]), data.totals.peak_live_bytes);
    const x = (t) => L + (W - L - 10) * (t - t0) / (t1 - t0);
    const y = (v) => H - B - (H - B - 10) * v / vmax;
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.setAttribute("width", W);
    svg.setAttribute("height", H);
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      svg.append(e);
      return e;
    };
    add("line", { x1: L, y1: H - B, x2: W - 10, y2: H - B, class: "axis" });
    add("line", { x1: L, y1: 10, x2: L, y2: H - B, class: "axis" });
    add("text", { x: L - 6, y: 14, "text-anchor": "end" }, bytes(vmax));
    add("text", { x: L - 6, y: H - B, "text-anchor": "end" }, "0");
    add("text", { x: L, y: H - 8 }, t0.toFixed(2) + " s");
    add("text", { x: W - 10, y: H - 8, "text-anchor": "end" }, t1.toFixed(2) + " s");
    add("polyline", {
      class: "live",
      points: pts.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "),
    });
    timeline.append(svg);
  })();

  // ---- top stacks -----------------------------------------------------------------------------
  root.append(el("h2", {}, "Top stacks"));
  const top = el("table", { id: "top", class: "numbers" });
  root.append(top);

  function drawTop() {
    top.textContent = "";
    const unit = SAMPLES[sample].unit;
    top.append(el("tr", {}, el("th", {}, "#"), el("th", {}, SAMPLES[sample].label),
      el("th", {}, "allocations"), el("th", {}, "live allocations"), el("th", {}, "site"),
      el("th", {}, "stack (innermost first)")));
    const rows = data.stacks.filter((s) => s[sample] > 0).sort((a, b) => b[sample] - a[sample]).slice(0, 50);
    rows.forEach((s, i) => {
      const frames = s.frames.slice().reverse();
      top.append(el("tr", {}, el("td", {}, String(i + 1)), el("td", {}, show(s[sample], unit)),
        el("td", {}, s.count.toLocaleString("en")), el("td", {}, s.live_allocations.toLocaleString("en")),
        el("td", { class: "site" }, (frames[0] || "[unknown]") + (s.site ? " at " + s.site : "")),
        el("td", { class: "stack" }, frames.join(" \u2190 "))));
    });
    if (!rows.length) top.append(el("tr", {}, el("td", { colspan: "6" }, "no stacks")));
  }

  // Zoom on the widest frame of that name, as a click on it does.
  function zoomTo(name) {
    if (!chart) return false;
    const top = d3.select(chartDiv).datum();
    const hits = top.descendants().filter((n) => n.data.name === name);
    if (!hits.length) return false;
    hits.sort((a, b) => b.value - a.value);
    chart.zoomTo(hits[0]);
    settle();
    return true;
  }

  drawFlame();
  drawTop();
  if (params.get("zoom") && !zoomTo(params.get("zoom")))
    details.textContent = "no frame named " + params.get("zoom");
  document.body.setAttribute("data-memtrace", "ready");
})();
