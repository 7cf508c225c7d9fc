// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Formatting helpers (see format.h). Two byte formats on purpose: the
 * counters of stats and report print binary units with one decimal
 * (format_bytes), the tracemalloc-shaped views print tracemalloc's own
 * (format_size), so their lines read as tracemalloc's do.
 */
#include "ctl/render/format.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

double ns_to_seconds(uint64_t ns)
{
	return (double)ns / 1e9;
}

void format_bytes(char *dst, size_t len, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(dst, len, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	/* Move up a unit when one decimal would round to 1024.0. */
	while (v >= 1023.95 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	snprintf(dst, len, "%.1f %s", v, units[u]);
}

void format_duration(char *dst, size_t len, uint64_t ns)
{
	uint64_t s = ns / 1000000000ull;

	if (s < 60)
		snprintf(dst, len, "%.1fs", ns_to_seconds(ns));
	else if (s < 3600)
		snprintf(dst, len, "%" PRIu64 "m %02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(dst, len, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s", s / 3600,
			 s / 60 % 60, s % 60);
	else
		snprintf(dst, len, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m", s / 86400,
			 s / 3600 % 24, s / 60 % 60);
}

static void format_size_double(char *dst, size_t len, double size, int sign)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};

	for (size_t u = 0; u < ARRAY_SIZE(units); u++) {
		double mag = size < 0 ? -size : size;

		if (mag < 100 && u) {
			snprintf(dst, len, sign ? "%+.1f %s" : "%.1f %s", size, units[u]);
			return;
		}
		if (mag < 10 * 1024 || u + 1 == ARRAY_SIZE(units)) {
			snprintf(dst, len, sign ? "%+.0f %s" : "%.0f %s", size, units[u]);
			return;
		}
		size /= 1024;
	}
}

void format_size(char *dst, size_t len, int64_t bytes, int sign)
{
	format_size_double(dst, len, (double)bytes, sign);
}

static void format_average(char *dst, size_t len, uint64_t size, uint64_t count)
{
	char avg[32];

	if (!count) {
		dst[0] = '\0';
		return;
	}
	format_size_double(avg, sizeof(avg), (double)size / (double)count, 0);
	snprintf(dst, len, ", average=%s", avg);
}

void format_stat_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t count)
{
	char sz[32], avg[48];

	format_size(sz, sizeof(sz), (int64_t)size, 0);
	format_average(avg, sizeof(avg), size, count);
	snprintf(dst, len, "%s: size=%s, count=%" PRIu64 "%s", key, sz, count, avg);
}

void format_stat_diff_line(char *dst, size_t len, const char *key, uint64_t size, uint64_t old_size,
			   uint64_t count, uint64_t old_count)
{
	char sz[32], dsz[32], avg[48];

	format_size(sz, sizeof(sz), (int64_t)size, 0);
	format_size(dsz, sizeof(dsz), (int64_t)(size - old_size), 1);
	format_average(avg, sizeof(avg), size, count);
	snprintf(dst, len, "%s: size=%s (%s), count=%" PRIu64 " (%+" PRId64 ")%s", key, sz, dsz,
		 count, (int64_t)(count - old_count), avg);
}

void format_text(struct buf *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t run = 0;

	for (size_t i = 0; p[i]; i++) {
		int c1 = p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;

		if (p[i] >= 0x20 && p[i] != 0x7f && !c1) {
			run++;
			continue;
		}
		buf_put(out, p + i - run, run);
		buf_put(out, "?", 1);
		run = 0;
		i += c1;
	}
	buf_put(out, s + strlen(s) - run, run);
}

/* Append s for a folded line: control characters and ';' become '?'. */
static void format_folded_text(struct buf *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char c = (char)*p;

		if (*p < 0x20 || *p == 0x7f || c == ';')
			c = '?';
		buf_put(out, &c, 1);
	}
}

void format_frame_name(struct buf *out, const struct snap_frame *f)
{
	if (f->function) {
		format_folded_text(out, f->function);
	} else if (f->module) {
		format_folded_text(out, format_basename(f->module));
		buf_printf(out, "+0x%" PRIx64, f->offset);
	} else {
		buf_printf(out, "0x%" PRIx64, f->address);
	}
}

void format_site_name(struct buf *out, const struct snap_frame *f)
{
	format_frame_name(out, f);
	if (!f->file)
		return;
	buf_printf(out, " at ");
	format_folded_text(out, format_basename(f->file));
	if (f->line)
		buf_printf(out, ":%" PRId64, f->line);
}

const char *format_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}
