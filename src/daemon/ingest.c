// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ingest: every ring buffer record goes to the tracker (the accounting
 * core), in the order the BPF programs wrote them; the control events among
 * them (exec, ld.so, fork, match) then move the targets on (exec.c,
 * targets.c). A new stack is noted while its process is alive, so that its
 * modules and Python code objects can be read later.
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

#include "daemon/daemon.h"
#include "daemon/exec.h"
#include "daemon/ingest.h"
#include "daemon/targets.h"
#include "daemon/attach/allocator.h"
#include "daemon/attach/probes.h"
#include "daemon/serve/server.h"
#include "daemon/serve/worker.h"
#include "daemon/symbols/pystacks.h"
#include "daemon/symbols/symbolize.h"
#include "daemon/unwind/unwind.h"
#include "common/util.h"

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

static unsigned drain_left; /* records the drain in progress may still take */

/*
 * The ring buffer's positions, mapped read-only a second time (libbpf 1.1
 * does not show them): the consumer page, then the producer page. A record
 * reserved before the producer position read at some moment lies before
 * it, and is drained once the consumer position passes it.
 */
static const volatile uint64_t *ring_pages;
static size_t ring_page_size;

void ingest_record(struct daemon *d, const void *data, size_t len)
{
	const struct mt_event *ev = data;

	if (debug_events && len >= sizeof(*ev))
		fprintf(stderr,
			"event kind=%u func=%s tid=%u addr=%#llx old=%#llx size=%llu frames=%u\n",
			ev->kind, allocator_func_name(ev->func), ev->tid,
			(unsigned long long)ev->addr, (unsigned long long)ev->old_addr,
			(unsigned long long)ev->size, ev->nframes);
	tracker_event(&d->tracker, data, len);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_EXEC)
		target_exec_event(d, ev->tgid, ev->addr == 1, ev->old_addr == MT_EXEC_UNMATCHED);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_LDSO && ev->addr == 1)
		unwind_linker_event(d->unwind, (int)ev->tgid); /* before it is continued */
	if (len >= sizeof(*ev) && ev->kind == MT_EV_LDSO)
		target_ldso_event(d, ev->tgid);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_PYALLOC)
		target_pyalloc_event(d, ev->tgid);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_FORK)
		target_forked(d, ev->tgid, (int)ev->addr);
	if (len >= sizeof(*ev) && ev->kind == MT_EV_MATCH)
		target_matched(d, (int)ev->tgid);
}

static int handle_ringbuf_event(void *ctx, void *data, size_t len)
{
	struct daemon *d = ctx;
	struct worker *w = server_worker(d->server);
	uint32_t n = (uint32_t)len;

	if (record &&
	    (fwrite(&n, sizeof(n), 1, record) != 1 || fwrite(data, 1, len, record) != len)) {
		log_msg("cannot write MEMTRACE_RECORD: %s: stopped recording", strerror(errno));
		fclose(record);
		record = NULL;
	}
	if (worker_frozen(w))
		worker_defer_event(w, data, len); /* applied in order after the thaw */
	else
		ingest_record(d, data, len);
	/* negative: libbpf stops after this record, which it counts consumed */
	return --drain_left ? 0 : -E2BIG;
}

static void drain(struct daemon *d, unsigned most)
{
	uint64_t now = time_monotonic_ns();

	/* the ingest figure: the longest the ring buffer waited for a drain */
	if (d->last_drain_ns && now - d->last_drain_ns > d->drain_gap_max_ns)
		d->drain_gap_max_ns = now - d->last_drain_ns;
	d->last_drain_ns = now;
	drain_left = most;
	if (d->rb)
		ring_buffer__consume(d->rb);
	if (record)
		fflush(record);
	/* after a request's freeze: apply a slice of what waited */
	worker_catch_up(server_worker(d->server));
	/* every event queued before this drain is applied: children that were
	 * gone before we could watch them have had their last events */
	if (most == UINT_MAX && !worker_frozen(server_worker(d->server)))
		targets_release_pending(d);
}

void ingest_drain(struct daemon *d)
{
	drain(d, UINT_MAX);
}

void ingest_drain_slice(struct daemon *d)
{
	drain(d, DRAIN_SLICE);
}

static void on_new_stack(void *arg, uint32_t tgid, const uint64_t *frames, uint32_t n)
{
	struct daemon *d = arg;

	uint32_t native = 0;

	while (native < n && !(frames[native] & MT_PY_WORD))
		native++;
	/* while the process is alive: learn the modules these frames are in */
	symbolizer_note(d->sym, (int)tgid, frames, native);
	unwind_note_frames(d->unwind, (int)tgid, frames, native);
	/* and read the code objects of its Python frames */
	if (native < n)
		pystacks_note(d->py, (int)tgid, frames + native, n - native);
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

int ingest_open(struct daemon *d)
{
	const char *rec = getenv("MEMTRACE_RECORD");
	void *pages;

	debug_events = getenv("MEMTRACE_DEBUG_EVENTS") != NULL;
	if (rec && !(record = fopen(rec, "we")))
		log_msg("cannot open MEMTRACE_RECORD %s: %s", rec, strerror(errno));
	d->tracker.on_new_stack = on_new_stack;
	d->tracker.on_new_stack_arg = d;
	d->rb = ring_buffer__new(probes_ringbuf_fd(d->skel), handle_ringbuf_event, d, NULL);
	if (!d->rb)
		return -1;
	ring_page_size = (size_t)sysconf(_SC_PAGESIZE);
	pages =
	    mmap(NULL, 2 * ring_page_size, PROT_READ, MAP_SHARED, probes_ringbuf_fd(d->skel), 0);
	if (pages == MAP_FAILED)
		log_msg("cannot map the ring buffer's positions (%s): leak scans refused",
			strerror(errno));
	else
		ring_pages = pages;
	return 0;
}
