/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the snapshot encoder and decoder share: the header, the section tags
 * and the order of the fields within them (docs/snapshot-format.md), and the
 * little-endian and zigzag helpers of the byte layout.
 */
#ifndef MEMTRACE_SNAPSHOT_WIRE_H
#define MEMTRACE_SNAPSHOT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/snapshot.h"

#define HEADER_SIZE 36
/* deflate cannot compress better than about 1032:1; anything claiming more lies */
#define MAX_ZLIB_RATIO 1032
#define ZLIB_SLACK     4096

enum section {
	SEC_STRINGS = 1,
	SEC_META,
	SEC_TOTALS,
	SEC_EVENTS_LOST,
	SEC_TARGETS,
	SEC_FRAMES,
	SEC_STACKS,
	SEC_LAST = SEC_STACKS, /* the last section every snapshot has */
	SEC_TIMELINE = 8,
	SEC_BLOCKS = 9,
	SEC_TEMPORARY = 10,
	SEC_TRACE = 11,
	SEC_AGES = 12,
	SEC_STACK_INFO = 24,	   /* why stacks end, inlined frames, truncating modules */
	SEC_TARGET_NOTES = 32,	   /* one line per target on what tracing misses */
	SEC_UNWIND = 40,	   /* the DWARF walker's unwind tables */
	SEC_PROBE_SITES = 41,	   /* where each allocator function is probed */
	SEC_DAEMON = 42,	   /* how the daemon kept up: drain gaps, freezes, symbol cache */
	SEC_GROUPS = 43,	   /* the rows a grouped snapshot's stacks stand for */
	SEC_LEAKS = 44,		   /* leaking blocks per stack */
	SEC_RESIDENT = 45,	   /* resident memory per target and over time */
	SEC_MEMORY = 46,	   /* a target's mappings by kind, with the live heap in each */
	SEC_SCAN = 47,		   /* a leak scan's figures and suppressions */
	SEC_SCAN_ENTRIES = 48,	   /* its leaks by stack and kind */
	SEC_INHERITED = 49,	   /* what each stack's row inherited at a fork */
	SEC_FAMILY = 50,	   /* the process each target was forked from */
	SEC_MATCH = 51,		   /* whole-host mode: what matches, matches not traced */
	SEC_TIMELINE_TARGETS = 52, /* each timeline point's targets, with their figures */
	SEC_WALKER = 53,	   /* the stack walker in use, and why */
	SEC_CGROUP = 54,	   /* each target's cgroup labels and memory cgroup figures */
	SEC_TIMELINE_CGROUP = 55,  /* the timeline's targets' memory cgroup usage and limit */
	SEC_OOM = 56,		   /* targets the OOM killer chose, with what they held */
	SEC_KNOWN
};

/*
 * Sections 16-23: size histogram, allocator mix, module build-ids, and the
 * allocator kinds past the first 16 (funcs_ext: version 1 readers refuse more
 * than 16 entries in funcs, and skip a section they do not know).
 */
enum { SEC_HISTOGRAM = 16, SEC_FUNCS, SEC_BUILD_IDS, SEC_FUNCS_EXT, SEC_OWN_LAST = SEC_FUNCS_EXT };

static const char *const section_names[] __attribute__((unused)) = {
    [SEC_STRINGS] = "strings",
    [SEC_META] = "meta",
    [SEC_TOTALS] = "totals",
    [SEC_EVENTS_LOST] = "events_lost",
    [SEC_TARGETS] = "targets",
    [SEC_FRAMES] = "frames",
    [SEC_STACKS] = "stacks",
    [SEC_TIMELINE] = "timeline",
    [SEC_BLOCKS] = "blocks",
    [SEC_TEMPORARY] = "temporary",
    [SEC_TRACE] = "trace",
    [SEC_AGES] = "ages",
    [SEC_STACK_INFO] = "stack_info",
    [SEC_TARGET_NOTES] = "target_notes",
    [SEC_UNWIND] = "unwind",
    [SEC_PROBE_SITES] = "probe_sites",
    [SEC_DAEMON] = "daemon",
    [SEC_GROUPS] = "groups",
    [SEC_LEAKS] = "leaks",
    [SEC_RESIDENT] = "resident",
    [SEC_MEMORY] = "memory",
    [SEC_SCAN] = "scan",
    [SEC_SCAN_ENTRIES] = "scan_entries",
    [SEC_INHERITED] = "inherited",
    [SEC_FAMILY] = "family",
    [SEC_MATCH] = "match",
    [SEC_TIMELINE_TARGETS] = "timeline_targets",
    [SEC_WALKER] = "walker",
    [SEC_CGROUP] = "cgroup",
    [SEC_TIMELINE_CGROUP] = "timeline_cgroup",
    [SEC_OOM] = "oom",
};

/* A timeline point's live figures in wire order (sections SEC_TIMELINE and SEC_TIMELINE_TARGETS):
 * live_bytes, live_allocations, allocations, bytes_allocated. */
#define SNAP_NLIVE_FIGURES 4

/* struct snap_options in wire order (section SEC_TRACE). */
#define SNAP_NOPTIONS 6
extern const size_t snap_option_offsets[SNAP_NOPTIONS];

/* struct snap_daemon in wire order (section SEC_DAEMON). */
#define SNAP_NDAEMON 10
extern const size_t snap_daemon_offsets[SNAP_NDAEMON];

/* struct snap_match's figures in wire order (section SEC_MATCH). */
#define SNAP_NMATCH 3
extern const size_t snap_match_offsets[SNAP_NMATCH];

/* struct snap_walker's figures in wire order (section SEC_WALKER). */
#define SNAP_NWALKER 1
extern const size_t snap_walker_offsets[SNAP_NWALKER];

/* A target's cgroup strings in section SEC_CGROUP: path, memory_path, unit, container,
 * runtime, pod, why. */
#define SNAP_CGROUP_STRINGS 7
/* struct snap_oom's figures in wire order (section SEC_OOM). */
#define SNAP_NOOM (sizeof(struct snap_oom) / sizeof(uint64_t))
extern const size_t snap_oom_offsets[SNAP_NOOM];

/* struct snap_scan_figures in wire order (section SEC_SCAN). */
#define SNAP_NSCAN (sizeof(struct snap_scan_figures) / sizeof(uint64_t))
extern const size_t snap_scan_offsets[SNAP_NSCAN];

/* Stack counters in the stacks section (section 0 of MT_STACK_COUNTERS). */
enum {
#define SNAP_STACK_SECTION0(field, name, section) +(section == 0)
	SNAP_STACK_COUNTERS = 0 MT_STACK_COUNTERS(SNAP_STACK_SECTION0)
#undef SNAP_STACK_SECTION0
};

/* Every stack counter (the rest of a grouped snapshot, section SEC_GROUPS). */
enum {
#define SNAP_STACK_ONE(field, name, section) +1
	SNAP_STACK_COUNTERS_ALL = 0 MT_STACK_COUNTERS(SNAP_STACK_ONE)
#undef SNAP_STACK_ONE
};

/*
 * n bytes in s's string blocks (snapshot.c; snapshot_strdup() is this with a
 * copy), or NULL when memory runs out: the decoder's string table.
 */
char *snapshot_strings_alloc(struct snapshot *s, size_t n);

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t zigzag(int64_t v)
{
	return v < 0 ? ~((uint64_t)v << 1) : (uint64_t)v << 1;
}

static inline int64_t unzigzag(uint64_t u)
{
	return (u & 1) ? -(int64_t)(u >> 1) - 1 : (int64_t)(u >> 1);
}

#endif
