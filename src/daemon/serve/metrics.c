// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The Prometheus text exposition (format 0.0.4) of the daemon's state:
 * every counter of include/memtrace/counters.h per target (one series per
 * pid, its newest generation), its sampled resident memory while it is
 * traced (include/memtrace/resident.h), lost events by kind, target states,
 * each labelled with its cgroup (include/memtrace/cgroup.h), and each traced
 * memory cgroup's figures once. Served by
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

/* ,cgroup="...",unit="..." of target i: the labels its cgroup gives it, those it has. */
static void put_cgroup_labels(struct buf *b, const struct daemon_view *d, int i)
{
	const struct resident_target *rt = resident_get_cgroup(d->resident, (uint32_t)i);
	const struct mt_cgroup_labels *l = rt ? rt->labels : NULL;
	const struct {
		const char *name, *value;
	} v[] = {
	    {"cgroup", l ? (l->memory_path[0] ? l->memory_path : l->path) : NULL},
	    {"unit", l ? l->unit : NULL},
	    {"container", l ? l->container : NULL},
	    {"runtime", l ? l->runtime : NULL},
	    {"pod", l ? l->pod : NULL},
	};

	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		if (!v[k].value || !*v[k].value)
			continue;
		buf_printf(b, ",%s=\"", v[k].name);
		put_label_value(b, v[k].value);
		buf_printf(b, "\"");
	}
	if (l && l->nspid > 0)
		buf_printf(b, ",nspid=\"%d\"", (int)l->nspid);
}

static void put_target_labels(struct buf *b, const char *name, const struct daemon_view *d, int i,
			      const struct view_target *vt)
{
	buf_printf(b, "%s{pid=\"%d\",command=\"", name, vt->pid);
	put_label_value(b, vt->command);
	buf_printf(b, "\"");
	put_cgroup_labels(b, d, i);
	buf_printf(b, "}");
}

/*
 * Each memory cgroup a target traced now is in, once (its last figures, of
 * the target that read them last): labelled by the cgroup and its version.
 * A limit not set is +Inf.
 */
static void metrics_cgroup(const struct daemon_view *d, struct buf *b)
{
	for (size_t m = 0; m < MT_NCGROUP; m++) {
		const struct mt_cgroup_desc *desc = &mt_cgroup_descs[m];
		int header = 0;

		for (int i = 0; i < d->ntargets; i++) {
			const struct view_target vt = view_target(d, i);
			const struct resident_target *rt =
			    resident_get_cgroup(d->resident, (uint32_t)i);
			int dup = 0;
			uint64_t v;

			if (!rt || !rt->labels || !rt->cg.version || !(rt->cg.have & (1u << m)) ||
			    vt.state != SNAP_TARGET_ATTACHED || superseded(d, i))
				continue;
			for (int k = 0; k < i && !dup; k++) {
				const struct resident_target *o =
				    resident_get_cgroup(d->resident, (uint32_t)k);

				dup = o && o->labels && o->cg.version &&
				      view_target(d, k).state == SNAP_TARGET_ATTACHED &&
				      !superseded(d, k) &&
				      !strcmp(o->labels->memory_path, rt->labels->memory_path);
			}
			if (dup)
				continue; /* one series per cgroup */
			if (!header++)
				buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", desc->prometheus,
					   desc->help, desc->prometheus, desc->prometheus_type);
			buf_printf(b, "%s{cgroup=\"", desc->prometheus);
			put_label_value(b, rt->labels->memory_path);
			buf_printf(b, "\",version=\"%s\"} ",
				   mt_cgroup_version_name(rt->cg.version));
			v = mt_cgroup_get(&rt->cg.f, m);
			if (v == MT_CGROUP_NO_LIMIT)
				buf_printf(b, "+Inf\n");
			else
				buf_printf(b, "%llu\n", (unsigned long long)v);
		}
	}
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
			const struct view_target vt = view_target(d, i);
			const struct resident_target *rt = resident_get(d->resident, (uint32_t)i);

			if (!rt || vt.state != SNAP_TARGET_ATTACHED || superseded(d, i))
				continue;
			put_target_labels(b, name, d, i, &vt);
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
	buf_printf(b,
		   "# HELP memtrace_bpf_runs_skipped_total Runs of memtrace's BPF programs the "
		   "kernel skipped (a run of the same program preempted on that CPU).\n"
		   "# TYPE memtrace_bpf_runs_skipped_total counter\n"
		   "memtrace_bpf_runs_skipped_total %llu\n",
		   (unsigned long long)d->daemon.bpf_runs_skipped);
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
			const struct view_target vt = view_target(d, i);

			kills += vt.oom && vt.oom->killed;
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
			const struct view_target vt = view_target(d, i);
			const struct tracker_target *tt = tracker_find_gen(d->tracker, vt.gen);
			uint64_t v = 0;

			if (superseded(d, i))
				continue; /* one series per pid: its newest generation */

			if (tt)
				v = mt_counter_get(&tt->c, m);
			put_target_labels(b, desc->prometheus, d, i, &vt);
			if (desc->unit == MT_UNIT_NS)
				buf_printf(b, " %.9f\n", (double)v / 1e9);
			else
				buf_printf(b, " %llu\n", (unsigned long long)v);
		}
	}
	metrics_resident(d, b);
	metrics_cgroup(d, b);
	buf_printf(b, "# HELP memtrace_target_state 1 for the state each target is in.\n"
		      "# TYPE memtrace_target_state gauge\n");
	for (int i = 0; i < d->ntargets; i++) {
		const struct view_target vt = view_target(d, i);

		buf_printf(b, "memtrace_target_state{pid=\"%d\",command=\"", vt.pid);
		put_label_value(b, vt.command);
		buf_printf(b, "\"");
		put_cgroup_labels(b, d, i);
		buf_printf(b, ",state=\"%s\"} 1\n",
			   vt.oom && vt.oom->killed ? "oom-killed"
						    : snap_target_state_name((uint32_t)vt.state));
	}
}
