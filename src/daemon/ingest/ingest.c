// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ingest: every ring buffer record goes to the tracker (the accounting
 * core), in the order the BPF programs wrote them; the control records
 * among them (exec, ld.so, fork, match) then go to the hooks, which move
 * the targets on. A new stack is noted while its process is alive, so that
 * its modules and Python code objects can be read later; what the
 * symbolizer reads of a process then is kept only while the process is
 * still the program the stack came from (the guard the targets give it,
 * symbolizer_set_guard). While a request reads the core, records queue
 * instead (the freeze, ingest.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "daemon/ingest/ingest.h"
#include "daemon/core/tracker.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/invariant.h"
#include "common/util.h"
#include "memtrace/counters.h"

static int debug_events; /* MEMTRACE_DEBUG_EVENTS=1: print each event */

/*
 * MEMTRACE_RECORD=FILE: every ring buffer record, as drained, is appended to
 * FILE (a 32-bit length, then the record): the input of the replay
 * benchmark (tests/bench/replay.c), which feeds it to ingest_record() with
 * no BPF. Flushed after each drain.
 */
static FILE *record;

/*
 * Records a routine drain takes at most (about 5 ms of work at a million
 * live blocks) before the loop goes back to its other work; the ring
 * buffer's descriptor stays readable, so the loop comes straight back for
 * the rest. A drain that must be complete (before a request, an exit, a
 * detach) takes everything.
 */
#define DRAIN_SLICE 2048

/*
 * Chunks of touched memory kept ready for the queue (1 MiB each) while a
 * freeze fills it: tens of MiB during a whole snapshot of a busy target's
 * million blocks (every allocation event carries its stack). A new page
 * costs 30-60 us on a virtual machine, a chunk tens of ms the loop would
 * not drain meanwhile.
 */
#define DEFERRED_POOL 8
/* Time a drain spends applying queued records after a thaw, at most. */
#define CATCH_UP_BUDGET_NS (2 * 1000 * 1000)

/*
 * The ring buffer's positions, mapped read-only a second time (libbpf 1.1
 * does not show them): the consumer page, then the producer page. A record
 * reserved before the producer position read at some moment lies before
 * it, and is drained once the consumer position passes it.
 */
static const volatile uint64_t *ring_pages;
static size_t ring_page_size;

void ingest_record(struct ingest *in, const void *data, size_t len)
{
	const struct mt_event *ev = data;

	if (debug_events && len >= sizeof(*ev))
		fprintf(stderr,
			"event kind=%u func=%s tid=%u addr=%#llx old=%#llx size=%llu frames=%u\n",
			ev->kind, mt_func_name(ev->func) ? mt_func_name(ev->func) : "?", ev->tid,
			(unsigned long long)ev->addr, (unsigned long long)ev->old_addr,
			(unsigned long long)ev->size, ev->nframes);
	in->applying++; /* a drain asked for meanwhile does nothing (drain) */
	tracker_event(in->tracker, data, len);
	if (len < sizeof(*ev) || ev->kind < MT_EV_EXEC)
		goto out;
	if (ev->kind == MT_EV_LDSO && ev->addr == 1) {
		/* a dlopen or dlclose done, the process stopped: read what it maps
		 * now, before it is continued (it may close or exit before the
		 * daemon drains a stack in the new library) */
		if (in->unwind)
			unwind_linker_event(in->unwind, (int)ev->tgid);
		if (in->sym)
			symbolizer_note_process(in->sym, (int)ev->tgid);
	}
	if (in->hooks.control)
		in->hooks.control(in->hooks.ctx, ev);
out:
	in->applying--;
}

void ingest_take(struct ingest *in, const void *data, size_t len)
{
	if (!ingest_frozen(in)) {
		ingest_record(in, data, len);
	} else if (len) {
		evqueue_push(&in->deferred, data, len); /* applied in order after the thaw */
		in->ndeferred++;
	}
}

static int handle_ringbuf_event(void *ctx, void *data, size_t len)
{
	struct ingest *in = ctx;
	uint32_t n = (uint32_t)len;

	if (record &&
	    (fwrite(&n, sizeof(n), 1, record) != 1 || fwrite(data, 1, len, record) != len)) {
		log_msg("cannot write MEMTRACE_RECORD: %s: stopped recording", strerror(errno));
		fclose(record);
		record = NULL;
	}
	ingest_take(in, data, len);
	/* negative: libbpf stops after this record, which it counts consumed */
	return --in->left ? 0 : -E2BIG;
}

/* The core moves again: what waited for that goes on. */
static void resume(struct ingest *in)
{
	if (in->hooks.resumed)
		in->hooks.resumed(in->hooks.ctx);
}

/* After a thaw: apply a slice of what queued (about 2 ms); once none is
 * left, the core moves again. */
static void catch_up(struct ingest *in)
{
	uint64_t start;
	const void *rec;
	size_t len;
	unsigned n = 0;

	if (in->readers || !in->deferred.count)
		return;
	start = time_monotonic_ns();
	while ((rec = evqueue_peek(&in->deferred, &len))) {
		ingest_record(in, rec, len);
		evqueue_pop(&in->deferred);
		/* a slice at a time: the next drain comes soon */
		if (!(++n & 255) && time_monotonic_ns() - start > CATCH_UP_BUDGET_NS)
			break;
	}
	if (in->deferred.count)
		return;
	evqueue_trim(&in->deferred);
	resume(in);
}

static void drain(struct ingest *in, unsigned most)
{
	uint64_t now = time_monotonic_ns();

	/* asked for while a record is applied (a hook gave up a target at its
	 * exec event): the records before it are applied, those after it come
	 * in order once it returns; a nested consume, or a nested catch-up,
	 * would apply this one again */
	if (in->applying)
		return;

	/* the ingest figure: the longest the ring buffer waited for a drain */
	if (in->last_drain_ns && now - in->last_drain_ns > in->drain_gap_max_ns)
		in->drain_gap_max_ns = now - in->last_drain_ns;
	in->last_drain_ns = now;
	in->left = most;
	if (in->rb)
		ring_buffer__consume(in->rb);
	if (record)
		fflush(record);
	catch_up(in);
	/* every record queued before this drain is applied: children that were
	 * gone before we could watch them have had their last events */
	if (most == UINT_MAX && !ingest_frozen(in) && in->hooks.drained)
		in->hooks.drained(in->hooks.ctx);
}

void ingest_drain(struct ingest *in)
{
	drain(in, UINT_MAX);
}

void ingest_drain_slice(struct ingest *in)
{
	drain(in, DRAIN_SLICE);
}

/* ---- the freeze ----------------------------------------------------------- */

int ingest_frozen(const struct ingest *in)
{
	return in->readers || in->deferred.count;
}

int ingest_freeze(struct ingest *in, unsigned n)
{
	if (!in->readers) {
		if (in->deferred.count)
			return -1; /* catching up: the resumed hook says when */
		ingest_drain(in);  /* the readers see every record before they asked */
		if (in->readers || in->deferred.count)
			return -1; /* a hook froze it meanwhile */
		in->frozen_at = time_monotonic_ns();
		in->ndeferred = 0;
		in->stats.freezes++;
	}
	in->readers += (int)n;
	/* nothing queued from before the freeze: readers see every record drained */
	MT_INVARIANT(in->readers != (int)n || !in->deferred.count);
	return 0;
}

void ingest_thaw(struct ingest *in)
{
	uint64_t took;

	MT_INVARIANT(in->readers > 0); /* a thaw for each reader frozen for */
	if (!in->readers || --in->readers)
		return;
	took = time_monotonic_ns() - in->frozen_at;
	if (took > in->stats.freeze_max_ns)
		in->stats.freeze_max_ns = took;
	in->stats.deferred_events += in->ndeferred;
	if (in->ndeferred > in->stats.deferred_max)
		in->stats.deferred_max = in->ndeferred;
	if (!in->deferred.count)
		resume(in); /* nothing to catch up on */
}

void ingest_freeze_prepare(struct ingest *in)
{
	evqueue_prepare(&in->deferred, DEFERRED_POOL);
}

void ingest_freeze_start(struct ingest *in)
{
	if (in->keeper)
		return;
	/* made here, on the loop's thread, it keeps the loop's priority */
	if (evqueue_keeper_start(&in->deferred, DEFERRED_POOL))
		log_msg("no thread to prepare the deferred queue's memory");
	in->keeper = 1;
}

void ingest_figures(const struct ingest *in, struct snap_daemon *out)
{
	out->drain_gap_max_ns = in->drain_gap_max_ns;
	out->frozen_requests = in->stats.freezes;
	out->freeze_max_ns = in->stats.freeze_max_ns;
	out->deferred_events = in->stats.deferred_events;
}

void ingest_reset_figures(struct ingest *in)
{
	in->drain_gap_max_ns = 0;
}

/* ---- opening -------------------------------------------------------------- */

static void on_new_stack(void *arg, uint32_t tgid, const uint64_t *frames, uint32_t n)
{
	struct ingest *in = arg;
	uint32_t native = 0;

	while (native < n && !(frames[native] & MT_PY_WORD))
		native++;
	/* while the process is alive: learn the modules these frames are in */
	if (in->sym)
		symbolizer_note(in->sym, (int)tgid, frames, native);
	if (in->unwind)
		unwind_note_frames(in->unwind, (int)tgid, frames, native);
	/* and read the code objects of its Python frames */
	if (native < n && in->py)
		pystacks_note(in->py, (int)tgid, frames + native, n - native);
}

uint64_t ingest_ring_produced(void)
{
	return ring_pages ? __atomic_load_n(&ring_pages[ring_page_size / 8], __ATOMIC_ACQUIRE)
			  : UINT64_MAX;
}

uint64_t ingest_ring_consumed(void)
{
	return ring_pages ? __atomic_load_n(&ring_pages[0], __ATOMIC_ACQUIRE) : 0;
}

void ingest_init(struct ingest *in)
{
	evqueue_init(&in->deferred);
	in->tracker->on_new_stack = on_new_stack;
	in->tracker->on_new_stack_arg = in;
}

int ingest_open(struct ingest *in, int ringbuf_fd)
{
	const char *rec = getenv("MEMTRACE_RECORD");
	void *pages;

	debug_events = getenv("MEMTRACE_DEBUG_EVENTS") != NULL;
	if (rec && !(record = fopen(rec, "we")))
		log_msg("cannot open MEMTRACE_RECORD %s: %s", rec, strerror(errno));
	in->rb = ring_buffer__new(ringbuf_fd, handle_ringbuf_event, in, NULL);
	if (!in->rb)
		return -1;
	ring_page_size = (size_t)sysconf(_SC_PAGESIZE);
	pages = mmap(NULL, 2 * ring_page_size, PROT_READ, MAP_SHARED, ringbuf_fd, 0);
	if (pages == MAP_FAILED)
		log_msg("cannot map the ring buffer's positions (%s): leak scans refused",
			strerror(errno));
	else
		ring_pages = pages;
	return 0;
}

int ingest_epoll_fd(const struct ingest *in)
{
	return ring_buffer__epoll_fd(in->rb);
}

void ingest_close(struct ingest *in)
{
	if (in->rb)
		ring_buffer__free(in->rb);
	in->rb = NULL;
	evqueue_free(&in->deferred);
}
