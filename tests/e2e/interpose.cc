// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * C++ target for the interposer tests (run with jemalloc or tcmalloc in
 * LD_PRELOAD, or without): every way C++ code and jemalloc's own API hand a
 * block back, each from a named site (site_*), with what it did tallied per
 * site and printed as one "expect {json}" line. Sized and aligned deletes are
 * what an interposing allocator serves without calling its free.
 * jemalloc's mallocx family is looked up with dlsym: only where it exists.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <new>
#include <signal.h>
#include <unistd.h>

#define SITE __attribute__((noinline, noclone))

struct Obj {
	long v[6]; /* 48 bytes: `delete o` is the sized delete */
};

struct alignas(64) Aligned {
	char c[128]; /* the sized, aligned delete */
};

struct Tally {
	const char *site;
	unsigned long allocations, frees, bytes_allocated, bytes_freed;
};

static Tally tallies[8];
static int ntallies;

static Tally *tally(const char *site)
{
	tallies[ntallies].site = site;
	return &tallies[ntallies++];
}

static void alloc(Tally *t, unsigned long size)
{
	t->allocations++;
	t->bytes_allocated += size;
}

static void freed(Tally *t, unsigned long size)
{
	t->frees++;
	t->bytes_freed += size;
}

static void *volatile sink;

SITE static void site_new_sized(Obj **keep)
{
	Tally *t = tally("site_new_sized");

	for (int i = 0; i < 200; i++) {
		Obj *o = new Obj;
		o->v[0] = i;
		alloc(t, sizeof(Obj));
		if (i < 150) {
			delete o;
			freed(t, sizeof(Obj));
		} else {
			keep[i - 150] = o;
		}
	}
}

SITE static void site_new_array()
{
	Tally *t = tally("site_new_array");

	for (int i = 0; i < 100; i++) {
		char *p = new char[1000];
		p[0] = (char)i;
		sink = p;
		alloc(t, 1000);
		delete[] p;
		freed(t, 1000);
	}
}

SITE static void site_allocator()
{
	Tally *t = tally("site_allocator");
	std::allocator<long> a;

	for (int i = 0; i < 100; i++) {
		long *p = a.allocate(25);
		p[0] = i;
		sink = p;
		alloc(t, 25 * sizeof(long));
		a.deallocate(p, 25);
		freed(t, 25 * sizeof(long));
	}
}

SITE static void site_aligned()
{
	Tally *t = tally("site_aligned");

	for (int i = 0; i < 50; i++) {
		Aligned *p = new Aligned;
		p->c[0] = (char)i;
		sink = p;
		alloc(t, sizeof(Aligned));
		delete p;
		freed(t, sizeof(Aligned));
	}
}

SITE static void site_nothrow()
{
	Tally *t = tally("site_nothrow");

	for (int i = 0; i < 30; i++) {
		void *p = operator new(72, std::nothrow);
		sink = p;
		alloc(t, 72);
		operator delete(p, std::nothrow);
		freed(t, 72);
	}
}

typedef void *(*mallocx_fn)(size_t, int);
typedef void *(*rallocx_fn)(void *, size_t, int);
typedef void (*sdallocx_fn)(void *, size_t, int);
typedef void (*dallocx_fn)(void *, int);
typedef size_t (*xallocx_fn)(void *, size_t, size_t, int);

static const char *error; /* the program's own check failed */

SITE static void site_mallocx(mallocx_fn mallocx, void **blocks, Tally *t)
{
	for (int i = 0; i < 40; i++) {
		blocks[i] = mallocx(500, 0);
		alloc(t, 500);
	}
}

SITE static void site_rallocx(rallocx_fn rallocx, void **blocks, Tally *old, Tally *t)
{
	for (int i = 0; i < 40; i++) {
		blocks[i] = rallocx(blocks[i], 900, 0);
		freed(old, 500);
		alloc(t, 900);
	}
}

/* Grow the 10 kept 900-byte blocks in place: to 905 (jemalloc's size class
 * holds it: success, a realloc to the same address) and to 1 MiB (fails:
 * the block keeps its size). Both outcomes must occur. */
SITE static void site_xallocx(xallocx_fn xallocx, void **keep, Tally *old, Tally *t)
{
	int grown = 0, kept = 0;

	for (int i = 0; i < 10; i++) {
		size_t want = i < 5 ? 905 : 1 << 20;

		if (xallocx(keep[i], want, 0, 0) >= want) {
			freed(old, 900);
			alloc(t, want);
			grown++;
		} else {
			kept++;
		}
	}
	if (!grown || !kept)
		error = "xallocx: expected both a success and a failure";
}

static void jemalloc_api(void **keep)
{
	mallocx_fn mallocx = (mallocx_fn)dlsym(RTLD_DEFAULT, "mallocx");
	rallocx_fn rallocx = (rallocx_fn)dlsym(RTLD_DEFAULT, "rallocx");
	sdallocx_fn sdallocx = (sdallocx_fn)dlsym(RTLD_DEFAULT, "sdallocx");
	dallocx_fn dallocx = (dallocx_fn)dlsym(RTLD_DEFAULT, "dallocx");
	xallocx_fn xallocx = (xallocx_fn)dlsym(RTLD_DEFAULT, "xallocx");
	void *blocks[40];
	Tally *m, *r;

	if (!mallocx || !rallocx || !sdallocx || !dallocx || !xallocx)
		return;
	m = tally("site_mallocx");
	r = tally("site_rallocx");
	site_mallocx(mallocx, blocks, m);
	site_rallocx(rallocx, blocks, m, r);
	for (int i = 0; i < 40; i++) {
		if (i < 15) {
			sdallocx(blocks[i], 900, 0);
			freed(r, 900);
		} else if (i < 30) {
			dallocx(blocks[i], 0);
			freed(r, 900);
		} else {
			keep[i - 30] = blocks[i];
		}
	}
	site_xallocx(xallocx, keep, r, tally("site_xallocx"));
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

int main()
{
	static Obj *keep_obj[50];
	static void *keep_x[10];
	char line[4096];
	size_t len;
	sigset_t usr1, old;

	/* "ready", then the sites on SIGUSR1 (once the tracer is attached) */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	signal(SIGUSR1, on_usr1);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (!go)
		sigsuspend(&old);
	site_new_sized(keep_obj);
	site_new_array();
	site_allocator();
	site_aligned();
	site_nothrow();
	jemalloc_api(keep_x);
	len = (size_t)snprintf(line, sizeof(line),
			       "expect {\"ok\": %s, \"error\": \"%s\", \"sites\": {",
			       error ? "false" : "true", error ? error : "");
	for (int i = 0; i < ntallies; i++) {
		const Tally *t = &tallies[i];

		len += (size_t)snprintf(line + len, sizeof(line) - len,
					"%s\"%s\": {\"allocations\": %lu, \"frees\": %lu, "
					"\"bytes_allocated\": %lu, \"bytes_freed\": %lu}",
					i ? ", " : "", t->site, t->allocations, t->frees,
					t->bytes_allocated, t->bytes_freed);
	}
	snprintf(line + len, sizeof(line) - len, "}}\n");
	/* write(2): stdout's buffer exists, but no allocation after the sites */
	return write(1, line, strlen(line)) < 0;
}
