// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The resident memory sampler (sampler.h): one thread, one round at a time.
 * The loop and the thread share only the round's state, under one mutex;
 * while the thread reads, it alone touches the readings, and the loop
 * touches them only once the round is done.
 */
#include "daemon/proc/sampler.h"
#include "daemon/proc/rss.h"
#include "daemon/proc/cgroup.h"
#include "common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* As the request lanes: the loop (nice 0) gets the CPU first. */
#define SAMPLER_NICE 10

enum round_state {
	ROUND_NONE,    /* nothing asked, or the last round taken */
	ROUND_ASKED,   /* the thread reads it */
	ROUND_DONE,    /* read: the loop may take it */
	ROUND_STOPPING /* the sampler is being freed */
};

struct rss_sampler {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	int started, failed; /* failed: no thread could be started; read in place */
	enum round_state state;
	uint64_t round;
	struct rss_reading *readings;
	size_t n, cap;
};

static void read_round(struct rss_reading *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		v[i].why[0] = '\0';
		v[i].err = rss_read(v[i].pid, &v[i].r, v[i].why, sizeof(v[i].why));
		/* cg_why: the error when cg_err (cgroup_read writes one or the other) */
		v[i].cg_err = cgroup_read(v[i].pid, &v[i].labels, &v[i].cg, v[i].cg_why,
					  sizeof(v[i].cg_why), v[i].cg_why, sizeof(v[i].cg_why));
	}
}

static void *sampler_main(void *arg)
{
	struct rss_sampler *s = arg;

	pthread_setname_np(pthread_self(), "memtrace-rss");
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), SAMPLER_NICE))
		log_msg("memtrace-rss: cannot lower its priority: %s", strerror(errno));
	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (s->state != ROUND_ASKED && s->state != ROUND_STOPPING)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->state == ROUND_STOPPING)
			break;
		pthread_mutex_unlock(&s->lock);
		read_round(s->readings, s->n); /* the loop waits for ROUND_DONE */
		pthread_mutex_lock(&s->lock);
		if (s->state == ROUND_STOPPING)
			break;
		s->state = ROUND_DONE;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct rss_sampler *rss_sampler_new(void)
{
	struct rss_sampler *s = xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	return s;
}

int rss_sampler_ask(struct rss_sampler *s, uint64_t round, const struct rss_request *req, size_t n)
{
	pthread_mutex_lock(&s->lock);
	if (s->state == ROUND_ASKED || s->state == ROUND_STOPPING) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&s->lock);
	/* the thread is idle: the readings are the loop's until the round is asked */
	if (n > s->cap) {
		s->cap = n + 8;
		s->readings = xrealloc(s->readings, s->cap * sizeof(*s->readings));
	}
	for (size_t i = 0; i < n; i++) {
		memset(&s->readings[i], 0, sizeof(s->readings[i]));
		s->readings[i].index = req[i].index;
		s->readings[i].pid = req[i].pid;
	}
	s->n = n;
	s->round = round;
	if (!s->started && !s->failed) {
		if (util_thread_start(&s->thread, sampler_main, s)) {
			log_msg("cannot start the resident memory sampler: smaps_rollup is read on "
				"the event loop");
			s->failed = 1;
		} else {
			s->started = 1;
		}
	}
	pthread_mutex_lock(&s->lock);
	if (s->failed) {
		read_round(s->readings, s->n);
		s->state = ROUND_DONE;
	} else {
		s->state = ROUND_ASKED;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int rss_sampler_take(struct rss_sampler *s, uint64_t *round, const struct rss_reading **out,
		     size_t *n)
{
	int done;

	pthread_mutex_lock(&s->lock);
	done = s->state == ROUND_DONE;
	if (done)
		s->state = ROUND_NONE;
	pthread_mutex_unlock(&s->lock);
	if (!done)
		return 0;
	*round = s->round;
	*out = s->readings;
	*n = s->n;
	return 1;
}

void rss_sampler_free(struct rss_sampler *s)
{
	if (!s)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->state = ROUND_STOPPING;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->readings);
	free(s);
}
