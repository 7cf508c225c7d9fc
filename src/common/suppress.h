/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * LeakSanitizer's suppression files, so that a project's existing file works
 * with `memtracectl leaks --unreachable --suppressions FILE`: one `leak:PATTERN`
 * per line, `#` comments, blank lines, spaces and tabs around a line ignored.
 * A pattern matches as LSan's does (sanitizer_common's TemplateMatch): its
 * pieces between `*` are found in order, leftmost first; a leading `^` ties
 * the first piece to the start, a `$` the end; without either it matches
 * anywhere in the string. memtracectl parses the user's file (errors name the
 * line), and sends the patterns to memtraced, which parses them again: the
 * bytes come from a client, so the parser is bounded and fuzzed.
 */
#ifndef MEMTRACE_COMMON_SUPPRESS_H
#define MEMTRACE_COMMON_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define SUPPRESS_MAX_BYTES    (1u << 20) /* a suppression file, at most */
#define SUPPRESS_MAX_PATTERNS 4096
#define SUPPRESS_MAX_PATTERN  1024 /* bytes of one pattern */

struct suppression {
	char *pattern;		/* what follows "leak:" */
	uint64_t blocks, bytes; /* what it suppressed (the scan fills these) */
};

struct suppressions {
	struct suppression *v;
	uint32_t n;
};

/*
 * Parse len bytes of suppression text into s (overwritten). 0, or -1 with
 * "line N: reason" in err (s then empty). Lines of another kind (LSan's
 * sanitizers share the format: `race:`, `interceptor_via_fun:`) are an
 * error, as in LeakSanitizer, which knows only `leak`.
 */
int suppressions_parse(const char *text, size_t len, struct suppressions *s, char *err,
		       size_t errlen);

/* Does pattern match str (LSan's TemplateMatch)? An empty or NULL str never does. */
int suppression_match(const char *pattern, const char *str);

/* The first suppression whose pattern matches str, or -1. */
int suppressions_find(const struct suppressions *s, const char *str);

/* s as text suppressions_parse() reads back: "leak:PATTERN\n" per pattern. */
void suppressions_format(const struct suppressions *s, struct buf *out);

void suppressions_free(struct suppressions *s);

#endif
