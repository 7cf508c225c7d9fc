// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared pieces of the ecosystem outputs (see views.h) and the memray-like
 * part of `memtracectl stats`: size histogram, allocator mix, top sites.
 */
#include "outputs.h"
#include "group.h"
#include "render.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtrace/event.h"

/* Sites shown by stats, by bytes and by count. */

static const char *const sample_names[SAMPLE_KEY_COUNT] = {
    [SAMPLE_LIVE] = "live",
    [SAMPLE_ALLOCATED] = "allocated",
    [SAMPLE_COUNT] = "count",
    [SAMPLE_PEAK] = "peak",
};

const char *view_sample_name(int sample)
{
	return sample >= 0 && sample < SAMPLE_KEY_COUNT ? sample_names[sample] : NULL;
}

int view_sample_from_name(const char *name)
{
	for (int i = 0; i < SAMPLE_KEY_COUNT; i++)
		if (!strcmp(name, sample_names[i]))
			return i;
	return -1;
}

int view_sample_sort(int sample)
{
	switch (sample) {
	case SAMPLE_ALLOCATED:
		return SNAP_SORT_ALLOCATED;
	case SAMPLE_COUNT:
		return SNAP_SORT_COUNT;
	case SAMPLE_PEAK:
		return SNAP_SORT_PEAK;
	default:
		return SNAP_SORT_LIVE;
	}
}

uint64_t view_stack_value(const struct snap_stack *st, int sample)
{
	switch (sample) {
	case SAMPLE_ALLOCATED:
		return st->bytes_allocated;
	case SAMPLE_COUNT:
		return st->allocations;
	case SAMPLE_PEAK:
		return st->peak_live_bytes;
	default:
		return st->live_bytes;
	}
}

const char *view_func_name(unsigned func)
{
	return mt_func_name(func);
}

static void put_clean(struct buf *b, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char c = (char)*p;

		if (*p < 0x20 || *p == 0x7f || c == ';')
			c = '?';
		buf_put(b, &c, 1);
	}
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

void view_frame_name(struct buf *b, const struct snap_frame *f)
{
	if (f->function) {
		put_clean(b, f->function);
	} else if (f->module) {
		put_clean(b, basename_of(f->module));
		buf_printf(b, "+0x%" PRIx64, f->offset);
	} else {
		buf_printf(b, "0x%" PRIx64, f->address);
	}
}

/* Sites are equal when they name the same function at the same line, or,
 * without a function, the same module offset (group.c). */
static int site_cmp(const struct snap_frame *a, const struct snap_frame *b)
{
	return group_site_cmp(a, b);
}

static int site_sort_cmp(const void *x, const void *y)
{
	return site_cmp(((const struct view_site *)x)->frame, ((const struct view_site *)y)->frame);
}

size_t view_sites(const struct snapshot *s, struct view_site **out)
{
	struct view_site *v = xcalloc(s->nstacks ? s->nstacks : 1, sizeof(*v));
	size_t n = 0;

	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];

		v[i].frame = st->nframes ? st->frames[0] : NULL;
		v[i].allocations = st->allocations;
		v[i].bytes_allocated = st->bytes_allocated;
		v[i].live_allocations = st->live_allocations;
		v[i].live_bytes = st->live_bytes;
	}
	qsort(v, s->nstacks, sizeof(*v), site_sort_cmp);
	for (uint32_t i = 0; i < s->nstacks; i++) {
		if (n && !site_cmp(v[n - 1].frame, v[i].frame)) {
			v[n - 1].allocations += v[i].allocations;
			v[n - 1].bytes_allocated += v[i].bytes_allocated;
			v[n - 1].live_allocations += v[i].live_allocations;
			v[n - 1].live_bytes += v[i].live_bytes;
		} else {
			v[n++] = v[i];
		}
	}
	*out = v;
	return n;
}

static int by_bytes(const void *x, const void *y)
{
	const struct view_site *a = x, *b = y;

	if (a->bytes_allocated != b->bytes_allocated)
		return a->bytes_allocated < b->bytes_allocated ? 1 : -1;
	return site_cmp(a->frame, b->frame);
}

static int by_count(const void *x, const void *y)
{
	const struct view_site *a = x, *b = y;

	if (a->allocations != b->allocations)
		return a->allocations < b->allocations ? 1 : -1;
	return site_cmp(a->frame, b->frame);
}

/* Smallest size of histogram bin i; the bin holds sizes up to bin_min(i+1)-1. */
static uint64_t bin_min(unsigned i)
{
	return i ? 1ull << (i - 1) : 0;
}

static uint64_t bin_max(unsigned i)
{
	return i ? (i == 64 ? UINT64_MAX : (1ull << i) - 1) : 0;
}

static void text_site(struct buf *b, const struct view_site *v)
{
	struct buf name = {0};

	if (!v->frame) {
		buf_printf(b, "(no frames)");
		return;
	}
	view_frame_name(&name, v->frame);
	buf_put(b, name.data, name.len);
	buf_free(&name);
	if (v->frame->file) {
		buf_printf(b, " at ");
		put_clean(b, basename_of(v->frame->file));
		if (v->frame->line)
			buf_printf(b, ":%" PRId64, v->frame->line);
	}
}

void view_stats_text(struct buf *b, const struct snapshot *s)
{
	struct view_site *sites;
	size_t nsites = view_sites(s, &sites);
	uint64_t most = 0, allocations = 0;
	char lo[32], hi[32], human[32];
	unsigned first = SNAP_HISTOGRAM_BINS, last = 0;

	for (unsigned i = 0; i < SNAP_HISTOGRAM_BINS; i++) {
		if (!s->size_histogram[i])
			continue;
		first = first < i ? first : i;
		last = i;
		most = most > s->size_histogram[i] ? most : s->size_histogram[i];
		allocations += s->size_histogram[i];
	}
	buf_printf(b, "\nsize_histogram (allocations by requested size, all targets)\n");
	for (unsigned i = first; i <= last && first < SNAP_HISTOGRAM_BINS; i++) {
		uint64_t n = s->size_histogram[i];
		unsigned bar = most ? (unsigned)((n * 40 + most - 1) / most) : 0;

		render_bytes(lo, sizeof(lo), bin_min(i));
		render_bytes(hi, sizeof(hi), bin_max(i));
		if (i == 0)
			buf_printf(b, "  %-23s %10" PRIu64 " ", "0 B", n);
		else
			buf_printf(b, "  %9s .. %-9s  %10" PRIu64 " ", lo, hi, n);
		for (unsigned k = 0; k < bar; k++)
			buf_printf(b, "#");
		buf_printf(b, "\n");
	}
	if (!allocations)
		buf_printf(b, "  (no allocations)\n");

	buf_printf(b, "\nallocator_mix (by the function the program called)\n");
	buf_printf(b, "  %-16s %12s  %s\n", "function", "allocations", "bytes_allocated");
	for (unsigned f = 0; f < MT_FN_COUNT; f++) {
		if (!s->allocations_by_func[f] || !view_func_name(f))
			continue;
		render_bytes(human, sizeof(human), s->bytes_by_func[f]);
		buf_printf(b, "  %-16s %12" PRIu64 "  %" PRIu64 " (%s)\n", view_func_name(f),
			   s->allocations_by_func[f], s->bytes_by_func[f], human);
	}

	for (int pass = 0; pass < 2; pass++) {
		qsort(sites, nsites, sizeof(*sites), pass ? by_count : by_bytes);
		buf_printf(b, "\n%s\n",
			   pass ? "top_sites_by_allocations" : "top_sites_by_bytes_allocated");
		for (size_t i = 0; i < nsites && i < STATS_TOP_SITES; i++) {
			render_bytes(human, sizeof(human), sites[i].bytes_allocated);
			buf_printf(b, "  %zu. %" PRIu64 " (%s) in %" PRIu64 " allocations: ", i + 1,
				   sites[i].bytes_allocated, human, sites[i].allocations);
			text_site(b, &sites[i]);
			buf_printf(b, "\n");
		}
		if (!nsites)
			buf_printf(b, "  (no stacks)\n");
	}
	free(sites);
}

static void json_site(struct json_writer *w, const struct view_site *v)
{
	struct buf name = {0};

	json_begin_object(w);
	if (v->frame) {
		view_frame_name(&name, v->frame);
		json_key(w, "name");
		json_string_len(w, (const char *)name.data, name.len);
		buf_free(&name);
		json_kv_string(w, "function", v->frame->function);
		json_kv_string(w, "module", v->frame->module);
		json_kv_string(w, "file", v->frame->file);
		json_key(w, "line");
		json_i64(w, v->frame->line);
	} else {
		json_key(w, "name");
		json_null(w);
	}
	json_kv_u64(w, "allocations", v->allocations);
	json_kv_u64(w, "bytes_allocated", v->bytes_allocated);
	json_kv_u64(w, "live_allocations", v->live_allocations);
	json_kv_u64(w, "live_bytes", v->live_bytes);
	json_end_object(w);
}

void view_stats_json(struct json_writer *w, const struct snapshot *s)
{
	struct view_site *sites;
	size_t nsites = view_sites(s, &sites);

	json_key(w, "size_histogram");
	json_begin_array(w);
	for (unsigned i = 0; i < SNAP_HISTOGRAM_BINS; i++) {
		if (!s->size_histogram[i])
			continue;
		json_begin_object(w);
		json_kv_u64(w, "min_size", bin_min(i));
		json_kv_u64(w, "max_size", bin_max(i));
		json_kv_u64(w, "allocations", s->size_histogram[i]);
		json_end_object(w);
	}
	json_end_array(w);

	json_key(w, "allocator_mix");
	json_begin_object(w);
	for (unsigned f = 0; f < MT_FN_COUNT; f++) {
		if (!s->allocations_by_func[f] || !view_func_name(f))
			continue;
		json_key(w, view_func_name(f));
		json_begin_object(w);
		json_kv_u64(w, "allocations", s->allocations_by_func[f]);
		json_kv_u64(w, "bytes_allocated", s->bytes_by_func[f]);
		json_end_object(w);
	}
	json_end_object(w);

	for (int pass = 0; pass < 2; pass++) {
		qsort(sites, nsites, sizeof(*sites), pass ? by_count : by_bytes);
		json_key(w, pass ? "top_sites_by_allocations" : "top_sites_by_bytes_allocated");
		json_begin_array(w);
		for (size_t i = 0; i < nsites && i < STATS_TOP_SITES; i++)
			json_site(w, &sites[i]);
		json_end_array(w);
	}
	free(sites);
}
