/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The program `make demo` traces: a toy request loop that allocates steadily for a while
 * (--seconds N, default 30; SIGTERM or SIGINT end it sooner). Two call sites leak on purpose,
 * cache_insert (entries never evicted) and parse_request (a header it forgets to free); the rest
 * is freed, so a memtrace report should name exactly those two as the holders of live memory.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REQUESTS_PER_SECOND 100
#define CACHE_ENTRY_SIZE    200
#define HEADER_SIZE	    48
#define BODY_SIZE	    512
#define RESPONSE_SIZE	    4096

struct request {
	char *header;
	char *body;
	unsigned long id;
};

struct cache_entry {
	struct cache_entry *next;
	unsigned long key;
	char value[CACHE_ENTRY_SIZE - sizeof(struct cache_entry *) - sizeof(unsigned long)];
};

static volatile sig_atomic_t stopping;
static struct cache_entry *cache; /* grows forever: nothing evicts */

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static __attribute__((noinline)) struct request *parse_request(unsigned long id)
{
	struct request *req = malloc(sizeof(*req));

	if (!req)
		return NULL;
	req->id = id;
	req->header = malloc(HEADER_SIZE);
	req->body = malloc(BODY_SIZE);
	if (req->header)
		snprintf(req->header, HEADER_SIZE, "GET /item/%lu", id);
	if (req->body)
		memset(req->body, 'x', BODY_SIZE);
	return req;
}

/* The leak: every tenth request the header is "handed to a logger" and never freed. */
static __attribute__((noinline)) void free_request(struct request *req)
{
	if (req->id % 10 != 0)
		free(req->header);
	free(req->body);
	free(req);
}

static __attribute__((noinline)) void cache_insert(unsigned long key)
{
	struct cache_entry *e = malloc(sizeof(*e));

	if (!e)
		return;
	e->key = key;
	memset(e->value, (int)(key & 0x7f), sizeof(e->value));
	e->next = cache;
	cache = e;
}

static __attribute__((noinline)) size_t render_response(const struct request *req)
{
	char *out = malloc(RESPONSE_SIZE);
	size_t n;

	if (!out)
		return 0;
	n = (size_t)snprintf(out, RESPONSE_SIZE, "200 OK %s", req->header ? req->header : "");
	free(out);
	return n;
}

static void handle_request(unsigned long id)
{
	struct request *req = parse_request(id);

	if (!req)
		return;
	if (id % 3 == 0)
		cache_insert(id);
	render_response(req);
	free_request(req);
}

int main(int argc, char **argv)
{
	struct timespec nap = {.tv_nsec = 1000000000L / REQUESTS_PER_SECOND};
	struct sigaction sa = {.sa_handler = on_signal};
	long seconds = 30;
	unsigned long id;
	time_t end;

	if (argc == 3 && !strcmp(argv[1], "--seconds")) {
		seconds = strtol(argv[2], NULL, 10);
	} else if (argc != 1) {
		fprintf(stderr, "usage: demo [--seconds N]\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("demo: pid %d, serving %d fake requests a second for %ld s\n", (int)getpid(),
	       REQUESTS_PER_SECOND, seconds);
	fflush(stdout);

	end = time(NULL) + seconds;
	for (id = 1; !stopping && time(NULL) < end; id++) {
		handle_request(id);
		nanosleep(&nap, NULL);
	}
	printf("demo: handled %lu requests, exiting\n", id - 1);
	return 0;
}
