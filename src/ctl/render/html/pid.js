// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// memtrace HTML report of one pid (report --format html --pid PID): run after
// report.js and memory.js, only in such pages. The totals and the memory-over-
// time chart are that pid's own (the figures the snapshot keeps of each target
// at each point); the headings say so.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("memtrace-data").textContent);
  const timeline = document.getElementById("timeline");
  if (!data.pid || !timeline) return;
  const heading = timeline.previousElementSibling;
  if (heading && heading.tagName === "H2") heading.textContent = "Memory over time of pid " + data.pid;
  const totals = document.getElementById("totals");
  if (totals) {
    const p = document.createElement("p");
    p.className = "meta";
    p.textContent = "Counters of pid " + data.pid + ":";
    totals.before(p);
  }
  timeline.setAttribute("data-memtrace-pid", String(data.pid));
})();
