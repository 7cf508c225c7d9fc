// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A target's cgroup in status and stats (cgroup.h). The figures' names are
 * include/memtrace/cgroup.h's, in text and JSON alike.
 */
#include <inttypes.h>
#include <string.h>

#include "ctl/render/cgroup.h"
#include "ctl/render/format.h"

static int have(const struct mt_cgroup_memory *m, size_t i)
{
	return m->version && (m->have & (1u << i));
}

/* The cgroup a target is shown in: its memory cgroup, else its unified one. */
static const char *cgroup_path(const struct snap_cgroup *c)
{
	return c->memory_path ? c->memory_path : c->path ? c->path : "?";
}

#define FIG(field) (offsetof(struct mt_cgroup_figures, field) / sizeof(uint64_t))

/* "48.2 MiB of 64.0 MiB (75 %), headroom 15.8 MiB" or "48.2 MiB, no limit". */
static void text_usage(struct buf *b, const struct mt_cgroup_memory *m)
{
	char usage[32], limit[32], room[32];
	uint64_t u = m->f.usage_bytes, l = m->f.limit_bytes;

	format_bytes(usage, sizeof(usage), u);
	if (!have(m, FIG(limit_bytes)) || l == MT_CGROUP_NO_LIMIT) {
		buf_printf(b, "%s, no limit", usage);
		return;
	}
	format_bytes(limit, sizeof(limit), l);
	format_bytes(room, sizeof(room), u < l ? l - u : 0);
	buf_printf(b, "%s of %s (%.0f %%), headroom %s", usage, limit,
		   l ? 100.0 * (double)u / (double)l : 100.0, room);
	if (have(m, FIG(high_bytes)) && m->f.high_bytes != MT_CGROUP_NO_LIMIT) {
		format_bytes(limit, sizeof(limit), m->f.high_bytes);
		buf_printf(b, ", high %s", limit);
	}
}

/* "cgroup /PATH (unit U, container ID R, pod P), nspid N; unified hierarchy /Q" */
static void text_labels(struct buf *b, const struct snap_cgroup *c)
{
	const char *sep = " (";

	buf_printf(b, "cgroup ");
	format_text(b, cgroup_path(c));
	if (c->unit) {
		buf_printf(b, "%sunit ", sep);
		format_text(b, c->unit);
		sep = ", ";
	}
	if (c->container) {
		buf_printf(b, "%scontainer ", sep);
		format_text(b, c->container);
		if (c->runtime) {
			buf_printf(b, " ");
			format_text(b, c->runtime);
		}
		sep = ", ";
	}
	if (c->pod) {
		buf_printf(b, "%spod ", sep);
		format_text(b, c->pod);
		sep = ", ";
	}
	buf_printf(b, "%s", strcmp(sep, ", ") ? "" : ")");
	if (c->nspid)
		buf_printf(b, ", nspid %" PRIu32, c->nspid);
	if (c->path && strcmp(c->path, cgroup_path(c)) && strcmp(c->path, "/")) {
		buf_printf(b, "; unified hierarchy ");
		format_text(b, c->path);
	}
}

void render_text_target_cgroup_line(struct buf *b, const struct snap_target *t)
{
	const struct snap_cgroup *c = &t->cgroup;

	if (!c->known)
		return;
	buf_printf(b, "pid %" PRIu32 ": ", t->pid);
	text_labels(b, c);
	if (c->m.version) {
		buf_printf(b, ": ");
		text_usage(b, &c->m);
	}
	buf_printf(b, "\n");
}

void render_text_target_cgroup(struct buf *b, const struct snap_target *t)
{
	const struct snap_cgroup *c = &t->cgroup;
	const struct mt_cgroup_memory *m = &c->m;

	if (!c->known)
		return;
	buf_printf(b, "  ");
	text_labels(b, c);
	buf_printf(b, "\n");
	if (!m->version) {
		buf_printf(b, "  memory cgroup: none");
		if (c->why) {
			buf_printf(b, ": ");
			format_text(b, c->why);
		}
		buf_printf(b, "\n");
		return;
	}
	buf_printf(b, "  memory cgroup ");
	format_text(b, c->memory_path ? c->memory_path : "?");
	buf_printf(b, " (%s) at %.3f s: ", mt_cgroup_version_name(m->version),
		   ns_to_seconds(c->time_ns));
	text_usage(b, m);
	if (have(m, FIG(oom_kills)))
		buf_printf(b, "; oom_kill %" PRIu64, m->f.oom_kills);
	buf_printf(b, "\n   ");
	for (size_t i = FIG(anon_bytes), first = 1; i <= FIG(shmem_bytes); i++) {
		char v[32];

		if (!have(m, i))
			continue;
		format_bytes(v, sizeof(v), mt_cgroup_get(&m->f, i));
		/* "cgroup_anon_bytes" says "anon" */
		buf_printf(
		    b, "%s %.*s %s", first ? "" : ",",
		    (int)(strlen(mt_cgroup_descs[i].name) - strlen("cgroup_") - strlen("_bytes")),
		    mt_cgroup_descs[i].name + strlen("cgroup_"), v);
		first = 0;
	}
	buf_printf(b, ";");
	for (size_t i = FIG(high_events); i < MT_NCGROUP; i++) {
		if (have(m, i) && i != FIG(oom_kills))
			buf_printf(b, " %s %" PRIu64, mt_cgroup_descs[i].name + strlen("cgroup_"),
				   mt_cgroup_get(&m->f, i));
	}
	buf_printf(b, "\n");
	if (c->why) {
		buf_printf(b, "  (");
		format_text(b, c->why);
		buf_printf(b, ")\n");
	}
}

void render_json_target_cgroup(struct json_writer *w, const struct snap_target *t)
{
	const struct snap_cgroup *c = &t->cgroup;
	const struct mt_cgroup_memory *m = &c->m;

	if (!c->known)
		return;
	json_key(w, "cgroup");
	json_begin_object(w);
	json_kv_string(w, "path", cgroup_path(c));
	json_kv_string(w, "unified_path", c->path);
	json_kv_string(w, "unit", c->unit);
	json_kv_string(w, "container", c->container);
	json_kv_string(w, "runtime", c->runtime);
	json_kv_string(w, "pod", c->pod);
	json_key(w, "nspid");
	if (c->nspid)
		json_u64(w, c->nspid);
	else
		json_null(w);
	json_key(w, "memory");
	json_begin_object(w);
	json_kv_string(w, "version", m->version ? mt_cgroup_version_name(m->version) : NULL);
	json_kv_string(w, "path", c->memory_path);
	json_kv_string(w, "note", c->why);
	if (m->version) {
		json_kv_double(w, "time", ns_to_seconds(c->time_ns));
		for (size_t i = 0; i < MT_NCGROUP; i++) {
			uint64_t v = mt_cgroup_get(&m->f, i);

			if (!have(m, i))
				continue; /* its version has no such file */
			json_key(w, mt_cgroup_descs[i].name);
			if (v == MT_CGROUP_NO_LIMIT)
				json_null(w); /* no limit */
			else
				json_u64(w, v);
		}
		json_key(w, "cgroup_headroom_bytes");
		if (have(m, FIG(limit_bytes)) && m->f.limit_bytes != MT_CGROUP_NO_LIMIT)
			json_u64(w, m->f.limit_bytes > m->f.usage_bytes
					? m->f.limit_bytes - m->f.usage_bytes
					: 0);
		else
			json_null(w);
	}
	json_end_object(w);
	json_end_object(w);
}

void render_text_cgroups(struct buf *b, const struct snapshot *s, uint32_t pid)
{
	for (uint32_t i = 0; i < s->ntargets; i++) {
		const struct snap_cgroup *c = &s->targets[i].cgroup;
		int seen = 0;

		if (!c->known || !c->m.version || s->targets[i].state != SNAP_TARGET_ATTACHED ||
		    (pid && s->targets[i].pid != pid))
			continue;
		for (uint32_t k = 0; k < i && !seen; k++) {
			const struct snap_cgroup *o = &s->targets[k].cgroup;

			seen = o->known && o->m.version &&
			       s->targets[k].state == SNAP_TARGET_ATTACHED &&
			       (!pid || s->targets[k].pid == pid) &&
			       !strcmp(cgroup_path(o), cgroup_path(c));
		}
		if (seen)
			continue; /* one line per cgroup */
		buf_printf(b, "  cgroup ");
		format_text(b, cgroup_path(c));
		buf_printf(b, ": ");
		text_usage(b, &c->m);
		if (have(&c->m, FIG(oom_kills)))
			buf_printf(b, "; oom_kill %" PRIu64, c->m.f.oom_kills);
		buf_printf(b, "\n");
	}
}
