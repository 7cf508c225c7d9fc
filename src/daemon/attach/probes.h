/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Loading the BPF object and attaching its programs to one target's
 * allocator. The uprobes are attached with the target's pid, so no other
 * process takes the breakpoints.
 */
#ifndef MEMTRACE_PROBES_H
#define MEMTRACE_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/attach/allocator.h"
#include "daemon/attach/walker.h"

struct memtrace_bpf;
struct bpf_link;
struct mt_target_watch;

struct bpf_options {
	uint32_t stack_depth;
	uint32_t stack_walker;	    /* enum mt_stack_walker */
	uint64_t ring_buffer_bytes; /* power of two, >= page size */
	/* whole-host mode: match executed programs by comm or by file */
	const char *match_comm; /* NULL: none */
	uint64_t match_dev;	/* kernel dev_t of --exe; 0: none */
	uint64_t match_ino;
	uint32_t match_follow;
	uint32_t max_matches;
	uint32_t hold_exec; /* stop targets at exec until their allocator is resolved */
	/* every stack sent in full, none as an id (MEMTRACE_STACK_IDS=0: make
	 * bench compares the two; memtraced --check loads both) */
	uint32_t stack_ids_off;
};

/* What probes_load() loaded, and what it tried before. */
#define PROBES_MAX_REFUSED 4
struct probes_loaded {
	int walker; /* enum mt_stack_walker: the one whose programs loaded; -1: none */
	/* the walkers the verifier refused before it, in the order tried
	 * (walker_next(): dwarf, fp, caller) */
	struct walker_refusal refused[PROBES_MAX_REFUSED];
	int nrefused;
};

/*
 * Open, configure and load the BPF object, and attach its tracepoints: with
 * o->stack_walker, or, while the kernel's verifier refuses a program, with
 * the walker after it (walker.h), each refusal recorded in out. NULL with a
 * reason in err: no walker loads (out->nrefused refusals: the last one
 * tried says why), or the load failed outside the verifier (no refusal for
 * it: the kernel refused the maps, or root is missing).
 */
struct memtrace_bpf *probes_load(const struct bpf_options *o, struct probes_loaded *out, char *err,
				 size_t errlen);
void probes_unload(struct memtrace_bpf *skel);
/*
 * The steps of probes_load, for memtraced --check: the object's read-only
 * configuration, ring buffer size and which walker stages load (before
 * memtrace_bpf__load; 0 or -1), and the stage program arrays filled from
 * the loaded programs (after it; 0 or -errno).
 */
int probes_configure(struct memtrace_bpf *skel, const struct bpf_options *o);
int probes_fill_stages(struct memtrace_bpf *skel);
int probes_ringbuf_fd(struct memtrace_bpf *skel);

/* Events lost, summed over CPUs, by slot (0: no inflight record, then kind). */
int probes_read_lost(struct memtrace_bpf *skel, uint64_t *lost, int nslots);

/*
 * Runs of our programs the kernel skipped: a program found busy on its CPU
 * (its per-CPU recursion guard, or for classic tracepoints one guard for
 * all), which happens where the kernel runs tracepoint programs preemptible
 * (7.x) and a run of it was preempted there. The sum of every program's
 * recursion_misses (0 before 5.12, which does not count them); each(name,
 * misses, i, arg) for each program, i its index in the object, when each
 * is not NULL.
 */
uint64_t probes_runs_skipped(struct memtrace_bpf *skel,
			     void (*each)(const char *name, uint64_t misses, int i, void *arg),
			     void *arg);
/* OOM kill records the ring buffer could not take (bpf/control.bpf.h). */
uint64_t probes_oom_lost(const struct memtrace_bpf *skel);

/* What one link probes: the same key in a new program is the same probe. */
struct probe_key {
	uint64_t dev, ino; /* the probed file */
	uint64_t offset;
	int func;
	int prog; /* which BPF program (entry, return, free, ...) */
};

/*
 * How a target's probes reach the processes it forks (the follow argument
 * below). Inherited probes are tracefs uprobe events opened with perf's
 * inherit flag (probes.c): the kernel copies them into each child.
 */
enum probe_inherit {
	PROBES_OWN = 0,	     /* the process's own only (libbpf's uprobes) */
	PROBES_INHERIT,	     /* --follow-forks: copies in every child, kept across its exec */
	PROBES_INHERIT_MATCH /* a --comm/--exe match: copies in every child, gone at the
			      * child's exec (perf's remove_on_exec); the process's own
			      * stay across its exec, but its children forked after it get
			      * copies only once probes_reinherit() ran */
};

struct target_probes {
	struct bpf_link *links[128]; /* 2 per probe, at most; NULL once moved */
	struct probe_key keys[128];
	struct tracefs_probe {
		uint32_t id;	 /* its tracefs event, memtrace_PID/p<id>; 0: none */
		int inherit_fd;	 /* the inherited perf event of it, fd + 1 */
		uint64_t config; /* the tracefs event's perf id */
		int match;	 /* opened with remove_on_exec (PROBES_INHERIT_MATCH) */
		/* inherited events an exec took off the process (probes_reinherit):
		 * their copies in children forked before it live while they are open */
		int *retired;
		int nretired;
	} tracefs[128]; /* inherited probes */
	int nlinks;
};

/*
 * Attach every probe of a to pid. Order matters: free first, then the return
 * probes, then the entry probes, so that an entry is never seen without its
 * return. Returns 0, or -1 with a reason in err (nothing left attached).
 */
int probes_attach(struct memtrace_bpf *skel, int pid, const struct allocator *a, int follow,
		  struct target_probes *tp, char *err, size_t errlen);
void probes_detach(struct target_probes *tp); /* NULL: nothing */

/*
 * Probes for a new program in pid (after an exec): like probes_attach(),
 * but a probe that old already has (same file, offset, function and
 * program: the new program maps the same library) is moved from old into
 * tp instead of attached again, so no call is missed or counted twice.
 * The caller detaches what stays in old. Returns 0, or -1 with a reason
 * in err (then tp holds nothing and old is as it was).
 */
int probes_attach_keeping(struct memtrace_bpf *skel, int pid, const struct allocator *a, int follow,
			  struct target_probes *tp, struct target_probes *old,
			  const struct target_probes *inherited, char *err, size_t errlen);
/* Probes that are live (not moved away). */
int probes_count(const struct target_probes *tp);

/*
 * pid executed a new program and keeps tp (PROBES_INHERIT_MATCH): the exec
 * took their inherited events off it, so that its children forked from now
 * on would get no copies. Open them again (the old ones stay open for the
 * children forked before). 0, or -errno (then its later children carry
 * copies of only some of them).
 */
int probes_reinherit(struct target_probes *tp, int pid);

/*
 * Report pid's execs (the "targets" map), with follow its forks, and with
 * matched count it in the --max-targets cap (struct mt_target_watch); 0,
 * or -errno. fresh: only if the map has no entry of pid (else -EEXIST: the
 * exec tracepoint made one for a match meanwhile).
 */
int probes_watch(struct memtrace_bpf *skel, int pid, int follow, int matched, int fresh);
/* Stop watching pid for exec (after detach). */
void probes_unwatch(struct memtrace_bpf *skel, int pid);
/* Mark pid as running probes of ours untraced (enum MT_UNTRACED_*): its calls
 * are dropped in BPF from now on. 0, or -errno. */
int probes_untraced(struct memtrace_bpf *skel, int pid, int why);
/* pid's entry in the "targets" map: 0, or -1 when it has none. */
int probes_watch_get(struct memtrace_bpf *skel, int pid, struct mt_target_watch *w);
/* Execs of pid counted by the tracepoint since probes_watch(); 0 if unknown. */
uint64_t probes_exec_count(struct memtrace_bpf *skel, int pid);

/*
 * Trace pid's anonymous mmaps made outside the allocator, and its munmaps
 * (CPython targets in default mode: pymalloc's arenas). The syscall
 * tracepoints are attached the first time. 0, or -errno.
 */
int probes_mmap_enable(struct memtrace_bpf *skel, int pid);

/*
 * The probe on ld.so's _dl_debug_state (path, offset: linkmap_ldso_probe)
 * that stops pid each time its linker reports (MT_EV_LDSO), until the
 * daemon destroys the link. NULL with errno on failure.
 */
struct bpf_link *probes_attach_ldso(struct memtrace_bpf *skel, int pid, const char *path,
				    uint64_t offset);
void probes_mmap_disable(struct memtrace_bpf *skel, int pid);

#endif
