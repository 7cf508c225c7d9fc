// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// memtrace HTML report, cgroups: run after report.js (and memory.js, pid.js),
// only in pages whose snapshot carries cgroup labels, so that a page of an
// older snapshot is the same page as before, byte for byte. Each target of the
// list gets its cgroup, unit and container; a page of one pid (--pid) whose
// memory cgroup was read over time gets a chart of the cgroup's usage beside
// its limit, under the live heap of that pid.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("memtrace-data").textContent);
  const list = document.getElementById("targets");

  function bytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let v = n, u = 0;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return u ? v.toFixed(1) + " " + units[u] : n + " B";
  }

  // ---- labels, after each target of the list ---------------------------------------------------
  if (list) {
    data.targets.forEach((t, i) => {
      const li = list.children[i], c = t.cgroup;
      if (!li || !c) return;
      let text = " \u2014 cgroup " + c.path;
      if (c.unit) text += ", unit " + c.unit;
      if (c.container) text += ", container " + c.container.slice(0, 12) + " (" + c.runtime + ")";
      if (c.pod) text += ", pod " + c.pod;
      const span = document.createElement("span");
      span.className = "cgroup";
      span.textContent = text;
      li.append(span);
    });
  }

  // ---- the pid's memory cgroup over time: usage, limit, live heap ------------------------------
  const cg = data.cgroup, timeline = document.getElementById("timeline");
  if (!cg || !cg.points.length || !timeline) return;
  const pts = cg.points, live = data.timeline.map((p) => [p[0], p[1]]);
  const limits = pts.filter((p) => p[2] !== null).map((p) => p[2]);
  const W = 900, H = 200, L = 80, B = 30, T = 30;
  const t0 = Math.min(...pts.map((p) => p[0]));
  const t1 = Math.max(...pts.map((p) => p[0]), t0 + 1e-9);
  const vmax = Math.max(1, ...pts.map((p) => p[1]), ...limits, ...live.map((p) => p[1]));
  const x = (t) => L + (W - L - 10) * (Math.min(Math.max(t, t0), t1) - t0) / (t1 - t0);
  const y = (v) => H - B - (H - B - T) * v / vmax;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("id", "cgroup-chart");
  const add = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  const line = (cls, ps) => add("polyline", {
    class: cls,
    points: ps.map((p) => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "),
  });
  add("line", { x1: L, y1: H - B, x2: W - 10, y2: H - B, class: "axis" });
  add("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" });
  add("text", { x: L - 6, y: T + 4, "text-anchor": "end" }, bytes(vmax));
  add("text", { x: L - 6, y: H - B, "text-anchor": "end" }, "0");
  add("text", { x: L, y: H - 8 }, t0.toFixed(2) + " s");
  add("text", { x: W - 10, y: H - 8, "text-anchor": "end" }, t1.toFixed(2) + " s");
  line("cgroup-usage", pts.map((p) => [p[0], p[1]]));
  line("live", live.filter((p) => p[0] >= t0));
  if (limits.length) line("cgroup-limit", pts.filter((p) => p[2] !== null).map((p) => [p[0], p[2]]));
  const last = pts[pts.length - 1];
  add("text", { x: L + 8, y: 18, class: "cgroup-usage" },
    "memory cgroup " + cg.path + ": " + bytes(last[1]) +
    (last[2] === null ? ", no limit" : " of " + bytes(last[2]) + ", headroom " +
      bytes(Math.max(0, last[2] - last[1]))));
  const h = document.createElement("h2");
  h.textContent = "Memory cgroup over time";
  timeline.after(h, svg);
})();
