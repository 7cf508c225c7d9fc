/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Binary search, written once for both programs: the symbol tables, the
 * process maps, the scan's blocks, the timeline, the string tables. A macro
 * rather than a function with a callback, so that the test reads as what it
 * is at each use ("maps[mid].end > addr") and costs no call.
 */
#ifndef MEMTRACE_SEARCH_H
#define MEMTRACE_SEARCH_H

#include <stddef.h>

/*
 * The first index in [lo, hi) for which cond holds, where cond is an
 * expression in the index named mid, false for a prefix of the range and true
 * for the rest, as on a sorted array: "a[mid].start > addr" finds the first
 * entry starting past addr, "a[mid].key >= key" the first not below key. hi
 * when cond holds nowhere. cond is evaluated O(log(hi - lo)) times, each with
 * lo <= mid < hi.
 */
#define SEARCH_FIRST(lo, hi, cond)                                                                 \
	({                                                                                         \
		size_t search_lo_ = (lo), search_hi_ = (hi);                                       \
		while (search_lo_ < search_hi_) {                                                  \
			size_t mid = search_lo_ + (search_hi_ - search_lo_) / 2;                   \
			if (cond)                                                                  \
				search_hi_ = mid;                                                  \
			else                                                                       \
				search_lo_ = mid + 1;                                              \
		}                                                                                  \
		search_lo_;                                                                        \
	})

#endif
