// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Prometheus text exposition (format 0.0.4) of the daemon's state:
 * every counter of include/memtrace/counters.h per target (one series per
 * pid, its newest generation), its sampled resident memory while it is
 * traced (include/memtrace/resident.h), lost events by kind, target states. Served by
 * metrics_http.c; a pure function of the view, so it is unit tested.
 */
#include <stdio.h>
#include <string.h>

#include "daemon/serve/metrics.h"
#include "daemon/core/resident.h"
#include "daemon/core/tracker.h"
#include "common/util.h"

#define MAX_LABEL_BYTES 256 /* of a command line in a label */

/* A later generation of the same pid (after an exec, or attached again). */
static int superseded(const struct daemon_view *d, int i)
{
	for (int k = i + 1; k < d->ntargets; k++) {
		if (view_target(d, k).pid == view_target(d, i).pid)
			return 1;
	}
	return 0;
}

static void put_label_value(struct buf *b, const char *s)
{
	size_t n = 0;

	for (; s && *s && n < MAX_LABEL_BYTES; s++, n++) {
		if (*s == '\\' || *s == '"')
			buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			buf_printf(b, "\\n");
		else
			buf_put(b, s, 1);
	}
}

static void put_target_labels(struct buf *b, const char *name, const struct view_target *tg)
{
	buf_printf(b, "%s{pid=\"%d\",command=\"", name, tg->pid);
	put_label_value(b, tg->command);
	buf_printf(b, "\"}");
}

/*
 * Each resident figure per target traced now, as last sampled (no series
 * for a target that exited: it holds no memory), and the peak of the window.
 */
static void metrics_resident(const struct daemon_view *d, struct buf *b)
{
	for (size_t m = 0; m <= MT_NRESIDENT; m++) {
		const char *name = m < MT_NRESIDENT ? mt_resident_descs[m].prometheus
						    : "memtrace_peak_resident_bytes";

		buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name,
			   m < MT_NRESIDENT ? mt_resident_descs[m].help
					    : "The largest resident_bytes sampled since tracing "
					      "began (or the last reset-peak).",
			   name);
		for (int i = 0; i < d->ntargets; i++) {
			const struct view_target tg = view_target(d, i);
			const struct resident_target *rt = resident_get(d->resident, (uint32_t)i);

			if (!rt || tg.state != SNAP_TARGET_ATTACHED || superseded(d, i))
				continue;
			put_target_labels(b, name, &tg);
			buf_printf(b, " %llu\n",
				   (unsigned long long)(m < MT_NRESIDENT
							    ? mt_resident_get(&rt->last, m)
							    : rt->peak_bytes));
		}
	}
}

void metrics_render(const struct daemon_view *d, struct buf *b)
{
	buf_printf(b, "# HELP memtrace_up 1 while memtraced serves metrics.\n"
		      "# TYPE memtrace_up gauge\nmemtrace_up 1\n");
	buf_printf(b,
		   "# HELP memtrace_uptime_seconds Time since memtraced started.\n"
		   "# TYPE memtrace_uptime_seconds gauge\nmemtrace_uptime_seconds %.3f\n",
		   (double)(time_monotonic_ns() - d->start_ns) / 1e9);
	buf_printf(b,
		   "# HELP memtrace_events_received_total Events read from the BPF ring buffer.\n"
		   "# TYPE memtrace_events_received_total counter\n"
		   "memtrace_events_received_total %llu\n",
		   (unsigned long long)d->tracker->events_received);
	buf_printf(b, "# HELP memtrace_events_lost_total Events the ring buffer could not take, "
		      "by kind.\n# TYPE memtrace_events_lost_total counter\n");
	for (unsigned k = 0; k < MT_LOST_KIND_COUNT; k++)
		buf_printf(b, "memtrace_events_lost_total{kind=\"%s\"} %llu\n",
			   mt_lost_kind_name(k), (unsigned long long)d->events_lost[k]);
	if (d->walker.name) {
		buf_printf(b, "# HELP memtrace_stack_walker_info The stack walker memtraced runs "
			      "(walker) and why (reason: default, chosen, or what the kernel's "
			      "verifier refused before it).\n"
			      "# TYPE memtrace_stack_walker_info gauge\n"
			      "memtrace_stack_walker_info{walker=\"");
		put_label_value(b, d->walker.name);
		buf_printf(b, "\",reason=\"");
		put_label_value(b, d->walker.reason);
		buf_printf(b, "\"} 1\n");
	}
	if (d->has_match)
		buf_printf(b,
			   "# HELP memtrace_matches_over_limit_total Processes that matched "
			   "--comm/--exe but were not traced: --max-targets were traced.\n"
			   "# TYPE memtrace_matches_over_limit_total counter\n"
			   "memtrace_matches_over_limit_total %llu\n",
			   (unsigned long long)d->match.over_limit);
	{
		unsigned long long kills = 0;

		for (int i = 0; i < d->ntargets; i++) {
			const struct view_target tg = view_target(d, i);

			kills += tg.oom && tg.oom->killed;
		}
		buf_printf(b,
			   "# HELP memtrace_oom_kills_total Traced processes the kernel's OOM "
			   "killer chose (oom:mark_victim).\n"
			   "# TYPE memtrace_oom_kills_total counter\n"
			   "memtrace_oom_kills_total %llu\n",
			   kills);
	}
	for (size_t m = 0; m < MT_NCOUNTERS; m++) {
		const struct mt_counter_desc *desc = &mt_counter_descs[m];

		buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", desc->prometheus, desc->help,
			   desc->prometheus, desc->prometheus_type);
		for (int i = 0; i < d->ntargets; i++) {
			const struct view_target tg = view_target(d, i);
			const struct tracker_target *tt = tracker_find_gen(d->tracker, tg.gen);
			uint64_t v = 0;

			if (superseded(d, i))
				continue; /* one series per pid: its newest generation */

			if (tt)
				v = mt_counter_get(&tt->c, m);
			buf_printf(b, "%s{pid=\"%d\",command=\"", desc->prometheus, tg.pid);
			put_label_value(b, tg.command);
			if (desc->unit == MT_UNIT_NS)
				buf_printf(b, "\"} %.9f\n", (double)v / 1e9);
			else
				buf_printf(b, "\"} %llu\n", (unsigned long long)v);
		}
	}
	metrics_resident(d, b);
	buf_printf(b, "# HELP memtrace_target_state 1 for the state each target is in.\n"
		      "# TYPE memtrace_target_state gauge\n");
	for (int i = 0; i < d->ntargets; i++) {
		const struct view_target tg = view_target(d, i);

		buf_printf(b, "memtrace_target_state{pid=\"%d\",command=\"", tg.pid);
		put_label_value(b, tg.command);
		buf_printf(b, "\",state=\"%s\"} 1\n",
			   tg.oom && tg.oom->killed ? "oom-killed"
						    : snap_target_state_name((uint32_t)tg.state));
	}
}
