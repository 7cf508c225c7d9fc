// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of what keeps requests from stalling ingest: the deferred event
 * queue (records come out in order, across chunks, with memory another
 * thread prepared), and the request worker's lanes on ingest's freeze, with
 * this test as the event loop and a real ingest and tracker: while the
 * worker builds a reply the loop keeps "draining" events, which queue
 * instead of changing what the worker reads;
 * every event from before the request is in the reply, none after; they are
 * all applied afterwards, in order, and requests that change the core wait;
 * a scan's freeze asked for with a deadline gives up in time and is still
 * granted afterwards.
 */
#include "daemon/core/tracker.h"
#include "daemon/ingest/evqueue.h"
#include "daemon/ingest/ingest.h"
#include "daemon/serve/collect.h"
#include "daemon/serve/oomsnap.h"
#include "daemon/serve/scan.h"
#include "daemon/serve/service.h"
#include "daemon/serve/worker.h"
#include "daemon/symbols/symbolize.h"
#include "common/util.h"
#include "unit.h"

#include <dirent.h>
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

/*
 * The core: a real tracker fed through a real ingest. Event v allocates
 * (v even) or frees (v odd) the same address, so any reordering shows as a
 * missed or an unknown free; events_received counts what was applied.
 */
#define PID 4190100u
static struct tracker tr;
static struct ingest in;
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

static uint32_t next_event;

static uint32_t applied(void)
{
	return (uint32_t)__atomic_load_n(&tr.events_received, __ATOMIC_ACQUIRE);
}

/* The fake ring buffer: each drain brings the next few events. */
static void fake_drain(void)
{
	for (int i = 0; i < 5; i++) {
		struct mt_event ev = {.kind = next_event & 1 ? MT_EV_FREE : MT_EV_ALLOC,
				      .func = next_event & 1 ? MT_FN_FREE : MT_FN_MALLOC,
				      .tgid = PID,
				      .tid = PID,
				      .time_ns = 1000 + next_event,
				      .addr = 0x10000,
				      .size = next_event & 1 ? 0 : 16};

		next_event++;
		ingest_take(&in, &ev, sizeof(ev));
	}
	ingest_drain(&in); /* no ring buffer: the catch-up and the hooks */
}

/* Every event applied once, in order. */
static void check_applied_in_order(void)
{
	CHECK_EQ_U64(applied(), next_event);
	CHECK_EQ_U64(tr.totals.unknown_frees, 0);
	CHECK_EQ_U64(tr.totals.missed_frees, 0);
	CHECK_EQ_U64(tr.totals.allocations, (next_event + 1) / 2);
}

static void fake_view(void *ctx, struct daemon_view *v)
{
	(void)ctx;
	memset(v, 0, sizeof(*v));
	v->tracker = &tr;
	v->sym = sym;
}

static int fake_watch(void *ctx, int fd, uint32_t events, enum serve_watch what, uint32_t index)
{
	struct epoll_event ev = {.events = events, .data.u64 = index};

	(void)ctx;
	CHECK(what == WATCH_WORKER);
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void fake_unwatch(void *ctx, int fd)
{
	(void)ctx;
	epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

static const struct service svc = {
    .ingest = &in, .view = fake_view, .watch = fake_watch, .unwatch = fake_unwatch};

/* ingest's hook once caught up: the loop's (loop.c) would resume the server */
static void fake_resumed(void *ctx)
{
	(void)ctx;
	resumes++;
	worker_resume(w);
}

/* What the worker calls of the rest of serving, faked here. */
void stack_ends_check(const struct daemon_view *v, struct stack_ends *e, uint64_t budget_ns)
{
	(void)v;
	(void)e;
	(void)budget_ns;
}

/* Two lanes: a whole snapshot and a small answer (a report of the top 7) at once. */
static volatile int in_whole, small_during_whole;
static uint32_t whole_seen_at_start, small_seen_at_start, small_seen_at_end;

int collect_snapshot(const struct daemon_view *v, const struct stack_ends *ends,
		     const struct proto_request *r, const char *cgroup, size_t cgroup_len,
		     struct snapshot *s, char *err, size_t errlen)
{
	uint32_t start = applied();

	(void)v;
	(void)ends;
	(void)cgroup;
	(void)cgroup_len;
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
	small_seen_at_end = seen_at_end = applied();
	return 0;
}

static void deliver(void *ctx, int slot, uint8_t *frame, size_t len, uint64_t serial)
{
	(void)ctx;
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
	fake_drain();
}

static void start(void)
{
	static struct stack_ends ends;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	sym = symbolizer_new();
	CHECK(tracker_init(&tr, 0, 0) == 0);
	CHECK(tracker_add_target(&tr, PID, 1) != NULL);
	memset(&in, 0, sizeof(in));
	in.tracker = &tr;
	in.hooks.resumed = fake_resumed;
	ingest_init(&in);
	next_event = 0;
	resumes = 0;
	w = worker_start(&svc, &ends, deliver, NULL);
	CHECK(w != NULL);
}

static void stop(void)
{
	worker_stop(w);
	w = NULL;
	ingest_close(&in);
	tracker_destroy(&tr);
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
		fake_drain(); /* 100 events before the request */
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
	CHECK(ingest_frozen(&in));
	for (int i = 0; i < 10; i++)
		loop_once();
	while (!replies && spins++ < 20000)
		loop_once();
	CHECK_EQ_U64(replies, 1);
	CHECK_EQ_U64(last_status, 0);
	CHECK_EQ_U64(seen_at_end, seen_at_start);
	/* caught up: every event applied once, in order */
	while (ingest_frozen(&in) && spins++ < 20000)
		loop_once();
	CHECK(!ingest_frozen(&in));
	check_applied_in_order();
	CHECK(resumes >= 1);
	CHECK_EQ_U64(in.stats.freezes, 1);
	CHECK(in.stats.deferred_events >= 10 * 5);
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
	CHECK_EQ_U64(in.stats.freezes, 1);
	while (ingest_frozen(&in) && spins++ < 40000)
		loop_once();
	CHECK(!ingest_frozen(&in));
	check_applied_in_order();
	stop();
}

/* A scan's freezes with a deadline (scan.h), faked: what the lane lends it. */
static volatile int scan_phase; /* 1 waiting with a deadline, 2 timed out, 3 done */
static int scan_timed_out, scan_granted, scan_body_ok;

int scan_serve(const struct scan_core *core, const struct proto_request *r, const char *body,
	       size_t len, struct snapshot *out, char *err, size_t errlen)
{
	const struct daemon_view *v = NULL;

	memset(out, 0, sizeof(*out));
	scan_body_ok = r->kind == PROTO_SCAN && len == 7 && !memcmp(body, "leak:x\n", 7);
	__atomic_store_n(&scan_phase, 1, __ATOMIC_RELEASE);
	/* the loop does not answer in time: the freeze stays asked for */
	scan_timed_out = core->freeze(core->ctx, time_monotonic_ns() + 20 * 1000 * 1000, &v) == 1;
	__atomic_store_n(&scan_phase, 2, __ATOMIC_RELEASE);
	scan_granted = !core->freeze(core->ctx, UINT64_MAX, &v) && v != NULL;
	core->thaw(core->ctx);
	CHECK(core->ring_produced(core->ctx) == UINT64_MAX); /* no ring buffer mapped */
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
	while (ingest_frozen(&in) && spins++ < 20000)
		loop_once();
	CHECK(!ingest_frozen(&in));
	check_applied_in_order();
	stop();
}

/* The oom-*.mts file in dir, read whole into *bytes: its length, or 0. */
static size_t oom_file(const char *dir, uint8_t **bytes)
{
	char path[4200] = "";
	struct dirent *e;
	size_t len = 0;
	DIR *dp = opendir(dir);
	FILE *f;

	while (dp && (e = readdir(dp)))
		if (!strncmp(e->d_name, "oom-", 4))
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
	if (dp)
		closedir(dp);
	*bytes = NULL;
	if (!path[0] || !(f = fopen(path, "rb")))
		return 0;
	*bytes = xmalloc(1 << 20);
	len = fread(*bytes, 1, 1 << 20, f);
	fclose(f);
	unlink(path);
	return len;
}

/* An OOM kill's snapshot goes to a file, not to a client, built on a frozen core as any
 * snapshot; one still queued when the worker stops is written then. */
TEST(worker_oom_file)
{
	char tmpl[] = "/tmp/memtrace-worker-oom-XXXXXX", err[256];
	const char *dir = mkdtemp(tmpl);
	struct oomsnap_job j = {.pid = PID, .unix_ns = 1765000000000000000ull, .keep = 4};
	struct proto_request r;
	struct snapshot s;
	uint8_t *bytes;
	size_t len = 0;
	int spins = 0;

	CHECK(dir != NULL);
	if (!dir)
		return;
	j.dir = dir;
	start();
	for (int i = 0; i < 4; i++)
		fake_drain();
	proto_request_init(&r, PROTO_SNAPSHOT);
	r.snapshot.pid = PID;
	replies = 0;
	CHECK(!worker_submit_oom(w, &r, &j));
	while (!(len = oom_file(dir, &bytes)) && spins++ < 20000)
		loop_once();
	CHECK(len > 0);
	CHECK(snapshot_decode(bytes, len, &s, err, sizeof(err)) == 0);
	CHECK(s.events_received >= 20); /* what was drained before it */
	snapshot_free(&s);
	free(bytes);
	CHECK_EQ_U64(replies, 0); /* no client */
	while (ingest_frozen(&in) && spins++ < 20000)
		loop_once();
	check_applied_in_order();
	/* the worker stops before the lane could build it: written as it stops */
	CHECK(!worker_submit_oom(w, &r, &j));
	stop();
	len = oom_file(dir, &bytes);
	CHECK(len > 0);
	CHECK(snapshot_decode(bytes, len, &s, err, sizeof(err)) == 0);
	snapshot_free(&s);
	free(bytes);
	rmdir(dir);
}

UNIT_MAIN()
