// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Operations on the snapshot model (include/memtrace/snapshot.h) that both
 * programs use: names, freeing, and the selection of stacks a request makes,
 * for snapshots read from a file. The byte form is in snapshot_encode.c and
 * snapshot_decode.c.
 */
#include "memtrace/snapshot.h"
#include "common/snapshot_wire.h"
#include "common/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const size_t snap_option_offsets[SNAP_NOPTIONS] = {
    offsetof(struct snap_options, stack_depth),
    offsetof(struct snap_options, ring_buffer_bytes),
    offsetof(struct snap_options, max_live_blocks),
    offsetof(struct snap_options, max_stacks),
    offsetof(struct snap_options, sample_interval_ns),
    offsetof(struct snap_options, temporary_threshold),
};

_Static_assert(sizeof(struct snap_options) == sizeof(uint64_t) * SNAP_NOPTIONS,
	       "every option must be on the wire");

const size_t snap_daemon_offsets[SNAP_NDAEMON] = {
    offsetof(struct snap_daemon, drain_gap_max_ns),
    offsetof(struct snap_daemon, frozen_requests),
    offsetof(struct snap_daemon, freeze_max_ns),
    offsetof(struct snap_daemon, deferred_events),
    offsetof(struct snap_daemon, symbol_lookups),
    offsetof(struct snap_daemon, symbol_cache_hits),
    offsetof(struct snap_daemon, loop_busy_max_ns),
    offsetof(struct snap_daemon, stack_id_events),
    offsetof(struct snap_daemon, stack_ids_unknown),
    offsetof(struct snap_daemon, bpf_runs_skipped),
};

const size_t snap_walker_offsets[SNAP_NWALKER] = {
    offsetof(struct snap_walker, refused),
};

const size_t snap_oom_offsets[SNAP_NOOM] = {
    offsetof(struct snap_oom, killed),	       offsetof(struct snap_oom, time_ns),
    offsetof(struct snap_oom, live_bytes),     offsetof(struct snap_oom, live_blocks),
    offsetof(struct snap_oom, resident_bytes), offsetof(struct snap_oom, cgroup_usage),
    offsetof(struct snap_oom, cgroup_limit),
};

const size_t snap_match_offsets[SNAP_NMATCH] = {
    offsetof(struct snap_match, max_targets),
    offsetof(struct snap_match, traced),
    offsetof(struct snap_match, over_limit),
};

_Static_assert(sizeof(struct snap_daemon) == sizeof(uint64_t) * SNAP_NDAEMON,
	       "every daemon figure must be on the wire");

/* Every figure of a scan: its fields in declaration order, which is the wire's. */
#define SCAN_AT(i) (sizeof(uint64_t) * (i))
const size_t snap_scan_offsets[SNAP_NSCAN] = {
    SCAN_AT(0),	 SCAN_AT(1),  SCAN_AT(2),  SCAN_AT(3),	SCAN_AT(4),  SCAN_AT(5),  SCAN_AT(6),
    SCAN_AT(7),	 SCAN_AT(8),  SCAN_AT(9),  SCAN_AT(10), SCAN_AT(11), SCAN_AT(12), SCAN_AT(13),
    SCAN_AT(14), SCAN_AT(15), SCAN_AT(16), SCAN_AT(17), SCAN_AT(18), SCAN_AT(19), SCAN_AT(20),
};

_Static_assert(sizeof(struct snap_scan_figures) == sizeof(uint64_t) * 21,
	       "every scan figure must be in snap_scan_offsets");

static const char *const leak_kind_names[SNAP_LEAK_KINDS] = {
    [SNAP_LEAK_DIRECT] = "direct",
    [SNAP_LEAK_INDIRECT] = "indirect",
    [SNAP_LEAK_POSSIBLE] = "possible",
};

const char *snap_leak_kind_name(uint32_t kind)
{
	return kind < SNAP_LEAK_KINDS ? leak_kind_names[kind] : "unknown";
}

static const char *const target_state_names[] = {
    [SNAP_TARGET_ATTACHING] = "attaching", [SNAP_TARGET_ATTACHED] = "attached",
    [SNAP_TARGET_EXITED] = "exited",	   [SNAP_TARGET_DETACHED] = "detached",
    [SNAP_TARGET_EXECED] = "execed",
};

const char *snap_target_state_name(uint32_t state)
{
	if (state >= ARRAY_SIZE(target_state_names))
		return "unknown";
	return target_state_names[state];
}

uint64_t snapshot_events_lost(const struct snapshot *s)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < ARRAY_SIZE(s->events_lost); i++)
		sum += s->events_lost[i];
	return sum;
}

static const char *const kind_names[SNAP_KIND_COUNT] = {
    [SNAP_STACKS] = "stacks",
    [SNAP_ROWS] = "rows",
    [SNAP_LEAKS] = "leaks",
    [SNAP_SCAN] = "scan",
};

const char *snap_kind_name(uint32_t kind)
{
	return kind < SNAP_KIND_COUNT ? kind_names[kind] : "unknown";
}

/*
 * A snapshot's strings lie in blocks of its own: the first block in the list
 * is the one being filled; a string too long for a fresh block gets one of
 * its own, put behind it.
 */
struct snap_string_block {
	struct snap_string_block *next;
	size_t used, size;
	char bytes[];
};

#define STRING_BLOCK_BYTES (16 * 1024 - sizeof(struct snap_string_block))

char *snapshot_strings_alloc(struct snapshot *s, size_t n)
{
	struct snap_string_block *b = s->strings;
	size_t size = n > STRING_BLOCK_BYTES ? n : STRING_BLOCK_BYTES;

	if (b && b->size - b->used >= n) {
		b->used += n;
		return b->bytes + b->used - n;
	}
	if (n > SIZE_MAX - sizeof(*b) || !(b = malloc(sizeof(*b) + size)))
		return NULL;
	b->used = n;
	b->size = size;
	if (s->strings && size == n) {
		/* a block of its own: the one being filled stays first */
		b->next = s->strings->next;
		s->strings->next = b;
	} else {
		b->next = s->strings;
		s->strings = b;
	}
	return b->bytes;
}

char *snapshot_strdup(struct snapshot *s, const char *str)
{
	size_t n;
	char *p;

	if (!str)
		return NULL;
	n = strlen(str) + 1;
	p = snapshot_strings_alloc(s, n);
	if (!p) {
		log_msg("out of memory");
		abort();
	}
	return memcpy(p, str, n);
}

/* What the stacks stand for (rows, leaks, a scan's entries): freed, and they are stacks again. */
static void free_kind(struct snapshot *s)
{
	switch (s->kind) {
	case SNAP_ROWS:
		free(s->groups.rows);
		memset(&s->groups, 0, sizeof(s->groups));
		break;
	case SNAP_LEAKS:
		free(s->leaks.stacks);
		memset(&s->leaks, 0, sizeof(s->leaks));
		break;
	case SNAP_SCAN:
		free(s->scan.suppressions);
		free(s->scan.entries);
		free(s->scan.pids);
		memset(&s->scan, 0, sizeof(s->scan));
		break;
	}
	s->kind = SNAP_STACKS;
}

void snapshot_free(struct snapshot *s)
{
	struct snap_string_block *b = s->strings, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	if (s->breakdowns)
		free(s->breakdowns->memory);
	free(s->breakdowns);
	for (uint32_t i = 0; s->targets && i < s->ntargets; i++)
		free(s->targets[i].sites);
	free(s->truncations);
	free(s->frame_table);
	free(s->frame_refs);
	free_kind(s);
	free(s->targets);
	free(s->stacks);
	free(s->timeline);
	if (s->timeline_targets)
		free(s->timeline_targets->figures);
	free(s->timeline_targets);
	if (s->block_list)
		free(s->block_list->blocks);
	free(s->block_list);
	free(s->unwind);
	free(s->daemon);
	free(s->match);	 /* its string is in the string blocks */
	free(s->walker); /* and its */
	memset(s, 0, sizeof(*s));
}

void snapshot_select(struct snapshot *s, int sort, uint32_t top, uint32_t pid)
{
	struct mt_rank *order;
	struct snap_stack *sorted;
	uint32_t n = 0, kept, nblocks = 0, *remap;

	if (!s->nstacks)
		return;
	/* rows, leaks and a scan describe the stacks as they were chosen: not these */
	free_kind(s);
	order = xcalloc(s->nstacks, sizeof(*order));
	for (uint32_t i = 0; i < s->nstacks; i++) {
		if (pid && s->stacks[i].pid != pid)
			continue;
		order[n++] = (struct mt_rank){.value = mt_sort_value(&s->stacks[i].t, sort),
					      .allocations = s->stacks[i].t.allocations,
					      .index = i};
	}
	kept = (uint32_t)mt_rank_sort(order, n);
	/* as the daemon counts them for a request, when the file held them all */
	if (s->stacks_total == s->nstacks)
		s->stacks_total = kept;
	if (top && kept > top)
		kept = top;
	/* where each kept stack goes, for the block list; UINT32_MAX = dropped */
	remap = xmalloc(s->nstacks * sizeof(*remap));
	memset(remap, 0xff, s->nstacks * sizeof(*remap));
	sorted = xcalloc(kept ? kept : 1, sizeof(*sorted));
	for (uint32_t i = 0; i < kept; i++) {
		sorted[i] = s->stacks[order[i].index];
		remap[order[i].index] = i;
	}
	/* the dropped stacks' references stay in frame_refs until snapshot_free */
	for (uint32_t i = 0; s->block_list && i < s->block_list->nblocks; i++) {
		struct snap_block *b = s->block_list->blocks;
		uint32_t to = remap[b[i].stack];

		if (to != UINT32_MAX) {
			b[nblocks] = b[i];
			b[nblocks++].stack = to;
		}
	}
	if (s->block_list)
		s->block_list->nblocks = nblocks;
	free(remap);
	free(s->stacks);
	free(order);
	s->stacks = sorted;
	s->nstacks = kept;
}
