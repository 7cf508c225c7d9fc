// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * LeakSanitizer suppression files: the parser and the pattern match (see
 * suppress.h). Written from LSan's documented behaviour, so that a pattern
 * suppresses here exactly what it suppresses there, quirks included (a piece
 * is taken at its leftmost occurrence, with no backtracking).
 */
#include "common/suppress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_error(char *err, size_t errlen, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int parse_error(char *err, size_t errlen, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!errlen)
		return -1;
	n = snprintf(err, errlen, "line %u: ", line);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Longest piece of a bad line quoted back in an error. */
#define QUOTE_MAX 40

/* A printable quote of a bad line: the text is the user's, or a client's. */
static void quote(char *dst, size_t cap, const char *p, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < cap; i++)
		dst[k++] = p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
	dst[k] = '\0';
}

int suppressions_parse(const char *text, size_t len, struct suppressions *s, char *err,
		       size_t errlen)
{
	const char *p = text, *end;
	uint32_t cap = 0;
	unsigned line = 0;

	memset(s, 0, sizeof(*s));
	if (errlen)
		err[0] = '\0';
	if (!len)
		return 0; /* text may then be NULL: no arithmetic on it */
	end = text + len;
	if (len > SUPPRESS_MAX_BYTES)
		return parse_error(err, errlen, 0, "more than %u bytes", SUPPRESS_MAX_BYTES);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *b = p, *e = nl ? nl : end;
		char q[QUOTE_MAX + 1];

		line++;
		p = nl ? nl + 1 : end;
		if (memchr(b, '\0', (size_t)(e - b))) {
			suppressions_free(s);
			return parse_error(err, errlen, line, "NUL byte");
		}
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (b == e || *b == '#')
			continue;
		if ((size_t)(e - b) < 5 || memcmp(b, "leak:", 5)) {
			const char *colon = memchr(b, ':', (size_t)(e - b));

			quote(q, sizeof(q), b, (size_t)(e - b));
			suppressions_free(s);
			if (colon)
				return parse_error(
				    err, errlen, line,
				    "'%.*s' is not a leak suppression (only leak:PATTERN "
				    "applies to leaks)",
				    (int)(colon - b) < QUOTE_MAX ? (int)(colon - b) : QUOTE_MAX, q);
			return parse_error(err, errlen, line, "expected leak:PATTERN, got '%s'", q);
		}
		b += 5;
		if ((size_t)(e - b) > SUPPRESS_MAX_PATTERN) {
			suppressions_free(s);
			return parse_error(err, errlen, line, "pattern longer than %u bytes",
					   SUPPRESS_MAX_PATTERN);
		}
		if (s->n == SUPPRESS_MAX_PATTERNS) {
			suppressions_free(s);
			return parse_error(err, errlen, line, "more than %u suppressions",
					   SUPPRESS_MAX_PATTERNS);
		}
		if (s->n == cap) {
			cap = cap ? 2 * cap : 16;
			s->v = xrealloc(s->v, cap * sizeof(*s->v));
		}
		s->v[s->n].pattern = xmalloc((size_t)(e - b) + 1);
		memcpy(s->v[s->n].pattern, b, (size_t)(e - b));
		s->v[s->n].pattern[e - b] = '\0';
		s->v[s->n].blocks = s->v[s->n].bytes = 0;
		s->n++;
	}
	return 0;
}

/* str starting with the n bytes of piece, as strstr would find them: the leftmost. */
static const char *find_piece(const char *str, const char *piece, size_t n)
{
	if (!n)
		return str;
	for (; *str; str++)
		if (*str == *piece && !strncmp(str, piece, n))
			return str;
	return NULL;
}

int suppression_match(const char *pattern, const char *str)
{
	int anchored = 0, after_star = 0;

	if (!str || !*str)
		return 0;
	if (*pattern == '^') {
		anchored = 1;
		pattern++;
	}
	while (*pattern) {
		const char *at;
		size_t n;

		if (*pattern == '*') {
			pattern++;
			anchored = 0;
			after_star = 1;
			continue;
		}
		if (*pattern == '$')
			return !*str || after_star;
		if (!*str)
			return 0;
		n = strcspn(pattern, "*$");
		at = find_piece(str, pattern, n);
		if (!at || (anchored && at != str))
			return 0;
		str = at + n;
		pattern += n;
		anchored = after_star = 0;
	}
	return 1;
}

int suppressions_find(const struct suppressions *s, const char *str)
{
	for (uint32_t i = 0; s && i < s->n; i++)
		if (suppression_match(s->v[i].pattern, str))
			return (int)i;
	return -1;
}

void suppressions_format(const struct suppressions *s, struct buf *out)
{
	for (uint32_t i = 0; i < s->n; i++)
		buf_printf(out, "leak:%s\n", s->v[i].pattern);
}

void suppressions_free(struct suppressions *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		free(s->v[i].pattern);
	free(s->v);
	memset(s, 0, sizeof(*s));
}
