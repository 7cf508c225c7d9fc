// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of LeakSanitizer's suppression format (src/common/suppress.c):
 * what a file may hold, the errors, and the template match, case by case as
 * sanitizer_common's TemplateMatch answers it (substring by default, `*`
 * wildcards taken leftmost, `^` and `$` anchors).
 */
#include "common/suppress.h"
#include "unit.h"

#include <stdlib.h>

static int parse(const char *text, struct suppressions *s, char *err)
{
	return suppressions_parse(text, strlen(text), s, err, 256);
}

TEST(file_format)
{
	struct suppressions s;
	char err[256];
	struct buf out = {0};

	CHECK(!parse("# a comment\n"
		     "\n"
		     "leak:libfoo.so\n"
		     "   leak:^bar_*_alloc$   \t\n"
		     "\t# indented comment\n"
		     "leak:src/baz.c\r\n"
		     "leak:last line without newline",
		     &s, err));
	CHECK_EQ_U64(s.n, 4);
	if (s.n == 4) {
		CHECK_STR(s.v[0].pattern, "libfoo.so");
		CHECK_STR(s.v[1].pattern, "^bar_*_alloc$");
		CHECK_STR(s.v[2].pattern, "src/baz.c");
		CHECK_STR(s.v[3].pattern, "last line without newline");
	}
	/* what the client sends reads back the same */
	suppressions_format(&s, &out);
	{
		struct suppressions again;

		CHECK(
		    !suppressions_parse((const char *)out.data, out.len, &again, err, sizeof(err)));
		CHECK_EQ_U64(again.n, s.n);
		for (uint32_t i = 0; i < s.n && i < again.n; i++)
			CHECK_STR(again.v[i].pattern, s.v[i].pattern);
		suppressions_free(&again);
	}
	buf_free(&out);
	suppressions_free(&s);
	CHECK(!parse("", &s, err));
	CHECK_EQ_U64(s.n, 0);
	suppressions_free(&s);
}

TEST(file_errors)
{
	struct suppressions s;
	char err[256];

	CHECK(parse("leak:a\nrace:foo\n", &s, err) == -1);
	CHECK_STR(err, "line 2: 'race' is not a leak suppression (only leak:PATTERN applies to "
		       "leaks)");
	CHECK_EQ_U64(s.n, 0);
	CHECK(parse("\n\njust words\n", &s, err) == -1);
	CHECK_STR(err, "line 3: expected leak:PATTERN, got 'just words'");
	CHECK(parse("Leak:x\n", &s, err) == -1);
	CHECK(suppressions_parse("leak:a\0b\n", 9, &s, err, sizeof(err)) == -1);
	CHECK_STR(err, "line 1: NUL byte");
	{
		char *big = malloc(SUPPRESS_MAX_PATTERN + 16);

		memcpy(big, "leak:", 5);
		memset(big + 5, 'x', SUPPRESS_MAX_PATTERN + 1);
		big[SUPPRESS_MAX_PATTERN + 6] = '\0';
		CHECK(parse(big, &s, err) == -1);
		free(big);
	}
	/* control characters are quoted as '?' */
	CHECK(parse("\x1b[31m\n", &s, err) == -1);
	CHECK_STR(err, "line 1: expected leak:PATTERN, got '?[31m'");
}

TEST(template_match)
{
	/* substring anywhere */
	CHECK(suppression_match("foo", "foo"));
	CHECK(suppression_match("foo", "xxfooyy"));
	CHECK(!suppression_match("foo", "fo"));
	/* anchors */
	CHECK(suppression_match("^foo", "foobar"));
	CHECK(!suppression_match("^foo", "xfoo"));
	CHECK(suppression_match("bar$", "foobar"));
	CHECK(!suppression_match("bar$", "barfoo"));
	CHECK(suppression_match("^foobar$", "foobar"));
	CHECK(!suppression_match("^foobar$", "foobarx"));
	/* wildcards */
	CHECK(suppression_match("a*c", "abc"));
	CHECK(suppression_match("a*c", "ac"));
	CHECK(!suppression_match("a*c", "ca"));
	CHECK(suppression_match("*", "anything"));
	CHECK(suppression_match("^*x", "abx"));
	CHECK(suppression_match("lib*.so", "/usr/lib/libfoo.so.1"));
	CHECK(suppression_match("a*$", "abc"));
	/* LSan takes each piece at its leftmost place: no backtracking */
	CHECK(!suppression_match("a*b$", "abab"));
	CHECK(suppression_match("a*b$", "aab"));
	/* an empty string never matches; an empty pattern matches anything else */
	CHECK(!suppression_match("foo", ""));
	CHECK(!suppression_match("foo", NULL));
	CHECK(suppression_match("", "x"));
}

TEST(find_first)
{
	struct suppressions s;
	char err[256];

	CHECK(!parse("leak:zzz\nleak:alloc\nleak:make_alloc\n", &s, err));
	CHECK_EQ_U64(suppressions_find(&s, "make_alloc"), 1);
	CHECK_EQ_U64(suppressions_find(&s, "zzz_top"), 0);
	CHECK(suppressions_find(&s, "other") == -1);
	CHECK(suppressions_find(NULL, "other") == -1);
	suppressions_free(&s);
}

UNIT_MAIN()
