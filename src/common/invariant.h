/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Invariants stated where they are relied on, checked in the sanitizer
 * build (make SAN=1 defines MEMTRACE_CHECK_INVARIANTS), so that the
 * end-to-end tests under ASan check them on real traces. A failed one is a
 * bug of ours: it names the file, line and condition, and aborts. In other
 * builds the condition is not evaluated.
 */
#ifndef MEMTRACE_INVARIANT_H
#define MEMTRACE_INVARIANT_H

#include <stdio.h>
#include <stdlib.h>

#ifdef MEMTRACE_CHECK_INVARIANTS
#define MT_CHECKING 1
#define MT_INVARIANT(cond)                                                                         \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "memtrace: invariant failed at %s:%d: %s\n", __FILE__,     \
				__LINE__, #cond);                                                  \
			abort();                                                                   \
		}                                                                                  \
	} while (0)
#else
#define MT_CHECKING 0
#define MT_INVARIANT(cond)                                                                         \
	do {                                                                                       \
		(void)sizeof(cond);                                                                \
	} while (0)
#endif

#endif
