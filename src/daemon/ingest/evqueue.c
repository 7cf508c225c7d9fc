// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The deferred event FIFO (see evqueue.h). A chunk holds records laid out
 * as an 8-byte header (the length, 4 bytes, then 4 unused) then the bytes,
 * padded to 8: the bytes are 8-byte aligned, as in the ring buffer, for
 * the event structs read from them. A length of 0 marks the end of the used
 * part of a chunk that is not the tail.
 */
#include "daemon/ingest/evqueue.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Chunks kept in the pool at most once emptied, without a keeper; more go
 * back to the system. */
#define POOL_KEEP 8

struct evchunk {
	struct evchunk *next;
	size_t used;
	uint8_t data[EVQUEUE_CHUNK_BYTES - 2 * sizeof(size_t)] __attribute__((aligned(8)));
};

static struct evchunk *chunk_new(void)
{
	struct evchunk *c =
	    mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return NULL;
	/* touch every page now, on the thread that can afford it */
	memset(c, 0, sizeof(*c));
	return c;
}

static void chunk_free(struct evchunk *c)
{
	munmap(c, sizeof(*c));
}

void evqueue_init(struct evqueue *q)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->pool_lock, NULL);
	pthread_cond_init(&q->keeper_cond, NULL);
}

static void *keeper_main(void *arg)
{
	struct evqueue *q = arg;

	pthread_setname_np(pthread_self(), "memtrace-pool");
	pthread_mutex_lock(&q->pool_lock);
	for (;;) {
		struct evchunk *c;

		while (!q->keeper_stop && !q->trim_wanted && q->npool >= q->low)
			pthread_cond_wait(&q->keeper_cond, &q->pool_lock);
		if (q->keeper_stop)
			break;
		if (q->trim_wanted && q->npool > q->low) {
			/* one at a time, the lock released while unmapping */
			c = q->pool;
			q->pool = c->next;
			q->npool--;
			pthread_mutex_unlock(&q->pool_lock);
			chunk_free(c);
			pthread_mutex_lock(&q->pool_lock);
			continue;
		}
		q->trim_wanted = 0;
		/* refill to twice the mark: the pusher takes about one per batch */
		while (!q->keeper_stop && q->npool < 2 * q->low) {
			pthread_mutex_unlock(&q->pool_lock);
			c = chunk_new();
			pthread_mutex_lock(&q->pool_lock);
			if (!c)
				break;
			c->next = q->pool;
			q->pool = c;
			q->npool++;
		}
	}
	pthread_mutex_unlock(&q->pool_lock);
	return NULL;
}

int evqueue_keeper_start(struct evqueue *q, unsigned low)
{
	q->low = low;
	if (util_thread_start(&q->keeper, keeper_main, q))
		return -1;
	q->keeper_on = 1;
	return 0;
}

void evqueue_trim(struct evqueue *q)
{
	pthread_mutex_lock(&q->pool_lock);
	if (q->keeper_on && q->npool > q->low) {
		q->trim_wanted = 1;
		pthread_cond_signal(&q->keeper_cond);
	}
	pthread_mutex_unlock(&q->pool_lock);
}

void evqueue_free(struct evqueue *q)
{
	struct evchunk *c, *next;

	if (q->keeper_on) {
		pthread_mutex_lock(&q->pool_lock);
		q->keeper_stop = 1;
		pthread_cond_signal(&q->keeper_cond);
		pthread_mutex_unlock(&q->pool_lock);
		pthread_join(q->keeper, NULL);
	}

	for (c = q->head; c; c = next) {
		next = c->next;
		chunk_free(c);
	}
	for (c = q->pool; c; c = next) {
		next = c->next;
		chunk_free(c);
	}
	pthread_mutex_destroy(&q->pool_lock);
	pthread_cond_destroy(&q->keeper_cond);
	memset(q, 0, sizeof(*q));
}

void evqueue_prepare(struct evqueue *q, unsigned n)
{
	for (;;) {
		struct evchunk *c;

		pthread_mutex_lock(&q->pool_lock);
		if (q->npool >= n) {
			pthread_mutex_unlock(&q->pool_lock);
			return;
		}
		pthread_mutex_unlock(&q->pool_lock);
		c = chunk_new();
		if (!c)
			return;
		pthread_mutex_lock(&q->pool_lock);
		c->next = q->pool;
		q->pool = c;
		q->npool++;
		pthread_mutex_unlock(&q->pool_lock);
	}
}

static struct evchunk *chunk_get(struct evqueue *q)
{
	struct evchunk *c;

	pthread_mutex_lock(&q->pool_lock);
	c = q->pool;
	if (c) {
		q->pool = c->next;
		q->npool--;
	}
	if (q->keeper_on && q->npool < q->low)
		pthread_cond_signal(&q->keeper_cond); /* touched ahead, not by us */
	pthread_mutex_unlock(&q->pool_lock);
	if (!c) {
		c = chunk_new();
		if (!c)
			abort(); /* out of memory while holding events that must be applied */
		q->chunks_faulted++;
	}
	c->next = NULL;
	c->used = 0;
	return c;
}

static void chunk_put(struct evqueue *q, struct evchunk *c)
{
	pthread_mutex_lock(&q->pool_lock);
	/* with a keeper, every emptied chunk stays until evqueue_trim: the
	 * pusher neither unmaps nor touches new memory */
	if (q->keeper_on || q->npool < POOL_KEEP) {
		c->next = q->pool;
		q->pool = c;
		q->npool++;
		c = NULL;
	}
	pthread_mutex_unlock(&q->pool_lock);
	if (c)
		chunk_free(c);
}

#define RECORD_HEADER 8

static size_t record_size(size_t len)
{
	return (RECORD_HEADER + len + 7) & ~(size_t)7;
}

void evqueue_push(struct evqueue *q, const void *data, size_t len)
{
	size_t need = record_size(len);
	uint32_t n = (uint32_t)len;

	if (!q->tail || q->tail->used + need + sizeof(uint32_t) > sizeof(q->tail->data)) {
		struct evchunk *c = chunk_get(q);

		if (q->tail) {
			memset(q->tail->data + q->tail->used, 0, sizeof(uint32_t)); /* end mark */
			q->tail->next = c;
		} else {
			q->head = c;
			q->head_pos = 0;
		}
		q->tail = c;
	}
	memcpy(q->tail->data + q->tail->used, &n, sizeof(n));
	memcpy(q->tail->data + q->tail->used + RECORD_HEADER, data, len);
	q->tail->used += need;
	q->count++;
	q->bytes += need;
}

const void *evqueue_peek(struct evqueue *q, size_t *len)
{
	uint32_t n;

	for (;;) {
		if (!q->head)
			return NULL;
		if (q->head_pos < q->head->used) {
			memcpy(&n, q->head->data + q->head_pos, sizeof(n));
			if (n) {
				*len = n;
				return q->head->data + q->head_pos + RECORD_HEADER;
			}
		}
		if (q->head == q->tail)
			return NULL; /* empty; the tail stays for the next push */
		{
			struct evchunk *done = q->head;

			q->head = done->next;
			q->head_pos = 0;
			chunk_put(q, done);
		}
	}
}

void evqueue_pop(struct evqueue *q)
{
	size_t len;

	if (!evqueue_peek(q, &len))
		return;
	q->head_pos += record_size(len);
	q->count--;
	q->bytes -= record_size(len);
	if (!q->count && q->head == q->tail) {
		/* empty: give the last chunk back too */
		chunk_put(q, q->head);
		q->head = q->tail = NULL;
		q->head_pos = 0;
	}
}
