/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Blocks whose reachability is known by construction, for the leak scan
 * (tests/e2e/test_scan.py): each kind comes from its own function, so a
 * report by allocating function says which case a block is.
 *
 *   make_reachable_list  a list held by a global                 reachable
 *   make_direct          blocks whose only pointers were dropped direct
 *   lost_list_head       the head of a list nobody holds         direct
 *   lost_list_node       the rest of that list                   indirect
 *   make_ring            a ring with no pointer from outside     indirect (LSan: each
 *                                                                 is held by another leak)
 *   thread_stack_block   held only by another thread's stack     reachable
 *   tls_block            held only by a thread-local variable    reachable
 *   register_block       held only by a register (r12) of a     reachable
 *                        thread waiting in a system call
 *   interior_block       held only by a pointer into its middle  possible
 *   interior_child       held only by that block                 possible
 *   preattach_child      held only by a block allocated before  reachable
 *                        the tracer attached (untraced memory)
 *
 * With --kernel-held, two more that only the kernel holds (LeakSanitizer,
 * inside the process, cannot see them, so its build is run without):
 *
 *   epoll_block          the data of an epoll registration       reachable
 *   timer_block          the value of a POSIX timer's signal     reachable
 *
 * At start it allocates the container for preattach_child and prints
 * "ready"; on the first SIGUSR1 (after the tracer attached) it builds every
 * case and prints "built" and what it expects as JSON; the second SIGUSR1
 * makes it exit (where a LeakSanitizer build reports: -fsanitize=leak).
 * --now builds at once. Sizes are multiples of 16: glibc's pointers to the
 * chunk after a block (an arena's top, its free lists) then never land
 * inside the block (docs/design.md, "Leaks told from live data").
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define REACHABLE_N   5
#define DIRECT_N      4
#define DIRECT_SIZE   48
#define LOST_NODES    3
#define RING_N	      3
#define STACK_N	      2
#define STACK_SIZE    80
#define TLS_SIZE      96
#define REG_SIZE      112
#define INTERIOR_SIZE 64
#define CHILD_SIZE    32
#define PRE_N	      2
#define PRE_SIZE      64
#define EPOLL_SIZE    128
#define TIMER_SIZE    144

struct node {
	struct node *next;
	char pad[40]; /* 48 bytes */
};

struct ring {
	struct ring *next;
	char pad[24]; /* 32 bytes */
};

#define NOINLINE __attribute__((noinline))

/* p escapes: the compiler may not drop the allocation (nothing else reads it) */
static inline void escape(void *p)
{
	__asm__ volatile("" ::"r"(p) : "memory");
}

static struct node *global_list;
static void *volatile interior_ptr; /* points 24 bytes into interior_block's block */
static void **preattach;	    /* the container, allocated before tracing began */
static __thread void *volatile tls_ptr;
static volatile int phase;
static volatile int stop_holders;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile int holders_ready;

/* The pointer a register holds, stored masked so that memory holds no pointer to it. */
#define MASK 0x5a5a5a5a5a5a5a5aull
static volatile uint64_t masked_for_register;
static struct timespec nap = {0, 20 * 1000 * 1000};
static volatile int register_ready; /* set once the pointer is in r12 alone */

/* Zero the dead stack below: what callees left there are copies of pointers. */
NOINLINE static void scrub_stack(void)
{
	volatile char junk[16384];

	memset((char *)junk, 0, sizeof(junk));
	__asm__ volatile("" ::"r"(junk) : "memory");
}

NOINLINE static void make_reachable_list(void)
{
	for (int i = 0; i < REACHABLE_N; i++) {
		struct node *n = malloc(sizeof(*n));

		n->next = global_list;
		global_list = n;
	}
}

NOINLINE static void make_direct(void)
{
	for (int i = 0; i < DIRECT_N; i++) {
		void *volatile p = malloc(DIRECT_SIZE);

		memset(p, 0, DIRECT_SIZE);
		p = NULL;
	}
}

NOINLINE static struct node *lost_list_node(struct node *next)
{
	struct node *n = malloc(sizeof(*n));

	memset(n, 0, sizeof(*n));
	n->next = next;
	return n;
}

NOINLINE static struct node *lost_list_head(struct node *next)
{
	struct node *n = malloc(sizeof(*n));

	memset(n, 0, sizeof(*n));
	n->next = next;
	return n;
}

NOINLINE static void make_lost_list(void)
{
	struct node *rest = NULL;
	struct node *volatile head;

	for (int i = 0; i < LOST_NODES; i++)
		rest = lost_list_node(rest);
	head = lost_list_head(rest);
	head = NULL;
	(void)head;
}

NOINLINE static void make_ring(void)
{
	struct ring *first = malloc(sizeof(*first)), *last = first;

	memset(first, 0, sizeof(*first));
	for (int i = 1; i < RING_N; i++) {
		struct ring *r = malloc(sizeof(*r));

		memset(r, 0, sizeof(*r));
		last->next = r;
		last = r;
	}
	last->next = first;
	escape(first);
}

NOINLINE static void *thread_stack_block(void)
{
	return malloc(STACK_SIZE);
}

/* Holds its blocks in locals on its own stack until told to stop. */
static void *stack_holder(void *arg)
{
	void *volatile held[STACK_N];

	(void)arg;
	for (int i = 0; i < STACK_N; i++)
		held[i] = thread_stack_block();
	pthread_mutex_lock(&lock);
	holders_ready++;
	pthread_cond_broadcast(&cond);
	while (!stop_holders)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < STACK_N; i++)
		held[i] = NULL;
	return (void *)held[0];
}

NOINLINE static void tls_block(void)
{
	tls_ptr = malloc(TLS_SIZE);
}

NOINLINE static void *register_block(void)
{
	return malloc(REG_SIZE);
}

/*
 * Holds its block in r12 alone: the pointer is kept masked in memory, the
 * stack below is zeroed, every scratch register cleared, and the thread
 * sleeps in nanosleep(2) (which keeps r12) with the pointer unmasked in r12
 * only, until told to stop.
 */
static void *register_holder(void *arg)
{
	(void)arg;
	masked_for_register = (uint64_t)(uintptr_t)register_block() ^ MASK;
	scrub_stack();
	__asm__ volatile(
	    "mov %[masked], %%r12\n\t"
	    "xor %[mask], %%r12\n\t"
	    "movq $0, %[masked]\n\t" /* memory holds no trace of it now */
	    "movl $1, %[ready]\n\t"  /* and build() may go on */
	    "xor %%eax, %%eax\n\t"
	    "xor %%ecx, %%ecx\n\t"
	    "xor %%edx, %%edx\n\t"
	    "xor %%esi, %%esi\n\t"
	    "xor %%r8d, %%r8d\n\t"
	    "xor %%r9d, %%r9d\n\t"
	    "xor %%r10d, %%r10d\n\t"
	    "xor %%r11d, %%r11d\n\t"
	    "1:\n\t"
	    "mov %[nr], %%eax\n\t"
	    "lea %[nap], %%rdi\n\t"
	    "xor %%esi, %%esi\n\t"
	    "syscall\n\t"
	    "cmpl $0, %[stop]\n\t"
	    "je 1b\n\t"
	    "xor %[mask], %%r12\n\t"
	    "mov %%r12, %[masked]\n\t"
	    : [masked] "+m"(masked_for_register), [ready] "=m"(register_ready)
	    : [mask] "r"(MASK), [nr] "i"(SYS_nanosleep), [nap] "m"(nap), [stop] "m"(stop_holders)
	    : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "memory", "cc");
	return NULL;
}

NOINLINE static void *interior_child(void)
{
	return malloc(CHILD_SIZE);
}

NOINLINE static void interior_block(void)
{
	char *p = malloc(INTERIOR_SIZE);

	memset(p, 0, INTERIOR_SIZE);
	*(void **)p = interior_child(); /* the child's only pointer is in the block */
	interior_ptr = p + 24;
}

NOINLINE static void *epoll_block(void)
{
	return malloc(EPOLL_SIZE);
}

NOINLINE static void *timer_block(void)
{
	return malloc(TIMER_SIZE);
}

/* Blocks whose only pointer the kernel keeps: an epoll registration's data,
 * a timer's signal value (never armed). */
NOINLINE static void kernel_held(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2};
	static int fds[2];
	timer_t timer;
	int ep = epoll_create1(0);

	if (ep < 0 || pipe(fds))
		abort();
	ev.data.ptr = epoll_block();
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev))
		abort();
	sev.sigev_value.sival_ptr = timer_block();
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		abort();
	memset(&ev, 0, sizeof(ev));
	memset(&sev, 0, sizeof(sev));
}

NOINLINE static void preattach_child(void)
{
	for (int i = 0; i < PRE_N; i++)
		preattach[i] = malloc(PRE_SIZE);
}

static void build(int kernel)
{
	pthread_t t;

	make_reachable_list();
	make_direct();
	make_lost_list();
	make_ring();
	tls_block();
	interior_block();
	preattach_child();
	if (kernel)
		kernel_held();
	pthread_create(&t, NULL, stack_holder, NULL);
	pthread_detach(t);
	pthread_create(&t, NULL, register_holder, NULL);
	pthread_detach(t);
	pthread_mutex_lock(&lock);
	while (holders_ready < 1)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	while (!register_ready)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	scrub_stack();
	printf("built {\"direct\": {\"make_direct\": [%d, %d], \"lost_list_head\": [1, %zu]}, "
	       "\"indirect\": {\"lost_list_node\": [%d, %zu], \"make_ring\": [%d, %zu]}, "
	       "\"possible\": {\"interior_block\": [1, %d], \"interior_child\": [1, %d]}, "
	       "\"reachable\": {\"make_reachable_list\": [%d, %zu], \"thread_stack_block\": "
	       "[%d, %d], \"tls_block\": [1, %d], \"register_block\": [1, %d], "
	       "\"preattach_child\": [%d, %d]%s}}\n",
	       DIRECT_N, DIRECT_N * DIRECT_SIZE, sizeof(struct node), LOST_NODES,
	       LOST_NODES * sizeof(struct node), RING_N, RING_N * sizeof(struct ring),
	       INTERIOR_SIZE, CHILD_SIZE, REACHABLE_N, REACHABLE_N * sizeof(struct node), STACK_N,
	       STACK_N * STACK_SIZE, TLS_SIZE, REG_SIZE, PRE_N, PRE_N * PRE_SIZE,
	       kernel ? ", \"epoll_block\": [1, 128], \"timer_block\": [1, 144]" : "");
	fflush(stdout);
}

static void on_usr1(int sig)
{
	(void)sig;
	phase++;
}

int main(int argc, char **argv)
{
	int now = 0, kernel = 0;
	struct sigaction sa = {.sa_handler = on_usr1};
	sigset_t block, old;

	for (int i = 1; i < argc; i++) {
		now |= !strcmp(argv[i], "--now");
		kernel |= !strcmp(argv[i], "--kernel-held");
	}
	sigaction(SIGUSR1, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	preattach = calloc(PRE_N, sizeof(void *));
	printf("ready %d\n", getpid());
	fflush(stdout);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (now)
		phase = 1;
	while (phase < 1)
		sigsuspend(&old);
	build(kernel);
	while (phase < 2)
		sigsuspend(&old);
	return 0; /* leaks stay: a LeakSanitizer build reports them here */
}
