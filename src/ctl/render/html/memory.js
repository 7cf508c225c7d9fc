// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// memtrace HTML report, resident memory: run after report.js, only in pages
// whose snapshot carries resident memory (data.resident), so that a page made
// from an older snapshot is the same page as before, byte for byte. It draws
// the memory-over-time chart again with two lines, the live heap and the
// resident memory of the traced targets, the peak of each marked, and adds
// the resident totals under the counters.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("memtrace-data").textContent);
  const res = data.resident;
  const timeline = document.getElementById("timeline");
  const totals = document.getElementById("totals");
  if (!res || !timeline) return;

  function bytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let v = n, u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return u ? v.toFixed(1) + " " + units[u] : n + " B";
  }

  // ---- resident totals, under the counters ------------------------------------------------------
  if (totals) {
    for (const [k, v] of Object.entries(res.total)) {
      const tr = document.createElement("tr");
      tr.className = "resident";
      const th = document.createElement("th"), td = document.createElement("td");
      th.textContent = k;
      td.textContent = v.toLocaleString("en") + " (" + bytes(v) + ")";
      tr.append(th, td);
      totals.append(tr);
    }
  }

  // ---- memory over time: live and resident -------------------------------------------------------
  const live = data.timeline.map((p) => [p[0], p[1]]);
  const rss = res.timeline;
  if (!live.length && !rss.length) return;
  timeline.textContent = "";
  const all = live.concat(rss);
  const W = 900, H = 270, L = 80, B = 30, T = 40;
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]), t0 + 1e-9);
  const vmax = Math.max(1, ...all.map((p) => p[1]), data.totals.peak_live_bytes);
  const x = (t) => L + (W - L - 10) * (Math.min(Math.max(t, t0), t1) - t0) / (t1 - t0);
  const y = (v) => H - B - (H - B - T) * v / vmax;
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
  add("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" });
  add("text", { x: L - 6, y: T + 4, "text-anchor": "end" }, bytes(vmax));
  add("text", { x: L - 6, y: H - B, "text-anchor": "end" }, "0");
  add("text", { x: L, y: H - 8 }, t0.toFixed(2) + " s");
  add("text", { x: W - 10, y: H - 8, "text-anchor": "end" }, t1.toFixed(2) + " s");
  const line = (cls, pts) => add("polyline", {
    class: cls,
    points: pts.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "),
  });
  line("resident", rss);
  line("live", live);
  // Each peak where it was: the live heap's exact one (it need not be a
  // sample), the resident series' largest sample; their values in a row above
  // the lines, where they cannot overlap.
  const peaks = [["live", data.totals.peak_time, data.totals.peak_live_bytes, "peak live"]];
  if (res.peak_bytes !== null) peaks.push(["resident", res.peak_time, res.peak_bytes, "peak resident"]);
  peaks.forEach(([cls, t, v, label], i) => {
    add("circle", {
      class: "peak-" + cls, cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 4,
      "data-bytes": v, "data-time": t,
    });
    add("text", { class: "peak-" + cls, x: L + 8 + 260 * i, y: 28 },
      "\u25cf " + label + " " + bytes(v) + " at " + t.toFixed(2) + " s");
  });
  add("text", { x: W - 10, y: 12, "text-anchor": "end", class: "legend-live" }, "\u2014 live heap");
  add("text", { x: W - 90, y: 12, "text-anchor": "end", class: "legend-resident" },
    "\u2014 resident (" + res.targets + " target" + (res.targets === 1 ? "" : "s") + " traced)");
  timeline.append(svg);
  timeline.setAttribute("data-memtrace-resident", "ready");
})();
