// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of what keeps requests from stalling ingest: the deferred event
 * queue (records come out in order, across chunks, with memory another
 * thread prepared), and the request worker's freeze protocol, with this
 * test as the event loop: while the worker builds a reply the loop keeps
 * "draining" events, which queue instead of changing what the worker reads;
 * every event from before the request is in the reply, none after; they are
 * all applied afterwards, in order, and requests that change the core wait;
 * a scan's freeze asked for with a deadline gives up in time and is still
 * granted afterwards.
 */
#include "daemon/serve/collect.h"
#include "daemon/serve/evqueue.h"
#include "daemon/serve/scan.h"
#include "daemon/serve/server.h"
#include "daemon/serve/service.h"
#include "daemon/serve/worker.h"
#include "daemon/symbols/symbolize.h"
#include "common/util.h"
#include "unit.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

TEST(evqueue_order)
{
	struct evqueue q;
	uint8_t rec[700];
	const uint8_t *got;
	size_t len;
	uint32_t next = 0;

	evqueue_init(&q);
	evqueue_prepare(&q, 2);
	CHECK(!evqueue_peek(&q, &len));
	/* enough records of varying sizes to span several 1 MiB chunks */
	for (uint32_t i = 0; i < 20000; i++) {
		size_t n = 8 + (i * 37) % (sizeof(rec) - 8);

		memset(rec, (int)(i & 0xff), n);
		memcpy(rec, &i, sizeof(i));
		evqueue_push(&q, rec, n);
		/* pop some as we go: the loop catches up while newer ones queue */
		if (i % 3 == 0) {
			got = evqueue_peek(&q, &len);
			CHECK(got != NULL);
			if (got) {
				uint32_t v;

				memcpy(&v, got, sizeof(v));
				CHECK_EQ_U64(v, next);
				/* aligned as the ring buffer's records: events are read in place */
				CHECK_EQ_U64((uintptr_t)got % 8, 0);
				CHECK_EQ_U64(len, 8 + (next * 37) % (sizeof(rec) - 8));
				CHECK(got[len - 1] == (uint8_t)(next & 0xff) || len <= sizeof(v));
				next++;
			}
			evqueue_pop(&q);
		}
	}
	while ((got = evqueue_peek(&q, &len))) {
		uint32_t v;

		memcpy(&v, got, sizeof(v));
		CHECK_EQ_U64(v, next);
		CHECK_EQ_U64((uintptr_t)got % 8, 0);
		next++;
		evqueue_pop(&q);
	}
	CHECK_EQ_U64(next, 20000);
	CHECK_EQ_U64(q.count, 0);
	CHECK_EQ_U64(q.bytes, 0);
	/* it works again once empty */
	evqueue_push(&q, "abcdefgh", 8);
	got = evqueue_peek(&q, &len);
	CHECK(got && len == 8 && !memcmp(got, "abcdefgh", 8));
	evqueue_pop(&q);
	CHECK(!evqueue_peek(&q, &len));
	evqueue_free(&q);
}

/* ---- the worker against a fake loop -------------------------------------- */

/* The "core": the events applied, in order. */
static uint32_t applied[100000];
static volatile uint32_t napplied;
static int out_of_order;
static uint64_t resumes;

/* What the worker saw, and the replies the loop got. */
static uint32_t seen_at_start, seen_at_end;
static volatile int collecting; /* the worker is inside collect_snapshot */
static int replies;
static uint8_t last_status;

/* The fake loop: its epoll set, its worker, and the service it hands it. */
static int epfd;
static struct worker *w;
static struct symbolizer *sym;

static void fake_ingest(void *ctx, const void *data, size_t len)
{
	uint32_t v;

	(void)ctx;
	memcpy(&v, data, sizeof(v));
	if (len != sizeof(v) || (napplied && v != applied[napplied - 1] + 1))
		out_of_order++;
	applied[napplied] = v;
	__atomic_store_n(&napplied, napplied + 1, __ATOMIC_RELEASE);
}

static void fake_resume(void *ctx)
{
	(void)ctx;
	resumes++;
}

static uint32_t next_event;

/* The fake ring buffer: each drain brings the next few events. */
static void fake_drain(void *ctx)
{
	for (int i = 0; i < 5; i++) {
		uint32_t v = next_event++;

		if (worker_frozen(w))
			worker_defer_event(w, &v, sizeof(v));
		else
			fake_ingest(ctx, &v, sizeof(v));
	}
	worker_catch_up(w);
}

static void fake_view(void *ctx, struct daemon_view *v)
{
	(void)ctx;
	memset(v, 0, sizeof(*v));
	v->sym = sym;
}

static const struct service svc = {
    .drain = fake_drain, .view = fake_view, .ingest = fake_ingest, .resume = fake_resume};

/* What the worker calls of the rest of serving, faked here. */
void stack_ends_check(const struct daemon_view *v, struct stack_ends *e, uint64_t budget_ns)
{
	(void)v;
	(void)e;
	(void)budget_ns;
}

void server_resume(struct server *srv)
{
	(void)srv;
}

/* Two lanes: a whole snapshot and a small answer (a report of the top 7) at once. */
static volatile int in_whole, small_during_whole;
static uint32_t whole_seen_at_start, small_seen_at_start, small_seen_at_end;

int collect_snapshot(const struct daemon_view *v, const struct stack_ends *ends,
		     const struct proto_request *r, struct snapshot *s, char *err, size_t errlen)
{
	uint32_t start = __atomic_load_n(&napplied, __ATOMIC_ACQUIRE);

	(void)v;
	(void)ends;
	(void)err;
	(void)errlen;
	memset(s, 0, sizeof(*s));
	s->version = SNAPSHOT_VERSION;
	s->events_received = start;
	s->stacks_total = r->kind == PROTO_REPORT ? r->report.top : 0;
	if (r->kind == PROTO_SNAPSHOT) { /* the whole lane: long */
		whole_seen_at_start = start;
		__atomic_store_n(&in_whole, 1, __ATOMIC_RELEASE);
		usleep(300 * 1000);
		__atomic_store_n(&in_whole, 0, __ATOMIC_RELEASE);
		return 0;
	}
	if (__atomic_load_n(&in_whole, __ATOMIC_ACQUIRE))
		small_during_whole++;
	small_seen_at_start = start;
	seen_at_start = start;
	__atomic_store_n(&collecting, 1, __ATOMIC_RELEASE);
	usleep(100 * 1000); /* the loop drains meanwhile */
	small_seen_at_end = seen_at_end = __atomic_load_n(&napplied, __ATOMIC_ACQUIRE);
	return 0;
}

void server_deliver(struct server *srv, int slot, uint8_t *frame, size_t len, uint64_t serial)
{
	(void)srv;
	(void)slot;
	(void)serial;
	CHECK(len > PROTO_REPLY_HEADER);
	last_status = frame[4];
	replies++;
	free(frame);
}

/* One loop iteration: wait a little for the worker's eventfd, then drain. */
static void loop_once(void)
{
	struct epoll_event ev;

	if (epoll_wait(epfd, &ev, 1, 2) == 1)
		worker_event(w);
	fake_drain(NULL);
}

static void start(void)
{
	static struct stack_ends ends;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	sym = symbolizer_new();
	w = worker_start(NULL, epfd, &svc, &ends);
	CHECK(w != NULL);
}

static void stop(void)
{
	worker_stop(w);
	w = NULL;
	symbolizer_free(sym);
	close(epfd);
}

TEST(worker_freeze)
{
	struct proto_request r;
	uint32_t before;
	int spins = 0;

	start();
	for (int i = 0; i < 20; i++)
		fake_drain(NULL); /* 100 events before the request */
	proto_request_init(&r, PROTO_REPORT);
	r.report.top = 7;
	CHECK(!worker_submit(w, 3, 42, &r, NULL, 0));
	before = next_event;
	while (!__atomic_load_n(&collecting, __ATOMIC_ACQUIRE) && spins++ < 5000)
		loop_once();
	CHECK(collecting);
	/* the freeze was granted after draining once more, and nothing since
	 * changes the core: the loop keeps draining into the queue */
	CHECK(seen_at_start >= before);
	CHECK(worker_frozen(w));
	for (int i = 0; i < 10; i++)
		loop_once();
	while (!replies && spins++ < 20000)
		loop_once();
	CHECK_EQ_U64(replies, 1);
	CHECK_EQ_U64(last_status, 0);
	CHECK_EQ_U64(seen_at_end, seen_at_start);
	/* caught up: every event applied once, in order */
	while (worker_frozen(w) && spins++ < 20000)
		loop_once();
	CHECK(!worker_frozen(w));
	CHECK_EQ_U64(napplied, next_event);
	CHECK_EQ_U64(out_of_order, 0);
	CHECK(resumes >= 1);
	stop();
}

/* A small answer asked for while a whole snapshot is built joins its freeze. */
TEST(worker_small_joins)
{
	struct proto_request whole, small;
	struct worker_stats st;
	int spins = 0;

	start();
	replies = 0;
	collecting = 0;
	proto_request_init(&whole, PROTO_SNAPSHOT); /* every stack */
	proto_request_init(&small, PROTO_REPORT);
	small.report.top = 7;
	CHECK(!worker_submit(w, 1, 1, &whole, NULL, 0));
	while (!__atomic_load_n(&in_whole, __ATOMIC_ACQUIRE) && spins++ < 5000)
		loop_once();
	CHECK(__atomic_load_n(&in_whole, __ATOMIC_ACQUIRE));
	CHECK(!worker_submit(w, 2, 2, &small, NULL, 0));
	while (replies < 2 && spins++ < 40000)
		loop_once();
	CHECK_EQ_U64(replies, 2);
	/* it ran while the whole one was built, on the same frozen core */
	CHECK_EQ_U64(small_during_whole, 1);
	CHECK_EQ_U64(small_seen_at_end, small_seen_at_start);
	CHECK_EQ_U64(small_seen_at_start, whole_seen_at_start);
	worker_get_stats(w, &st);
	CHECK_EQ_U64(st.joined, 1);
	CHECK_EQ_U64(st.freezes, 1);
	while (worker_frozen(w) && spins++ < 40000)
		loop_once();
	CHECK(!worker_frozen(w));
	CHECK_EQ_U64(napplied, next_event);
	CHECK_EQ_U64(out_of_order, 0);
	stop();
}

/* A scan's freezes with a deadline (scan.h), faked: what the lane lends it. */
static volatile int scan_phase; /* 1 waiting with a deadline, 2 timed out, 3 done */
static int scan_timed_out, scan_granted, scan_body_ok;

int scan_serve(const struct scan_core *core, const struct proto_request *r, const char *body,
	       size_t len, struct snapshot *out, struct symbolizer **held, char *err, size_t errlen)
{
	const struct daemon_view *v = NULL;

	memset(out, 0, sizeof(*out));
	*held = NULL;
	scan_body_ok = r->kind == PROTO_SCAN && len == 7 && !memcmp(body, "leak:x\n", 7);
	__atomic_store_n(&scan_phase, 1, __ATOMIC_RELEASE);
	/* the loop does not answer in time: the freeze stays asked for */
	scan_timed_out = core->freeze(core->ctx, time_monotonic_ns() + 20 * 1000 * 1000, &v) == 1;
	__atomic_store_n(&scan_phase, 2, __ATOMIC_RELEASE);
	scan_granted = !core->freeze(core->ctx, UINT64_MAX, &v) && v != NULL;
	core->thaw(core->ctx);
	CHECK(core->ring_produced(core->ctx) == UINT64_MAX); /* the fake service has no ring */
	__atomic_store_n(&scan_phase, 3, __ATOMIC_RELEASE);
	snprintf(err, errlen, "fake scan");
	return -1;
}

TEST(worker_scan_deadline)
{
	struct proto_request r;
	int spins = 0;
	char *body = malloc(7);

	start();
	replies = 0;
	memcpy(body, "leak:x\n", 7);
	proto_request_init(&r, PROTO_SCAN);
	r.scan.suppressions = 7;
	CHECK(!worker_submit(w, 4, 4, &r, body, 7));
	while (__atomic_load_n(&scan_phase, __ATOMIC_ACQUIRE) < 1 && spins++ < 5000)
		usleep(1000);
	/* the loop is busy elsewhere past the deadline */
	while (__atomic_load_n(&scan_phase, __ATOMIC_ACQUIRE) < 2 && spins++ < 5000)
		usleep(1000);
	CHECK(scan_timed_out);
	while (replies < 1 && spins++ < 20000)
		loop_once();
	CHECK_EQ_U64(scan_phase, 3);
	CHECK(scan_granted);
	CHECK(scan_body_ok);
	CHECK_EQ_U64(replies, 1);
	CHECK_EQ_U64(last_status, 1);
	while (worker_frozen(w) && spins++ < 20000)
		loop_once();
	CHECK(!worker_frozen(w));
	stop();
}

int main(void)
{
	RUN(evqueue_order);
	RUN(worker_freeze);
	RUN(worker_small_joins);
	RUN(worker_scan_deadline);
	return UNIT_DONE();
}
