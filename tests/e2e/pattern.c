/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Known-pattern target for tests/e2e/run.py: on SIGUSR1 it calls every allocator function from
 * named sites (site_*), tallies what it did with the exact metric semantics of memtrace, and
 * prints that as one "expect {json}" line to compare with memtraced. Nothing else may call the
 * allocator during that phase: threads and stdout's buffer exist before it, output is write(2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Call sites keep their own frame and exact name: no inlining, no ".constprop" clones. */
#ifdef __clang__
#define SITE __attribute__((noinline))
#else
#define SITE __attribute__((noinline, noclone))
#endif

/* Sizes are distinct per site so that a report entry can be told apart by its numbers too. */
#define PREATTACH_BLOCKS  6
#define PREATTACH_SIZE	  3000
#define LEAK_A_COUNT	  5
#define LEAK_A_SIZE	  1111
#define LEAK_B_SIZE	  2222 /* 2 blocks via leak_b_caller_one, 1 via leak_b_caller_two */
#define LEAK_C_COUNT	  10
#define LEAK_C_SIZE	  333 /* 4 of the 10 are freed again */
#define SPIKE_PIECES	  128
#define SPIKE_PIECE_SIZE  65536 /* 8 MiB in all, below the mmap threshold */
#define THREAD_BLOCKS	  1000
#define THREAD_LEAKED	  10
#define THREAD_BLOCK_SIZE 96
#define MAX_LOOPS	  1000

enum site {
	SITE_LEAK_A,
	SITE_LEAK_B,
	SITE_LEAK_C,
	SITE_CALLOC,
	SITE_REALLOC_CHAIN,
	SITE_REALLOCARRAY,
	SITE_MEMALIGN_FAMILY,
	SITE_SMALL_ALIGN,
	SITE_SPIKE,
	SITE_THREAD_ALLOC,
	SITE_THREAD_FREE,
	SITE_FREE_NULL,
	SITE_FAILED_ALLOC,
	SITE_FREE_PREATTACH,
	SITE_COUNT
};

/* Must match the function names below: the test looks them up in the report's frames[0]. */
static const char *const site_names[SITE_COUNT] = {
    [SITE_LEAK_A] = "site_leak_a",
    [SITE_LEAK_B] = "site_leak_b",
    [SITE_LEAK_C] = "site_leak_c",
    [SITE_CALLOC] = "site_calloc",
    [SITE_REALLOC_CHAIN] = "site_realloc_chain",
    [SITE_REALLOCARRAY] = "site_reallocarray",
    [SITE_MEMALIGN_FAMILY] = "site_memalign_family",
    [SITE_SMALL_ALIGN] = "site_small_align",
    [SITE_SPIKE] = "site_spike",
    [SITE_THREAD_ALLOC] = "site_thread_alloc",
    [SITE_THREAD_FREE] = "site_thread_free",
    [SITE_FREE_NULL] = "site_free_null",
    [SITE_FAILED_ALLOC] = "site_failed_alloc",
    [SITE_FREE_PREATTACH] = "site_free_preattach",
};

struct counters {
	uint64_t allocations;
	uint64_t frees;
	uint64_t bytes_allocated;
	uint64_t bytes_freed;
	uint64_t live_allocations;
	uint64_t live_bytes;
	uint64_t peak_live_bytes; /* per site: its live bytes when the total peak was set */
};

/*
 * The tally: what a perfect tracer attached just before the phase must report. A block is
 * recorded before its address is published and forgotten before it is handed back, so the
 * tally's order is a valid order of the events even with two threads at work.
 */
static pthread_mutex_t tally_lock = PTHREAD_MUTEX_INITIALIZER;
static struct counters total, sites[SITE_COUNT];
static uint64_t unknown_frees;
static int peak_site = -1; /* the site whose allocation last set a new peak */
static const char *phase_error;

/* Live blocks of the phase: open addressing with linear probing, in static memory. */
#define BLOCK_SLOTS (1u << 16)
struct block {
	uintptr_t addr; /* 0 = empty slot */
	uint64_t size;
	int site;
};
static struct block blocks[BLOCK_SLOTS];
static size_t blocks_used;

/* Values the compiler cannot see through, so no call is folded or dropped. */
static void *volatile sink;
static void *volatile null_block;
static volatile size_t huge_size = SIZE_MAX - 4096;
static volatile size_t huge_count = SIZE_MAX / 8;
static volatile size_t zero_size;
static int no_pvalloc; /* --no-pvalloc */

static void *preattach[PREATTACH_BLOCKS];
static void *spike[SPIKE_PIECES];
static void *handoff[THREAD_BLOCKS];

static void fail(const char *what)
{
	if (!phase_error)
		phase_error = what;
}

static void keep(void *p)
{
	sink = p;
}

static size_t block_home(uintptr_t addr)
{
	return (size_t)(((uint64_t)addr >> 4) * 0x9e3779b97f4a7c15ull >> 48) & (BLOCK_SLOTS - 1);
}

static struct block *block_find(uintptr_t addr)
{
	size_t i = block_home(addr);

	while (blocks[i].addr) {
		if (blocks[i].addr == addr)
			return &blocks[i];
		i = (i + 1) & (BLOCK_SLOTS - 1);
	}
	return NULL;
}

static int block_insert(uintptr_t addr, uint64_t size, int site)
{
	size_t i = block_home(addr);

	if (blocks_used >= BLOCK_SLOTS * 3 / 4)
		return -1;
	while (blocks[i].addr) {
		if (blocks[i].addr == addr)
			return -1;
		i = (i + 1) & (BLOCK_SLOTS - 1);
	}
	blocks[i] = (struct block){.addr = addr, .size = size, .site = site};
	blocks_used++;
	return 0;
}

/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
static void block_remove(struct block *b)
{
	size_t i = (size_t)(b - blocks), j = i, home;

	for (;;) {
		blocks[i].addr = 0;
		for (;;) {
			j = (j + 1) & (BLOCK_SLOTS - 1);
			if (!blocks[j].addr) {
				blocks_used--;
				return;
			}
			home = block_home(blocks[j].addr);
			if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
				continue;
			break;
		}
		blocks[i] = blocks[j];
		i = j;
	}
}

static void count_alloc_locked(int site, uintptr_t addr, uint64_t size)
{
	struct counters *c[2] = {&total, &sites[site]};

	if (block_insert(addr, size, site) < 0)
		fail("block table full or address already live");
	for (int k = 0; k < 2; k++) {
		c[k]->allocations++;
		c[k]->bytes_allocated += size;
		c[k]->live_allocations++;
		c[k]->live_bytes += size;
	}
	if (total.live_bytes > total.peak_live_bytes) {
		total.peak_live_bytes = total.live_bytes;
		peak_site = site;
		for (int s = 0; s < SITE_COUNT; s++)
			sites[s].peak_live_bytes = sites[s].live_bytes;
	}
}

static void count_free_locked(uintptr_t addr)
{
	struct block *b = block_find(addr);
	struct counters *c[2];

	if (!b) {
		unknown_frees++;
		return;
	}
	c[0] = &total;
	c[1] = &sites[b->site];
	for (int k = 0; k < 2; k++) {
		c[k]->frees++;
		c[k]->bytes_freed += b->size;
		c[k]->live_allocations--;
		c[k]->live_bytes -= b->size;
	}
	block_remove(b);
}

/* A call that must have returned a block of size bytes. */
static void tally_alloc(int site, void *p, uint64_t size)
{
	keep(p);
	if (!p) {
		fail("an allocation that should succeed returned NULL");
		return;
	}
	pthread_mutex_lock(&tally_lock);
	count_alloc_locked(site, (uintptr_t)p, size);
	pthread_mutex_unlock(&tally_lock);
}

/* A call that must have failed: it counts as nothing. */
static void tally_failed(int site, void *p, uint64_t size)
{
	if (p) {
		fail("an allocation that should fail returned a block");
		tally_alloc(site, p, size);
	}
}

/* Call before handing p back to the allocator (another thread may get its address next). */
static void tally_free(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&tally_lock);
	count_free_locked((uintptr_t)p);
	pthread_mutex_unlock(&tally_lock);
}

/*
 * realloc(old, size) returned result: a successful realloc of a non-NULL block is one free and
 * one allocation, realloc(p, 0) returning NULL is a free, any other NULL result is nothing.
 */
static void tally_realloc(int site, uintptr_t old, void *result, uint64_t size)
{
	keep(result);
	pthread_mutex_lock(&tally_lock);
	if (result) {
		if (old)
			count_free_locked(old);
		count_alloc_locked(site, (uintptr_t)result, size);
	} else if (old && size == 0) {
		count_free_locked(old);
	}
	pthread_mutex_unlock(&tally_lock);
}

/* ---- call sites: each calls the allocator directly, so it is frames[0] ---------------------- */

SITE void site_leak_a(void)
{
	for (int i = 0; i < LEAK_A_COUNT; i++)
		tally_alloc(SITE_LEAK_A, malloc(LEAK_A_SIZE), LEAK_A_SIZE);
}

SITE void site_leak_b(int count)
{
	for (int i = 0; i < count; i++)
		tally_alloc(SITE_LEAK_B, malloc(LEAK_B_SIZE), LEAK_B_SIZE);
}

/* Two callers give site_leak_b two stacks: the test must sum entries by frames[0]. */
SITE void leak_b_caller_one(void)
{
	site_leak_b(2);
}

SITE void leak_b_caller_two(void)
{
	site_leak_b(1);
}

SITE void site_leak_c(void)
{
	void *p[LEAK_C_COUNT];

	for (int i = 0; i < LEAK_C_COUNT; i++) {
		p[i] = malloc(LEAK_C_SIZE);
		tally_alloc(SITE_LEAK_C, p[i], LEAK_C_SIZE);
	}
	for (int i = 0; i < 8; i += 2) {
		tally_free(p[i]);
		free(p[i]);
	}
}

SITE void site_calloc(void)
{
	void *p;

	for (int i = 0; i < 4; i++)
		tally_alloc(SITE_CALLOC, calloc(17, 19), 17 * 19);
	for (int i = 0; i < 2; i++) {
		p = calloc(50, 10);
		tally_alloc(SITE_CALLOC, p, 50 * 10);
		tally_free(p);
		free(p);
	}
}

SITE void site_realloc_chain(void)
{
	uintptr_t old;
	void *p, *q;

	/* realloc(NULL, n) allocates; glibc does it by jumping into malloc. */
	p = realloc(null_block, 100);
	tally_realloc(SITE_REALLOC_CHAIN, 0, p, 100);
	/* Growing. */
	old = (uintptr_t)p;
	p = realloc(p, 400);
	tally_realloc(SITE_REALLOC_CHAIN, old, p, 400);
	/* Same size: the block does not move, yet it is one free and one allocation. */
	old = (uintptr_t)p;
	p = realloc(p, 400);
	tally_realloc(SITE_REALLOC_CHAIN, old, p, 400);
	/* Failure leaves the block alone and counts as nothing. */
	old = (uintptr_t)p;
	q = realloc(p, huge_size);
	if (q) {
		fail("realloc(p, SIZE_MAX - 4096) returned a block");
		tally_realloc(SITE_REALLOC_CHAIN, old, q, huge_size);
		p = q;
	}
	old = (uintptr_t)p;
	p = realloc(p, 4000);
	tally_realloc(SITE_REALLOC_CHAIN, old, p, 4000);
	/* realloc(p, 0) frees (glibc returns NULL; glibc does it by calling free). */
	old = (uintptr_t)p;
	p = realloc(p, zero_size);
	tally_realloc(SITE_REALLOC_CHAIN, old, p, 0);
	/* A chain that ends in a leak of 1500 bytes. */
	p = realloc(null_block, 700);
	tally_realloc(SITE_REALLOC_CHAIN, 0, p, 700);
	old = (uintptr_t)p;
	p = realloc(p, 1500);
	tally_realloc(SITE_REALLOC_CHAIN, old, p, 1500);
}

SITE void site_reallocarray(void)
{
	uintptr_t old;
	void *p, *q;

	/* glibc's reallocarray calls realloc through its PLT. */
	p = reallocarray(null_block, 10, 24);
	tally_realloc(SITE_REALLOCARRAY, 0, p, 10 * 24);
	old = (uintptr_t)p;
	p = reallocarray(p, 20, 24);
	tally_realloc(SITE_REALLOCARRAY, old, p, 20 * 24);
	/* n * size overflows: NULL, the block stays, nothing counted. */
	q = reallocarray(p, huge_count, 24);
	tally_failed(SITE_REALLOCARRAY, q, 0);
}

SITE void site_memalign_family(void)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, 1000) != 0)
		fail("posix_memalign(64, 1000) failed");
	tally_alloc(SITE_MEMALIGN_FAMILY, p, 1000);
	tally_alloc(SITE_MEMALIGN_FAMILY, aligned_alloc(128, 2048), 2048);
	p = memalign(256, 3000);
	tally_alloc(SITE_MEMALIGN_FAMILY, p, 3000);
	tally_free(p);
	free(p);
	tally_alloc(SITE_MEMALIGN_FAMILY, valloc(5000), 5000);
	if (no_pvalloc)
		return;
	/* pvalloc rounds up to a page, but the requested size is what counts. */
	p = pvalloc(6000);
	tally_alloc(SITE_MEMALIGN_FAMILY, p, 6000);
	tally_free(p);
	free(p);
}

/* Alignments glibc already guarantees: it serves these by jumping into malloc. */
SITE void site_small_align(void)
{
	void *p = NULL;

	if (posix_memalign(&p, 16, 24) != 0)
		fail("posix_memalign(16, 24) failed");
	tally_alloc(SITE_SMALL_ALIGN, p, 24);
	p = aligned_alloc(16, 48);
	tally_alloc(SITE_SMALL_ALIGN, p, 48);
	tally_free(p);
	free(p);
	tally_alloc(SITE_SMALL_ALIGN, memalign(8, 40), 40);
}

SITE void site_free_null(void)
{
	for (int i = 0; i < 3; i++)
		free(null_block);
}

SITE void site_failed_alloc(void)
{
	void *p = NULL;

	tally_failed(SITE_FAILED_ALLOC, malloc(huge_size), huge_size);
	tally_failed(SITE_FAILED_ALLOC, calloc(huge_count, 16), 0);
	if (posix_memalign(&p, 64, huge_size) == 0)
		tally_failed(SITE_FAILED_ALLOC, p, huge_size);
}

/* Blocks allocated before the tracer attached: their frees are unknown_frees. */
SITE void site_free_preattach(void)
{
	for (int i = 0; i < PREATTACH_BLOCKS; i++) {
		tally_free(preattach[i]);
		free(preattach[i]);
	}
}

/* The peak: 8 MiB in pieces on top of everything else, then all of it freed. */
SITE void site_spike(void)
{
	for (int i = 0; i < SPIKE_PIECES; i++) {
		spike[i] = malloc(SPIKE_PIECE_SIZE);
		tally_alloc(SITE_SPIKE, spike[i], SPIKE_PIECE_SIZE);
	}
	for (int i = 0; i < SPIKE_PIECES; i++) {
		tally_free(spike[i]);
		free(spike[i]);
	}
}

/* Runs in worker 0 while worker 1 frees what it hands over (cross-thread frees). */
SITE void site_thread_alloc(void)
{
	for (int i = 0; i < THREAD_BLOCKS; i++) {
		void *p = malloc(THREAD_BLOCK_SIZE);

		tally_alloc(SITE_THREAD_ALLOC, p, THREAD_BLOCK_SIZE);
		__atomic_store_n(&handoff[i], p, __ATOMIC_RELEASE);
	}
}

SITE void site_thread_free(void)
{
	for (int i = 0; i < THREAD_BLOCKS - THREAD_LEAKED; i++) {
		void *p;

		while (!(p = __atomic_load_n(&handoff[i], __ATOMIC_ACQUIRE)))
			sched_yield();
		tally_free(p);
		free(p);
	}
}

/* ---- workers: created before attach, they never exit (thread exit frees its tcache) ------- */

static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t phase_cond = PTHREAD_COND_INITIALIZER;
static int workers_ready, workers_done, phase_started;

static void *worker_main(void *arg)
{
	int role = (int)(intptr_t)arg;
	void *p = malloc(32); /* give this thread its arena and tcache now */

	keep(p);
	free(p);
	pthread_mutex_lock(&phase_lock);
	workers_ready++;
	pthread_cond_broadcast(&phase_cond);
	while (!phase_started)
		pthread_cond_wait(&phase_cond, &phase_lock);
	pthread_mutex_unlock(&phase_lock);

	if (role == 0)
		site_thread_alloc();
	else
		site_thread_free();

	pthread_mutex_lock(&phase_lock);
	workers_done++;
	pthread_cond_broadcast(&phase_cond);
	for (;;)
		pthread_cond_wait(&phase_cond, &phase_lock);
	return NULL;
}

static void wait_workers(int *counter)
{
	pthread_mutex_lock(&phase_lock);
	while (*counter < 2)
		pthread_cond_wait(&phase_cond, &phase_lock);
	pthread_mutex_unlock(&phase_lock);
}

/* Before attach: blocks to free later, and one call of each function to bind its PLT slot. */
static void prepare(void)
{
	void *p = NULL;

	for (int i = 0; i < PREATTACH_BLOCKS; i++) {
		preattach[i] = malloc(PREATTACH_SIZE);
		keep(preattach[i]);
	}
	keep(p = calloc(1, 8));
	free(p);
	keep(p = realloc(null_block, 8));
	keep(p = reallocarray(p, 2, 8));
	free(p);
	if (posix_memalign(&p, 64, 8) == 0)
		free(p);
	keep(p = aligned_alloc(64, 64));
	free(p);
	keep(p = memalign(64, 8));
	free(p);
	keep(p = valloc(8));
	free(p);
	if (!no_pvalloc) {
		keep(p = pvalloc(8));
		free(p);
	}
}

static void run_phase(int loops)
{
	uint64_t live_after_spike;

	site_free_null();
	site_failed_alloc();
	site_free_preattach();
	for (int i = 0; i < loops; i++) {
		site_leak_a();
		leak_b_caller_one();
		leak_b_caller_two();
		site_leak_c();
	}
	site_calloc();
	site_realloc_chain();
	site_reallocarray();
	site_memalign_family();
	site_small_align();
	site_spike();
	live_after_spike = total.live_bytes;

	pthread_mutex_lock(&phase_lock);
	phase_started = 1;
	pthread_cond_broadcast(&phase_cond);
	pthread_mutex_unlock(&phase_lock);
	wait_workers(&workers_done);

	/* Whatever the interleaving, the two-thread phase must stay below the spike. */
	if (peak_site != SITE_SPIKE ||
	    live_after_spike + THREAD_BLOCKS * THREAD_BLOCK_SIZE >= total.peak_live_bytes)
		fail("the peak was not set by site_spike alone");
}

/* ---- output: formatted by hand into static memory, written with write(2) ------------------- */

static char out[16384];
static size_t out_len;

static void put_str(const char *s)
{
	size_t n = strlen(s);

	if (out_len + n < sizeof(out)) {
		memcpy(out + out_len, s, n);
		out_len += n;
	}
}

static void put_u64(uint64_t v)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n && out_len + 1 < sizeof(out))
		out[out_len++] = digits[--n];
}

static void put_field(const char *name, uint64_t v, int first)
{
	put_str(first ? "\"" : ",\"");
	put_str(name);
	put_str("\":");
	put_u64(v);
}

static void put_counters(const struct counters *c)
{
	put_field("allocations", c->allocations, 1);
	put_field("frees", c->frees, 0);
	put_field("bytes_allocated", c->bytes_allocated, 0);
	put_field("bytes_freed", c->bytes_freed, 0);
	put_field("live_allocations", c->live_allocations, 0);
	put_field("live_bytes", c->live_bytes, 0);
	put_field("peak_live_bytes", c->peak_live_bytes, 0);
}

static void print_expect(int fd, int loops)
{
	ssize_t n;
	size_t done = 0;

	put_str("expect {");
	put_field("pid", (uint64_t)getpid(), 1);
	put_field("loops", (uint64_t)loops, 0);
	put_str(phase_error ? ",\"ok\":false,\"error\":\"" : ",\"ok\":true");
	if (phase_error) {
		put_str(phase_error);
		put_str("\"");
	}
	put_str(",");
	put_counters(&total);
	put_field("unknown_frees", unknown_frees, 0);
	put_str(",\"sites\":{");
	for (int s = 0; s < SITE_COUNT; s++) {
		put_str(s ? ",\"" : "\"");
		put_str(site_names[s]);
		put_str("\":{");
		put_counters(&sites[s]);
		put_str("}");
	}
	put_str("}}\n");
	while (done < out_len) {
		n = write(fd, out + done, out_len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
}

static void wait_sigusr1(const sigset_t *set)
{
	int sig;

	while (sigwait(set, &sig) != 0 || sig != SIGUSR1)
		;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: pattern [--no-wait] [--loops K] [--expect-file PATH] [--no-pvalloc] "
		"[--chroot DIR]\n");
	exit(2);
}

/*
 * --no-wait: run the phase at once and exit (for "memtraced -- CMD"); --loops K: repeat the leak
 * sites; --expect-file PATH: write the expect line there instead of stdout; --no-pvalloc: for
 * an allocator without pvalloc (jemalloc: glibc's would hand it a block it cannot free);
 * --chroot DIR: change its root to DIR once its libraries are loaded, as a server that locks
 * itself in an empty directory does (its link map then names files its root no longer holds).
 */
int main(int argc, char **argv)
{
	pthread_t workers[2];
	sigset_t set;
	int no_wait = 0, loops = 1, expect_fd = STDOUT_FILENO;
	char *end;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-wait")) {
			no_wait = 1;
		} else if (!strcmp(argv[i], "--loops") && i + 1 < argc) {
			loops = (int)strtol(argv[++i], &end, 10);
			if (*end || loops < 1 || loops > MAX_LOOPS)
				usage();
		} else if (!strcmp(argv[i], "--no-pvalloc")) {
			no_pvalloc = 1;
		} else if (!strcmp(argv[i], "--chroot") && i + 1 < argc) {
			if (chroot(argv[++i]) || chdir("/")) {
				fprintf(stderr, "pattern: cannot chroot to %s: %s\n", argv[i],
					strerror(errno));
				return 1;
			}
		} else if (!strcmp(argv[i], "--expect-file") && i + 1 < argc) {
			/* open(2), not fopen: it is written after the phase without stdio. */
			expect_fd = open(argv[++i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (expect_fd < 0) {
				fprintf(stderr, "pattern: cannot open %s: %s\n", argv[i],
					strerror(errno));
				return 1;
			}
		} else {
			usage();
		}
	}

	/* Blocked before the threads exist, so every thread inherits the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) {
		fprintf(stderr, "pattern: cannot block SIGUSR1\n");
		return 1;
	}
	prepare();
	for (int i = 0; i < 2; i++) {
		if (pthread_create(&workers[i], NULL, worker_main, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "pattern: cannot create a thread\n");
			return 1;
		}
	}
	wait_workers(&workers_ready);
	/* This allocates stdout's buffer; after it, fflush and write(2) do not allocate. */
	printf("ready %d\n", (int)getpid());
	fflush(stdout);

	if (!no_wait)
		wait_sigusr1(&set);
	run_phase(loops);
	print_expect(expect_fd, loops);
	if (!no_wait)
		wait_sigusr1(&set);
	/* _exit: no exit handlers, no stdio teardown, the workers never run their exit path. */
	_exit(phase_error ? 1 : 0);
}
