// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Memory for the core's big tables (see pages.h). */
#include "daemon/core/pages.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* From this size on, a table has pages of its own. */
#define PAGES_MIN (64 << 10)

void *pages_alloc(size_t n)
{
	void *p;

	if (n < PAGES_MIN)
		return calloc(1, n ? n : 1);
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *pages_realloc(void *p, size_t n, size_t m)
{
	void *q;

	if (!p)
		return pages_alloc(m);
	if (n < PAGES_MIN && m < PAGES_MIN) {
		q = realloc(p, m ? m : 1);
		if (q && m > n)
			memset((char *)q + n, 0, m - n);
		return q;
	}
	if (n >= PAGES_MIN && m >= PAGES_MIN) {
		/* the kernel moves the pages, if it must, without copying them;
		 * pages past the old end are new, so zero */
		q = mremap(p, n, m, MREMAP_MAYMOVE);
		if (q == MAP_FAILED)
			return NULL;
		if (m < n) {
			/* what a later growth would find past the end: zero */
			size_t page = (size_t)sysconf(_SC_PAGESIZE),
			       end = (m + page - 1) / page * page;

			memset((char *)q + m, 0, (end < n ? end : n) - m);
		}
		return q;
	}
	/* across the threshold: a copy */
	q = pages_alloc(m);
	if (!q)
		return NULL;
	memcpy(q, p, n < m ? n : m);
	pages_free(p, n);
	if (m >= PAGES_MIN) {
		/* the last of its copies in malloc's heap is a hole now, and so
		 * are the ones before it that nothing reused: their pages go
		 * back (glibc gives back the whole free pages inside its heap) */
		malloc_trim(0);
	}
	return q;
}

void pages_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n < PAGES_MIN)
		free(p);
	else
		munmap(p, n);
}
