/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A snapshot is the whole symbolized aggregate state of the daemon. It is the
 * one format for the wire and for disk: the daemon builds a struct snapshot,
 * snapshot_encode() turns it into bytes, memtracectl decodes them and every
 * renderer reads only this struct. Encoded layout (all integers little
 * endian) is described in docs/snapshot-format.md.
 */
#ifndef MEMTRACE_SNAPSHOT_H
#define MEMTRACE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/cgroup.h"
#include "memtrace/counters.h"
#include "memtrace/resident.h"

#define SNAPSHOT_MAGIC	 "MTSNAP\r\n" /* 8 bytes */
#define SNAPSHOT_VERSION 1
/* Decoder limits: every length from outside is checked against these. */
#define SNAPSHOT_MAX_BYTES	      (1ull << 32)
#define SNAPSHOT_MAX_STRING	      (1u << 20) /* bytes in one string */
#define SNAPSHOT_MAX_STRINGS	      (1u << 24) /* distinct strings */
#define SNAPSHOT_MAX_TARGETS	      (1u << 16)
#define SNAPSHOT_MAX_FRAMES	      (1u << 24) /* distinct frames */
#define SNAPSHOT_MAX_STACKS	      (1u << 24)
#define SNAPSHOT_MAX_DEPTH	      1024	 /* frames in one stack */
#define SNAPSHOT_MAX_FRAME_REFS	      (1u << 26) /* frames over all stacks */
#define SNAPSHOT_MAX_TIMELINE	      (1u << 20) /* points of the memory-over-time series */
#define SNAPSHOT_MAX_TIMELINE_TARGETS (1u << 24) /* targets' figures over all its points */
#define SNAPSHOT_MAX_BLOCKS	      (1u << 28) /* live blocks in the block list */
#define SNAPSHOT_MAX_SITES	      256	 /* probed functions of one target */
#define SNAPSHOT_MAX_SUPPRESSIONS     4096	 /* a scan's suppression patterns */

enum snap_target_state {
	SNAP_TARGET_ATTACHING = 0,
	SNAP_TARGET_ATTACHED = 1,
	SNAP_TARGET_EXITED = 2,
	SNAP_TARGET_DETACHED = 3,
	SNAP_TARGET_EXECED = 4, /* executed a new program: a new entry of the pid traces that */
	SNAP_TARGET_STATE_COUNT
};

/*
 * Where one allocator function is probed: its entry, or the first
 * instruction past it that the kernel emulates (docs/design.md, "Cheaper
 * traps"); the return probe, if any, shares the place.
 */
struct snap_probe_site {
	char *function;	   /* the symbol ("free", "_ZdlPvm", "PyObject_Malloc") */
	char *object;	   /* the file it is in */
	uint64_t offset;   /* the function's file offset */
	uint64_t at;	   /* bytes past its first instruction */
	char *instruction; /* the instruction probed ("je 0x98fb8") */
	char *why;	   /* at +0: why not further; NULL otherwise */
	char *via;	   /* the API function that dispatches to function (CPython's
			    * PyObject_Free: _PyObject_Free), or NULL */
};

/*
 * A target's resident memory (section SEC_RESIDENT): its last sample of /proc/PID/status
 * and smaps_rollup, and the largest resident_bytes sampled in the peak window.
 */
struct snap_resident {
	uint32_t sampled;      /* 0: never read (not yet, or /proc would not say) */
	uint64_t time_ns;      /* when read, since tracing began */
	struct mt_resident r;  /* the figures then */
	uint64_t peak_bytes;   /* the largest resident_bytes sampled */
	uint64_t peak_time_ns; /* when, since tracing began */
};

/* A target's mappings by kind, on request (section SEC_MEMORY; stats --memory). */
struct snap_memory {
	uint32_t target;    /* index into struct snapshot.targets */
	char *error;	    /* why there is no breakdown (its smaps could not be read), or NULL */
	uint64_t time_ns;   /* when its smaps were read, since tracing began */
	struct mt_memory m; /* the breakdown; all zero with an error */
};

/* The targets' breakdowns (section SEC_MEMORY: memory and snapshot requests). */
struct snap_breakdowns {
	uint32_t nmemory;
	struct snap_memory *memory; /* by target index, increasing: the targets traced now */
};

/*
 * A target's cgroup (section SEC_CGROUP): the labels /proc/PID/cgroup and status give
 * it, and its memory cgroup's figures as last sampled (include/memtrace/cgroup.h).
 */
struct snap_cgroup {
	uint32_t known;	   /* 0: nothing read (an older snapshot, or /proc would not say) */
	char *path;	   /* its cgroup (v2 "0::" path, else its v1 memory one) */
	char *memory_path; /* the memory cgroup the figures are of; NULL: none */
	char *unit;	   /* the innermost systemd unit of the path, or NULL */
	char *container;   /* the container id the path names, or NULL */
	char *runtime;	   /* docker, podman, containerd, cri-o, kubepods; or NULL */
	char *pod;	   /* a Kubernetes pod's uid, or NULL */
	char *why;	   /* why no figures, or where they come from; NULL: nothing to say */
	uint32_t nspid;	   /* its pid in its own pid namespace; 0 unknown */
	uint64_t time_ns;  /* when the figures were read, since tracing began */
	struct mt_cgroup_memory m; /* m.version 0: no figures */
};

/*
 * The kernel's OOM killer chose the target (section SEC_OOM): when, and what
 * it held then. Every field a figure, in wire order; killed 0: it was not.
 */
struct snap_oom {
	uint64_t killed;	 /* 1: chosen by the OOM killer (its state: oom-killed) */
	uint64_t time_ns;	 /* when (the oom:mark_victim tracepoint), since tracing began */
	uint64_t live_bytes;	 /* its live heap then */
	uint64_t live_blocks;	 /* its live blocks then */
	uint64_t resident_bytes; /* its last resident memory sampled; 0 not known */
	uint64_t cgroup_usage;	 /* its memory cgroup's usage then; 0 not read */
	uint64_t cgroup_limit;	 /* and limit; 0 not read, UINT64_MAX none */
};

struct snap_target {
	uint32_t pid;
	uint32_t state;	     /* enum snap_target_state */
	int32_t exit_status; /* wait status when exited, else -1 */
	uint32_t probes;     /* uprobes attached */
	char *command;	     /* command line, spaces between arguments */
	char *allocator;     /* path of the object whose malloc is probed */
	char *note;	     /* one line on what tracing misses (pymalloc inlined); NULL if none */
	uint64_t traced_ns;  /* how long it has been (or was) traced */
	struct mt_counters counters;
	uint32_t nsites; /* probe_sites section; 0 in older snapshots */
	struct snap_probe_site *sites;
	struct snap_resident resident; /* section SEC_RESIDENT; sampled = 0 in older snapshots */
	uint32_t parent_pid;	       /* family section: the process it was forked from; 0 none */
	uint64_t started_ns; /* section SEC_TIMELINE_TARGETS: when its tracing began, since tracing
			      * began (its counters' peak_time_ns is since then) */
	struct snap_cgroup cgroup; /* section SEC_CGROUP; known = 0 in older snapshots */
	struct snap_oom oom;	   /* section SEC_OOM: killed = 0 in older snapshots */
};

struct snap_frame {
	uint64_t address; /* runtime address (a return address: call site + insn) */
	uint64_t offset;  /* address as an offset into module (ELF virtual address) */
	char *function;	  /* NULL when unknown */
	char *module;	  /* path of the mapped file; NULL when no mapping */
	char *file;	  /* source file; NULL when unknown */
	int64_t line;	  /* source line; 0 when unknown */
	uint8_t inlined;  /* inlined into the next frame, at the same address */
	char *build_id;	  /* module's GNU build-id in hex; NULL when unknown */
};

struct snap_stack {
	uint32_t pid;
	uint32_t nframes;
	struct snap_frame **frames; /* innermost first; frames are shared between stacks */
	struct mt_stack_counters t;
	uint64_t oldest_live_age_ns; /* section SEC_AGES: age of its oldest live block */
	uint32_t stack_end;	     /* enum mt_stack_end: why its frames stop */
};

/* Stacks whose frame-pointer chain broke, by the module of their last frame:
 * the module (or its caller) that lacks frame pointers. */
struct snap_truncation {
	char *module;
	uint64_t stacks;
	uint64_t allocations;
};

/* The DWARF stack walker's unwind tables (section SEC_UNWIND; memtraced --unwind-memory). */
struct snap_unwind {
	uint64_t memory_limit;	  /* bytes the tables may take (--unwind-memory) */
	uint64_t memory_used;	  /* bytes of BPF map memory holding them now */
	uint64_t table_bytes;	  /* bytes of rows and page entries in use */
	uint64_t tables;	  /* modules with a table loaded */
	uint64_t modules_without; /* modules mapped with no usable call frame information */
	uint64_t modules_refused; /* modules whose table did not fit in the limit */
};

/*
 * Memory over time: one point per sampling interval (older points merged).
 * The daemon's series (src/daemon/core/timeline.h) is made of these same
 * points and target figures, so that a snapshot copies them as they are.
 */

/* What a point holds, of every target together or of one. */
struct snap_figures {
	uint64_t live_bytes;
	uint64_t live_allocations;
	uint64_t allocations;	  /* cumulative, at that time */
	uint64_t bytes_allocated; /* cumulative, at that time */
	uint32_t has_resident; /* resident below was read for that moment (section SEC_RESIDENT or
				  SEC_MATCH) */
	uint32_t has_cgroup;   /* the cgroup figures at the end were read (a target's only) */
	struct mt_resident resident; /* of the point: summed over the targets traced then */
	/* a target's figure only (section SEC_TIMELINE_CGROUP): its memory cgroup's usage
	 * and limit read for that moment (limit MT_CGROUP_NO_LIMIT: none) */
	uint64_t cgroup_usage_bytes, cgroup_limit_bytes;
};

/* One target's figures at a point (section SEC_TIMELINE_TARGETS). */
struct snap_timeline_target {
	uint32_t target; /* index into the targets (the snapshot's; the daemon's in its series) */
	struct snap_figures f;
};

struct snap_timeline_point {
	uint64_t time_ns;	   /* since tracing began */
	struct snap_figures total; /* live: every target's (an exited one's blocks stay live) */
	uint32_t first;		   /* its targets': figures[first, first + ntargets) of the
				    * snapshot's timeline_targets */
	uint32_t ntargets;	   /* the targets traced then, by increasing index (0: none, or
				    * a snapshot without timeline_targets) */
};

/* Each timeline point's targets' figures (section SEC_TIMELINE_TARGETS). */
struct snap_timeline_targets {
	uint32_t nfigures;
	struct snap_timeline_target *figures; /* point by point, oldest first */
};

/* One live block of the optional block list (memtracectl leaks). */
struct snap_block {
	uint64_t address;
	uint64_t size;
	uint64_t age_ns; /* how long it had been live when the snapshot was taken */
	uint32_t stack;	 /* index into struct snapshot.stacks */
};

/* The live block list (section SEC_BLOCKS; memtracectl leaks, and a whole snapshot's). */
struct snap_block_list {
	uint64_t older_than_ns; /* the list holds only blocks at least this old */
	uint32_t nblocks;
	struct snap_block *blocks;
};

/* memtraced's options, as the trace section carries them (0 = not known or no limit). */
struct snap_options {
	uint64_t stack_depth;
	uint64_t ring_buffer_bytes;
	uint64_t max_live_blocks;
	uint64_t max_stacks;
	uint64_t sample_interval_ns;
	uint64_t temporary_threshold;
};

/*
 * How the daemon itself kept up (section SEC_DAEMON), when it says: for the bench
 * and the tests, and anyone asking whether ingest stalls.
 */
struct snap_daemon {
	uint64_t drain_gap_max_ns;  /* longest time between two ring buffer drains,
				     * since tracing began or the last reset-peak */
	uint64_t frozen_requests;   /* times the core was frozen for requests */
	uint64_t freeze_max_ns;	    /* the longest such freeze (drains go on meanwhile) */
	uint64_t deferred_events;   /* events drained during freezes, applied at the thaw */
	uint64_t symbol_lookups;    /* return addresses looked up in symbol tables and DWARF */
	uint64_t symbol_cache_hits; /* ... answered from the symbol cache instead */
	uint64_t loop_busy_max_ns;  /* the most CPU time the event loop used on one
				     * wakeup (its own share of a drain gap), since
				     * tracing began or the last reset-peak */
	uint64_t stack_id_events;   /* allocations whose stack came as an id */
	uint64_t stack_ids_unknown; /* ... an id never registered: their stack is lost */
	uint64_t bpf_runs_skipped;  /* runs of the BPF programs the kernel skipped */
};

/*
 * Whole-host mode (section SEC_MATCH): what matches, and the matches not traced
 * (docs/metrics.md, matches_over_limit).
 */
struct snap_match {
	char *what;	      /* "--comm NAME" or "--exe PATH" */
	uint64_t max_targets; /* --max-targets */
	uint64_t traced;      /* matched targets traced when the snapshot was taken */
	uint64_t over_limit;  /* matches_over_limit */
};

/*
 * The stack walker the daemon runs (section SEC_WALKER): the one asked for, or the
 * one it fell back to when the kernel's verifier refused that one's
 * programs (memtraced --stack-walker; docs/usage.md).
 */
struct snap_walker {
	char *name;	  /* "dwarf", "fp", "kernel", "caller" */
	char *reason;	  /* "default", "chosen", or what the verifier refused before it:
			   * "dwarf refused by the verifier: walk_dwarf: LINE" */
	uint64_t refused; /* walkers refused before it (0: the one asked for runs) */
};

/*
 * A grouped snapshot (section SEC_GROUPS): the daemon grouped the stacks it selected
 * into rows and sent the top ones, each as one stack (the row's first, with
 * the row's sums for counters); this says which row each stack stands for,
 * and what the rows it did not send add up to.
 */
struct snap_row {
	char *key;	 /* the row's key, as group.c makes it */
	uint64_t stacks; /* stacks grouped into it */
};

struct snap_groups {
	uint32_t by;		       /* enum group_by (common/groupkey.h): 1 stack ... 6 site */
	uint32_t cumulative;	       /* a stack counts in each row one of its frames keys */
	uint32_t order;		       /* enum mt_sort the rows were chosen by */
	struct snap_row *rows;	       /* one per stack of the snapshot */
	uint64_t rest_rows;	       /* rows not sent */
	uint64_t rest_rows_live;       /* ... of which with live_allocations */
	uint64_t rest_rows_allocated;  /* ... with allocations */
	uint64_t rest_rows_peak;       /* ... with peak_live_bytes */
	struct mt_stack_counters rest; /* their sums */
};

/*
 * Leaking blocks per stack (section SEC_LEAKS), instead of the block list: for each
 * stack of the snapshot, its live blocks at least older_than_ns old.
 */
struct snap_leak {
	uint64_t blocks, bytes;
	uint64_t oldest_ns, youngest_ns; /* ages of the oldest and youngest of them */
};

struct snap_leaks {
	uint64_t older_than_ns;
	uint64_t blocks, bytes;	  /* over every stack, sent or not */
	uint64_t stacks_total;	  /* stacks with such blocks */
	struct snap_leak *stacks; /* one per stack of the snapshot */
};

/*
 * A leak scan (sections SEC_SCAN and SEC_SCAN_ENTRIES): the daemon stopped each target for a
 * moment, marked its live blocks from its roots (registers, stacks, every
 * memory the program may have written), and sent the blocks no pointer
 * reaches, by stack and kind, in LeakSanitizer's and valgrind's words.
 */
enum snap_leak_kind {
	SNAP_LEAK_DIRECT = 0,	/* no pointer reaches it, not even from another leak */
	SNAP_LEAK_INDIRECT = 1, /* only other leaked blocks point into it */
	SNAP_LEAK_POSSIBLE = 2, /* reached only through a pointer into its middle somewhere */
	SNAP_LEAK_KINDS
};

/* The figures of a scan, all 64-bit, in wire order (section SEC_SCAN; more may follow). */
struct snap_scan_figures {
	uint64_t targets;		  /* processes scanned */
	uint64_t threads;		  /* their threads, stopped */
	uint64_t pause_ns;		  /* the longest a target stood still */
	uint64_t scan_ns;		  /* the whole request, first stop to answer */
	uint64_t max_pause_ns;		  /* the bound asked for */
	uint64_t bytes_scanned;		  /* memory read and searched for pointers */
	uint64_t bytes_unreadable;	  /* memory that may hold pointers, not read */
	uint64_t mappings;		  /* mappings something was read from */
	uint64_t live_blocks;		  /* the targets' live blocks when they stood still */
	uint64_t live_bytes;		  /* their requested bytes */
	uint64_t blocks[SNAP_LEAK_KINDS]; /* leaked blocks by kind */
	uint64_t bytes[SNAP_LEAK_KINDS];  /* and their bytes */
	uint64_t suppressed_blocks;	  /* leaks a suppression matched */
	uint64_t suppressed_bytes;
	uint64_t blocks_unread;	     /* live blocks whose memory could not be read */
	uint64_t blocks_overlapping; /* live blocks overlapping another (a free not seen) */
	uint64_t entries_total;	     /* (stack, kind) entries, sent or not */
};

struct snap_scan_suppression {
	char *pattern;		/* as in the file, after "leak:" */
	uint64_t blocks, bytes; /* leaks it suppressed (the first matching pattern counts) */
};

struct snap_scan_entry {
	uint32_t stack; /* index into struct snapshot.stacks */
	uint32_t kind;	/* enum snap_leak_kind */
	uint64_t blocks, bytes;
};

struct snap_scan {
	struct snap_scan_figures f;
	uint32_t npids;
	uint32_t *pids; /* the processes scanned, in order */
	uint32_t nsuppressions;
	struct snap_scan_suppression *suppressions;
	uint32_t nentries;
	struct snap_scan_entry *entries; /* most bytes first */
};

/*
 * What a snapshot's stacks are: one kind, never two (the answer to one kind
 * of request, docs/snapshot-format.md "What each request's answer holds").
 * The kinds but the first say so by a section of their own, and only their
 * member of struct snapshot's union is there.
 */
enum snap_kind {
	SNAP_STACKS = 0, /* stacks with their own numbers: every one, or the top N by a key */
	SNAP_ROWS,	 /* a stack per row of a grouping, with the row's sums (groups, section
			    SEC_GROUPS) */
	SNAP_LEAKS, /* the stacks with the most bytes in old blocks (leaks, section SEC_LEAKS) */
	SNAP_SCAN,  /* the stacks a scan's entries name (scan, sections SEC_SCAN and
		       SEC_SCAN_ENTRIES) */
	SNAP_KIND_COUNT
};

struct snap_string_block; /* snapshot.c */

struct snapshot {
	uint32_t version;	  /* SNAPSHOT_VERSION of the encoder */
	char *tracer_version;	  /* memtraced version string */
	uint64_t created_unix_ns; /* wall clock when taken */
	uint64_t uptime_ns;	  /* daemon uptime when taken */
	uint64_t events_received;
	uint64_t events_lost[MT_LOST_KIND_COUNT]; /* by MT_LOST_KINDS slot */
	uint64_t stacks_total;			  /* stacks in the daemon; nstacks may be fewer */
	struct mt_counters totals;
	uint32_t ntargets;
	struct snap_target *targets;
	uint32_t nstacks;
	struct snap_stack *stacks; /* in the order the request asked for */
	/*
	 * Shared by several views; each is encoded in its own section of the
	 * payload (docs/snapshot-format.md). Section tags 8-15 belong to the
	 * timeline, ages and peak work, 16-23 to histogram and allocator mix.
	 */
	uint32_t ntruncations;
	struct snap_truncation *truncations; /* most allocations first */
	uint32_t ntimeline;
	struct snap_timeline_point *timeline; /* oldest first */
	uint64_t timeline_interval_ns;	      /* between points now (doubles as they merge) */
	uint64_t started_unix_ns;	      /* wall clock when tracing began; 0 = unknown */
	struct snap_options options;	      /* how memtraced was started (section SEC_TRACE) */
	uint32_t kind; /* enum snap_kind: what the stacks are; its member of the union holds */
	union {
		struct snap_groups groups; /* SNAP_ROWS */
		struct snap_leaks leaks;   /* SNAP_LEAKS */
		struct snap_scan scan;	   /* SNAP_SCAN */
	};
	uint64_t size_histogram[SNAP_HISTOGRAM_BINS];
	uint64_t allocations_by_func[SNAP_MAX_FUNCS]; /* indexed by enum mt_func */
	uint64_t bytes_by_func[SNAP_MAX_FUNCS];
	/*
	 * What the stacks, targets and timeline points carry besides their own
	 * numbers: each says that a section was there, so that a field it
	 * names holds a figure and not the zero of a snapshot without it.
	 */
	uint32_t has_ages;	/* stacks carry oldest_live_age_ns (section SEC_AGES) */
	uint32_t has_inherited; /* stacks carry inherited blocks (section SEC_INHERITED) */
	uint32_t has_resident;	/* targets and timeline points carry resident memory (45) */
	/*
	 * Sections a snapshot may have or not, each of its own type and owned
	 * by the snapshot (snapshot_free): NULL when it has none (its request
	 * did not ask, the daemon had nothing to say, or it was older).
	 */
	struct snap_block_list *block_list; /* section SEC_BLOCKS */
	struct snap_unwind *unwind;	    /* section SEC_UNWIND: the DWARF walker runs */
	struct snap_daemon *daemon;	    /* section SEC_DAEMON */
	struct snap_breakdowns *breakdowns; /* section SEC_MEMORY */
	struct snap_match *match;	    /* section SEC_MATCH: whole-host mode */
	struct snap_timeline_targets *timeline_targets; /* section SEC_TIMELINE_TARGETS */
	struct snap_walker *walker;			/* section SEC_WALKER: the stack walker */
	/*
	 * Frames, one way: every frame a stack names is in frame_table, and
	 * every stack's frames array lies in the one block frame_refs, pointers
	 * into the table; snapshot_free() frees both. Stacks share frames: the
	 * frames of a snapshot are few, the references to them many (a heap of
	 * a hundred thousand stacks of twenty frames may have a few dozen
	 * distinct frames).
	 */
	struct snap_frame *frame_table;
	uint32_t nframe_table;
	struct snap_frame **frame_refs;
	/*
	 * Strings, one way: every string above (the snapshot's, its frames',
	 * its kind's) lies in the snapshot's own string blocks, and
	 * snapshot_free() frees the blocks, never a string alone. The decoder
	 * puts the string table in one block; a builder copies each string in
	 * with snapshot_strdup(), a frame's once however many stacks name it.
	 */
	struct snap_string_block *strings;
};

/*
 * Encode s into a newly malloc'd buffer (header + zlib payload, CRC32 of the
 * payload). Returns 0, or -errno.
 */
int snapshot_encode(const struct snapshot *s, uint8_t **out, size_t *out_len);
/* The same with room bytes free before the snapshot in *out (out_len excludes them). */
int snapshot_encode_after(const struct snapshot *s, size_t room, uint8_t **out, size_t *out_len);

/*
 * Decode untrusted bytes into s (zeroed first). Returns 0, or -1 with a
 * one-line reason in err ("snapshot: truncated", "snapshot: bad checksum",
 * "snapshot: version 7 is newer than this program supports", ...). s is freed
 * on error.
 */
int snapshot_decode(const uint8_t *buf, size_t len, struct snapshot *s, char *err, size_t errlen);

/* What snapshot_scan() counts. */
struct snapshot_counts {
	uint64_t stacks, blocks, timeline_points;
};

/*
 * Check untrusted bytes as snapshot_decode() checks the envelope (header,
 * checksum, the compressed payload whole) and the payload's sections'
 * framing, and count stacks, live blocks and timeline points, without
 * building the snapshot: a window of the payload at a time. 0, or -1 with a
 * one-line reason in err (the decoder's messages).
 */
int snapshot_scan(const uint8_t *buf, size_t len, struct snapshot_counts *out, char *err,
		  size_t errlen);

/* Free everything a decoded (or built) snapshot owns, and zero it. */
void snapshot_free(struct snapshot *s);

/* A copy of str (NULL for NULL) in s's string blocks: s owns it (aborts when memory runs out). */
char *snapshot_strdup(struct snapshot *s, const char *str);

/* Sum of events_lost over kinds. */
uint64_t snapshot_events_lost(const struct snapshot *s);

/* "stacks", "rows", "leaks", "scan"; "unknown" otherwise. */
const char *snap_kind_name(uint32_t kind);

/* "direct", "indirect", "possible"; "unknown" otherwise. */
const char *snap_leak_kind_name(uint32_t kind);

/* "attaching", "attached", "exited", "detached", "execed"; "unknown" otherwise. */
const char *snap_target_state_name(uint32_t state);

/*
 * Keep the stacks of pid (0 = all) whose sort key is not zero, ordered by
 * sort (largest first, ties in their current order), at most top of them
 * (0 = all); free the rest. What the daemon does for a request, for
 * snapshots read from a file.
 */
void snapshot_select(struct snapshot *s, int sort, uint32_t top, uint32_t pid);

#endif
