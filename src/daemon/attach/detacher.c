// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The detacher (detacher.h): one thread, started on first use, closing the
 * probe sets it is handed in the order they came. Only it and the loop
 * touch the queue, under one mutex.
 */
#include "daemon/attach/detacher.h"
#include "common/util.h"

#include <pthread.h>
#include <stdlib.h>

struct job {
	struct job *next;
	int pid; /* of a live process (detacher_detach_pid), else 0 */
	struct target_probes tp;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond, done;
	struct job *head, **tail;
	int started, stopping;
	int closing_pid; /* the job being closed now (its pid, 0 none) */
	pthread_t thread;
} dt = {.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER};

static void *detacher_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "memtrace-detach");
	pthread_mutex_lock(&dt.lock);
	for (;;) {
		struct job *j;

		while (!dt.head && !dt.stopping)
			pthread_cond_wait(&dt.cond, &dt.lock);
		if (!dt.head)
			break; /* stopping, and nothing left */
		j = dt.head;
		dt.head = j->next;
		if (!dt.head)
			dt.tail = &dt.head;
		dt.closing_pid = j->pid;
		pthread_mutex_unlock(&dt.lock);
		probes_detach(&j->tp);
		free(j);
		pthread_mutex_lock(&dt.lock);
		dt.closing_pid = 0;
		pthread_cond_broadcast(&dt.done);
	}
	pthread_mutex_unlock(&dt.lock);
	return NULL;
}

static int start(void)
{
	dt.tail = &dt.head;
	if (util_thread_start(&dt.thread, detacher_main, NULL)) {
		log_msg("cannot start the probe detacher: probes are closed on the event loop");
		return -1;
	}
	dt.started = 1;
	return 0;
}

void detacher_detach_pid(struct target_probes *tp, int pid)
{
	struct job *j;

	if (!tp || !tp->nlinks)
		return;
	if (!dt.started && start()) {
		probes_detach(tp);
		return;
	}
	j = xmalloc(sizeof(*j));
	j->next = NULL;
	j->pid = pid;
	j->tp = *tp;
	tp->nlinks = 0;
	pthread_mutex_lock(&dt.lock);
	*dt.tail = j;
	dt.tail = &j->next;
	pthread_cond_signal(&dt.cond);
	pthread_mutex_unlock(&dt.lock);
}

void detacher_detach(struct target_probes *tp)
{
	detacher_detach_pid(tp, 0);
}

static int pending(int pid)
{
	if (dt.closing_pid == pid)
		return 1;
	for (const struct job *j = dt.head; j; j = j->next)
		if (j->pid == pid)
			return 1;
	return 0;
}

void detacher_wait(int pid)
{
	if (!dt.started || pid <= 0)
		return;
	pthread_mutex_lock(&dt.lock);
	while (pending(pid))
		pthread_cond_wait(&dt.done, &dt.lock);
	pthread_mutex_unlock(&dt.lock);
}

void detacher_stop(void)
{
	if (!dt.started)
		return;
	pthread_mutex_lock(&dt.lock);
	dt.stopping = 1;
	pthread_cond_signal(&dt.cond);
	pthread_mutex_unlock(&dt.lock);
	pthread_join(dt.thread, NULL);
	dt.started = dt.stopping = 0;
}
