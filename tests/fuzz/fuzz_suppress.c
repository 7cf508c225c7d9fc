// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: LeakSanitizer suppression files (src/common/suppress.c),
 * which memtracectl reads from the user and memtraced from any client of its
 * socket (a scan's body). A refusal is one "line N: ..." line; an accepted
 * file formats back into text that parses to the same patterns, and every
 * pattern matches without reading past its strings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/suppress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const subjects[] = {
	    "",		 "malloc",
	    "make_leak", "/usr/lib/libfoo.so.1",
	    "src/a.c",	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"};
	struct suppressions s, again;
	struct buf out = {0};
	char err[256];

	if (suppressions_parse((const char *)data, size, &s, err, sizeof(err))) {
		if (!memchr(err, 0, sizeof(err)) || strncmp(err, "line ", 5) || strchr(err, '\n'))
			abort();
		if (s.n || s.v)
			abort(); /* nothing is kept from a refused file */
		return 0;
	}
	suppressions_format(&s, &out);
	if (suppressions_parse((const char *)out.data, out.len, &again, err, sizeof(err)) ||
	    again.n != s.n)
		abort();
	for (uint32_t i = 0; i < s.n; i++) {
		if (strcmp(again.v[i].pattern, s.v[i].pattern))
			abort();
		for (size_t k = 0; k < sizeof(subjects) / sizeof(subjects[0]); k++)
			suppression_match(s.v[i].pattern, subjects[k]);
		/* a pattern is a string too */
		suppression_match(s.v[i].pattern, s.v[i].pattern);
	}
	suppressions_find(&s, "make_leak");
	buf_free(&out);
	suppressions_free(&again);
	suppressions_free(&s);
	return 0;
}
