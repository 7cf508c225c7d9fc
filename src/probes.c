// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * BPF object lifetime and uprobe attachment (see probes.h). One entry and one
 * return program serve every allocator function; the function is passed as
 * the BPF cookie of each attachment.
 */
#include "probes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrace.skel.h"
#include "util.h"

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("MEMTRACE_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

struct memtrace_bpf *probes_load(const struct bpf_options *o, char *err, size_t errlen)
{
	struct memtrace_bpf *skel;
	int rc;

	libbpf_set_print(libbpf_quiet);
	skel = memtrace_bpf__open();
	if (!skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		return NULL;
	}
	skel->rodata->cfg.stack_depth = o->stack_depth;
	skel->rodata->cfg.stack_walker = o->stack_walker;
	/* wake the consumer when a quarter of the buffer is queued */
	skel->rodata->cfg.wakeup_bytes = o->ring_buffer_bytes / 4;
	rc = bpf_map__set_max_entries(skel->maps.events, (uint32_t)o->ring_buffer_bytes);
	if (!rc)
		rc = memtrace_bpf__load(skel);
	if (rc) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-rc),
			 rc == -EPERM ? " (memtraced needs root: CAP_BPF and CAP_PERFMON)" : "");
		memtrace_bpf__destroy(skel);
		return NULL;
	}
	/* The skeleton owns the link: memtrace_bpf__destroy() detaches it. */
	skel->links.on_exec = bpf_program__attach(skel->progs.on_exec);
	if (!skel->links.on_exec) {
		snprintf(err, errlen, "cannot attach to the sched_process_exec raw tracepoint: %s",
			 strerror(errno));
		memtrace_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

void probes_unload(struct memtrace_bpf *skel)
{
	memtrace_bpf__destroy(skel);
}

int probes_ringbuf_fd(struct memtrace_bpf *skel)
{
	return bpf_map__fd(skel->maps.events);
}

int probes_read_lost(struct memtrace_bpf *skel, uint64_t *lost, int nslots)
{
	int ncpus = libbpf_num_possible_cpus(), slot, cpu;
	uint64_t *values;

	if (ncpus <= 0)
		return -1;
	values = xcalloc((size_t)ncpus, sizeof(*values));
	for (slot = 0; slot < nslots; slot++) {
		uint32_t key = (uint32_t)slot;

		lost[slot] = 0;
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.lost), &key, values))
			continue;
		for (cpu = 0; cpu < ncpus; cpu++)
			lost[slot] += values[cpu];
	}
	free(values);
	return 0;
}

static int attach_one(struct bpf_program *prog, int pid, const char *path, uint64_t offset,
		      int func, int retprobe, struct target_probes *tp)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = (uint64_t)func);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, pid, path, offset, &opts);
	if (!link)
		return -errno;
	tp->links[tp->nlinks++] = link;
	return 0;
}

int probes_attach(struct memtrace_bpf *skel, int pid, const struct allocator *a,
		  struct target_probes *tp, char *err, size_t errlen)
{
	int pass, i, rc = 0;

	memset(tp, 0, sizeof(*tp));
	/* pass 0: free; 1: return probes; 2: entry probes */
	for (pass = 0; pass < 3 && !rc; pass++) {
		for (i = 0; i < a->nprobes && !rc; i++) {
			const struct alloc_probe *p = &a->probes[i];
			const char *path = allocator_probe_open_path(a, p);
			int is_free = p->func == MT_FN_FREE;
			/* PyObject_Free emits at entry like free, and has a return
			 * probe so that the free pymalloc hands on to libc inside it
			 * is not counted again */
			int is_pyfree = p->func == MT_FN_PYMALLOC_FREE;

			if (pass == 0 && is_free)
				rc = attach_one(skel->progs.free_enter, pid, path, p->offset,
						p->func, 0, tp);
			else if (pass == 1 && !is_free)
				rc = attach_one(skel->progs.alloc_return, pid, path, p->offset,
						p->func, 1, tp);
			else if (pass == 2 && is_pyfree)
				rc = attach_one(skel->progs.pyfree_enter, pid, path, p->offset,
						p->func, 0, tp);
			else if (pass == 2 && !is_free)
				rc = attach_one(skel->progs.alloc_enter, pid, path, p->offset,
						p->func, 0, tp);
			if (rc)
				snprintf(err, errlen, "cannot attach a uprobe to %s in %s: %s",
					 allocator_func_name(p->func), allocator_probe_path(a, p),
					 strerror(-rc));
		}
	}
	if (rc)
		probes_detach(tp);
	return rc ? -1 : 0;
}

void probes_unwatch(struct memtrace_bpf *skel, int pid)
{
	uint32_t key = (uint32_t)pid;

	bpf_map_delete_elem(bpf_map__fd(skel->maps.targets), &key);
}

int probes_watch(struct memtrace_bpf *skel, int pid)
{
	struct mt_target_watch w = {0};
	uint32_t key = (uint32_t)pid;

	if (bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &key, &w, BPF_ANY))
		return -errno;
	return 0;
}

uint64_t probes_exec_count(struct memtrace_bpf *skel, int pid)
{
	struct mt_target_watch w;
	uint32_t key = (uint32_t)pid;

	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.targets), &key, &w))
		return 0;
	return w.execs;
}

void probes_detach(struct target_probes *tp)
{
	int i;

	/* entry probes first (attached last), so no entry outlives its return */
	for (i = tp->nlinks - 1; i >= 0; i--)
		bpf_link__destroy(tp->links[i]);
	tp->nlinks = 0;
}

int probes_mmap_enable(struct memtrace_bpf *skel, int pid)
{
	uint32_t key = (uint32_t)pid;
	uint8_t on = 1;

	/* The skeleton owns the links: memtrace_bpf__destroy() detaches them. */
	if (!skel->links.munmap_enter) {
		skel->links.munmap_enter = bpf_program__attach(skel->progs.munmap_enter);
		if (!skel->links.munmap_enter)
			return -errno;
	}
	if (!skel->links.mmap_exit) {
		skel->links.mmap_exit = bpf_program__attach(skel->progs.mmap_exit);
		if (!skel->links.mmap_exit)
			return -errno;
	}
	if (!skel->links.mmap_enter) {
		skel->links.mmap_enter = bpf_program__attach(skel->progs.mmap_enter);
		if (!skel->links.mmap_enter)
			return -errno;
	}
	if (bpf_map__update_elem(skel->maps.mmaptrace, &key, sizeof(key), &on, sizeof(on), BPF_ANY))
		return -errno;
	skel->bss->mmap_targets = 1;
	return 0;
}

void probes_mmap_disable(struct memtrace_bpf *skel, int pid)
{
	uint32_t key = (uint32_t)pid;

	bpf_map__delete_elem(skel->maps.mmaptrace, &key, sizeof(key), 0);
}
