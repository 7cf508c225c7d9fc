/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A small pre-fork server for tests/e2e/test_match.py (memtraced --comm):
 *
 *   preforker [--early E] [--rounds R] [--workers N] [--exec PROG]
 *
 * The parent allocates A_BLOCKS blocks (site_a) and forks E early workers,
 * prints "ready PID" and waits for SIGUSR1: the point where a daemon started
 * after it has attached (the test sends the signal once status says so).
 * Then it allocates B_BLOCKS blocks (site_b) and, SIGUSR1 forwarded, the
 * early workers free some of the A blocks they inherited and allocate their
 * own (site_early). Then R rounds: each forks N workers, one connection
 * block (site_conn) allocated just before each fork and freed by the parent
 * just after it (as a postmaster does with its Port). Each worker frees A
 * and B blocks it inherited and its connection block, grows one B block
 * with realloc (site_grow), allocates its own (site_worker), frees half of
 * those, writes its line and tells the parent; the parent prints "round R
 * done" once all have, waits for SIGUSR1, lets them exit ("round R reaped")
 * and waits for SIGUSR1 again before the next round. With --exec PROG, in
 * the last round worker 0 then executes PROG (the test gives it a program
 * that does not match), and worker 1 executes this program again as
 * "preforker --child" (which matches): it allocates C_BLOCKS blocks
 * (site_child), frees half, writes its line and exits.
 *
 * Each process writes "expect PID {json}" (write(2), no allocation) to
 * stdout: its kind ("parent", "early", "worker", "child"), round and index,
 * and two tallies of what it called: "start", as seen by a daemon that
 * traced the parent from its first instruction (every worker inherits the
 * parent's heap), and "ready", by one that attached at the ready point (the
 * early workers attached then too, with nothing inherited; every block
 * allocated before is unknown to it: the A blocks). The parent writes its
 * line at the end and waits for SIGUSR1 to exit.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __clang__
#define SITE __attribute__((noinline))
#else
#define SITE __attribute__((noinline, noclone))
#endif

#define A_BLOCKS   60
#define A_SIZE	   200
#define B_BLOCKS   80
#define B_SIZE	   300
#define CONN_SIZE  1000
#define OWN_BLOCKS 20
#define C_BLOCKS   30
#define MAX_KIDS   64

struct tally {
	uint64_t inherited, inherited_bytes, allocations, frees, bytes_allocated, bytes_freed,
	    unknown, live, live_bytes;
};

/* What a daemon that traced since the start, and one since the ready point, saw. */
struct view {
	struct tally start, ready;
};

static void *a_blocks[A_BLOCKS], *b_blocks[B_BLOCKS], *own[OWN_BLOCKS], *kids_conn;
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void wait_usr1(void)
{
	sigset_t none;

	sigemptyset(&none);
	while (!go)
		sigsuspend(&none);
	go = 0;
}

static size_t put_tally(char *p, size_t room, const char *name, const struct tally *t)
{
	int n = snprintf(p, room,
			 "\"%s\":{\"inherited_allocations\":%llu,\"inherited_bytes\":%llu,"
			 "\"allocations\":%llu,\"frees\":%llu,\"bytes_allocated\":%llu,"
			 "\"bytes_freed\":%llu,\"unknown_frees\":%llu,\"live_allocations\":%llu,"
			 "\"live_bytes\":%llu}",
			 name, (unsigned long long)t->inherited,
			 (unsigned long long)t->inherited_bytes, (unsigned long long)t->allocations,
			 (unsigned long long)t->frees, (unsigned long long)t->bytes_allocated,
			 (unsigned long long)t->bytes_freed, (unsigned long long)t->unknown,
			 (unsigned long long)t->live, (unsigned long long)t->live_bytes);

	return n > 0 && (size_t)n < room ? (size_t)n : 0;
}

static void say(const char *kind, int round, int index, const struct view *v)
{
	char line[1024];
	size_t n = (size_t)snprintf(line, sizeof(line),
				    "expect %d {\"kind\":\"%s\",\"round\":%d,\"index\":%d,",
				    (int)getpid(), kind, round, index);

	n += put_tally(line + n, sizeof(line) - n, "start", &v->start);
	line[n++] = ',';
	n += put_tally(line + n, sizeof(line) - n, "ready", &v->ready);
	line[n++] = '}';
	line[n++] = '\n';
	if (write(1, line, n) != (ssize_t)n)
		_exit(3);
}

/* Both tallies: an allocation the daemon sees in either view. */
static void took(struct view *v, size_t size, int before_ready)
{
	struct tally *t[2] = {&v->start, &v->ready};

	for (int k = 0; k < 2 - before_ready; k++) {
		t[k]->allocations++;
		t[k]->bytes_allocated += size;
		t[k]->live++;
		t[k]->live_bytes += size;
	}
}

/* A free of a block: ordinary where the view knew it, unknown where not. */
static void gave(struct tally *t, size_t size, int known)
{
	if (!known) {
		t->unknown++;
		return;
	}
	t->frees++;
	t->bytes_freed += size;
	t->live--;
	t->live_bytes -= size;
}

/* Macros, not functions: the allocator's caller is the site function itself. */
#define TAKE(p, size)                                                                              \
	do {                                                                                       \
		(p) = malloc(size);                                                                \
		if (!(p))                                                                          \
			_exit(2);                                                                  \
		memset((p), 7, (size));                                                            \
	} while (0)

SITE static void site_a(struct view *v)
{
	for (int k = 0; k < A_BLOCKS; k++) {
		TAKE(a_blocks[k], A_SIZE);
		took(v, A_SIZE, 1);
	}
}

SITE static void site_b(struct view *v)
{
	for (int k = 0; k < B_BLOCKS; k++) {
		TAKE(b_blocks[k], B_SIZE);
		took(v, B_SIZE, 0);
	}
}

SITE static void site_conn(struct view *v)
{
	TAKE(kids_conn, CONN_SIZE);
	took(v, CONN_SIZE, 0);
}

SITE static void site_own(struct view *v, size_t size, int before_ready)
{
	for (int k = 0; k < OWN_BLOCKS; k++) {
		TAKE(own[k], size);
		took(v, size, before_ready);
	}
}

SITE static void *site_grow(void *p, struct view *v)
{
	void *q = realloc(p, 5000);

	if (!q)
		_exit(2);
	/* one free of the inherited block, one allocation of the new one */
	gave(&v->start, B_SIZE, 1);
	gave(&v->ready, B_SIZE, 1);
	took(v, 5000, 0);
	return q;
}

/* Free own[k] for every other k. */
static void free_half_own(struct view *v, size_t size)
{
	for (int k = 0; k < OWN_BLOCKS; k += 2) {
		free(own[k]);
		gave(&v->start, size, 1);
		gave(&v->ready, size, 1);
	}
}

/* A worker's heap at its fork: the parent's, in both views. */
static struct view inherit(const struct view *parent)
{
	struct view v = {0};

	v.start.inherited = v.start.live = parent->start.live;
	v.start.inherited_bytes = v.start.live_bytes = parent->start.live_bytes;
	v.ready.inherited = v.ready.live = parent->ready.live;
	v.ready.inherited_bytes = v.ready.live_bytes = parent->ready.live_bytes;
	return v;
}

/* Free n of the A blocks from index first: known to the start view only. */
static void free_a(struct view *v, int first, int n)
{
	for (int k = first; k < first + n; k++) {
		free(a_blocks[k]);
		gave(&v->start, A_SIZE, 1);
		gave(&v->ready, A_SIZE, 0);
	}
}

static void early_worker(int index, const struct view *parent)
{
	struct view v = inherit(parent);

	/* attached at the ready point, it inherited nothing the ready view knows */
	memset(&v.ready, 0, sizeof(v.ready));
	wait_usr1();
	free_a(&v, index * 3, 3);
	site_own(&v, 64, 0);
	free_half_own(&v, 64);
	say("early", 0, index, &v);
	wait_usr1();
	_exit(0);
}

SITE static void site_child(void)
{
	struct view v = {0};
	void *c[C_BLOCKS];

	for (int k = 0; k < C_BLOCKS; k++) {
		TAKE(c[k], 128 + (size_t)k);
		took(&v, 128 + (size_t)k, 0);
	}
	for (int k = 0; k < C_BLOCKS; k += 2) {
		free(c[k]);
		gave(&v.start, 128 + (size_t)k, 1);
		gave(&v.ready, 128 + (size_t)k, 1);
	}
	say("child", 0, 0, &v);
	_exit(0);
}

static void worker(int round, int index, const struct view *parent, int go_fd, int done_fd,
		   const char *exec_prog, const char *self)
{
	struct view v = inherit(parent);
	size_t size = 100 * (size_t)(index + 1);
	char byte = 1;

	free_a(&v, 20 + index % 10, 2);
	for (int k = 0; k < 3; k++) {
		free(b_blocks[10 * round + 3 * index + k]);
		gave(&v.start, B_SIZE, 1);
		gave(&v.ready, B_SIZE, 1);
	}
	free(kids_conn);
	gave(&v.start, CONN_SIZE, 1);
	gave(&v.ready, CONN_SIZE, 1);
	b_blocks[B_BLOCKS - 1] = site_grow(b_blocks[B_BLOCKS - 1], &v);
	site_own(&v, size, 0);
	free_half_own(&v, size);
	say("worker", round, index, &v);
	if (write(done_fd, &byte, 1) != 1)
		_exit(3);
	/* until the parent closes its end */
	while (read(go_fd, &byte, 1) < 0 && errno == EINTR)
		;
	if (exec_prog && index == 0)
		execl("/bin/sh", "sh", "-c", exec_prog, (char *)NULL);
	if (exec_prog && index == 1)
		execl(self, self, "--child", (char *)NULL);
	_exit(exec_prog && index < 2 ? 4 : 0);
}

int main(int argc, char **argv)
{
	struct view v = {0};
	const char *exec_prog = NULL;
	pid_t kids[MAX_KIDS], early[MAX_KIDS];
	int nearly = 0, rounds = 1, workers = 3;
	struct sigaction sa = {.sa_handler = on_usr1};
	sigset_t usr1;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--child")) {
			site_child();
		} else if (i + 1 < argc && !strcmp(argv[i], "--early")) {
			nearly = atoi(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--rounds")) {
			rounds = atoi(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--workers")) {
			workers = atoi(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--exec")) {
			exec_prog = argv[++i];
		} else {
			fprintf(stderr, "usage: preforker [--early E] [--rounds R] [--workers N] "
					"[--exec PROG] | --child\n");
			return 2;
		}
	}
	if (nearly < 0 || nearly > MAX_KIDS || workers < 2 || workers > 3 || rounds < 1 ||
	    rounds > 2) {
		fprintf(stderr, "preforker: 0-%d early workers, 2-3 workers, 1-2 rounds\n",
			MAX_KIDS);
		return 2;
	}
	/* SIGUSR1 is blocked but while sigsuspend waits: none is missed */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	sigaction(SIGUSR1, &sa, NULL);

	site_a(&v);
	for (int i = 0; i < nearly; i++) {
		early[i] = fork();
		if (early[i] < 0)
			return 1;
		if (early[i] == 0)
			early_worker(i, &v);
	}
	printf("ready %d\n", (int)getpid());
	wait_usr1();
	site_b(&v);
	for (int i = 0; i < nearly; i++)
		kill(early[i], SIGUSR1);
	for (int r = 1; r <= rounds; r++) {
		int go[2], done[2];
		char byte;

		if (pipe(go) || pipe(done))
			return 1;
		for (int i = 0; i < workers; i++) {
			site_conn(&v);
			kids[i] = fork();
			if (kids[i] < 0)
				return 1;
			if (kids[i] == 0) {
				close(go[1]);
				close(done[0]);
				worker(r, i, &v, go[0], done[1], r == rounds ? exec_prog : NULL,
				       argv[0]);
			}
			free(kids_conn);
			gave(&v.start, CONN_SIZE, 1);
			gave(&v.ready, CONN_SIZE, 1);
		}
		close(go[0]);
		close(done[1]);
		for (int i = 0; i < workers; i++) {
			if (read(done[0], &byte, 1) != 1)
				return 1;
		}
		printf("round %d done\n", r);
		wait_usr1();
		close(go[1]);
		close(done[0]);
		for (int i = 0; i < workers; i++) {
			int status;

			if (waitpid(kids[i], &status, 0) != kids[i] || !WIFEXITED(status) ||
			    WEXITSTATUS(status))
				return 1;
		}
		printf("round %d reaped\n", r);
		wait_usr1();
	}
	say("parent", 0, 0, &v);
	for (int i = 0; i < nearly; i++) {
		int status;

		kill(early[i], SIGUSR1);
		if (waitpid(early[i], &status, 0) != early[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			return 1;
	}
	wait_usr1();
	return 0;
}
