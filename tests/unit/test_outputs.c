// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ecosystem outputs without BPF: histogram bins in the tracker, the
 * snapshot sections SEC_HISTOGRAM-18 (histogram, allocator mix, build-ids) through the
 * codec, folded lines, and the pprof bytes (gunzipped and walked as protobuf).
 */
#include "unit.h"

#include "memtrace/event.h"
#include "ctl/render/folded.h"
#include "ctl/render/html.h"
#include "ctl/render/pprof.h"
#include "daemon/core/tracker.h"
#include "common/varint.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A frame; its strings are the builder's (these literals), as a built snapshot's are. */
static struct snap_frame frame(uint64_t addr, char *fn, char *module, char *id)
{
	struct snap_frame f = {0};

	f.address = addr;
	f.offset = addr & 0xffff;
	f.function = fn;
	f.module = module;
	f.file = fn ? (char *)"x.c" : NULL;
	f.line = fn ? 10 : 0;
	f.build_id = id;
	return f;
}

/* Two stacks of pid 7: leaf;mid;main and leaf2;main (innermost first). */
static void build(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->version = SNAPSHOT_VERSION;
	s->tracer_version = snapshot_strdup(s, "0.1.0");
	s->nstacks = 2;
	s->stacks = xcalloc(2, sizeof(*s->stacks));
	s->stacks[0].pid = 7;
	s->stacks[0].nframes = 3;
	/* the snapshot's frames; stacks point at them */
	s->nframe_table = 5;
	s->frame_table = xcalloc(5, sizeof(*s->frame_table));
	s->frame_table[0] = frame(0x1010, "leaf", "/bin/a", "abcd");
	s->frame_table[1] = frame(0x7f0000002020, NULL, "/lib/libx.so", "ef01");
	s->frame_table[2] = frame(0x1030, "main", "/bin/a", "abcd");
	s->frame_table[3] = frame(0x1040, "leaf2", "/bin/a", "abcd");
	s->frame_table[4] = frame(0x1030, "main", "/bin/a", "abcd");
	s->frame_refs = xcalloc(5, sizeof(*s->frame_refs));
	s->stacks[0].frames = s->frame_refs;
	for (int i = 0; i < 3; i++)
		s->stacks[0].frames[i] = &s->frame_table[i];
	s->stacks[0].t.allocations = 3;
	s->stacks[0].t.bytes_allocated = 300;
	s->stacks[0].t.live_allocations = 1;
	s->stacks[0].t.live_bytes = 100;
	s->stacks[0].t.peak_live_bytes = 200;
	s->stacks[1].pid = 7;
	s->stacks[1].nframes = 2;
	s->stacks[1].frames = s->frame_refs + 3;
	s->stacks[1].frames[0] = &s->frame_table[3];
	s->stacks[1].frames[1] = &s->frame_table[4];
	s->stacks[1].t.allocations = 5;
	s->stacks[1].t.bytes_allocated = 50;
	s->stacks[1].t.peak_live_bytes = 10;
	s->size_histogram[0] = 1;
	s->size_histogram[7] = 5;
	s->size_histogram[64] = 2;
	s->allocations_by_func[MT_FN_MALLOC] = 6;
	s->bytes_by_func[MT_FN_MALLOC] = 330;
	s->allocations_by_func[MT_FN_CALLOC] = 2;
	s->bytes_by_func[MT_FN_CALLOC] = 20;
}

TEST(test_size_bins)
{
	CHECK_EQ_U64(tracker_size_bin(0), 0);
	CHECK_EQ_U64(tracker_size_bin(1), 1);
	CHECK_EQ_U64(tracker_size_bin(2), 2);
	CHECK_EQ_U64(tracker_size_bin(3), 2);
	CHECK_EQ_U64(tracker_size_bin(4), 3);
	CHECK_EQ_U64(tracker_size_bin(65535), 16);
	CHECK_EQ_U64(tracker_size_bin(65536), 17);
	CHECK_EQ_U64(tracker_size_bin(UINT64_MAX), 64);
	CHECK(tracker_size_bin(UINT64_MAX) < SNAP_HISTOGRAM_BINS);
}

TEST(test_tracker_counts_every_allocation)
{
	struct tracker t;
	struct {
		struct mt_event ev;
		uint64_t frames[1];
	} e = {0};

	CHECK(!tracker_init(&t, 0, 0));
	CHECK(tracker_add_target(&t, 42, 0) != NULL);
	e.ev.kind = MT_EV_ALLOC;
	e.ev.tgid = 42;
	e.ev.nframes = 1;
	e.frames[0] = 0x1234;
	for (uint64_t i = 0; i < 10; i++) {
		e.ev.func = i < 7 ? MT_FN_MALLOC : MT_FN_CALLOC;
		e.ev.addr = 0x1000 + i * 64;
		e.ev.size = i < 3 ? 100 : 5000;
		tracker_event(&t, &e, sizeof(e));
	}
	CHECK_EQ_U64(t.size_histogram[7], 3);  /* 64..127 */
	CHECK_EQ_U64(t.size_histogram[13], 7); /* 4096..8191 */
	CHECK_EQ_U64(t.allocations_by_func[MT_FN_MALLOC], 7);
	CHECK_EQ_U64(t.bytes_by_func[MT_FN_MALLOC], 300 + 4 * 5000);
	CHECK_EQ_U64(t.allocations_by_func[MT_FN_CALLOC], 3);
	/* a free changes none of them */
	e.ev.kind = MT_EV_FREE;
	e.ev.addr = 0x1000;
	tracker_event(&t, &e, sizeof(e));
	CHECK_EQ_U64(t.size_histogram[7], 3);
	tracker_destroy(&t);
}

TEST(test_codec_sections)
{
	struct snapshot s, d;
	uint8_t *bytes;
	size_t len;
	char err[256];

	build(&s);
	CHECK(!snapshot_encode(&s, &bytes, &len));
	CHECK(!snapshot_decode(bytes, len, &d, err, sizeof(err)));
	CHECK(!memcmp(d.size_histogram, s.size_histogram, sizeof(s.size_histogram)));
	CHECK(!memcmp(d.allocations_by_func, s.allocations_by_func, sizeof(s.allocations_by_func)));
	CHECK(!memcmp(d.bytes_by_func, s.bytes_by_func, sizeof(s.bytes_by_func)));
	CHECK_EQ_U64(d.nstacks, 2);
	CHECK_STR(d.stacks[0].frames[0]->build_id, "abcd");
	CHECK_STR(d.stacks[0].frames[1]->build_id, "ef01");
	CHECK_STR(d.stacks[1].frames[1]->build_id, "abcd");
	snapshot_free(&d);
	free(bytes);

	/* a frame without a build-id keeps none */
	s.stacks[0].frames[1]->build_id = NULL;
	CHECK(!snapshot_encode(&s, &bytes, &len));
	CHECK(!snapshot_decode(bytes, len, &d, err, sizeof(err)));
	CHECK(d.stacks[0].frames[1]->build_id == NULL);
	snapshot_free(&d);
	free(bytes);
	snapshot_free(&s);
}

static char *folded(const struct snapshot *s, int sample)
{
	struct render_opts o = {.sample = sample};
	struct buf b = {0};

	render_folded(&b, s, &o);
	buf_put(&b, "", 1);
	return (char *)b.data;
}

TEST(test_folded)
{
	struct snapshot s;
	char *out;

	build(&s);
	out = folded(&s, MT_SORT_LIVE);
	CHECK_STR(out, "main;libx.so+0x2020;leaf 100\n");
	free(out);
	out = folded(&s, MT_SORT_ALLOCATED);
	CHECK_STR(out, "main;libx.so+0x2020;leaf 300\nmain;leaf2 50\n");
	free(out);
	out = folded(&s, MT_SORT_COUNT);
	CHECK_STR(out, "main;libx.so+0x2020;leaf 3\nmain;leaf2 5\n");
	free(out);
	/* ';' in a name would split the frame: it becomes '?' */
	s.stacks[1].frames[0]->function = (char *)"a;b\nc";
	out = folded(&s, MT_SORT_PEAK);
	CHECK_STR(out, "main;libx.so+0x2020;leaf 200\nmain;a?b?c 10\n");
	free(out);
	snapshot_free(&s);
}

/* ---- a small protobuf reader, enough to walk the profile ------------------ */

struct pb {
	const uint8_t *p, *end;
};

static int pb_varint(struct pb *r, uint64_t *v)
{
	return varint_decode(&r->p, r->end, v) == VARINT_DONE ? 0 : -1;
}

/* Next field: its number, and its value (varint) or bytes (length-delimited). */
static int pb_field(struct pb *r, unsigned *field, uint64_t *v, struct pb *sub)
{
	uint64_t key;

	if (r->p >= r->end || pb_varint(r, &key))
		return -1;
	*field = (unsigned)(key >> 3);
	if ((key & 7) == 0)
		return pb_varint(r, v);
	if ((key & 7) != 2 || pb_varint(r, v) || *v > (uint64_t)(r->end - r->p))
		return -1;
	sub->p = r->p;
	sub->end = r->p + *v;
	r->p += *v;
	return 0;
}

TEST(test_pprof)
{
	struct render_opts o = {0};
	struct snapshot s;
	struct buf gz = {0};
	uint8_t *raw = malloc(1 << 20);
	uLongf rawlen = 1 << 20;
	z_stream z = {0};
	struct pb r, sub = {0};
	unsigned field;
	uint64_t v;
	int samples = 0, locations = 0, functions = 0, mappings = 0, strings = 0;
	int saw_inuse_space = 0, saw_build_id = 0;

	build(&s);
	CHECK(!render_pprof(&gz, &s, &o));
	CHECK(gz.len > 18 && gz.data[0] == 0x1f && gz.data[1] == 0x8b);
	CHECK(inflateInit2(&z, 16 + 15) == Z_OK);
	z.next_in = gz.data;
	z.avail_in = (uInt)gz.len;
	z.next_out = raw;
	z.avail_out = (uInt)rawlen;
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
	rawlen = z.total_out;
	inflateEnd(&z);

	r.p = raw;
	r.end = raw + rawlen;
	while (r.p < r.end) {
		if (pb_field(&r, &field, &v, &sub)) {
			CHECK(!"malformed protobuf");
			break;
		}
		switch (field) {
		case 2: /* Sample: location ids (packed), values (packed) */
			samples++;
			break;
		case 3:
			mappings++;
			break;
		case 4:
			locations++;
			break;
		case 5:
			functions++;
			break;
		case 6:
			strings++;
			if (v == 11 && !memcmp(sub.p, "inuse_space", 11))
				saw_inuse_space = 1;
			if (v == 4 && !memcmp(sub.p, "ef01", 4))
				saw_build_id = 1;
			break;
		}
	}
	CHECK_EQ_U64(samples, 2);
	CHECK_EQ_U64(locations, 4); /* 0x1010, 0x7f..2020, 0x1030, 0x1040 */
	CHECK_EQ_U64(functions, 4); /* leaf, libx.so+0x2020, main, leaf2 */
	CHECK_EQ_U64(mappings, 2);  /* /bin/a, /lib/libx.so */
	CHECK(strings > 10);
	CHECK(saw_inuse_space);
	CHECK(saw_build_id);
	buf_free(&gz);
	free(raw);
	snapshot_free(&s);
}

/* Each sample carries its target's cgroup labels when the snapshot has them (section SEC_CGROUP).
 */
TEST(test_pprof_cgroup_labels)
{
	struct render_opts o = {0};
	struct snapshot s;
	struct buf gz = {0};
	uint8_t *raw = malloc(1 << 20);
	z_stream z = {0};
	struct pb r, sub = {0};
	unsigned field;
	uint64_t v;
	int saw[4] = {0};
	static const char *const want[4] = {"cgroup", "/libpod_parent/libpod-ab", "container",
					    "podman"};

	build(&s);
	s.ntargets = 1;
	s.targets = calloc(1, sizeof(*s.targets));
	s.targets[0].pid = 7;
	s.targets[0].cgroup =
	    (struct snap_cgroup){.known = 1,
				 .path = snapshot_strdup(&s, "/"),
				 .memory_path = snapshot_strdup(&s, "/libpod_parent/libpod-ab"),
				 .container = snapshot_strdup(&s, "ab"),
				 .runtime = snapshot_strdup(&s, "podman")};
	CHECK(!render_pprof(&gz, &s, &o));
	CHECK(inflateInit2(&z, 16 + 15) == Z_OK);
	z.next_in = gz.data;
	z.avail_in = (uInt)gz.len;
	z.next_out = raw;
	z.avail_out = 1 << 20;
	CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
	r.p = raw;
	r.end = raw + z.total_out;
	inflateEnd(&z);
	while (r.p < r.end) {
		if (pb_field(&r, &field, &v, &sub)) {
			CHECK(!"malformed protobuf");
			break;
		}
		for (int k = 0; field == 6 && k < 4; k++)
			saw[k] |= v == strlen(want[k]) && !memcmp(sub.p, want[k], v);
	}
	for (int k = 0; k < 4; k++)
		CHECK(saw[k]);
	buf_free(&gz);
	free(raw);
	snapshot_free(&s);
}

TEST(test_html_escapes_script)
{
	struct render_opts o = {0};
	struct snapshot s;
	struct buf b = {0};
	char *page;

	build(&s);
	s.stacks[0].frames[0]->function = (char *)"</script><script>alert(1)</script>";
	render_html(&b, &s, &o);
	buf_put(&b, "", 1);
	page = (char *)b.data;
	CHECK(strstr(page, "\\u003c/script>\\u003cscript>alert(1)\\u003c/script>") != NULL);
	CHECK(strstr(page, "<script>alert(1)") == NULL);
	CHECK(strstr(page, "Content-Security-Policy") != NULL);
	CHECK(strstr(page, "\"timeline\":[]") != NULL); /* the page then says "no samples" */
	buf_free(&b);

	/* the memory-over-time series goes into the page as [seconds, live_bytes, blocks] */
	s.ntimeline = 2;
	s.timeline = xcalloc(2, sizeof(*s.timeline));
	s.timeline[0] = (struct snap_timeline_point){
	    .time_ns = 500000000, .total = {.live_bytes = 100, .live_allocations = 1}};
	s.timeline[1] = (struct snap_timeline_point){
	    .time_ns = 1500000000, .total = {.live_bytes = 4096, .live_allocations = 3}};
	render_html(&b, &s, &o);
	buf_put(&b, "", 1);
	CHECK(strstr((char *)b.data, "\"timeline\":[[0.5,100,1],[1.5,4096,3]]") != NULL);
	free(s.timeline);
	s.timeline = NULL;
	s.ntimeline = 0;
	buf_free(&b);
	snapshot_free(&s);
}

UNIT_MAIN()
