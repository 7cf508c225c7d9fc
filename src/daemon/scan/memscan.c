// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading a stopped process's memory into the marking (see memscan.h). The
 * plan: the pages of each mapping that can hold what the program wrote
 * (PAGEMAP_SCAN), less the dead part of each thread's stack, plus the live
 * blocks wherever they are; then batches of up to BATCH_IOVS ranges and
 * BATCH_BYTES bytes per process_vm_readv, and /proc/PID/mem for what that
 * refuses (it reads protected pages a program may still unprotect).
 */
#include "daemon/scan/memscan.h"
#include "daemon/scan/reach.h"
#include "daemon/proc/kroots.h"
#include "daemon/proc/smaps.h"
#include "common/util.h"
#include "common/search.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE	    4096ull
#define BATCH_BYTES MEMSCAN_BUFFER
#define BATCH_IOVS  1024

/* PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h), defined here for older headers. */
#ifndef PAGEMAP_SCAN
#define PAGE_IS_FILE	(1 << 2)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

struct range {
	uint64_t start, end;
};

struct ranges {
	struct range *v;
	size_t n, cap;
};

static void add_range(struct ranges *l, uint64_t start, uint64_t end)
{
	if (start >= end)
		return;
	if (l->n && l->v[l->n - 1].end == start) {
		l->v[l->n - 1].end = end;
		return;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (struct range){start, end};
}

static int range_cmp(const void *x, const void *y)
{
	const struct range *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Sort and merge overlapping or touching ranges. */
static void normalize(struct ranges *l)
{
	size_t k = 0;

	qsort(l->v, l->n, sizeof(*l->v), range_cmp);
	for (size_t i = 0; i < l->n; i++) {
		if (k && l->v[i].start <= l->v[k - 1].end) {
			if (l->v[i].end > l->v[k - 1].end)
				l->v[k - 1].end = l->v[i].end;
			continue;
		}
		l->v[k++] = l->v[i];
	}
	l->n = k;
}

struct scan {
	struct reach *r;
	int pid;
	int pagemap_fd, mem_fd;
	int pagemap_scan; /* 1 works, 0 untried, -1 not supported: plain entries */
	struct memscan_stats *st;
	struct ranges roots;	/* pages to read as such */
	struct ranges filepage; /* unchanged pages of private file mappings: only blocks in them */
	struct ranges covered;	/* mappings that can be read at all */
	uint8_t *buf;
	int gone; /* the process exited meanwhile */
};

/* Pages of [start, end) holding data, with whether they are the file's own, to fn. */
typedef void page_fn(struct scan *s, uint64_t start, uint64_t end, int file);

static int pages_by_scan(struct scan *s, uint64_t start, uint64_t end, page_fn *fn)
{
	struct page_region v[512];

	while (start < end) {
		struct pm_scan_arg a = {
		    .size = sizeof(a),
		    .start = start,
		    .end = end,
		    .vec = (uint64_t)(uintptr_t)v,
		    .vec_len = ARRAY_SIZE(v),
		    /* touched pages only: present (not the shared zero page) or swapped */
		    .category_inverted = PAGE_IS_PFNZERO,
		    .category_mask = PAGE_IS_PFNZERO,
		    .category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		    .return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_FILE,
		};
		int n = ioctl(s->pagemap_fd, PAGEMAP_SCAN, &a);

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++)
			fn(s, v[i].start, v[i].end,
			   (v[i].categories & PAGE_IS_FILE) &&
			       !(v[i].categories & PAGE_IS_SWAPPED));
		if (a.walk_end <= start)
			break;
		start = a.walk_end;
	}
	return 0;
}

/* The same from plain pagemap entries (bit 63 present, 62 swapped, 61 a file's page). */
static int pages_by_entries(struct scan *s, uint64_t start, uint64_t end, page_fn *fn)
{
	uint64_t e[4096], run_start = 0;
	int run_file = -1;

	for (uint64_t page = start; page < end;) {
		size_t want = (size_t)((end - page) / PAGE);
		ssize_t got;

		if (want > ARRAY_SIZE(e))
			want = ARRAY_SIZE(e);
		got = pread(s->pagemap_fd, e, want * 8, (off_t)(page / PAGE * 8));
		if (got <= 0)
			return -1;
		for (ssize_t i = 0; i < got / 8; i++, page += PAGE) {
			int data = (e[i] >> 63 & 1) || (e[i] >> 62 & 1);
			int file = data ? (int)((e[i] >> 61 & 1) && !(e[i] >> 62 & 1)) : -1;

			if (file != run_file) {
				if (run_file >= 0)
					fn(s, run_start, page, run_file);
				run_start = page;
				run_file = file;
			}
		}
	}
	if (run_file >= 0)
		fn(s, run_start, end, run_file);
	return 0;
}

static void plan_private(struct scan *s, uint64_t start, uint64_t end, int file)
{
	/* a private mapping's page still the file's: nothing the program wrote */
	add_range(file ? &s->filepage : &s->roots, start, end);
}

static void plan_shared(struct scan *s, uint64_t start, uint64_t end, int file)
{
	(void)file; /* shared pages are what anyone wrote, file or not */
	add_range(&s->roots, start, end);
}

/* The kinds of mapping the plan tells apart, from its maps line and VmFlags. */
static int is_shared(const struct smaps_entry *e)
{
	return e->map.perms[3] == 's' || (e->vmflags & SMAPS_VM_SHARED);
}

static int is_special(const struct smaps_entry *e)
{
	static const char *const names[] = {"[vvar]", "[vvar_vclock]", "[vdso]", "[vsyscall]"};

	for (size_t i = 0; e->map.path && !e->map.inode && i < ARRAY_SIZE(names); i++)
		if (!strcmp(e->map.path, names[i]))
			return 1;
	return 0;
}

static int plan_mapping(struct scan *s, const struct smaps_entry *m, uint64_t from)
{
	page_fn *fn = is_shared(m) ? plan_shared : plan_private;
	uint64_t end = m->map.end;
	int rc = -1;

	if (from >= end)
		return 0;
	if (s->pagemap_scan >= 0) {
		rc = pages_by_scan(s, from, end, fn);
		if (rc && s->pagemap_scan == 0 && (errno == ENOTTY || errno == EINVAL))
			s->pagemap_scan = -1; /* a kernel before 6.7 */
		else if (!rc)
			s->pagemap_scan = 1;
	}
	if (rc && s->pagemap_scan < 0)
		rc = pages_by_entries(s, from, end, fn);
	if (rc) /* no page map: read it all */
		fn(s, from, end, 0);
	return 0;
}

/* Blocks (sorted) intersected with sorted ranges, into the roots' list. */
static void blocks_in(struct scan *s, const struct ranges *l)
{
	const struct reach *r = s->r;
	size_t k = 0;

	for (uint32_t i = 0; i < r->n && k < l->n; i++) {
		uint64_t a = r->blocks[i].addr, b = a + r->blocks[i].size;

		while (k < l->n && l->v[k].end <= a)
			k++;
		for (size_t j = k; j < l->n && l->v[j].start < b; j++)
			add_range(&s->roots, a > l->v[j].start ? a : l->v[j].start,
				  b < l->v[j].end ? b : l->v[j].end);
	}
}

/* Blocks not inside readable mappings: they cannot be scanned, never reported. */
static void blocks_outside(struct scan *s)
{
	struct reach *r = s->r;
	size_t k = 0;

	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t a = r->blocks[i].addr, b = a + (r->blocks[i].size ? r->blocks[i].size : 1);
		uint64_t at = a;

		while (k < s->covered.n && s->covered.v[k].end <= a)
			k++;
		for (size_t j = k; j < s->covered.n && s->covered.v[j].start < b && at < b; j++) {
			if (s->covered.v[j].start > at)
				break;
			at = s->covered.v[j].end;
		}
		if (at < b) {
			reach_unread(r, at > a ? at : a, b);
			s->st->blocks_unread++;
		}
	}
}

/* [addr, addr + len) could not be read: blocks in it are unread, the rest is counted. */
static void unreadable(struct scan *s, uint64_t addr, uint64_t len)
{
	struct reach *r = s->r;
	uint64_t in_blocks = 0;
	/* the first block starting at or after addr, and the one before, which may reach in */
	uint32_t lo = (uint32_t)SEARCH_FIRST(0, r->n, r->blocks[mid].addr >= addr);

	for (uint32_t i = lo ? lo - 1 : 0; i < r->n && r->blocks[i].addr < addr + len; i++) {
		uint64_t a = r->blocks[i].addr, b = a + r->blocks[i].size;

		if (b <= addr)
			continue;
		if (!(r->flags[i] & REACH_F_UNREAD))
			s->st->blocks_unread++;
		reach_unread(r, a, b);
		in_blocks += (b < addr + len ? b : addr + len) - (a > addr ? a : addr);
	}
	s->st->bytes_unreadable += len - (in_blocks < len ? in_blocks : len);
}

/* What process_vm_readv refused: /proc/PID/mem, a page at a time. */
static void read_slowly(struct scan *s, uint64_t addr, uint64_t len)
{
	while (len) {
		uint64_t n = PAGE - (addr % PAGE);
		ssize_t got;

		if (n > len)
			n = len;
		got = s->mem_fd >= 0 ? pread(s->mem_fd, s->buf, n, (off_t)addr) : -1;
		if (got == (ssize_t)n) {
			reach_scan(s->r, addr, s->buf, n);
			s->st->bytes_scanned += n;
		} else {
			unreadable(s, addr, n);
		}
		addr += n;
		len -= n;
	}
}

/* Read and scan ranges v[0..n), each at most BATCH_BYTES, in one call (or more). */
static void read_batch(struct scan *s, const struct range *v, size_t n)
{
	struct iovec local, remote[BATCH_IOVS];
	size_t total = 0;

	while (n) {
		ssize_t got;
		size_t off = 0, i;

		total = 0;
		for (i = 0; i < n; i++) {
			remote[i].iov_base = (void *)(uintptr_t)v[i].start;
			remote[i].iov_len = (size_t)(v[i].end - v[i].start);
			total += remote[i].iov_len;
		}
		local.iov_base = s->buf;
		local.iov_len = total;
		got = process_vm_readv(s->pid, &local, 1, remote, (unsigned long)n, 0);
		if (got < 0 && errno == ESRCH) {
			s->gone = 1;
			return;
		}
		if (got < 0)
			got = 0;
		/* scan what came, range by range; the range that failed goes slowly */
		for (i = 0; i < n; i++) {
			size_t len = remote[i].iov_len;

			if (off + len <= (size_t)got) {
				reach_scan(s->r, v[i].start, s->buf + off, len);
				s->st->bytes_scanned += len;
				off += len;
				continue;
			}
			if ((size_t)got > off) {
				size_t part = (size_t)got - off;

				reach_scan(s->r, v[i].start, s->buf + off, part);
				s->st->bytes_scanned += part;
				read_slowly(s, v[i].start + part, len - part);
			} else {
				read_slowly(s, v[i].start, len);
			}
			i++;
			break;
		}
		v += i;
		n -= i;
	}
}

static int read_all(struct scan *s, int (*expired)(void *), void *arg)
{
	struct range batch[BATCH_IOVS];
	size_t nb = 0, bytes = 0;

	for (size_t i = 0; i < s->roots.n; i++) {
		uint64_t a = s->roots.v[i].start, end = s->roots.v[i].end;

		while (a < end) {
			uint64_t piece = end - a;

			if (piece > BATCH_BYTES - bytes)
				piece = BATCH_BYTES - bytes;
			batch[nb++] = (struct range){a, a + piece};
			bytes += piece;
			a += piece;
			if (nb == BATCH_IOVS || bytes == BATCH_BYTES) {
				read_batch(s, batch, nb);
				nb = bytes = 0;
				if (s->gone || (expired && expired(arg)))
					return -1;
			}
		}
	}
	if (nb)
		read_batch(s, batch, nb);
	return expired && expired(arg) ? -1 : 0;
}

/*
 * Is mapping i a stack, whose part below a stack pointer is dead? The main
 * thread's ([stack]), or anonymous memory right above a guard page (how
 * glibc, musl and coroutine libraries map stacks). Anything else holding a
 * stack pointer (an arena with a stack inside, from before tracing began)
 * is scanned whole: that only keeps more alive.
 */
static int is_stack(const struct smaps *m, size_t i)
{
	const struct smaps_entry *e = &m->v[i], *below = i ? &m->v[i - 1] : NULL;

	if (e->map.path && !e->map.inode && !strcmp(e->map.path, "[stack]"))
		return 1;
	return !e->map.path && !e->map.inode && !is_shared(e) && below &&
	       below->map.end == e->map.start && below->map.perms[0] == '-' &&
	       below->map.perms[1] == '-' && !below->map.inode;
}

int memscan_run(struct reach *r, int pid, const struct memscan_thread *threads, size_t nthreads,
		uint8_t *buf, int (*expired)(void *arg), void *arg, struct memscan_stats *st,
		char *err, size_t errlen)
{
	struct scan s = {.r = r, .pid = pid, .pagemap_fd = -1, .mem_fd = -1, .st = st};
	struct smaps maps;
	uint64_t *lowcut;
	char path[64], why[256];
	int rc;

	memset(st, 0, sizeof(*st));
	rc = smaps_read(pid, &maps, why, sizeof(why));
	if (!rc && !maps.n) {
		smaps_free(&maps);
		rc = -ESRCH; /* a process always has mappings: this one is a zombie */
	}
	if (rc) {
		if (rc == -ENOENT || rc == -ESRCH)
			snprintf(err, errlen, "cannot read /proc/%d/smaps: it exited", pid);
		else
			snprintf(err, errlen, "%s", why);
		return -1;
	}
	/* registers, and where each thread's stack begins */
	lowcut = xmalloc((maps.n ? maps.n : 1) * sizeof(*lowcut));
	for (size_t i = 0; i < maps.n; i++)
		lowcut[i] = 0;
	for (size_t t = 0; t < nthreads; t++) {
		uint64_t sp = threads[t].sp,
			 cut = sp > MEMSCAN_RED_ZONE ? sp - MEMSCAN_RED_ZONE : 0;

		reach_scan_root(r, threads[t].words, threads[t].nwords);
		st->bytes_scanned += 8 * threads[t].nwords;
		if (reach_find(r, sp, NULL) >= 0) {
			/* a stack inside a live block (a coroutine's): the block is in use */
			reach_mark_containing(r, sp);
			continue;
		}
		for (size_t i = 0; i < maps.n; i++)
			if (sp >= maps.v[i].map.start && sp < maps.v[i].map.end &&
			    is_stack(&maps, i) && (!lowcut[i] || (cut & ~7ull) < lowcut[i]))
				lowcut[i] = cut & ~7ull;
	}
	/* what the kernel holds for it: epoll registrations' data, timers' values */
	{
		struct kroots k = {0};

		if (!kroots_read(pid, &k)) {
			reach_scan_root(r, k.v, k.n);
			st->bytes_scanned += 8 * k.n;
		}
		kroots_free(&k);
	}
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	s.pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	s.mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s.pagemap_fd < 0)
		s.pagemap_scan = -1;
	for (size_t i = 0; i < maps.n; i++) {
		const struct smaps_entry *m = &maps.v[i];
		uint64_t from = m->map.start > lowcut[i] ? m->map.start : lowcut[i];

		if (is_special(m))
			continue;
		if (m->vmflags & (SMAPS_VM_IO | SMAPS_VM_PFNMAP | SMAPS_VM_UFFD)) {
			/* never read: device memory, or a fault that a stopped thread would serve
			 */
			if (m->map.perms[1] == 'w')
				st->bytes_unreadable += m->map.end - m->map.start;
			continue;
		}
		add_range(&s.covered, m->map.start, m->map.end);
		if (!is_shared(m) && !m->rss && !m->swap)
			continue; /* nothing touched */
		plan_mapping(&s, m, from);
		st->mappings++;
	}
	normalize(&s.covered);
	normalize(&s.filepage);
	blocks_in(&s, &s.filepage);
	blocks_outside(&s);
	normalize(&s.roots);
	s.buf = buf;
	rc = 0;
	if (read_all(&s, expired, arg) || s.gone) {
		snprintf(err, errlen, "%s",
			 s.gone ? "it exited during the scan"
				: "the pause bound was reached while reading its memory");
		rc = -1;
	}
	free(s.roots.v);
	free(s.filepage.v);
	free(s.covered.v);
	free(lowcut);
	if (s.pagemap_fd >= 0)
		close(s.pagemap_fd);
	if (s.mem_fd >= 0)
		close(s.mem_fd);
	smaps_free(&maps);
	return rc;
}
