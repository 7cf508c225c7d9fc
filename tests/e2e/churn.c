/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A target that allocates as fast as it can, for the fault tests (tests/e2e/test_faults.py) and
 * the soak (tests/soak.py). T worker threads each run N steps (or S seconds) of malloc/free
 * with random sizes and random lifetimes: a step picks one of K slots (--slots, default 1024)
 * at random, frees the block there if there is one, else allocates one. Only malloc and free are
 * called (with --realloc-null every other allocation is realloc(NULL, n), whose malloc inside is
 * not a call of its own), so every step is exactly one allocator call and one ring buffer event.
 * Each block is filled and checked before it is freed: a tracer that harmed the process would show
 * as "ok":false.
 *
 * Prints "ready PID" once the threads exist (before that, stdio and threads allocate), then with
 * --wait waits for SIGUSR1 before the phase; after it prints
 *   expect {"ok":true,"allocations":..,"frees":..,"bytes_allocated":..,"bytes_freed":..,
 *           "live_allocations":..,"live_bytes":..,"events":..}
 * and, with --wait, waits for SIGUSR1 again before leaving; with --exec PROG ARGS... it then
 * executes PROG in the same process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define MAX_SLOTS   (1 << 20)
#define MAX_SIZE    4096

struct worker {
	pthread_t thread;
	int index;
	uint64_t steps, allocations, frees, bytes_allocated, bytes_freed, bad;
	void **block; /* slots, allocated before the phase */
	uint32_t *size;
} __attribute__((aligned(64)));

static struct worker workers[MAX_THREADS];
static int nthreads = 1, freeall, realloc_null, slots = 1024;
static uint64_t steps_each = 100000;
static double seconds;
static pthread_barrier_t start_barrier;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int done;

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void release(struct worker *w, int slot)
{
	unsigned char *p = w->block[slot];
	uint32_t n = w->size[slot];

	if (p[0] != (unsigned char)slot || (n > 1 && p[n - 1] != (unsigned char)n))
		w->bad++;
	free(p);
	w->frees++;
	w->bytes_freed += n;
	w->block[slot] = NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1);
	double end = 0;

	pthread_barrier_wait(&start_barrier);
	if (seconds > 0)
		end = now() + seconds;
	for (w->steps = 0; seconds > 0 ? 1 : w->steps < steps_each; w->steps++) {
		int slot = (int)(xorshift(&seed) % (uint64_t)slots);

		if ((w->steps & 4095) == 0 && seconds > 0 && now() >= end)
			break;
		if (w->block[slot]) {
			release(w, slot);
		} else {
			uint32_t n = (uint32_t)(xorshift(&seed) % MAX_SIZE) + 1;
			/* --realloc-null: every other allocation is realloc(NULL, n),
			 * which is malloc(n) called inside realloc (a nested call) */
			unsigned char *p =
			    realloc_null && (w->steps & 1) ? realloc(NULL, n) : malloc(n);

			if (!p) {
				w->bad++;
				continue;
			}
			p[n - 1] = (unsigned char)n;
			p[0] = (unsigned char)slot;
			w->block[slot] = p;
			w->size[slot] = n;
			w->allocations++;
			w->bytes_allocated += n;
		}
	}
	if (freeall) {
		for (int i = 0; i < slots; i++)
			if (w->block[i])
				release(w, i);
	}
	pthread_mutex_lock(&done_lock);
	done++;
	pthread_cond_broadcast(&done_cond);
	for (;;) /* never exit: a thread's exit frees its cache, which would count */
		pthread_cond_wait(&done_cond, &done_lock);
	return NULL;
}

static void wait_sigusr1(const sigset_t *set)
{
	int sig;

	while (sigwait(set, &sig) != 0 || sig != SIGUSR1)
		;
}

static void write_all(const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(STDOUT_FILENO, s, n);

		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: churn [--threads T] [--slots K] [--steps N | --seconds S] [--free-all] "
		"[--realloc-null] [--wait] [--exec PROG ARGS...]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t a = 0, f = 0, ba = 0, bf = 0, bad = 0;
	char line[512];
	char **exec_argv = NULL;
	int wait = 0, n;
	sigset_t set;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps_each = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--slots") && i + 1 < argc)
			slots = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--free-all"))
			freeall = 1;
		else if (!strcmp(argv[i], "--realloc-null"))
			realloc_null = 1;
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else if (!strcmp(argv[i], "--exec") && i + 1 < argc) {
			exec_argv = &argv[i + 1];
			break;
		} else
			usage();
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || slots < 1 || slots > MAX_SLOTS)
		usage();
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_barrier_init(&start_barrier, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		workers[i].index = i;
		workers[i].block = calloc((size_t)slots, sizeof(void *));
		workers[i].size = calloc((size_t)slots, sizeof(uint32_t));
		if (!workers[i].block || !workers[i].size) {
			fprintf(stderr, "churn: out of memory\n");
			return 1;
		}
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
			fprintf(stderr, "churn: cannot create a thread\n");
			return 1;
		}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (wait)
		wait_sigusr1(&set);
	pthread_barrier_wait(&start_barrier);
	pthread_mutex_lock(&done_lock);
	while (done < nthreads)
		pthread_cond_wait(&done_cond, &done_lock);
	pthread_mutex_unlock(&done_lock);
	for (int i = 0; i < nthreads; i++) {
		a += workers[i].allocations;
		f += workers[i].frees;
		ba += workers[i].bytes_allocated;
		bf += workers[i].bytes_freed;
		bad += workers[i].bad;
	}
	n = snprintf(line, sizeof(line),
		     "expect {\"ok\":%s,\"allocations\":%llu,\"frees\":%llu,"
		     "\"bytes_allocated\":%llu,\"bytes_freed\":%llu,\"live_allocations\":%llu,"
		     "\"live_bytes\":%llu,\"events\":%llu}\n",
		     bad ? "false" : "true", (unsigned long long)a, (unsigned long long)f,
		     (unsigned long long)ba, (unsigned long long)bf, (unsigned long long)(a - f),
		     (unsigned long long)(ba - bf), (unsigned long long)(a + f));
	write_all(line, (size_t)n);
	if (wait)
		wait_sigusr1(&set);
	if (exec_argv) {
		execv(exec_argv[0], exec_argv);
		_exit(127);
	}
	_exit(bad ? 1 : 0);
}
