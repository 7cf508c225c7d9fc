// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Tests of how numbers, names and untrusted text look (src/ctl/render/format.c):
 * binary byte counts, tracemalloc's sizes and statistic lines, durations,
 * terminal-safe text, and frame and site names for folded lines.
 */
#include "unit.h"

#include "ctl/render/format.h"

#include <stdlib.h>

/* Append with fn into a NUL-terminated string the caller frees. */
static char *appended(void (*fn)(struct buf *out, const char *s), const char *s)
{
	struct buf b = {0};

	fn(&b, s);
	buf_put(&b, "", 1);
	return (char *)b.data;
}

static char *frame_name(const struct snap_frame *f, int site)
{
	struct buf b = {0};

	if (site)
		format_site_name(&b, f);
	else
		format_frame_name(&b, f);
	buf_put(&b, "", 1);
	return (char *)b.data;
}

TEST(test_bytes)
{
	static const struct {
		uint64_t bytes;
		const char *text;
	} cases[] = {
	    {0, "0 B"},
	    {1023, "1023 B"},
	    {1024, "1.0 KiB"},
	    {1536, "1.5 KiB"},
	    {1048575, "1.0 MiB"},
	    {104857600, "100.0 MiB"},
	    {1073741824, "1.0 GiB"},
	    {UINT64_MAX, "16.0 EiB"},
	};
	char text[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		format_bytes(text, sizeof(text), cases[i].bytes);
		CHECK_STR(text, cases[i].text);
	}
}

TEST(test_tracemalloc_sizes)
{
	char s[256];

	format_size(s, sizeof(s), 117, 0);
	CHECK_STR(s, "117 B");
	format_size(s, sizeof(s), 8173 * 1024, 0);
	CHECK_STR(s, "8173 KiB");
	format_size(s, sizeof(s), 4428 * 1024, 1);
	CHECK_STR(s, "+4428 KiB");
	format_size(s, sizeof(s), -20480, 1);
	CHECK_STR(s, "-20.0 KiB");
	format_size(s, sizeof(s), 10 * 1024 * 1024 + 512 * 1024, 0);
	CHECK_STR(s, "10.5 MiB");
	format_size(s, sizeof(s), 0, 1);
	CHECK_STR(s, "+0 B");

	format_stat_line(s, sizeof(s), "pattern.c:123", 4855u * 1024, 39328);
	CHECK_STR(s, "pattern.c:123: size=4855 KiB, count=39328, average=126 B");
	format_stat_line(s, sizeof(s), "f", 0, 0);
	CHECK_STR(s, "f: size=0 B, count=0");
	format_stat_diff_line(s, sizeof(s), "f", 8173u * 1024, 3745u * 1024, 71332, 31963);
	CHECK_STR(s, "f: size=8173 KiB (+4428 KiB), count=71332 (+39369), average=117 B");
	format_stat_diff_line(s, sizeof(s), "g", 0, 1000, 0, 10);
	CHECK_STR(s, "g: size=0 B (-1000 B), count=0 (-10)");
}

TEST(test_durations)
{
	char s[64];

	format_duration(s, sizeof(s), 1500000000ull);
	CHECK_STR(s, "1.5s");
	format_duration(s, sizeof(s), 125000000000ull);
	CHECK_STR(s, "2m 05s");
	format_duration(s, sizeof(s), 3723000000000ull);
	CHECK_STR(s, "1h 02m 03s");
	format_duration(s, sizeof(s), 90060000000000ull);
	CHECK_STR(s, "1d 01h 01m");
	CHECK(ns_to_seconds(2500000000ull) == 2.5);
}

TEST(test_terminal_text)
{
	char *s;

	s = appended(format_text, "plain é ü");
	CHECK_STR(s, "plain é ü");
	free(s);
	/* C0, DEL and C1 (U+0080..U+009F, 0xc2 0x80..0x9f) each become one '?' */
	s = appended(format_text, "a\033[2Jb\x7f"
				  "c\xc2\x9b"
				  "d\n");
	CHECK_STR(s, "a?[2Jb?c?d?");
	free(s);
	CHECK_STR(format_basename("/usr/lib/libc.so.6"), "libc.so.6");
	CHECK_STR(format_basename("plain"), "plain");
	CHECK_STR(format_basename("/dir/"), "/dir/");
}

TEST(test_frame_names)
{
	struct snap_frame fn = {0x1010, 0x10, "ns;weird\nname", "/usr/bin/prog", "src/prog.c", 12};
	struct snap_frame mod = {0x7f0000001234, 0x1234, NULL, "/lib/libx.so", NULL, 0};
	struct snap_frame bare = {0x7fff00001234, 0, NULL, NULL, NULL, 0};
	char *s;

	s = frame_name(&fn, 0);
	CHECK_STR(s, "ns?weird?name");
	free(s);
	s = frame_name(&mod, 0);
	CHECK_STR(s, "libx.so+0x1234");
	free(s);
	s = frame_name(&bare, 0);
	CHECK_STR(s, "0x7fff00001234");
	free(s);
	s = frame_name(&fn, 1);
	CHECK_STR(s, "ns?weird?name at prog.c:12");
	free(s);
	s = frame_name(&mod, 1);
	CHECK_STR(s, "libx.so+0x1234");
	free(s);
}

UNIT_MAIN()
