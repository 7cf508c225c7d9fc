// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unwind tables in the BPF pool and the mapping lists of traced processes
 * (see unwind.h). Modules are reference-counted by the mappings that use
 * them: a table is built when a traced process first maps its file and
 * unloaded when the last one goes (src/daemon/unwind/unwind_pool.c holds them). A table
 * is in the pool before any process's list names it.
 */
#include "daemon/unwind/unwind.h"
#include "daemon/unwind/unwind_pool.h"
#include "daemon/unwind/unwind_table.h"
#include "daemon/elf/elfmod.h"
#include "daemon/proc/linkmap.h"
#include "daemon/proc/procmaps.h"
#include "daemon/symbols/dwarfline.h"
#include "common/util.h"
#include "memtrace/event.h"

#include <errno.h>
#include <elfutils/libdw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrace.skel.h"
#include "common/search.h"

#define REFRESH_MIN_NS	  (100ull * 1000 * 1000)
#define R_DEBUG_STATE_OFF 24 /* offsetof(struct r_debug, r_state) on x86-64 */
#define MAX_SEGMENTS	  16

enum module_state { MOD_LOADED, MOD_NONE, MOD_REFUSED };

struct segment {
	uint64_t vaddr, offset, filesz;
};

struct module {
	uint64_t dev, ino;
	char *build_id; /* hex, or NULL */
	char *path;
	int state;
	uint32_t id;   /* table id when loaded */
	uint64_t base; /* the table's base address (ELF virtual address) */
	struct segment segs[MAX_SEGMENTS];
	int nsegs;
	uint32_t refs; /* mappings of traced processes that use it */
};

struct pmap {
	uint64_t start, end, bias;
	struct module *mod; /* NULL: not a file, or no module */
};

struct proc {
	int pid;
	struct pmap *maps;
	size_t nmaps;
	struct bpf_link *ldso;
	uint64_t refreshed_ns;
	uint64_t r_state_addr;
};

struct unwinder {
	struct memtrace_bpf *skel;
	struct unwind_pool *pool;
	struct module **mods;
	size_t nmods;
	struct proc *procs;
	size_t nprocs;
	uint64_t build_ns;
	uint64_t lists_written; /* numbers the mapping lists (mt_unwind_proc.gen) */
};

struct unwinder *unwind_new(struct memtrace_bpf *skel, uint64_t max_bytes)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));

	u->skel = skel;
	u->pool = unwind_pool_new(bpf_map__fd(skel->maps.uw_pool),
				  bpf_map__fd(skel->maps.uw_tables), max_bytes);
	return u;
}

/* ---- modules ------------------------------------------------------------- */

/* The module's segments and build-id, from the file elfmod read. */
static void read_elf_facts(const struct elf_module *em, struct module *m)
{
	const char *id = elfmod_build_id(em);

	while (m->nsegs < MAX_SEGMENTS) {
		struct segment *sg = &m->segs[m->nsegs];

		if (elfmod_segment(em, (size_t)m->nsegs, &sg->vaddr, &sg->offset, &sg->filesz))
			break;
		m->nsegs++;
	}
	m->build_id = id ? xstrdup(id) : NULL;
}

/*
 * The table of a file whose own sections have no call frame information,
 * from .debug_frame in its separate debug file: libdwfl finds that file
 * (build-id under /usr/lib/debug, then .gnu_debuglink beside the file, in
 * its .debug/ and under /usr/lib/debug, the link's checksum verified), as
 * it does to name lines.
 */
static int build_from_debug_file(struct elf_module *em, const char *path, struct unwind_table *t,
				 char *err, size_t errlen)
{
	struct dwarf_lines *dl = dwarf_lines_open(elfmod_fd(em), path);
	uint64_t bias;
	Dwarf *dw = dl ? dwarf_lines_dwarf(dl, &bias) : NULL;
	Elf *debug = dw ? dwarf_getelf(dw) : NULL;
	int rc = -1;

	if (debug && debug != elfmod_libelf(em))
		rc = unwind_table_build(elfmod_libelf(em), debug, t, err, errlen);
	dwarf_lines_close(dl);
	return rc;
}

static void module_free(struct module *m)
{
	free(m->build_id);
	free(m->path);
	free(m);
}

/* Open the file of mapping e of pid and make its table (or say why not). */
static struct module *module_make(struct unwinder *u, int pid, const struct map_entry *e)
{
	struct module *m = xcalloc(1, sizeof(*m));
	struct elf_module *em = NULL;
	struct unwind_table t;
	char err[256];
	uint64_t t0 = time_monotonic_ns();
	int fd, rc;

	m->dev = makedev(e->dev_major, e->dev_minor);
	m->ino = e->inode;
	m->path = xstrdup(e->path);
	m->state = MOD_NONE;
	fd = procmaps_open_file(pid, e, err, sizeof(err));
	if (fd >= 0) {
		em = elfmod_open_fd(fd, e->path, err, sizeof(err));
		close(fd);
	}
	if (!em) {
		log_msg("unwind: %s: %s: frame pointers there", e->path, err);
		return m;
	}
	read_elf_facts(em, m);
	/* the same file under another name (a container's copy): one table */
	for (size_t i = 0; m->build_id && i < u->nmods; i++) {
		struct module *o = u->mods[i];

		if (o->build_id && !strcmp(o->build_id, m->build_id) && o->state == MOD_LOADED) {
			elfmod_close(em);
			m->state = -1; /* the caller shares o */
			m->id = (uint32_t)i;
			return m;
		}
	}
	rc = unwind_table_build(elfmod_libelf(em), NULL, &t, err, sizeof(err));
	if (rc)
		rc = build_from_debug_file(em, e->path, &t, err, sizeof(err)) ? rc : 0;
	elfmod_close(em);
	u->build_ns += time_monotonic_ns() - t0;
	if (rc) {
		log_msg("unwind: %s: %s: frame pointers there", e->path, err);
		return m;
	}
	if (unwind_pool_load(u->pool, &t, &m->id)) {
		m->state = MOD_REFUSED;
		log_msg("unwind: %s: its table (%" PRIu64 " KiB) does not fit in --unwind-memory: "
			"frame pointers there",
			e->path, ((uint64_t)t.npages + t.nrows) * 8 / 1024);
	} else {
		m->state = MOD_LOADED;
		m->base = t.base;
	}
	unwind_table_free(&t);
	return m;
}

/* The module of file mapping e (made if new), with one more reference. */
static struct module *module_get(struct unwinder *u, int pid, const struct map_entry *e)
{
	uint64_t dev = makedev(e->dev_major, e->dev_minor);
	struct module *m;

	for (size_t i = 0; i < u->nmods; i++) {
		if (u->mods[i]->dev == dev && u->mods[i]->ino == e->inode) {
			u->mods[i]->refs++;
			return u->mods[i];
		}
	}
	m = module_make(u, pid, e);
	if (m->state == -1) { /* a loaded module with its build-id */
		struct module *o = u->mods[m->id];

		module_free(m);
		o->refs++;
		return o;
	}
	u->mods = xrealloc(u->mods, (u->nmods + 1) * sizeof(*u->mods));
	u->mods[u->nmods++] = m;
	m->refs = 1;
	return m;
}

static void module_put(struct unwinder *u, struct module *m)
{
	if (!m || --m->refs)
		return;
	if (m->state == MOD_LOADED)
		unwind_pool_unload(u->pool, m->id);
	for (size_t i = 0; i < u->nmods; i++) {
		if (u->mods[i] == m) {
			u->mods[i] = u->mods[--u->nmods];
			break;
		}
	}
	module_free(m);
}

/* pc - bias is the table offset, for mapping e of module m. */
static int mapping_bias(const struct module *m, const struct map_entry *e, uint64_t *bias)
{
	for (int i = 0; i < m->nsegs; i++) {
		const struct segment *s = &m->segs[i];
		uint64_t page_off = s->offset & ~4095ull;

		if (e->offset >= page_off && e->offset < s->offset + s->filesz) {
			/* e->start holds file offset e->offset, at vaddr
			 * s->vaddr + (e->offset - s->offset) */
			*bias = e->start - (s->vaddr + e->offset - s->offset) + m->base;
			return 0;
		}
	}
	return -1;
}

/* ---- processes ----------------------------------------------------------- */

static struct proc *proc_find(struct unwinder *u, int pid)
{
	for (size_t i = 0; i < u->nprocs; i++) {
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	}
	return NULL;
}

/* After every change of uw_procs: the walker's per-CPU copies of a list's
 * generation are good while this is unchanged (bpf/unwind.bpf.h). */
static void lists_changed(struct unwinder *u)
{
	__atomic_fetch_add(&u->skel->bss->uw_lists_changed, 1, __ATOMIC_SEQ_CST);
}

static void publish(struct unwinder *u, const struct proc *p)
{
	struct mt_unwind_proc *v = xcalloc(1, sizeof(*v));

	v->r_state_addr = p->r_state_addr;
	v->gen = ++u->lists_written; /* rows the walker cached for older lists never match */
	for (size_t i = 0; i < p->nmaps && v->nmaps < MT_UW_MAX_MAPS; i++) {
		struct mt_unwind_map *out = &v->maps[v->nmaps++];

		out->start = p->maps[i].start;
		out->end = p->maps[i].end;
		out->bias = p->maps[i].bias;
		out->table = p->maps[i].mod && p->maps[i].mod->state == MOD_LOADED
				 ? p->maps[i].mod->id
				 : MT_UW_NO_TABLE;
	}
	if (bpf_map_update_elem(bpf_map__fd(u->skel->maps.uw_procs), &p->pid, v, BPF_ANY))
		log_msg("unwind: pid %d: cannot list its mappings for the walker: %s", p->pid,
			strerror(errno));
	lists_changed(u);
	free(v);
}

/* Read pid's maps into p (new references first, then the old ones dropped). */
static void proc_sync(struct unwinder *u, struct proc *p)
{
	struct proc_maps m;
	struct pmap *v;
	size_t n = 0;

	p->refreshed_ns = time_monotonic_ns();
	if (procmaps_read(p->pid, &m))
		return;
	v = xcalloc(m.n + 1, sizeof(*v));
	for (size_t i = 0; i < m.n; i++) {
		const struct map_entry *e = &m.v[i];

		if (e->perms[2] != 'x')
			continue;
		v[n].start = e->start;
		v[n].end = e->end;
		if (procmaps_is_file(e)) {
			v[n].mod = module_get(u, p->pid, e);
			if (v[n].mod->state == MOD_LOADED &&
			    mapping_bias(v[n].mod, e, &v[n].bias)) {
				module_put(u, v[n].mod);
				v[n].mod = NULL;
			}
		}
		n++;
	}
	procmaps_free(&m);
	for (size_t i = 0; i < p->nmaps; i++)
		module_put(u, p->maps[i].mod);
	free(p->maps);
	p->maps = v;
	p->nmaps = n;
	publish(u, p);
}

static void attach_ldso(struct unwinder *u, struct proc *p)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts);
	uint64_t off, r_debug;
	char *path = NULL;

	r_debug = linkmap_ldso_symbol(p->pid, "_r_debug");
	p->r_state_addr = r_debug ? r_debug + R_DEBUG_STATE_OFF : 0;
	if (p->ldso || linkmap_ldso_probe(p->pid, &path, &off))
		return; /* a static program: nothing is mapped later by the linker */
	p->ldso = bpf_program__attach_uprobe_opts(u->skel->progs.uw_ldso, p->pid, path, off, &opts);
	if (!p->ldso)
		log_msg("unwind: pid %d: cannot probe its ld.so (%s): libraries it opens later "
			"are unwound once a stack shows them",
			p->pid, strerror(errno));
	free(path);
}

static struct proc *proc_add(struct unwinder *u, int pid)
{
	struct proc *p = proc_find(u, pid);

	if (p)
		return p;
	u->procs = xrealloc(u->procs, (u->nprocs + 1) * sizeof(*u->procs));
	p = &u->procs[u->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

void unwind_attach(struct unwinder *u, int pid)
{
	struct proc *p;

	if (!u)
		return;
	p = proc_add(u, pid);
	attach_ldso(u, p);
	proc_sync(u, p);
}

void unwind_detach(struct unwinder *u, int pid)
{
	struct proc *p;
	uint32_t key = (uint32_t)pid;

	if (!u || !(p = proc_find(u, pid)))
		return;
	bpf_map_delete_elem(bpf_map__fd(u->skel->maps.uw_procs), &key);
	lists_changed(u);
	bpf_link__destroy(p->ldso);
	for (size_t i = 0; i < p->nmaps; i++)
		module_put(u, p->maps[i].mod);
	free(p->maps);
	*p = u->procs[--u->nprocs];
}

void unwind_fork(struct unwinder *u, int parent, int child)
{
	struct proc *pp, *c;

	if (!u || !(pp = proc_find(u, parent)))
		return;
	c = proc_add(u, child);
	pp = proc_find(u, parent); /* proc_add may move the array */
	if (c->nmaps)
		return;
	c->maps = xcalloc(pp->nmaps + 1, sizeof(*c->maps));
	for (size_t i = 0; i < pp->nmaps; i++) {
		c->maps[i] = pp->maps[i];
		if (c->maps[i].mod)
			c->maps[i].mod->refs++;
	}
	c->nmaps = pp->nmaps;
	c->refreshed_ns = time_monotonic_ns();
	attach_ldso(u, c);
}

void unwind_linker_event(struct unwinder *u, int pid)
{
	struct proc *p;

	if (u && (p = proc_find(u, pid)))
		proc_sync(u, p);
}

void unwind_note_frames(struct unwinder *u, int pid, const uint64_t *frames, size_t n)
{
	struct proc *p;

	if (!u || !(p = proc_find(u, pid)))
		return;
	for (size_t i = 0; i < n; i++) {
		size_t lo = SEARCH_FIRST(0, p->nmaps, p->maps[mid].end > frames[i]);

		if (lo < p->nmaps && p->maps[lo].start <= frames[i])
			continue;
		if (time_monotonic_ns() - p->refreshed_ns >= REFRESH_MIN_NS)
			proc_sync(u, p);
		return;
	}
}

void unwind_get_status(const struct unwinder *u, struct unwind_status *out)
{
	memset(out, 0, sizeof(*out));
	if (!u)
		return;
	unwind_pool_usage(u->pool, &out->memory_limit, &out->memory_used, &out->table_bytes);
	out->build_ns = u->build_ns;
	for (size_t i = 0; i < u->nmods; i++) {
		out->tables += u->mods[i]->state == MOD_LOADED;
		out->modules_without += u->mods[i]->state == MOD_NONE;
		out->modules_refused += u->mods[i]->state == MOD_REFUSED;
	}
}

void unwind_free(struct unwinder *u)
{
	if (!u)
		return;
	while (u->nprocs)
		unwind_detach(u, u->procs[0].pid);
	for (size_t i = 0; i < u->nmods; i++)
		module_free(u->mods[i]);
	unwind_pool_free(u->pool);
	free(u->mods);
	free(u->procs);
	free(u);
}

int unwind_parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t len = strlen(s);
	uint64_t v, mult = 1;

	if (!len || len >= sizeof(num))
		return -1;
	memcpy(num, s, len + 1);
	switch (num[len - 1]) {
	case 'K':
	case 'k':
		mult = 1ull << 10;
		break;
	case 'M':
	case 'm':
		mult = 1ull << 20;
		break;
	case 'G':
	case 'g':
		mult = 1ull << 30;
		break;
	}
	if (mult > 1)
		num[len - 1] = 0;
	if (parse_u64(num, (4ull << 30) / mult, &v))
		return -1;
	v *= mult;
	if (v < (1ull << 20) || v > (4ull << 30))
		return -1;
	*out = v;
	return 0;
}
