// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The request worker (see worker.h). Two threads (lanes), each serving its
 * requests one at a time in the order they came. The handshake with the
 * loop goes through one mutex, one condition variable (loop -> lanes) and
 * one eventfd (lanes -> loop, WATCH_WORKER in the loop's epoll set): a lane
 * asks to freeze and waits until the loop grants it; it asks to thaw and
 * goes on without waiting. The freeze itself is ingest's (ingest.h), on the
 * loop thread, so queued events are always applied before any newer one.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "daemon/serve/collect.h"
#include "daemon/serve/oomsnap.h"
#include "daemon/serve/scan.h"
#include "daemon/serve/service.h"
#include "daemon/serve/worker.h"
#include "daemon/ingest/ingest.h"
#include "daemon/symbols/symbolize.h"
#include "common/util.h"

/* The worker's nice value: the loop's is the process's (0). */
#define WORKER_NICE 10

struct job {
	int slot;	 /* the client's slot in the loop's table */
	uint64_t serial; /* and its serial, in case the slot was reused meanwhile */
	struct proto_request req;
	char *body; /* what came after the request line (a scan's suppressions), or NULL */
	size_t body_len;
	struct oomsnap_job *oom; /* an OOM kill's snapshot, for a file (no client), or NULL */
};

/* A reply frame for the loop to send. */
struct done {
	int slot;
	uint64_t serial;
	uint8_t *frame; /* header and payload */
	size_t len;
};

/*
 * A lane: a thread and its queue. Lane 0 takes the requests whose answer
 * is a whole snapshot (every stack, or the block list); lane 1 the others,
 * which are small however large the heap: grouped views, leaks, the top N
 * stacks, stats. Lane 1 may join a freeze lane 0 holds.
 */
enum { LANE_WHOLE, LANE_SMALL, NLANES };

struct lane {
	pthread_t thread;
	int started;
	/* under the worker's lock */
	struct job queue[WORKER_MAX_QUEUED];
	unsigned head, count;
	int freeze_wanted, thaw_wanted, granted;
	struct daemon_view view; /* the core as it froze, for this lane */
	/* the lane's thread only */
	int asked; /* it asked for a freeze, not granted yet (a timed wait gave up) */
	/* loop thread only */
	int holds;	   /* it reads the frozen core */
	int grant_pending; /* it asked for a freeze not granted yet */
};

struct worker {
	/* what it serves, and for whom */
	const struct service *svc;
	struct ingest *in;	 /* the svc's: frozen while a lane reads the core */
	struct stack_ends *ends; /* the server's: filled on the loop thread only */
	worker_deliver_fn *deliver;
	void *deliver_ctx;
	int efd; /* worker -> loop */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* loop -> worker: a job, a freeze granted, stop */
	/* the symbolizer's caches fill as two lanes read them */
	pthread_mutex_t sym_lock;
	struct lane lanes[NLANES];
	/* under lock */
	struct done *done; /* answers the loop has not taken yet */
	size_t ndone, done_cap;
	int stopping;
	struct worker_stats stats;
	/* loop thread only */
	struct daemon_view view; /* read when the freeze began */
	/*
	 * The scan thread: made by the loop, so at its priority, not the lanes'
	 * nice 10 (a target stands still while a scan runs: on a busy machine
	 * a niced scan would hold it for seconds). It runs the scans the whole
	 * lane hands it, one at a time, while that lane waits: no whole
	 * snapshot freezes the core meanwhile.
	 */
	pthread_t scan_thread;
	int scan_started;
	pthread_cond_t scan_cond; /* under lock: a job handed over, or one done */
	struct job *scan_job;
	struct lane *scan_lane;
	int scan_done;
};

struct lane_arg {
	struct worker *w;
	struct lane *lane;
};

/* Stacks a request for the top N may ask for and still count as small. */
#define SMALL_TOP 1000

/* A request whose answer is small however large the heap. */
static int small_answer(const struct proto_request *r)
{
	switch (r->kind) {
	case PROTO_ROWS:
	case PROTO_LEAKS:
	case PROTO_MEMORY:
		return 1;
	case PROTO_REPORT:
		return r->report.top && r->report.top <= SMALL_TOP;
	default: /* a whole snapshot; a scan holds its lane for its whole pause */
		return 0;
	}
}

/* ---- the worker threads --------------------------------------------------- */

static void wake_loop(struct worker *w)
{
	uint64_t one = 1;

	if (write(w->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_msg("worker: cannot wake the loop: %s", strerror(errno));
}

/*
 * Wait until the loop froze the core for lane l: 0; 1 when deadline_ns
 * (CLOCK_MONOTONIC) came first, the freeze still asked for (call again to
 * take it); -1 when stopping.
 */
static int freeze_until(struct worker *w, struct lane *l, uint64_t deadline_ns)
{
	struct timespec until = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
				 .tv_nsec = (long)(deadline_ns % 1000000000ull)};
	int stopping;

	if (!l->asked) {
		/* the queue the loop drains into meanwhile gets memory already touched */
		ingest_freeze_prepare(w->in);
		pthread_mutex_lock(&w->lock);
		l->freeze_wanted = 1;
		pthread_mutex_unlock(&w->lock);
		wake_loop(w);
		l->asked = 1;
	}
	pthread_mutex_lock(&w->lock);
	while (!l->granted && !w->stopping) {
		if (deadline_ns == UINT64_MAX) {
			pthread_cond_wait(&w->cond, &w->lock);
		} else if (pthread_cond_timedwait(&w->cond, &w->lock, &until) == ETIMEDOUT &&
			   !l->granted && !w->stopping) {
			pthread_mutex_unlock(&w->lock);
			return 1;
		}
	}
	l->granted = 0;
	l->asked = 0;
	stopping = w->stopping;
	pthread_mutex_unlock(&w->lock);
	return stopping ? -1 : 0;
}

static int freeze(struct worker *w, struct lane *l)
{
	return freeze_until(w, l, UINT64_MAX);
}

static void thaw(struct worker *w, struct lane *l)
{
	pthread_mutex_lock(&w->lock);
	l->thaw_wanted = 1;
	pthread_mutex_unlock(&w->lock);
	wake_loop(w);
}

/* Hand a reply frame (header and payload) to the loop, which sends it at the
 * client's pace, as it is. */
static void post(struct worker *w, const struct job *job, uint8_t *frame, size_t len)
{
	pthread_mutex_lock(&w->lock);
	if (w->ndone == w->done_cap) {
		w->done_cap = w->done_cap ? 2 * w->done_cap : 16;
		w->done = xrealloc(w->done, w->done_cap * sizeof(*w->done));
	}
	w->done[w->ndone++] = (struct done){job->slot, job->serial, frame, len};
	if (frame[4])
		w->stats.failed++;
	else
		w->stats.served++;
	pthread_mutex_unlock(&w->lock);
	wake_loop(w);
}

/* Encode snap (when built; else the reply is err) and hand the frame to the loop. */
static void reply(struct worker *w, const struct job *job, struct snapshot *snap, int built,
		  char *err, size_t errlen)
{
	uint8_t *frame = NULL;
	size_t len = 0;

	/* encoded behind room for the reply's header: the frame is made here,
	 * where new memory's cost (high on some virtual machines) is no stall */
	if (built) {
		if (snapshot_encode_after(snap, PROTO_REPLY_HEADER, &frame, &len))
			snprintf(err, errlen, "cannot encode the snapshot");
		snapshot_free(snap);
	}
	if (frame) {
		proto_reply_header(frame, 0, (uint32_t)len);
	} else {
		len = strlen(err);
		frame = xmalloc(PROTO_REPLY_HEADER + len);
		proto_reply_header(frame, 1, (uint32_t)len);
		memcpy(frame + PROTO_REPLY_HEADER, err, len);
	}
	post(w, job, frame, PROTO_REPLY_HEADER + len);
}

/* An OOM kill's snapshot (built already when built): encoded, written to its file, logged. */
static void write_oom(struct snapshot *snap, int built, const struct oomsnap_job *j, char *err,
		      size_t errlen)
{
	char path[4200], why[4400];
	uint8_t *bytes = NULL;
	size_t len = 0;

	if (built && snapshot_encode(snap, &bytes, &len))
		snprintf(err, errlen, "cannot encode the snapshot");
	if (built)
		snapshot_free(snap);
	if (!bytes) {
		log_msg("pid %u: no OOM snapshot: %s", j->pid, err);
		return;
	}
	if (oomsnap_write(j, bytes, len, path, sizeof(path), why, sizeof(why)))
		log_msg("pid %u: no OOM snapshot: %s; tracing goes on", j->pid, why);
	else
		log_msg("pid %u: OOM snapshot written to %s (%zu bytes)", j->pid, path, len);
	free(bytes);
}

/* The worker stops before job, an OOM kill's snapshot, could freeze the core: back to the front
 * of its queue, for worker_free to write once the lanes are gone (the job is then the queue's). */
static void requeue_oom(struct worker *w, struct lane *l, struct job *job)
{
	pthread_mutex_lock(&w->lock);
	if (l->count < WORKER_MAX_QUEUED) {
		l->head = (l->head + WORKER_MAX_QUEUED - 1) % WORKER_MAX_QUEUED;
		l->queue[l->head] = *job;
		l->count++;
		job->oom = NULL;
	}
	pthread_mutex_unlock(&w->lock);
	if (job->oom)
		log_msg("pid %u: no OOM snapshot: the daemon stopped first", job->oom->pid);
}

static void serve(struct worker *w, struct lane *l, struct job *job)
{
	struct snapshot snap;
	char err[256];
	int built;

	if (freeze(w, l)) {
		if (job->oom)
			requeue_oom(w, l, job);
		return;
	}
	/* the symbols' strings stay while the snapshot copies those it names */
	symbolizer_hold(l->view.sym);
	built = !collect_snapshot(&l->view, w->ends, &job->req, job->body, job->body_len, &snap,
				  err, sizeof(err));
	symbolizer_release(l->view.sym);
	thaw(w, l);
	if (job->oom)
		write_oom(&snap, built, job->oom, err, sizeof(err));
	else
		reply(w, job, &snap, built, err, sizeof(err));
}

/* ---- scans: the freezes a scan asks for, from its lane (scan.h) ----------- */

struct scan_lane {
	struct worker *w;
	struct lane *l;
};

static int scan_freeze(void *ctx, uint64_t deadline_ns, const struct daemon_view **v)
{
	struct scan_lane *sl = ctx;
	int rc = freeze_until(sl->w, sl->l, deadline_ns);

	if (!rc)
		*v = &sl->l->view;
	return rc;
}

static void scan_thaw(void *ctx)
{
	struct scan_lane *sl = ctx;

	thaw(sl->w, sl->l);
}

static uint64_t scan_ring_produced(void *ctx)
{
	struct scan_lane *sl = ctx;

	(void)sl;
	return ingest_ring_produced();
}

static void run_scan(struct worker *w, struct lane *l, struct job *job)
{
	struct scan_lane sl = {w, l};
	struct scan_core core = {.ctx = &sl,
				 .freeze = scan_freeze,
				 .thaw = scan_thaw,
				 .ring_produced = scan_ring_produced,
				 .ends = w->ends};
	struct snapshot snap;
	char err[512];
	int built;

	built = !scan_serve(&core, &job->req, job->body, job->body_len, &snap, err, sizeof(err));
	reply(w, job, &snap, built, err, sizeof(err));
}

static void *scan_main(void *arg)
{
	struct worker *w = arg;

	pthread_setname_np(pthread_self(), "memtrace-scan");
	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct job *job;

		while (!w->scan_job && !w->stopping)
			pthread_cond_wait(&w->scan_cond, &w->lock);
		if (w->stopping && !w->scan_job)
			break;
		job = w->scan_job;
		pthread_mutex_unlock(&w->lock);
		run_scan(w, w->scan_lane, job);
		pthread_mutex_lock(&w->lock);
		w->scan_job = NULL;
		w->scan_done = 1;
		pthread_cond_broadcast(&w->scan_cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* A scan, from lane l: the scan thread runs it while the lane waits. */
static void serve_scan(struct worker *w, struct lane *l, struct job *job)
{
	if (!w->scan_started) {
		run_scan(w, l, job); /* no thread of its own: at the lane's priority */
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->scan_job = job;
	w->scan_lane = l;
	w->scan_done = 0;
	pthread_cond_broadcast(&w->scan_cond);
	while (!w->scan_done)
		pthread_cond_wait(&w->scan_cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static void *worker_main(void *arg)
{
	struct lane_arg a = *(struct lane_arg *)arg;
	struct worker *w = a.w;
	struct lane *l = a.lane;
	struct job job;

	free(arg);
	/* ingest first: on a busy machine the loop must get the CPU when it wakes */
	pthread_setname_np(pthread_self(), "memtrace-lane");
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), WORKER_NICE))
		log_msg("worker: cannot lower its priority: %s", strerror(errno));

	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (!l->count && !w->stopping)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->stopping) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		job = l->queue[l->head];
		l->head = (l->head + 1) % WORKER_MAX_QUEUED;
		l->count--;
		pthread_mutex_unlock(&w->lock);
		if (job.req.kind == PROTO_SCAN)
			serve_scan(w, l, &job);
		else
			serve(w, l, &job);
		free(job.body);
		free(job.oom);
	}
	return NULL;
}

/* ---- the loop thread ------------------------------------------------------ */

/* OOM snapshots still queued when the worker stops are written now, on the
 * loop's thread, which no longer drains: nothing else reads the core. */
static void write_queued_oom(struct worker *w)
{
	struct lane *l = &w->lanes[LANE_WHOLE];

	for (unsigned k = 0; k < l->count; k++) {
		struct job *job = &l->queue[(l->head + k) % WORKER_MAX_QUEUED];
		struct daemon_view view;
		struct snapshot snap;
		char err[256];
		int built;

		if (!job->oom)
			continue;
		w->svc->view(w->svc->ctx, &view);
		view.sym_lock = &w->sym_lock;
		built =
		    !collect_snapshot(&view, w->ends, &job->req, NULL, 0, &snap, err, sizeof(err));
		write_oom(&snap, built, job->oom, err, sizeof(err));
	}
}

static void worker_free(struct worker *w)
{
	write_queued_oom(w);
	for (int i = 0; i < NLANES; i++)
		for (unsigned k = 0; k < w->lanes[i].count; k++) {
			free(w->lanes[i].queue[(w->lanes[i].head + k) % WORKER_MAX_QUEUED].body);
			free(w->lanes[i].queue[(w->lanes[i].head + k) % WORKER_MAX_QUEUED].oom);
		}
	for (size_t i = 0; i < w->ndone; i++)
		free(w->done[i].frame);
	free(w->done);
	w->svc->unwatch(w->svc->ctx, w->efd);
	close(w->efd);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->sym_lock);
	pthread_cond_destroy(&w->cond);
	pthread_cond_destroy(&w->scan_cond);
	free(w);
}

struct worker *worker_start(const struct service *svc, struct stack_ends *ends,
			    worker_deliver_fn *deliver, void *ctx)
{
	struct worker *w = xcalloc(1, sizeof(*w));
	int ok = 1;

	/* a request's big buffers (a full snapshot's, tens of MB) go back to
	 * the system when freed: glibc would otherwise raise its mmap threshold
	 * after the first and keep the next ones in its heap for good */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	w->svc = svc;
	w->in = svc->ingest;
	w->ends = ends;
	w->deliver = deliver;
	w->deliver_ctx = ctx;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0 || svc->watch(svc->ctx, w->efd, EPOLLIN, WATCH_WORKER, 0)) {
		log_msg("cannot start the request worker: %s", strerror(errno));
		if (w->efd >= 0)
			close(w->efd);
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->sym_lock, NULL);
	{
		pthread_condattr_t ca; /* timed waits count in CLOCK_MONOTONIC, as the daemon */

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_cond_init(&w->scan_cond, NULL);
	/* before the lanes: made here, on the loop's thread, it keeps the loop's nice */
	if (util_thread_start(&w->scan_thread, scan_main, w))
		log_msg("worker: no scan thread: scans run at the lanes' priority");
	else
		w->scan_started = 1;
	ingest_freeze_start(w->in);
	/* ordinary threads whatever the loop's policy (--realtime) */
	for (int i = 0; i < NLANES && ok; i++) {
		struct lane_arg *a = xmalloc(sizeof(*a));

		*a = (struct lane_arg){w, &w->lanes[i]};
		if (util_thread_start(&w->lanes[i].thread, worker_main, a)) {
			free(a);
			ok = 0;
		} else {
			w->lanes[i].started = 1;
		}
	}
	if (!ok) {
		log_msg("cannot start the request worker threads");
		worker_stop(w);
		return NULL;
	}
	return w;
}

int worker_submit(struct worker *w, int slot, uint64_t serial, const struct proto_request *r,
		  char *body, size_t body_len)
{
	struct lane *l;
	int rc = -1;

	if (!w) {
		free(body);
		return -1;
	}
	l = &w->lanes[small_answer(r) ? LANE_SMALL : LANE_WHOLE];
	pthread_mutex_lock(&w->lock);
	if (l->count < WORKER_MAX_QUEUED) {
		l->queue[(l->head + l->count) % WORKER_MAX_QUEUED] =
		    (struct job){slot, serial, *r, body, body_len, NULL};
		body = NULL;
		l->count++;
		pthread_cond_broadcast(&w->cond);
		rc = 0;
	}
	pthread_mutex_unlock(&w->lock);
	free(body);
	return rc;
}

/* Let lane l read the core, frozen as it is (w->view taken when it froze). */
static void grant_lane(struct worker *w, struct lane *l)
{
	l->holds = 1;
	l->grant_pending = 0;
	pthread_mutex_lock(&w->lock);
	l->view = w->view;
	l->view.sym_lock = &w->sym_lock;
	l->view.off_loop = 1;
	l->granted = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Freeze the core for the lanes that wait, once ingest can: it is then up
 * to date with the ring buffer. */
static void grant(struct worker *w)
{
	unsigned n = 0;

	for (int i = 0; i < NLANES; i++)
		n += (unsigned)w->lanes[i].grant_pending;
	if (!n || ingest_frozen(w->in) || ingest_freeze(w->in, n))
		return; /* frozen for another lane, or catching up: worker_resume */
	w->svc->view(w->svc->ctx, &w->view);
	/* where stacks end is learned here, where the symbolizer is the loop's */
	stack_ends_check(&w->view, w->ends, UINT64_MAX);
	for (int i = 0; i < NLANES; i++)
		if (w->lanes[i].grant_pending)
			grant_lane(w, &w->lanes[i]);
}

int worker_submit_oom(struct worker *w, const struct proto_request *r, const struct oomsnap_job *j)
{
	struct lane *l;
	int rc = -1;

	if (!w)
		return -1;
	l = &w->lanes[LANE_WHOLE];
	pthread_mutex_lock(&w->lock);
	if (l->count < WORKER_MAX_QUEUED) {
		struct oomsnap_job *copy = xmalloc(sizeof(*copy));

		*copy = *j;
		l->queue[(l->head + l->count) % WORKER_MAX_QUEUED] =
		    (struct job){-1, 0, *r, NULL, 0, copy};
		l->count++;
		pthread_cond_broadcast(&w->cond);
		rc = 0;
	}
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void worker_resume(struct worker *w)
{
	if (w)
		grant(w);
}

/* Give the loop the answers the worker posted. */
static void deliver(struct worker *w)
{
	struct done *v;
	size_t n;

	pthread_mutex_lock(&w->lock);
	v = w->done;
	n = w->ndone;
	w->done = NULL;
	w->ndone = w->done_cap = 0;
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++)
		w->deliver(w->deliver_ctx, v[i].slot, v[i].frame, v[i].len, v[i].serial);
	free(v);
}

void worker_event(struct worker *w)
{
	int thaw_now[NLANES];
	struct lane *small;
	uint64_t n;

	if (!w)
		return;
	while (read(w->efd, &n, sizeof(n)) > 0)
		;
	deliver(w);
	pthread_mutex_lock(&w->lock);
	for (int i = 0; i < NLANES; i++) {
		struct lane *l = &w->lanes[i];

		thaw_now[i] = l->thaw_wanted && l->holds;
		l->thaw_wanted = 0;
		if (l->freeze_wanted)
			l->grant_pending = 1;
		l->freeze_wanted = 0;
	}
	pthread_mutex_unlock(&w->lock);
	for (int i = 0; i < NLANES; i++) {
		if (thaw_now[i]) {
			w->lanes[i].holds = 0;
			ingest_thaw(w->in); /* the last one: worker_resume once caught up */
		}
	}
	/* a small answer need not wait for a whole snapshot's freeze: it reads
	 * the core as that froze (a whole snapshot never joins a freeze, so
	 * none lasts longer than one of each) */
	small = &w->lanes[LANE_SMALL];
	if (w->in->readers && small->grant_pending && !small->holds && !ingest_freeze(w->in, 1)) {
		grant_lane(w, small);
		pthread_mutex_lock(&w->lock);
		w->stats.joined++;
		pthread_mutex_unlock(&w->lock);
	}
	/* catching up: apply a slice of what came meanwhile now; a freeze waits
	 * for the rest (worker_resume) */
	if (!w->in->readers && ingest_frozen(w->in))
		ingest_drain_slice(w->in);
	grant(w);
}

void worker_get_stats(const struct worker *w, struct worker_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!w)
		return;
	pthread_mutex_lock((pthread_mutex_t *)&w->lock);
	*out = w->stats;
	pthread_mutex_unlock((pthread_mutex_t *)&w->lock);
}

pthread_mutex_t *worker_sym_lock(struct worker *w)
{
	return w ? &w->sym_lock : NULL;
}

void worker_stop(struct worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_broadcast(&w->scan_cond);
	/* a lane reading the frozen core finishes that, thaws and stops */
	for (int i = 0; i < NLANES; i++)
		if (w->lanes[i].started)
			pthread_join(w->lanes[i].thread, NULL);
	if (w->scan_started)
		pthread_join(w->scan_thread, NULL);
	worker_free(w);
}
