/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The counters of docs/metrics.md, defined once. Every table that lists them
 * is generated from MT_COUNTERS: the struct below, the snapshot's wire order
 * (src/common/snapshot_encode.c), the text and JSON of stats, the Prometheus
 * endpoint, per-pid sums and the HTML summary. Adding a counter here adds it
 * everywhere; only the code that updates it (src/daemon/core/tracker.c) and
 * the views that single it out name its field.
 *
 * The stack counters (MT_STACK_COUNTERS) are the numbers every stack, and
 * every group of stacks, carries; the sort keys of reports are taken from
 * them (mt_sort_value).
 */
#ifndef MEMTRACE_COUNTERS_H
#define MEMTRACE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

enum mt_unit {
	MT_UNIT_COUNT, /* calls or blocks */
	MT_UNIT_BYTES,
	MT_UNIT_NS, /* a time in nanoseconds, shown in seconds */
};

/* How two sets of counters of one process (its generations) add up. */
enum mt_merge {
	MT_MERGE_SUM,
	MT_MERGE_PEAK,	  /* the larger one */
	MT_MERGE_AT_PEAK, /* the value of the set whose peak was larger */
};

/*
 * X(field, name, unit, merge, summary, Prometheus name, Prometheus type,
 * help). name is what text, JSON and docs call it (a _ns field is shown in
 * seconds, named without the suffix). Order is the wire order:
 * new counters go at the end. summary: 1, one of the headline numbers (the
 * HTML report's table); 2, a number of one kind of target only (forked
 * children), which text shows only when it is not zero.
 */
#define MT_COUNTERS(X)                                                                             \
	X(allocations, "allocations", MT_UNIT_COUNT, MT_MERGE_SUM, 1,                              \
	  "memtrace_allocations_total", "counter",                                                 \
	  "Calls that returned a block (docs/metrics.md).")                                        \
	X(frees, "frees", MT_UNIT_COUNT, MT_MERGE_SUM, 1, "memtrace_frees_total", "counter",       \
	  "Calls that released a block seen allocated.")                                           \
	X(bytes_allocated, "bytes_allocated", MT_UNIT_BYTES, MT_MERGE_SUM, 1,                      \
	  "memtrace_bytes_allocated_total", "counter", "Requested bytes of all allocations.")      \
	X(bytes_freed, "bytes_freed", MT_UNIT_BYTES, MT_MERGE_SUM, 1,                              \
	  "memtrace_bytes_freed_total", "counter", "Requested bytes of the blocks freed.")         \
	X(live_allocations, "live_allocations", MT_UNIT_COUNT, MT_MERGE_SUM, 1,                    \
	  "memtrace_live_allocations", "gauge",                                                    \
	  "Blocks allocated since tracing began, not freed.")                                      \
	X(live_bytes, "live_bytes", MT_UNIT_BYTES, MT_MERGE_SUM, 1, "memtrace_live_bytes",         \
	  "gauge", "Requested bytes of the live blocks.")                                          \
	X(peak_live_bytes, "peak_live_bytes", MT_UNIT_BYTES, MT_MERGE_PEAK, 1,                     \
	  "memtrace_peak_live_bytes", "gauge", "The largest live_bytes seen since tracing began.") \
	X(peak_time_ns, "peak_time", MT_UNIT_NS, MT_MERGE_AT_PEAK, 1,                              \
	  "memtrace_peak_time_seconds", "gauge",                                                   \
	  "When peak_live_bytes was reached, since tracing began.")                                \
	X(unknown_frees, "unknown_frees", MT_UNIT_COUNT, MT_MERGE_SUM, 1,                          \
	  "memtrace_unknown_frees_total", "counter", "Frees of addresses never seen allocated.")   \
	X(missed_frees, "missed_frees", MT_UNIT_COUNT, MT_MERGE_SUM, 0,                            \
	  "memtrace_missed_frees_total", "counter", "Addresses allocated again while still live.") \
	X(missed_free_bytes, "missed_free_bytes", MT_UNIT_BYTES, MT_MERGE_SUM, 0,                  \
	  "memtrace_missed_free_bytes_total", "counter", "Live bytes dropped by missed frees.")    \
	X(untracked_allocations, "untracked_allocations", MT_UNIT_COUNT, MT_MERGE_SUM, 0,          \
	  "memtrace_untracked_allocations_total", "counter",                                       \
	  "Allocations not held as live (--max-live-blocks reached).")                             \
	X(stackless_allocations, "stackless_allocations", MT_UNIT_COUNT, MT_MERGE_SUM, 0,          \
	  "memtrace_stackless_allocations_total", "counter",                                       \
	  "Allocations kept under an empty stack (--max-stacks reached).")                         \
	X(temporary_allocations, "temporary_allocations", MT_UNIT_COUNT, MT_MERGE_SUM, 0,          \
	  "memtrace_temporary_allocations_total", "counter",                                       \
	  "Blocks freed before N more allocations of their thread.")                               \
	X(temporary_bytes, "temporary_bytes", MT_UNIT_BYTES, MT_MERGE_SUM, 0,                      \
	  "memtrace_temporary_bytes_total", "counter", "Requested bytes of the temporary blocks.") \
	X(inherited_allocations, "inherited_allocations", MT_UNIT_COUNT, MT_MERGE_SUM, 2,          \
	  "memtrace_inherited_allocations_total", "counter",                                       \
	  "Live blocks a forked process began with: its parent's at the fork.")                    \
	X(inherited_bytes, "inherited_bytes", MT_UNIT_BYTES, MT_MERGE_SUM, 2,                      \
	  "memtrace_inherited_bytes_total", "counter", "Requested bytes of the inherited blocks.") \
	X(inherited_released, "inherited_released", MT_UNIT_COUNT, MT_MERGE_SUM, 2,                \
	  "memtrace_inherited_released_total", "counter",                                          \
	  "Inherited blocks still held when the process ended (exit, exec, detach).")              \
	X(inherited_released_bytes, "inherited_released_bytes", MT_UNIT_BYTES, MT_MERGE_SUM, 2,    \
	  "memtrace_inherited_released_bytes_total", "counter",                                    \
	  "Requested bytes of the inherited blocks released at the end.")

/* Counters as named in docs/metrics.md; one set per target and one total. */
struct mt_counters {
#define MT_COUNTER_FIELD(field, ...) uint64_t field;
	MT_COUNTERS(MT_COUNTER_FIELD)
#undef MT_COUNTER_FIELD
};

struct mt_counter_desc {
	const char *name; /* as in docs/metrics.md, text and JSON */
	size_t offset;	  /* in struct mt_counters */
	enum mt_unit unit;
	enum mt_merge merge;
	int summary;
	const char *prometheus; /* metric name */
	const char *prometheus_type;
	const char *help;
};

/* Every counter in wire order; MT_NCOUNTERS of them. */
extern const struct mt_counter_desc mt_counter_descs[];
enum {
#define MT_COUNTER_ONE(...) +1
	MT_NCOUNTERS = 0 MT_COUNTERS(MT_COUNTER_ONE)
#undef MT_COUNTER_ONE
};

static inline uint64_t mt_counter_get(const struct mt_counters *c, size_t i)
{
	return *(const uint64_t *)((const char *)c + mt_counter_descs[i].offset);
}

static inline void mt_counter_set(struct mt_counters *c, size_t i, uint64_t v)
{
	*(uint64_t *)((char *)c + mt_counter_descs[i].offset) = v;
}

/* Add c to out as two generations of one process add up (enum mt_merge). */
void mt_counters_merge(struct mt_counters *out, const struct mt_counters *c);

/*
 * The numbers of one stack, or of a group of stacks: X(field, name, section)
 * in wire order. name is what JSON calls it (and text and docs); section 0
 * is the stacks section, 1 the temporary section, 2 the inherited section
 * of the snapshot (docs/snapshot-format.md).
 */
#define MT_STACK_COUNTERS(X)                                                                       \
	X(allocations, "allocations", 0)                                                           \
	X(bytes_allocated, "bytes_allocated", 0)                                                   \
	X(frees, "frees", 0)                                                                       \
	X(bytes_freed, "bytes_freed", 0)                                                           \
	X(live_allocations, "live_allocations", 0)                                                 \
	X(live_bytes, "live_bytes", 0)                                                             \
	/* live bytes of the stack at the moment of the peak */                                    \
	X(peak_live_bytes, "peak_live_bytes", 0)                                                   \
	X(temporary_allocations, "temporary_allocations", 1)                                       \
	X(temporary_bytes, "temporary_bytes", 1)                                                   \
	/* live blocks of a forked child's row at its fork */                                      \
	X(inherited_allocations, "inherited_allocations", 2)                                       \
	X(inherited_bytes, "inherited_bytes", 2)

struct mt_stack_counters {
#define MT_STACK_COUNTER_FIELD(field, name, section) uint64_t field;
	MT_STACK_COUNTERS(MT_STACK_COUNTER_FIELD)
#undef MT_STACK_COUNTER_FIELD
};

/* The stack counters by number (MT_SC_<field>), in wire order. */
enum mt_stack_counter {
#define MT_STACK_COUNTER_ID(field, name, section) MT_SC_##field,
	MT_STACK_COUNTERS(MT_STACK_COUNTER_ID)
#undef MT_STACK_COUNTER_ID
	    MT_NSTACK_COUNTERS
};

struct mt_stack_counter_desc {
	const char *name; /* as JSON, text and docs call it */
	size_t offset;	  /* in struct mt_stack_counters */
	int section;	  /* of the snapshot: 0 stacks, 1 temporary, 2 inherited */
};

/* Every stack counter, by enum mt_stack_counter. */
extern const struct mt_stack_counter_desc mt_stack_counter_descs[MT_NSTACK_COUNTERS];

static inline uint64_t mt_stack_counter_get(const struct mt_stack_counters *c,
					    enum mt_stack_counter i)
{
	return *(const uint64_t *)((const char *)c + mt_stack_counter_descs[i].offset);
}

void mt_stack_counters_add(struct mt_stack_counters *out, const struct mt_stack_counters *c);

/* Sort keys of the stacks a report shows (--sort), and of profiles (--sample). */
enum mt_sort {
	MT_SORT_LIVE = 0,  /* live_bytes */
	MT_SORT_ALLOCATED, /* bytes_allocated */
	MT_SORT_COUNT,	   /* allocations */
	MT_SORT_PEAK,	   /* peak_live_bytes */
	MT_SORT_TEMPORARY, /* temporary_allocations */
	MT_SORT_KEY_COUNT
};

/* The value of a stack (or group) under a sort key; 0 for a bad key. */
uint64_t mt_sort_value(const struct mt_stack_counters *c, int sort);

/* "live", "allocated", "count", "peak", "temporary"; NULL for a bad key. */
const char *mt_sort_name(int sort);
/* enum mt_sort for a name, or -1. */
int mt_sort_from_name(const char *name);

/*
 * The order of reports, the same in the daemon and the client: the entries
 * with a nonzero value, largest value first, ties broken by more
 * allocations, then by the smaller index. Moves them to the front of
 * r[0..n), in that order, and returns how many there are; a top N is the
 * first N of them.
 */
struct mt_rank {
	uint64_t value;
	uint64_t allocations;
	uint32_t index;
};
size_t mt_rank_sort(struct mt_rank *r, size_t n);
/* The same count, but only the first top (0: all) are in order at the front. */
size_t mt_rank_top(struct mt_rank *r, size_t n, size_t top);

/*
 * Events the ring buffer could not take (the BPF "lost" array, MT_LOST_SLOTS
 * slots in event.h): X(slot, name, always) where always means text and JSON
 * show the kind even when it is 0. Slot 0 counts calls not traced because
 * the in-flight table was full; the others are enum mt_event_kind
 * (MT_EV_<NAME>). src/common/counters.c checks at compile time that the
 * slots are exactly 0 to MT_LOST_SLOTS - 1, each named once, as event.h
 * numbers them.
 */
#define MT_LOST_KINDS(X)                                                                           \
	X(0, inflight_full, 0)                                                                     \
	X(1, alloc, 1)                                                                             \
	X(2, free, 1)                                                                              \
	X(3, realloc_enter, 1)                                                                     \
	X(4, realloc, 1)                                                                           \
	X(5, exec, 0)                                                                              \
	X(6, fork, 0)                                                                              \
	X(7, match, 0)

enum {
#define MT_LOST_KIND_ONE(slot, name, always) +1
	MT_LOST_KIND_COUNT = 0 MT_LOST_KINDS(MT_LOST_KIND_ONE)
#undef MT_LOST_KIND_ONE
};

/* The name of a lost-event slot ("alloc", ...), or NULL; whether it is always shown. */
const char *mt_lost_kind_name(unsigned slot);
int mt_lost_kind_always(unsigned slot);

/* The name of an allocator kind, enum mt_func ("malloc", "operator new"), or NULL. */
const char *mt_func_name(unsigned func);

/* Bin 0: size 0; bin i > 0: sizes in [2^(i-1), 2^i). */
#define SNAP_HISTOGRAM_BINS 65
/* Allocator kinds a snapshot can carry (enum mt_func): the funcs section
 * holds the first 16, funcs_ext the rest (docs/snapshot-format.md). */
#define SNAP_MAX_FUNCS	    32
#define SNAP_FUNCS_SECTION1 16

#endif
