// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Scale workload: a heap of many live blocks from many distinct call stacks,
 * for the scale section of `make bench` and the scale end-to-end tests.
 * Each allocation runs down a recursion of LEVELS levels that calls one of
 * two functions per level, chosen by one bit of its path number, so there are
 * 2^LEVELS distinct stacks made of a dozen distinct return addresses. Each
 * path belongs to one worker thread (path % threads), so a stack is always
 * reached from the same thread.
 *
 *     heapscale LEVELS THREADS
 *
 * prints "ready" and then takes commands on stdin, one per line:
 *     hold N        allocate N blocks of 32 bytes, block i on path i mod 2^LEVELS,
 *                   and keep them: replies "held N"
 *     churn S [R]   every worker makes malloc(32)+free pairs on random paths of
 *                   its own for S seconds, at most R pairs a second each (no
 *                   bound without R): replies "churned PAIRS"
 *     release       free every held block: replies "released N"
 *     fork K F      fork K children, each of which frees F of the held blocks it
 *                   inherited (its own copies) and allocates F of its own, then
 *                   waits: replies "forked K" once all K have done so (alive)
 *     reap          let the children exit and reap them: replies "reaped K"
 *     quit          exit
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define BLOCK_SIZE  32

enum job_kind { JOB_NONE, JOB_HOLD, JOB_CHURN, JOB_RELEASE, JOB_QUIT };

struct worker {
	pthread_t thread;
	int index;
	long pairs; /* churn: pairs made */
	unsigned seed;
};

static int levels, nthreads;
static unsigned long npaths;
static void **held;
static long nheld, hold_target;
static double churn_seconds, churn_rate;

static pthread_barrier_t start_barrier, done_barrier;
static enum job_kind job;
static struct worker workers[MAX_THREADS];

static void *volatile sink;

struct walk {
	unsigned long path;
	long first, count; /* hold: blocks [first, first + count) of held */
	int keep;	   /* hold (keep) or churn (free at once) */
};

__attribute__((noinline)) static void leaf(const struct walk *w)
{
	for (long i = 0; i < w->count; i++) {
		void *p = malloc(BLOCK_SIZE);

		if (!p)
			abort();
		memset(p, 0x5a, BLOCK_SIZE);
		if (w->keep) {
			held[w->first + i] = p;
		} else {
			sink = p;
			free(p);
		}
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void level_b(const struct walk *w, int level);

/* Two functions per level: the path's bit at each level picks one. */
__attribute__((noinline)) static void level_a(const struct walk *w, int level)
{
	if (level == levels)
		leaf(w);
	else if (w->path >> level & 1)
		level_b(w, level + 1);
	else
		level_a(w, level + 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void level_b(const struct walk *w, int level)
{
	if (level == levels)
		leaf(w);
	else if (w->path >> level & 1)
		level_b(w, level + 1);
	else
		level_a(w, level + 1);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void walk_path(const struct walk *w)
{
	level_a(w, 0);
	__asm__ volatile("" ::: "memory");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Blocks on path p among n blocks spread as block i on path i % npaths. */
static long blocks_on_path(unsigned long p, long n)
{
	return n / (long)npaths + ((unsigned long)(n % (long)npaths) > p ? 1 : 0);
}

static void do_hold(struct worker *wk)
{
	long first = 0;

	/* the held array is filled path by path: path p's blocks follow those of p - 1 */
	for (unsigned long p = 0; p < npaths; p++) {
		struct walk w = {.path = p, .first = first, .keep = 1};

		w.count = blocks_on_path(p, hold_target);
		if (w.count && p % (unsigned long)nthreads == (unsigned long)wk->index)
			walk_path(&w);
		first += w.count;
	}
}

static void do_churn(struct worker *wk)
{
	double start = now_s(), end = start + churn_seconds;
	unsigned long mine = (npaths + (unsigned long)nthreads - 1) / (unsigned long)nthreads;

	wk->pairs = 0;
	while (now_s() < end) {
		unsigned long k = (unsigned long)rand_r(&wk->seed) % mine;
		struct walk w = {.count = 16, .keep = 0};

		w.path = k * (unsigned long)nthreads + (unsigned long)wk->index;
		if (w.path >= npaths)
			continue;
		walk_path(&w);
		wk->pairs += w.count;
		/* paced: ahead of the rate, wait for the clock */
		if (churn_rate > 0) {
			double ahead = start + (double)wk->pairs / churn_rate - now_s();

			if (ahead > 0) {
				struct timespec ts = {
				    .tv_sec = (time_t)ahead,
				    .tv_nsec = (long)((ahead - (double)(time_t)ahead) * 1e9)};

				nanosleep(&ts, NULL);
			}
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;

	for (;;) {
		pthread_barrier_wait(&start_barrier);
		if (job == JOB_QUIT)
			return NULL;
		if (job == JOB_HOLD)
			do_hold(wk);
		else if (job == JOB_CHURN)
			do_churn(wk);
		pthread_barrier_wait(&done_barrier);
	}
}

/* The forked children: each signals done on one pipe and waits for the other to close. */
static pid_t kids[4096];
static int nkids, go_pipe[2] = {-1, -1};

/* A child: free f inherited blocks (spread over the heap), allocate f of its own. */
static void child_work(long f, int done_fd)
{
	struct walk w = {.count = 1, .keep = 0};
	char c = 1;

	for (long i = 0; i < f && i < nheld; i++)
		free(held[i * (nheld / (f ? f : 1))]);
	for (long i = 0; i < f; i++) {
		static void *own[1];

		w.path = (unsigned long)i % npaths;
		w.keep = 1;
		w.first = 0;
		{
			void **save = held;

			held = own;
			walk_path(&w);
			held = save;
		}
	}
	if (write(done_fd, &c, 1) != 1)
		_exit(3);
	close(go_pipe[1]);
	while (read(go_pipe[0], &c, 1) > 0)
		;
	_exit(0);
}

static int do_fork(long k, long f)
{
	int done[2];
	char c;

	if (k < 0 || k > (long)(sizeof(kids) / sizeof(kids[0])) || nkids || pipe(done) ||
	    pipe(go_pipe))
		return -1;
	for (long i = 0; i < k; i++) {
		pid_t p = fork();

		if (p < 0)
			return -1;
		if (!p) {
			close(done[0]);
			child_work(f, done[1]);
		}
		kids[nkids++] = p;
	}
	close(done[1]);
	close(go_pipe[0]);
	for (long i = 0; i < k; i++)
		if (read(done[0], &c, 1) != 1)
			return -1;
	close(done[0]);
	return 0;
}

static int do_reap(void)
{
	int n = 0;

	close(go_pipe[1]);
	for (int i = 0; i < nkids; i++)
		n += waitpid(kids[i], NULL, 0) == kids[i];
	nkids = 0;
	return n;
}

static void run_job(enum job_kind k)
{
	job = k;
	pthread_barrier_wait(&start_barrier);
	if (k != JOB_QUIT)
		pthread_barrier_wait(&done_barrier);
}

int main(int argc, char **argv)
{
	char line[128];

	levels = argc > 1 ? atoi(argv[1]) : 17;
	nthreads = argc > 2 ? atoi(argv[2]) : 2;
	if (argc != 3 || levels < 0 || levels > 24 || nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "usage: heapscale LEVELS THREADS\n");
		return 2;
	}
	npaths = 1ul << levels;
	pthread_barrier_init(&start_barrier, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&done_barrier, NULL, (unsigned)nthreads + 1);
	for (int i = 0; i < nthreads; i++) {
		workers[i].index = i;
		workers[i].seed = (unsigned)i * 7919u + 1;
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
			fprintf(stderr, "heapscale: cannot start a thread\n");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		long n;
		double s;

		if (sscanf(line, "hold %ld", &n) == 1 && n >= 0 && !nheld) {
			held = calloc((size_t)n + 1, sizeof(*held));
			if (!held)
				return 1;
			hold_target = n;
			run_job(JOB_HOLD);
			nheld = n;
			printf("held %ld\n", n);
		} else if (sscanf(line, "churn %lf", &s) == 1 && s >= 0) {
			long pairs = 0;
			double rate = 0;

			if (sscanf(line, "churn %lf %lf", &s, &rate) < 2)
				rate = 0;
			churn_seconds = s;
			churn_rate = rate;
			run_job(JOB_CHURN);
			for (int i = 0; i < nthreads; i++)
				pairs += workers[i].pairs;
			printf("churned %ld\n", pairs);
		} else if (!strcmp(line, "release\n")) {
			for (long i = 0; i < nheld; i++)
				free(held[i]);
			free(held);
			held = NULL;
			printf("released %ld\n", nheld);
			nheld = 0;
		} else if (sscanf(line, "fork %ld %lf", &n, &s) == 2) {
			if (do_fork(n, (long)s))
				printf("error: fork failed\n");
			else
				printf("forked %ld\n", n);
		} else if (!strcmp(line, "reap\n")) {
			printf("reaped %d\n", do_reap());
		} else if (!strcmp(line, "quit\n")) {
			break;
		} else {
			printf("error: bad command\n");
		}
		fflush(stdout);
	}
	run_job(JOB_QUIT);
	for (int i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);
	return 0;
}
