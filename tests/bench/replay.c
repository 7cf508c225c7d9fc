// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ingest replay benchmark: a recorded ring buffer stream (memtraced
 * with MEMTRACE_RECORD=FILE) fed to the daemon's own ingest_record() and
 * accounting core, with no BPF and no kernel, on one CPU. Prints the events
 * per second of CPU time (the best of the passes, each from an empty
 * tracker) and what the daemon's state costs per live block at the end of
 * the first pass: by RSS, and as the heap and stack tables count it.
 *
 *     replay FILE [PASSES]
 *
 * Control records (exec, fork, ld.so, match) act on targets and probes, not
 * on the accounting: they are counted and skipped. Every process in the
 * stream is a target from its first record.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/daemon.h"
#include "daemon/ingest/ingest.h"

struct stream {
	unsigned char *data;
	size_t len;
	size_t records, skipped;
};

static int read_stream(const char *path, struct stream *s)
{
	FILE *f = fopen(path, "re");
	size_t cap = 1 << 20;

	if (!f)
		return -1;
	s->data = malloc(cap);
	s->len = 0;
	while (s->data) {
		size_t n = fread(s->data + s->len, 1, cap - s->len, f);

		s->len += n;
		if (s->len < cap)
			break;
		cap *= 2;
		s->data = realloc(s->data, cap);
	}
	fclose(f);
	return s->data ? 0 : -1;
}

static double cpu_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* The next record at *pos: its bytes and length, or NULL at the end. */
static const struct mt_event *next_record(const struct stream *s, size_t *pos, uint32_t *len)
{
	if (*pos + sizeof(*len) > s->len)
		return NULL;
	memcpy(len, s->data + *pos, sizeof(*len));
	if (*len < sizeof(struct mt_event) || *pos + sizeof(*len) + *len > s->len)
		return NULL;
	*pos += sizeof(*len) + *len;
	return (const struct mt_event *)(s->data + *pos - *len);
}

/* Targets for every process of the stream, as the daemon adds them. */
static void add_targets(struct tracker *t, const struct stream *s)
{
	const struct mt_event *ev;
	size_t pos = 0;
	uint32_t len;

	while ((ev = next_record(s, &pos, &len)))
		if (!tracker_find_target(t, ev->tgid))
			tracker_add_target(t, ev->tgid, ev->time_ns);
}

/* The stack side's bytes: entries, frames (the tree's nodes and their index), words, index, ids. */
static void stack_parts(const struct tracker *t, double *parts)
{
	const struct stack_table *st = &t->stacks;

	parts[0] = (double)st->count * sizeof(*st->v);
	parts[1] = (double)st->nodes_len * sizeof(*st->nodes) +
		   (double)st->node_cap * sizeof(*st->node_index);
	parts[2] = (double)st->nwords * sizeof(*st->words) +
		   (st->word_index ? (double)(st->word_mask + 1) * sizeof(*st->word_index) : 0);
	parts[3] = (double)(st->index_mask + 1) * sizeof(*st->index);
	parts[4] = (double)stackids_bytes(&t->ids);
}

/* One pass over the stream into d; returns its CPU seconds. */
static double pass(struct daemon *d, struct stream *s)
{
	const struct mt_event *ev;
	size_t pos = 0;
	uint32_t len;
	double t0 = cpu_seconds();

	s->records = s->skipped = 0;
	while ((ev = next_record(s, &pos, &len))) {
		s->records++;
		if (ev->kind >= MT_EV_EXEC) {
			s->skipped++;
			continue;
		}
		ingest_record(&d->ingest, ev, len);
	}
	return cpu_seconds() - t0;
}

int main(int argc, char **argv)
{
	int passes = argc > 2 ? atoi(argv[2]) : 3;
	/* 0: the recorded program's allocator is not glibc (tracker_set_refrees) */
	int refrees = argc > 3 ? atoi(argv[3]) : 1;
	static struct daemon d;
	struct stream s;
	double best = 0;
	cpu_set_t one;
	long rss0, rss1 = 0;
	size_t table_bytes = 0, heap_bytes = 0, live = 0;
	double parts[5] = {0};

	if (argc < 2 || passes < 1) {
		fprintf(stderr, "usage: replay FILE [PASSES [REFREES]]\n");
		return 2;
	}
	if (read_stream(argv[1], &s)) {
		fprintf(stderr, "replay: cannot read %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/* one core: the one it runs on now */
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	for (int i = 0; i < passes; i++) {
		double sec;

		rss0 = rss_kib();
		if (tracker_init(&d.tracker, 0, 0)) {
			fprintf(stderr, "replay: out of memory\n");
			return 1;
		}
		add_targets(&d.tracker, &s);
		for (uint32_t k = 0; k < d.tracker.ntargets; k++)
			tracker_set_refrees(&d.tracker, d.tracker.targets[k].tgid, refrees);
		d.ingest.tracker = &d.tracker; /* no hooks: control records are skipped */
		sec = pass(&d, &s);
		if (i == 0) {
			rss1 = rss_kib();
			live = d.tracker.heap.count;
			heap_bytes = d.tracker.heap.bytes;
			table_bytes = heap_bytes + stacks_bytes(&d.tracker.stacks) +
				      stackids_bytes(&d.tracker.ids);
			rss1 -= rss0;
			stack_parts(&d.tracker, parts);
		}
		if (sec > 0 && (s.records - s.skipped) / sec > best)
			best = (double)(s.records - s.skipped) / sec;
		printf("pass %d: %zu events in %.3f s of CPU: %.2f M events/s\n", i + 1,
		       s.records - s.skipped, sec, (s.records - s.skipped) / sec / 1e6);
		if (i + 1 < passes)
			tracker_destroy(&d.tracker);
	}
	if (live)
		printf("bytes per live block: heap %.1f, stack entries %.1f, frames %.1f, "
		       "words %.1f, stack index %.1f, stack ids %.1f\n",
		       (double)heap_bytes / (double)live, parts[0] / (double)live,
		       parts[1] / (double)live, parts[2] / (double)live, parts[3] / (double)live,
		       parts[4] / (double)live);
	printf("records=%zu skipped=%zu events_per_second=%.0f live_blocks=%zu stacks=%u "
	       "rss_bytes_per_live_block=%.1f table_bytes_per_live_block=%.1f "
	       "heap_bytes_per_live_block=%.1f "
	       "allocations=%llu frees=%llu\n",
	       s.records, s.skipped, best, live, d.tracker.stacks.count,
	       live ? rss1 * 1024.0 / (double)live : 0.0,
	       live ? (double)table_bytes / (double)live : 0.0,
	       live ? (double)heap_bytes / (double)live : 0.0,
	       (unsigned long long)d.tracker.totals.allocations,
	       (unsigned long long)d.tracker.totals.frees);
	return 0;
}
