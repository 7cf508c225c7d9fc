// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The snapshot's stack_info section: why each stack ends, which frames are
 * inlined, and the modules that cut stacks short survive a round trip; a
 * section that disagrees with the stacks is refused.
 */
#include <stdlib.h>

#include "memtrace/event.h"
#include "memtrace/snapshot.h"
#include "unit.h"

static struct snapshot *make(void)
{
	static struct snap_frame frames[3] = {
	    {0x1010, 0x10, "grab", "/bin/prog", "prog.c", 2, 1},
	    {0x1010, 0x10, "outer", "/bin/prog", "prog.c", 3, 0},
	    {0x1100, 0x100, "main", "/bin/prog", "prog.c", 9, 0},
	};
	/* the second stack shares the first's last frame */
	static struct snap_frame *refs[3] = {&frames[0], &frames[1], &frames[2]};
	static struct snap_stack stacks[2] = {
	    {.pid = 7,
	     .nframes = 3,
	     .frames = refs,
	     .t.allocations = 1,
	     .stack_end = MT_STACK_BROKEN},
	    {.pid = 7, .nframes = 1, .frames = &refs[2], .t.allocations = 2},
	};
	static struct snap_truncation tr[1] = {{"/lib/libnofp.so", 3, 40}};
	static struct snapshot s;

	memset(&s, 0, sizeof(s));
	s.version = SNAPSHOT_VERSION;
	s.tracer_version = "test";
	s.nstacks = 2;
	s.stacks = stacks;
	s.ntruncations = 1;
	s.truncations = tr;
	return &s;
}

TEST(round_trip)
{
	struct snapshot out;
	uint8_t *bytes;
	size_t len;
	char err[128];

	CHECK(snapshot_encode(make(), &bytes, &len) == 0);
	CHECK(snapshot_decode(bytes, len, &out, err, sizeof(err)) == 0);
	free(bytes);
	CHECK_EQ_U64(out.nstacks, 2);
	if (out.nstacks != 2)
		return;
	CHECK_EQ_U64(out.stacks[0].stack_end, MT_STACK_BROKEN);
	CHECK_EQ_U64(out.stacks[1].stack_end, MT_STACK_COMPLETE);
	CHECK_EQ_U64(out.stacks[0].frames[0]->inlined, 1);
	CHECK_EQ_U64(out.stacks[0].frames[1]->inlined, 0);
	CHECK_EQ_U64(out.stacks[0].frames[2]->inlined, 0);
	CHECK_STR(out.stacks[0].frames[0]->function, "grab");
	/* shared in the file, shared when read back */
	CHECK(out.stacks[0].frames[2] == out.stacks[1].frames[0]);
	CHECK_EQ_U64(out.ntruncations, 1);
	if (out.ntruncations == 1) {
		CHECK_STR(out.truncations[0].module, "/lib/libnofp.so");
		CHECK_EQ_U64(out.truncations[0].stacks, 3);
		CHECK_EQ_U64(out.truncations[0].allocations, 40);
	}
	snapshot_free(&out);
}

/*
 * Frames equal but for inlined are one frame in the file, with stack_info
 * saying per reference: read back, a reference that says otherwise gets the
 * frame's twin, in the frame table with the rest (the table grows once, and
 * every reference follows it).
 */
TEST(twins)
{
	enum { N = 300 };
	static struct snap_frame frames[2 * N];
	static struct snap_frame *refs[2 * N];
	static struct snap_stack stacks[2];
	struct snapshot s, out;
	uint8_t *bytes;
	size_t len;
	char err[128];

	for (int i = 0; i < N; i++) {
		frames[i] = (struct snap_frame){0x1000 + i, i, "f", "/bin/prog", "prog.c", i, 1};
		frames[N + i] = frames[i];
		frames[N + i].inlined = 0; /* the same frame, not inlined, in the second stack */
		refs[i] = &frames[i];
		refs[N + i] = &frames[N + i];
	}
	stacks[0] = (struct snap_stack){.pid = 7, .nframes = N, .frames = refs};
	stacks[1] = (struct snap_stack){.pid = 7, .nframes = N, .frames = refs + N};
	memset(&s, 0, sizeof(s));
	s.version = SNAPSHOT_VERSION;
	s.nstacks = 2;
	s.stacks = stacks;
	CHECK(snapshot_encode(&s, &bytes, &len) == 0);
	CHECK(snapshot_decode(bytes, len, &out, err, sizeof(err)) == 0);
	free(bytes);
	CHECK_EQ_U64(out.nframe_table, 2 * N);
	for (int i = 0; i < N && out.nstacks == 2; i++) {
		const struct snap_frame *a = out.stacks[0].frames[i], *b = out.stacks[1].frames[i];

		CHECK(a >= out.frame_table && a < out.frame_table + out.nframe_table);
		CHECK(b >= out.frame_table && b < out.frame_table + out.nframe_table);
		CHECK(a != b);
		CHECK_EQ_U64(a->inlined, 1);
		CHECK_EQ_U64(b->inlined, 0);
		CHECK_EQ_U64(a->address, 0x1000 + i);
		CHECK_EQ_U64(b->address, 0x1000 + i);
		CHECK_EQ_U64(b->line, i);
	}
	snapshot_free(&out);
}

TEST(no_stacks)
{
	struct snapshot s, out;
	uint8_t *bytes;
	size_t len;
	char err[128];

	memset(&s, 0, sizeof(s));
	s.version = SNAPSHOT_VERSION;
	s.tracer_version = "test";
	CHECK(snapshot_encode(&s, &bytes, &len) == 0);
	CHECK(snapshot_decode(bytes, len, &out, err, sizeof(err)) == 0);
	CHECK_EQ_U64(out.ntruncations, 0);
	free(bytes);
	snapshot_free(&out);
}

UNIT_MAIN()
