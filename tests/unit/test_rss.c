// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of resident memory: the parsers of /proc/PID/status,
 * smaps_rollup and smaps (src/daemon/proc/rss.c, smaps.c) on samples taken
 * from real processes (tests/unit/data/rss/, made from tests/e2e/mappings.c
 * and frag.c; see its README) and on malformed text, which must give one
 * clear error and no figure; the sorting of mappings into kinds with the
 * live heap in each (memmap.c); each target's sampled figures and peak
 * (core/resident.c) and the timeline's resident points.
 */
#include <stdlib.h>

#include "daemon/core/resident.h"
#include "daemon/core/timeline.h"
#include "daemon/proc/memmap.h"
#include "daemon/proc/rss.h"
#include "daemon/proc/smaps.h"
#include "unit.h"

#define DATA "tests/unit/data/rss/"
#define KB   1024ull

static char *slurp(const char *name, size_t *len)
{
	char path[256];
	FILE *f;
	char *text;
	long n;

	snprintf(path, sizeof(path), DATA "%s", name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = malloc((size_t)n + 1);
	if (!text || fread(text, 1, (size_t)n, f) != (size_t)n)
		exit(1);
	text[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return text;
}

static int has(const char *s, const char *part)
{
	return s && strstr(s, part) != NULL;
}

TEST(status_sample)
{
	struct mt_resident r = {.pss_bytes = 7}; /* not status's: left alone */
	char err[256] = "";
	size_t len;
	char *text = slurp("status_mappings", &len);

	CHECK(rss_parse(text, len, MT_FROM_STATUS, &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.resident_bytes, 11660 * KB);
	CHECK_EQ_U64(r.resident_anon_bytes, 3964 * KB);
	CHECK_EQ_U64(r.resident_file_bytes, 1552 * KB);
	CHECK_EQ_U64(r.resident_shmem_bytes, 6144 * KB);
	CHECK_EQ_U64(r.swap_bytes, 0);
	CHECK_EQ_U64(r.pss_bytes, 7);
	/* the kernel's split adds up */
	CHECK_EQ_U64(r.resident_bytes,
		     r.resident_anon_bytes + r.resident_file_bytes + r.resident_shmem_bytes);
	free(text);
}

TEST(rollup_sample)
{
	struct mt_resident r = {.resident_bytes = 9};
	char err[256] = "";
	size_t len;
	char *text = slurp("smaps_rollup_mappings", &len);

	CHECK(rss_parse(text, len, MT_FROM_ROLLUP, &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.pss_bytes, 10183 * KB);
	CHECK_EQ_U64(r.lazyfree_bytes, 0);
	CHECK_EQ_U64(r.resident_bytes, 9);
	free(text);
}

/* Malformed text: -1, a reason naming the line or the figure, nothing written. */
static void bad(enum mt_resident_source src, const char *text, const char *reason)
{
	struct mt_resident r, before;
	char err[256] = "";

	memset(&r, 0x5a, sizeof(r));
	before = r;
	CHECK(rss_parse(text, strlen(text), src, &r, err, sizeof(err)) == -1);
	if (!has(err, reason))
		fprintf(stderr, "  got \"%s\", expected \"%s\"\n", err, reason);
	CHECK(has(err, reason));
	CHECK(!memcmp(&r, &before, sizeof(r)));
}

#define STATUS_OK  "VmRSS:\t 8 kB\nRssAnon:\t 4 kB\nRssFile:\t 4 kB\nRssShmem:\t 0 kB\n"
#define ROLLUP_HDR "55f727b5b000-7ffc464fa000 ---p 00000000 00:00 0          [rollup]\n"

TEST(malformed_status)
{
	struct mt_resident r = {0};
	char err[256];

	/* a kernel thread's status has no memory lines at all */
	bad(MT_FROM_STATUS, "Name:\tkthreadd\nState:\tS (sleeping)\nPid:\t2\n",
	    "status: no VmRSS line (the process has no memory)");
	bad(MT_FROM_STATUS, STATUS_OK, "no VmSwap line");
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t12 MB\n", "line 5: VmSwap is not a size in kB");
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t\n", "VmSwap is not a size in kB");
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t-4 kB\n", "VmSwap is not a size in kB");
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t4 kB trailing\n", "VmSwap is not a size in kB");
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t99999999999999999999 kB\n",
	    "VmSwap is not a size in kB");
	/* kB that fit in 64 bits but whose bytes do not */
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t18014398509481984 kB\n",
	    "VmSwap is not a size in kB");
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t0 kB\nVmRSS:\t 8 kB\n", "line 6: a second VmRSS");
	bad(MT_FROM_STATUS, STATUS_OK "VmSwap:\t0 kB\nnot a key line\n",
	    "line 6 is not \"Key: value\"");
	/* a NUL byte is not a key's character */
	err[0] = '\0';
	CHECK(rss_parse(STATUS_OK "Rss\0Anon:\t 4 kB\n",
			sizeof(STATUS_OK "Rss\0Anon:\t 4 kB\n") - 1, MT_FROM_STATUS, &r, err,
			sizeof(err)) == -1);
	CHECK(has(err, "line 5 is not"));
	/* the largest that fits is taken; unknown keys are skipped */
	CHECK(rss_parse(STATUS_OK "VmSwap:\t18014398509481983 kB\nFutureKey:\t? ?\n",
			strlen(STATUS_OK "VmSwap:\t18014398509481983 kB\nFutureKey:\t? ?\n"),
			MT_FROM_STATUS, &r, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r.swap_bytes, 18014398509481983ull * KB);
	CHECK_EQ_U64(r.resident_bytes, 8 * KB);
}

TEST(malformed_rollup)
{
	bad(MT_FROM_ROLLUP, "", "no Pss line");
	bad(MT_FROM_ROLLUP, "Rss: 4 kB\nPss: 4 kB\nLazyFree: 0 kB\n",
	    "smaps_rollup: the first line is not its [rollup] header");
	bad(MT_FROM_ROLLUP,
	    "55f727b5b000-7ffc464fa000 ---p 00000000 00:00 0 [heap]\nPss: 4 kB\nLazyFree: 0 kB\n",
	    "not its [rollup] header");
	bad(MT_FROM_ROLLUP, ROLLUP_HDR "Rss: 4 kB\nPss: 4 kB\n", "no LazyFree line");
	bad(MT_FROM_ROLLUP, ROLLUP_HDR "Pss: 4 kB\nLazyFree: 0 kB\nPss: 4 kB\n",
	    "line 4: a second Pss line");
	bad(MT_FROM_ROLLUP, ROLLUP_HDR "Pss: 4kB\nLazyFree: 0 kB\n", "line 2: Pss is not");
}

TEST(kb_values)
{
	uint64_t v = 1;

	CHECK(rss_kb_value(" \t 12 kB", 8, &v) == 0 && v == 12 * KB);
	CHECK(rss_kb_value("0 kB", 4, &v) == 0 && v == 0);
	CHECK(rss_kb_value(" kB", 3, &v) == -1);
	CHECK(rss_kb_value("12 kb", 5, &v) == -1);
	CHECK(rss_kb_value("12  kB", 6, &v) == -1);
	CHECK(rss_kb_value("12 kB", 4, &v) == -1); /* the length is the caller's */
	CHECK_EQ_U64(rss_field_key("Rss:  4 kB", 10), 3);
	CHECK_EQ_U64(rss_field_key("VmFlags: rd wr", 14), 7);
	CHECK_EQ_U64(rss_field_key("55f7-55f8 rw-p", 14), 0);
	CHECK_EQ_U64(rss_field_key(":4", 2), 0);
	CHECK_EQ_U64(rss_field_key("Rss", 3), 0);
}

static struct smaps parse_sample(const char *name)
{
	struct smaps m;
	char err[256] = "";
	size_t len;
	char *text = slurp(name, &len);

	if (smaps_parse(text, len, &m, err, sizeof(err)))
		fprintf(stderr, "%s: %s\n", name, err);
	free(text);
	return m;
}

static uint64_t total_rss(const struct smaps *m)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < m->n; i++)
		sum += m->v[i].rss;
	return sum;
}

/* The breakdown's sums are the file's: every mapping once, in one kind. */
static void check_sums(const struct smaps *m, const struct mt_memory *mem)
{
	uint64_t mappings = 0, rss = 0, size = 0, vsize = 0;

	for (size_t k = 0; k < MT_MEM_KIND_COUNT; k++) {
		mappings += mem->kinds[k].mappings;
		rss += mem->kinds[k].resident_bytes;
		vsize += mem->kinds[k].virtual_bytes;
	}
	for (size_t i = 0; i < m->n; i++)
		size += m->v[i].map.end - m->v[i].map.start;
	CHECK_EQ_U64(mappings, m->n);
	CHECK_EQ_U64(rss, total_rss(m));
	CHECK_EQ_U64(vsize, size);
}

TEST(breakdown_glibc_threads)
{
	struct smaps m = parse_sample("smaps_mappings");
	struct mt_memory mem;
	struct mt_heap_summary h;
	struct memmap mm;

	CHECK_EQ_U64(m.n, 35);
	CHECK_EQ_U64(total_rss(&m), 11660 * KB); /* the rollup's Rss */
	CHECK_EQ_U64(m.v[6].map.start, 0x7f5a38000000ull);
	CHECK_EQ_U64(m.v[14].pss, 2048 * KB);
	CHECK_EQ_U64(m.v[16].anonymous, 3084 * KB);
	memmap_init(&mm, &m);
	/* blocks in the brk heap, each arena and the large block's own mapping */
	memmap_add_block(&mm, 0x55f73e3b2010ull, 1000);
	memmap_add_block(&mm, 0x55f73e3b2400ull, 1000);
	memmap_add_block(&mm, 0x7f5a38000900ull, 4096);
	memmap_add_block(&mm, 0x7f5a40000900ull, 4096);
	memmap_add_block(&mm, 0x7f5a47182010ull, 3u << 20);
	memmap_add_block(&mm, 0x1000, 77); /* in no mapping: a missed free */
	memmap_sum(&mm, &mem);
	check_sums(&m, &mem);
	CHECK_EQ_U64(mem.kinds[MT_MEM_BRK_HEAP].mappings, 1);
	CHECK_EQ_U64(mem.kinds[MT_MEM_BRK_HEAP].resident_bytes, 260 * KB);
	CHECK_EQ_U64(mem.kinds[MT_MEM_BRK_HEAP].live_allocations, 2);
	CHECK_EQ_U64(mem.kinds[MT_MEM_BRK_HEAP].live_bytes, 2000);
	/* two arenas, each its read-write start and the PROT_NONE rest of 64 MiB */
	CHECK_EQ_U64(mem.kinds[MT_MEM_ARENA].mappings, 4);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ARENA].virtual_bytes, 2 * MEMMAP_ARENA_SIZE);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ARENA].resident_bytes, 520 * KB);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ARENA].live_bytes, 8192);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ALLOCATOR_MMAP].mappings, 1);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ALLOCATOR_MMAP].resident_bytes, 3084 * KB);
	/* [stack], and two threads' stacks with their guards */
	CHECK_EQ_U64(mem.kinds[MT_MEM_THREAD_STACK].mappings, 5);
	CHECK_EQ_U64(mem.kinds[MT_MEM_THREAD_STACK].resident_bytes, 28 * KB);
	CHECK_EQ_U64(mem.kinds[MT_MEM_THREAD_STACK].virtual_bytes,
		     0x21000 + 2 * (0x800000 + 0x1000));
	/* the memfd and the shared anonymous mapping: status's RssShmem */
	CHECK_EQ_U64(mem.kinds[MT_MEM_SHARED_MEMORY].mappings, 2);
	CHECK_EQ_U64(mem.kinds[MT_MEM_SHARED_MEMORY].resident_bytes, 6144 * KB);
	/* the program, libc (with its .bss), ld.so, and the program mapped again */
	CHECK_EQ_U64(mem.kinds[MT_MEM_IMAGE].mappings, 17);
	CHECK_EQ_U64(mem.kinds[MT_MEM_IMAGE].resident_bytes, 1616 * KB);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ANONYMOUS].mappings, 1);
	CHECK_EQ_U64(mem.kinds[MT_MEM_FILE].mappings, 0);
	CHECK_EQ_U64(mem.kinds[MT_MEM_KERNEL].mappings, 4);
	CHECK_EQ_U64(mem.unmapped_allocations, 1);
	CHECK_EQ_U64(mem.unmapped_bytes, 77);
	mt_memory_heap(&mem, &h);
	CHECK_EQ_U64(h.resident_bytes, (260 + 520 + 3084) * KB);
	CHECK_EQ_U64(h.live_bytes, 2000 + 8192 + (3u << 20));
	CHECK(h.overhead_bytes == (int64_t)((260 + 520 + 3084) * KB - 2000 - 8192 - (3u << 20)));
	memmap_free(&mm);
	smaps_free(&m);
}

TEST(breakdown_frag)
{
	struct smaps m = parse_sample("smaps_frag_glibc"), j = parse_sample("smaps_frag_jemalloc");
	struct mt_memory mem;
	struct mt_heap_summary h;
	struct memmap mm;

	/* glibc: the brk heap holds the 8 MiB, a tenth of it live */
	memmap_init(&mm, &m);
	for (int i = 0; i < 819; i++)
		memmap_add_block(&mm, 0x562e42021010ull + 10240ull * (uint64_t)i, 1024);
	memmap_sum(&mm, &mem);
	check_sums(&m, &mem);
	CHECK_EQ_U64(mem.kinds[MT_MEM_BRK_HEAP].resident_bytes, 8328 * KB);
	CHECK_EQ_U64(mem.kinds[MT_MEM_BRK_HEAP].live_bytes, 819 * 1024);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ALLOCATOR_MMAP].mappings, 0);
	mt_memory_heap(&mem, &h);
	CHECK(h.overhead_bytes == (int64_t)(8328 * KB - 819 * 1024));
	memmap_free(&mm);

	/* jemalloc maps its extents itself: the one that holds live blocks is the heap */
	memmap_init(&mm, &j);
	memmap_add_block(&mm, 0x7f8300b01000ull, 1024);
	memmap_sum(&mm, &mem);
	check_sums(&j, &mem);
	CHECK_EQ_U64(mem.kinds[MT_MEM_BRK_HEAP].mappings, 0);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ALLOCATOR_MMAP].mappings, 1);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ALLOCATOR_MMAP].resident_bytes, 8584 * KB);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ALLOCATOR_MMAP].virtual_bytes, 0x1100000);
	memmap_free(&mm);
	/* without a live block in it, nothing says it is the allocator's */
	memmap_init(&mm, &j);
	memmap_sum(&mm, &mem);
	CHECK_EQ_U64(mem.kinds[MT_MEM_ALLOCATOR_MMAP].mappings, 0);
	CHECK(mem.kinds[MT_MEM_ANONYMOUS].resident_bytes >= 8584 * KB);
	memmap_free(&mm);
	smaps_free(&m);
	smaps_free(&j);
}

static void bad_smaps(const char *text, const char *reason)
{
	struct smaps m;
	char err[256] = "";

	CHECK(smaps_parse(text, strlen(text), &m, err, sizeof(err)) == -1);
	if (!has(err, reason))
		fprintf(stderr, "  got \"%s\", expected \"%s\"\n", err, reason);
	CHECK(has(err, reason));
	CHECK(m.n == 0 && m.v == NULL);
}

#define MAP1 "7f5a38000000-7f5a38041000 rw-p 00000000 00:00 0 \n"
#define MAP2 "7f5a40000000-7f5a40041000 rw-p 00000000 00:00 0          [heap]\n"
#define FIGS "Size: 260 kB\nRss: 8 kB\nPss: 8 kB\nAnonymous: 8 kB\nSwap: 0 kB\nVmFlags: rd wr\n"

TEST(malformed_smaps)
{
	struct smaps m;
	char err[256] = "";

	CHECK(smaps_parse(MAP1 FIGS MAP2 FIGS, strlen(MAP1 FIGS MAP2 FIGS), &m, err, sizeof(err)) ==
	      0);
	CHECK(m.n == 2 && m.v[1].rss == 8 * KB && !strcmp(m.v[1].map.path, "[heap]"));
	CHECK_EQ_U64(smaps_find(&m, 0x7f5a38000000ull), 0);
	CHECK(smaps_find(&m, 0x7f5a38041000ull) == -1);
	CHECK_EQ_U64(smaps_find(&m, 0x7f5a40040fffull), 1);
	smaps_free(&m);
	CHECK(smaps_parse("", 0, &m, err, sizeof(err)) == 0 && m.n == 0);

	bad_smaps("Rss: 8 kB\n" MAP1 FIGS, "line 1: a field before any mapping");
	bad_smaps(MAP1 "Size: 260 kB\nPss: 8 kB\nAnonymous: 8 kB\nSwap: 0 kB\n" MAP2 FIGS,
		  "mapping 1 (7f5a38000000-7f5a38041000) has no Rss line");
	bad_smaps(MAP1 FIGS MAP2 "Rss: 8 kB\n", "mapping 2 (7f5a40000000-7f5a40041000) has no Pss");
	bad_smaps(MAP1 FIGS "Rss: 8 kB\n", "line 8: Rss is not a size in kB, or comes twice");
	bad_smaps(MAP1 "Rss: lots\n", "line 2: Rss is not a size in kB");
	bad_smaps(MAP2 FIGS MAP1 FIGS, "line 8: mapping 7f5a38000000-7f5a38041000 overlaps or "
				       "precedes the one before");
	bad_smaps(MAP1 FIGS MAP1 FIGS, "overlaps or precedes");
	bad_smaps("7f5a38000000-7f5a37000000 rw-p 00000000 00:00 0\n" FIGS,
		  "line 1 is neither a mapping nor a field");
	bad_smaps(MAP1 FIGS "this is not smaps\n", "line 8 is neither a mapping nor a field");
}

TEST(resident_table)
{
	struct resident_table t = {0};
	struct mt_resident a = {.resident_bytes = 100}, b = {.resident_bytes = 300},
			   c = {.resident_bytes = 200};
	const struct resident_target *e;
	uint32_t far = 40; /* entries grow to any target index */

	CHECK(resident_get(&t, 0) == NULL);
	CHECK(resident_get(NULL, 0) == NULL);
	resident_record(&t, far, 10, &a);
	resident_record(&t, far, 20, &b);
	resident_record(&t, far, 30, &c);
	e = resident_get(&t, far);
	CHECK(e && e->time_ns == 30 && e->last.resident_bytes == 200);
	CHECK(e->peak_bytes == 300 && e->peak_time_ns == 20);
	CHECK(resident_get(&t, far - 1) == NULL);
	/* a new window: the peak is the last figure, from now */
	resident_reset_peak(&t, 35);
	CHECK(e->peak_bytes == 200 && e->peak_time_ns == 35);
	resident_record(&t, far, 40, &a);
	CHECK(e->peak_bytes == 200 && e->last.resident_bytes == 100);
	/* a failure is said once in a row */
	CHECK(resident_failed(&t, far) == 1);
	CHECK(resident_failed(&t, far) == 0);
	resident_record(&t, far, 50, &a);
	CHECK(resident_failed(&t, far) == 1);
	resident_free(&t);
}

/* A forked child's labels at its fork: its parent's cgroup, its own NSpid. */
TEST(resident_inherit)
{
	struct resident_table t = {0};
	struct mt_cgroup_labels l = {.path = "/app", .unit = "app.service", .nspid = 300};
	const struct resident_target *e;

	/* a parent without labels: none to give */
	CHECK(resident_inherit_labels(&t, 1, 0, 300, 301) == 0);
	CHECK(resident_get_cgroup(&t, 1) == NULL);
	/* a parent in the pid namespace /proc shows: the child's NSpid is its pid */
	resident_set_labels(&t, 0, &l);
	CHECK(resident_inherit_labels(&t, 100, 0, 300, 301) == 1); /* the table grows */
	e = resident_get_cgroup(&t, 100);
	CHECK(e && e->labels);
	CHECK_STR(e->labels->path, "/app");
	CHECK_STR(e->labels->unit, "app.service");
	CHECK(e->labels->nspid == 301);
	CHECK(!e->cgroup_sampled); /* the labels only, no figures */
	/* a parent in a pid namespace of its own (a container): the child's is not known */
	l.nspid = 7;
	resident_set_labels(&t, 2, &l);
	CHECK(resident_inherit_labels(&t, 3, 2, 300, 302) == 1);
	e = resident_get_cgroup(&t, 3);
	CHECK(e && e->labels && e->labels->nspid == 0);
	CHECK_STR(e->labels->path, "/app");
	/* a parent whose NSpid is not known: neither is the child's */
	l.nspid = 0;
	resident_set_labels(&t, 4, &l);
	CHECK(resident_inherit_labels(&t, 5, 4, 300, 303) == 1);
	CHECK(resident_get_cgroup(&t, 5)->labels->nspid == 0);
	/* an entry that had labels gets its parent's anew; never itself */
	CHECK(resident_inherit_labels(&t, 3, 0, 300, 304) == 1);
	CHECK(resident_get_cgroup(&t, 3)->labels->nspid == 304);
	CHECK(resident_inherit_labels(&t, 0, 0, 300, 300) == 0);
	/* an exec: the same process, its NSpid kept even in a namespace of its own */
	CHECK(resident_inherit_labels(&t, 6, 2, 300, 300) == 1);
	CHECK(resident_get_cgroup(&t, 6)->labels->nspid == 7);
	resident_free(&t);
}

TEST(timeline_resident)
{
	static struct timeline tl;
	struct mt_counters c = {.live_bytes = 10};
	struct mt_resident r = {.resident_bytes = 4096, .pss_bytes = 1024};

	timeline_init(&tl, 100);
	CHECK(timeline_sample(&tl, 0, &c, NULL, 0) == 1);
	CHECK(timeline_sample(&tl, 100, &c, NULL, 0) == 1);
	CHECK(timeline_sample(&tl, 200, &c, NULL, 0) == 1);
	CHECK(!tl.points[1].total.has_resident);
	/* the readings of a point come later, found by its time */
	CHECK(timeline_set_resident(&tl, 100, &r) == 1);
	CHECK(tl.points[1].total.has_resident && tl.points[1].total.resident.pss_bytes == 1024);
	CHECK(!tl.points[0].total.has_resident && !tl.points[2].total.has_resident);
	CHECK(timeline_set_resident(&tl, 150, &r) == 0);
	CHECK(timeline_set_resident(&tl, 300, &r) == 0);
	/* a merge keeps a point's figures with it, and drops the point's that go */
	for (uint64_t t = 300; tl.npoints < TIMELINE_MAX_POINTS; t += 100)
		timeline_sample(&tl, t, &c, NULL, 0);
	CHECK(timeline_set_resident(&tl, 300 + 100 * (TIMELINE_MAX_POINTS - 4), &r) == 1);
	timeline_sample(&tl, 100 * TIMELINE_MAX_POINTS + 100, &c, NULL, 0);
	CHECK_EQ_U64(tl.points[0].time_ns, 100);
	CHECK(tl.points[0].total.has_resident);
	CHECK(tl.points[tl.npoints - 2].time_ns == 300 + 100 * (TIMELINE_MAX_POINTS - 4) &&
	      tl.points[tl.npoints - 2].total.has_resident);
	CHECK(timeline_set_resident(&tl, 0, &r) == 0); /* merged away */
	CHECK(!tl.points[tl.npoints - 1].total.has_resident);
	timeline_free(&tl);
}

UNIT_MAIN()
