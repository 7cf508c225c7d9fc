// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The BPF stack walkers in user space: bpf/unwind.bpf.h (the DWARF walk and
 * the frame-pointer walk), bpf/window.bpf.h and bpf/stackid.bpf.h compiled
 * here as they are (tests/unit/bpfshim.h), over fake maps filled the way
 * the daemon fills them (src/daemon/unwind/) and stacks recorded from real
 * processes (tests/unit/data/walk/, `make walk-test-data`). Each recorded
 * stack is walked and compared, frame by frame, with what libdw's own
 * unwinder finds on the same memory and registers; then the frame-pointer
 * walk, the end reasons, a depth limit, corrupted stacks and the stack id.
 */
#include "bpfshim.h"
#include "memtrace/event.h"

#define MT_SCRATCH_SETS 4 /* as bpf/memtrace.bpf.c */
#include "window.bpf.h"
#include "unwind.bpf.h"
#include "stackid.bpf.h"

#include "unit.h"
#include "daemon/unwind/unwind_table.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#define DATA   "tests/unit/data/walk/"
#define TGID   4242
#define FRAMES 128 /* frames[] as the kernel's: MT_MAX_FRAMES, rounded up */

/* ---- the fake maps ------------------------------------------------------- */

#define NCHUNKS 4

static __u64 *chunks[NCHUNKS]; /* uw_pool's inner maps: MT_UW_CHUNK_ROWS slots each */
static struct mt_unwind_table tables[MT_UW_MAX_TABLES];
static struct mt_unwind_proc proc;
static int proc_listed;
static struct uw_state states[MT_SCRATCH_SETS];
static unsigned long proc_lookups, bad_lookups;

void *bpf_map_lookup_elem(void *map, const void *key)
{
	__u32 k = *(const __u32 *)key;

	if (map == &uw_state)
		return k < MT_SCRATCH_SETS ? &states[k] : NULL;
	if (map == &uw_procs) {
		proc_lookups++;
		return proc_listed && k == TGID ? &proc : NULL;
	}
	if (map == &uw_tables)
		return k < MT_UW_MAX_TABLES ? &tables[k] : NULL;
	if (map == &uw_pool)
		return k < NCHUNKS ? chunks[k] : NULL;
	for (int c = 0; c < NCHUNKS; c++) {
		if (chunks[c] && map == chunks[c])
			return k < MT_UW_CHUNK_ROWS ? &chunks[c][k] : NULL;
	}
	bad_lookups++;
	return NULL;
}

/* ---- the recorded memory ------------------------------------------------- */

static const uint8_t *mem;
static uint64_t mem_lo, mem_len;
static unsigned long reads, failed_reads;

long bpf_probe_read_user(void *dst, __u32 size, const void *unsafe_ptr)
{
	uint64_t a = (uint64_t)(uintptr_t)unsafe_ptr;

	reads++;
	if (a >= mem_lo && a - mem_lo <= mem_len && size <= mem_len - (a - mem_lo)) {
		memcpy(dst, mem + (a - mem_lo), size);
		return 0;
	}
	failed_reads++;
	memset(dst, 0, size);
	return -EFAULT;
}

/* ---- the recorded stacks ------------------------------------------------- */

#define MAX_MODS 16
#define MAX_MAPS 32

struct module {
	char tag[64];
	uint64_t bias; /* load bias: address - ELF vaddr */
	uint8_t *elf;  /* its .cfi.gz, decompressed; NULL: none (no FDE on the stack) */
	size_t elf_len;
	int fd; /* a memfd holding elf */
	struct unwind_table t;
	uint32_t id; /* its table in the pool, or MT_UW_NO_TABLE */
};

struct capture {
	const char *name;
	uint64_t rip, rsp, rbp; /* at malloc's first instruction */
	uint8_t *stack;		/* from rsp to the end of its mapping */
	uint64_t stack_len;
	struct module mods[MAX_MODS];
	int nmods;
	struct {
		int mod;
		uint64_t start, end;
	} maps[MAX_MAPS];
	int nmaps;
};

static uint8_t *gunzip(const char *path, size_t *len)
{
	gzFile f = gzopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	int got;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			buf = realloc(buf, cap);
		}
		got = gzread(f, buf + n, (unsigned)(cap - n));
		if (got > 0)
			n += (size_t)got;
	} while (got > 0);
	gzclose(f);
	if (got < 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int module_open(struct module *m)
{
	char path[256];
	char err[256] = "";

	m->id = MT_UW_NO_TABLE;
	m->fd = -1;
	snprintf(path, sizeof(path), DATA "%s.cfi.gz", m->tag);
	if (access(path, R_OK))
		return 0; /* no FDE of it on the stack: recorded without one */
	m->elf = gunzip(path, &m->elf_len);
	if (!m->elf)
		return -1;
	m->fd = memfd_create(m->tag, 0);
	if (m->fd < 0 || write(m->fd, m->elf, m->elf_len) != (ssize_t)m->elf_len)
		return -1;
	if (unwind_table_build_fd(m->fd, -1, &m->t, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", path, err);
		return -1;
	}
	return 0;
}

static int capture_load(struct capture *c, const char *name)
{
	char path[256], line[512], tag[64];
	FILE *f;
	uint64_t a, b, got = 0;

	memset(c, 0, sizeof(*c));
	c->name = name;
	snprintf(path, sizeof(path), DATA "%s.stack", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "regs %" SCNx64 " %" SCNx64 " %" SCNx64, &c->rip, &c->rsp,
			   &c->rbp) == 3)
			continue;
		if (sscanf(line, "module %63s %" SCNx64, tag, &a) == 2 && c->nmods < MAX_MODS) {
			struct module *m = &c->mods[c->nmods++];

			snprintf(m->tag, sizeof(m->tag), "%s", tag);
			m->bias = a;
			continue;
		}
		if (sscanf(line, "map %63s %" SCNx64 " %" SCNx64, tag, &a, &b) == 3 &&
		    c->nmaps < MAX_MAPS && c->nmods) {
			c->maps[c->nmaps].mod = c->nmods - 1;
			c->maps[c->nmaps].start = a;
			c->maps[c->nmaps++].end = b;
			continue;
		}
		if (sscanf(line, "stack %" SCNx64 " %" SCNu64, &a, &b) == 2) {
			c->stack = calloc(1, b + 1);
			c->stack_len = b;
			continue;
		}
		/* a line of stack bytes, in hex */
		for (char *p = line; c->stack && p[0] && p[1] && p[0] != '\n' && got < c->stack_len;
		     p += 2) {
			unsigned v;

			if (sscanf(p, "%2x", &v) != 1)
				break;
			c->stack[got++] = (uint8_t)v;
		}
	}
	fclose(f);
	if (!c->stack || got != c->stack_len || !c->rsp || !c->nmaps)
		return -1;
	for (int i = 0; i < c->nmods; i++) {
		if (module_open(&c->mods[i]))
			return -1;
	}
	return 0;
}

static void capture_free(struct capture *c)
{
	for (int i = 0; i < c->nmods; i++) {
		if (c->mods[i].elf)
			unwind_table_free(&c->mods[i].t);
		free(c->mods[i].elf);
		if (c->mods[i].fd >= 0)
			close(c->mods[i].fd);
	}
	free(c->stack);
}

/*
 * The maps as the daemon fills them (src/daemon/unwind/unwind_pool.c and
 * unwind.c): each table's page entries then rows in the pool, the first
 * table across the boundary of two chunks; the process's code mappings
 * with each table's bias.
 */
static uint64_t lists_written;

static void pool_put(uint32_t slot, const void *v)
{
	uint32_t c = slot >> MT_UW_CHUNK_SHIFT;

	if (c >= NCHUNKS)
		abort();
	if (!chunks[c])
		chunks[c] = calloc(MT_UW_CHUNK_ROWS, 8);
	memcpy(&chunks[c][slot & (MT_UW_CHUNK_ROWS - 1)], v, 8);
}

static void maps_fill(struct capture *c)
{
	uint32_t slot = MT_UW_CHUNK_ROWS - 5, id = 7;

	memset(tables, 0, sizeof(tables));
	for (int i = 0; i < NCHUNKS; i++) {
		free(chunks[i]);
		chunks[i] = NULL;
	}
	for (int i = 0; i < c->nmods; i++) {
		struct module *m = &c->mods[i];

		if (!m->elf || !m->t.nrows)
			continue;
		m->id = id++;
		tables[m->id].pages_slot = slot;
		tables[m->id].npages = m->t.npages;
		for (uint32_t p = 0; p < m->t.npages; p++)
			pool_put(slot++, &m->t.pages[p]);
		tables[m->id].rows_slot = slot;
		tables[m->id].nrows = m->t.nrows;
		for (uint32_t r = 0; r < m->t.nrows; r++)
			pool_put(slot++, &m->t.rows[r]);
	}
	memset(&proc, 0, sizeof(proc));
	for (int i = 0; i < c->nmaps; i++) {
		const struct module *m = &c->mods[c->maps[i].mod];
		struct mt_unwind_map *mp = &proc.maps[proc.nmaps++];

		mp->start = c->maps[i].start;
		mp->end = c->maps[i].end;
		mp->table = m->id;
		mp->bias = m->bias + (m->id == MT_UW_NO_TABLE ? 0 : m->t.base);
	}
	/* sorted by start, as the daemon writes them */
	for (uint32_t i = 1; i < proc.nmaps; i++) {
		for (uint32_t j = i; j > 0 && proc.maps[j - 1].start > proc.maps[j].start; j--) {
			struct mt_unwind_map t = proc.maps[j];

			proc.maps[j] = proc.maps[j - 1];
			proc.maps[j - 1] = t;
		}
	}
	proc.gen = ++lists_written;
	proc_listed = 1;
	uw_lists_changed++;
	mem = c->stack;
	mem_lo = c->rsp;
	mem_len = c->stack_len;
}

/* The registers at malloc's return, as the uretprobe sees them. */
static uint64_t ret_addr(const struct capture *c)
{
	uint64_t ra;

	memcpy(&ra, c->stack, 8);
	return ra;
}

static __u64 frames[FRAMES + 4];
#define CANARY 0x5a5a5a5a5a5a5a5aull

static int dwarf_walk(const struct capture *c, __u32 depth, __u8 *end)
{
	struct stack_window win;
	int n;

	for (int i = 0; i < FRAMES + 4; i++)
		frames[i] = CANARY;
	memset(&win, 0xa5, sizeof(win));
	*end = MT_STACK_NONE;
	n = uw_walk(ret_addr(c), c->rsp + 8, c->rbp, &win, frames, depth, end, TGID, 1);
	CHECK(frames[FRAMES] == CANARY && frames[FRAMES + 3] == CANARY);
	CHECK(n <= (int)depth && n <= MT_MAX_FRAMES);
	return n;
}

/*
 * The frame-pointer walk from ip, sp and bp, batch after batch as the
 * walk_fp program runs it (bpf/stages.bpf.h, walk_fp_stage: its first
 * batch's start is these few lines; each further run a tail call).
 */
static unsigned fp_batches;

static __u32 fp_walk_regs(__u64 ip, __u64 sp, __u64 bp, __u32 depth, __u8 *end)
{
	struct stack_window win;
	__u64 prev = sp, fp = bp;
	__u32 n = 1, before;

	for (int i = 0; i < FRAMES + 4; i++)
		frames[i] = CANARY;
	memset(&win, 0xa5, sizeof(win));
	win.len = 0;
	frames[0] = ip;
	*end = MT_STACK_DEPTH;
	fp_batches = 1;
	for (;;) {
		before = n;
		if (walk_fp_batch(&win, frames, sp, depth, &n, &prev, &fp, end))
			break;
		/* a batch that does not end the walk walks all its frames */
		CHECK_EQ_U64(n - before, MT_FP_BATCH);
		if (++fp_batches > MT_MAX_FRAMES / MT_FP_BATCH + 1) {
			CHECK(0);
			break;
		}
	}
	CHECK(frames[FRAMES] == CANARY);
	CHECK(n <= depth && n <= MT_MAX_FRAMES);
	return n;
}

static __u32 fp_walk(const struct capture *c, __u64 bp, __u32 depth, __u8 *end)
{
	return fp_walk_regs(ret_addr(c), c->rsp + 8, bp, depth, end);
}

/* ---- libdw's unwinder on the same memory --------------------------------- */

static pid_t ref_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return TGID;
}

static bool ref_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	(void)arg;
	if (addr < mem_lo || addr - mem_lo > mem_len || mem_len - (addr - mem_lo) < 8)
		return false;
	memcpy(result, mem + (addr - mem_lo), 8);
	return true;
}

static bool ref_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct capture *c = arg;
	Dwarf_Word regs[2] = {c->rbp, c->rsp}; /* DWARF registers 6 and 7 */

	if (!dwfl_thread_state_registers(thread, 6, 2, regs))
		return false;
	dwfl_thread_state_register_pc(thread, c->rip);
	return true;
}

static const Dwfl_Thread_Callbacks ref_thread_cbs = {
    .next_thread = ref_next_thread,
    .memory_read = ref_memory_read,
    .set_initial_registers = ref_set_initial_registers,
};

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks ref_cbs = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = no_debuginfo,
};

struct ref_frames {
	__u64 pc[FRAMES];
	__u64 sp[FRAMES]; /* rsp in each frame: the CFA of the one before */
	int n;
};

static int ref_frame(Dwfl_Frame *state, void *arg)
{
	struct ref_frames *r = arg;
	Dwarf_Addr pc;

	Dwarf_Word sp = 0;

	if (!dwfl_frame_pc(state, &pc, NULL) || r->n >= FRAMES)
		return DWARF_CB_ABORT;
	dwfl_frame_reg(state, 7, &sp);
	r->sp[r->n] = sp;
	r->pc[r->n++] = pc;
	return DWARF_CB_OK;
}

/* libdw's frames from malloc's entry: [0] is malloc itself, [1] the walk's frame 0. */
static int ref_walk(const struct capture *c, struct ref_frames *r)
{
	Dwfl *dwfl = dwfl_begin(&ref_cbs);

	r->n = 0;
	if (!dwfl)
		return -1;
	dwfl_report_begin(dwfl);
	for (int i = 0; i < c->nmods; i++) {
		const struct module *m = &c->mods[i];

		if (m->elf && !dwfl_report_elf(dwfl, m->tag, m->tag, dup(m->fd), m->bias, false))
			fprintf(stderr, "%s: libdw: %s\n", m->tag, dwfl_errmsg(-1));
	}
	dwfl_report_end(dwfl, NULL, NULL);
	if (!dwfl_attach_state(dwfl, NULL, TGID, &ref_thread_cbs, (void *)c)) {
		fprintf(stderr, "libdw: %s\n", dwfl_errmsg(-1));
		dwfl_end(dwfl);
		return -1;
	}
	dwfl_getthread_frames(dwfl, TGID, ref_frame, r);
	dwfl_end(dwfl);
	return 0;
}

/* ---- the tests ----------------------------------------------------------- */

/* Each recorded stack, its frames from the call site on, and why the walk
 * ends: at the outermost frame, where libdw ends too, or at a rule it cannot
 * follow (libdw's frames then go on; the walk's must be the first of them). */
static const struct {
	const char *name;
	int frames;
	__u8 end;
} stacks[] = {
    /* helper path_d path_c main __libc_start_call_main ... _start */
    {"nofp_paths", 7, MT_STACK_OUTERMOST},
    {"fp_paths", 7, MT_STACK_OUTERMOST}, /* the same with frame pointers */
    /* record_compare compare_items, libc's msort x 11, qsort_r ... */
    {"nofp_qsort", 18, MT_STACK_OUTERMOST},
    /* leaf_alloc work_a thread_a start_thread clone3 */
    {"nofp_threads", 5, MT_STACK_OUTERMOST},
    /* operator new _M_mutate _M_append (libstdc++) grow_string main ... */
    {"nofp_cxx", 8, MT_STACK_OUTERMOST},
    /* on_signal __restore_rt pthread_kill raise main ... */
    {"nofp_signal", 8, MT_STACK_OUTERMOST},
    /* alloc_cb, then call_through_expression's CFA, a DWARF expression */
    {"nofp_cfiexpr", 2, MT_STACK_TRUNCATED},
    /* descend x 6 on_stack __start_context, on a makecontext stack whose
     * top page is followed by an inaccessible one; __start_context is the
     * return address makecontext made, where libdw stops too: broken */
    {"nofp_stacktop", 8, MT_STACK_BROKEN},
};

static void print_frames(const char *what, const __u64 *v, int n)
{
	fprintf(stderr, "  %s:", what);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %llx", v[i]);
	fprintf(stderr, "\n");
}

TEST(dwarf_walk_matches_libdw)
{
	for (size_t s = 0; s < sizeof(stacks) / sizeof(stacks[0]); s++) {
		struct capture c;
		struct ref_frames r;
		__u8 end;
		int n, same;

		if (capture_load(&c, stacks[s].name)) {
			fprintf(stderr, "%s: cannot load\n", stacks[s].name);
			CHECK(0);
			capture_free(&c);
			continue;
		}
		maps_fill(&c);
		n = dwarf_walk(&c, MT_MAX_FRAMES, &end);
		CHECK(ref_walk(&c, &r) == 0);
		same = (stacks[s].end == MT_STACK_TRUNCATED ? n <= r.n - 1 : n == r.n - 1) &&
		       !memcmp(frames, r.pc + 1, (size_t)n * 8);
		if (!same || n != stacks[s].frames || end != stacks[s].end) {
			fprintf(stderr, "%s: %d frames, end %u; libdw %d\n", c.name, n, end,
				r.n - 1);
			print_frames("walk", frames, n);
			print_frames("libdw", r.pc + 1, r.n - 1);
		}
		CHECK(same);
		CHECK_EQ_U64(n, stacks[s].frames);
		CHECK_EQ_U64(end, stacks[s].end);
		CHECK_EQ_U64(bad_lookups, 0);
		/* again, mostly from the rows this CPU cached (direct-mapped: two
		 * frames can share a slot): the same frames */
		proc_lookups = 0;
		CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), n);
		CHECK(!memcmp(frames, r.pc + 1, (size_t)n * 8));
		CHECK(proc_lookups < (unsigned long)n / 2);
		capture_free(&c);
	}
}

/* The frame-pointer walk on the program built with them: the return
 * addresses libdw finds, up to main's (libc has no frame pointers). */
TEST(fp_walk_matches_libdw)
{
	struct capture c;
	struct ref_frames r;
	__u32 n;
	__u8 end;

	if (capture_load(&c, "fp_paths")) {
		CHECK(0);
		capture_free(&c);
		return;
	}
	maps_fill(&c);
	CHECK(ref_walk(&c, &r) == 0);
	n = fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end);
	if (n < 4 || memcmp(frames, r.pc + 1, 4 * 8)) {
		fprintf(stderr, "fp_paths: %u frames, end %u\n", n, end);
		print_frames("fp walk", frames, (int)n);
		print_frames("libdw", r.pc + 1, r.n - 1);
	}
	CHECK(n >= 4);
	CHECK(r.n >= 5 && !memcmp(frames, r.pc + 1, 4 * 8));
	CHECK(end == MT_STACK_BROKEN || end == MT_STACK_COMPLETE);
	capture_free(&c);
}

/* ---- end reasons, limits, damage ------------------------------------------ */

/* A word of the recorded stack, by address. */
static __u64 *stack_word(struct capture *c, __u64 addr)
{
	if (addr < c->rsp || addr - c->rsp + 8 > c->stack_len || (addr & 7))
		abort();
	return (__u64 *)(void *)(c->stack + (addr - c->rsp));
}

/* This CPU's walker state forgotten: rows cached, the last process. */
static void forget(void)
{
	memset(states, 0, sizeof(states));
}

static int load(struct capture *c, const char *name)
{
	if (capture_load(c, name)) {
		fprintf(stderr, "%s: cannot load\n", name);
		CHECK(0);
		return -1;
	}
	maps_fill(c);
	forget();
	return 0;
}

static __u64 *pool_get(__u32 slot)
{
	return &chunks[slot >> MT_UW_CHUNK_SHIFT][slot & (MT_UW_CHUNK_ROWS - 1)];
}

/* The pool slot of the row at look (a pc), or ~0u. */
static __u32 row_slot(const struct capture *c, __u64 look)
{
	for (uint32_t i = 0; i < proc.nmaps; i++) {
		const struct mt_unwind_map *mp = &proc.maps[i];

		if (mp->start > look || look >= mp->end || mp->table == MT_UW_NO_TABLE)
			continue;
		for (int j = 0; j < c->nmods; j++) {
			const struct module *m = &c->mods[j];
			const struct mt_unwind_row *row;

			if (m->id != mp->table)
				continue;
			row = unwind_table_find(&m->t, look - m->bias);
			return row ? tables[m->id].rows_slot + (__u32)(row - m->t.rows) : ~0u;
		}
	}
	return ~0u;
}

TEST(depth_limit)
{
	struct capture c;
	__u64 full[FRAMES];
	__u8 end;
	int n;

	if (load(&c, "nofp_paths"))
		goto out;
	n = dwarf_walk(&c, MT_MAX_FRAMES, &end);
	CHECK_EQ_U64(n, 7);
	memcpy(full, frames, sizeof(full));
	for (int d = 1; d <= n; d++) {
		CHECK_EQ_U64(dwarf_walk(&c, (__u32)d, &end), d);
		CHECK_EQ_U64(end, MT_STACK_DEPTH);
		CHECK(!memcmp(frames, full, (size_t)d * 8));
		CHECK(frames[d] == CANARY);
	}
	CHECK_EQ_U64(dwarf_walk(&c, (__u32)n + 1, &end), n);
	CHECK_EQ_U64(end, MT_STACK_OUTERMOST);
	capture_free(&c);
	if (load(&c, "fp_paths"))
		goto out;
	for (__u32 d = 1; d <= 4; d++) {
		CHECK_EQ_U64(fp_walk(&c, c.rbp, d, &end), d);
		CHECK_EQ_U64(end, MT_STACK_DEPTH);
		CHECK(frames[d] == CANARY);
	}
out:
	capture_free(&c);
}

/* fp_paths' frame-pointer chain: fps[0] is helper's frame pointer (rbp at
 * malloc's entry); [fps[i]] holds fps[i + 1], [fps[i] + 8] frame i + 1. */
static void fp_chain(struct capture *c, __u64 *fps, int n)
{
	fps[0] = c->rbp;
	for (int i = 1; i < n; i++)
		fps[i] = *stack_word(c, fps[i - 1]);
}

TEST(fp_walk_ends)
{
	struct capture c;
	__u64 fps[4], saved;
	__u8 end;

	if (load(&c, "fp_paths"))
		goto out;
	fp_chain(&c, fps, 4);
	/* no frame pointer at all: the chain's end, as at process entry */
	CHECK_EQ_U64(fp_walk(&c, 0, MT_MAX_FRAMES, &end), 1);
	CHECK_EQ_U64(end, MT_STACK_COMPLETE);
	/* main's saved rbp 0: complete after main's frame */
	saved = *stack_word(&c, fps[2]);
	*stack_word(&c, fps[2]) = 0;
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 4);
	CHECK_EQ_U64(end, MT_STACK_COMPLETE);
	/* a zero return address ends it too */
	*stack_word(&c, fps[2]) = saved;
	saved = *stack_word(&c, fps[2] + 8);
	*stack_word(&c, fps[2] + 8) = 0;
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 3);
	CHECK_EQ_U64(end, MT_STACK_COMPLETE);
	*stack_word(&c, fps[2] + 8) = saved;
	/* a frame pointer to itself, or to the words of the frame just read */
	saved = *stack_word(&c, fps[1]);
	*stack_word(&c, fps[1]) = fps[1];
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 3);
	CHECK_EQ_U64(end, MT_STACK_BROKEN);
	*stack_word(&c, fps[1]) = fps[1] + 8;
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 3);
	CHECK_EQ_U64(end, MT_STACK_BROKEN);
	*stack_word(&c, fps[1]) = saved;
	/* a chain that goes back down (here into a loop): broken, never followed */
	saved = *stack_word(&c, fps[1]);
	*stack_word(&c, fps[1]) = fps[0];
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 3);
	CHECK_EQ_U64(end, MT_STACK_BROKEN);
	/* misaligned, or out of the stack: broken */
	*stack_word(&c, fps[1]) = fps[2] + 4;
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 3);
	CHECK_EQ_U64(end, MT_STACK_BROKEN);
	*stack_word(&c, fps[1]) = c.rsp + c.stack_len;
	failed_reads = 0;
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 3);
	CHECK_EQ_U64(end, MT_STACK_BROKEN);
	CHECK_EQ_U64(failed_reads, 1);
	*stack_word(&c, fps[1]) = fps[0] + (512ull << 20); /* beyond MT_STACK_SPAN: not read */
	failed_reads = 0;
	CHECK_EQ_U64(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end), 3);
	CHECK_EQ_U64(end, MT_STACK_BROKEN);
	CHECK_EQ_U64(failed_reads, 0);
	*stack_word(&c, fps[1]) = saved;
	/* and on the program without frame pointers: broken, in bounds */
	capture_free(&c);
	if (load(&c, "nofp_paths"))
		goto out;
	CHECK(fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end) < 7);
	CHECK(end == MT_STACK_BROKEN || end == MT_STACK_COMPLETE);
out:
	capture_free(&c);
}

/* The DWARF walk's other ends: a return address outside the code, a rule it
 * cannot follow, a chain of frame pointers where there is no table. */
TEST(dwarf_walk_ends)
{
	struct capture c;
	struct ref_frames r;
	__u64 saved, full[FRAMES];
	__u8 end;
	int n;

	if (load(&c, "nofp_qsort"))
		goto out;
	CHECK(ref_walk(&c, &r) == 0);
	n = dwarf_walk(&c, MT_MAX_FRAMES, &end);
	CHECK_EQ_U64(n, 18);
	memcpy(full, frames, sizeof(full));
	/* frame k's return address (at the CFA of frame k - 1, minus 8) damaged:
	 * k frames, broken; the bad address is not recorded */
	for (int k = 1; k < n; k++) {
		__u64 *ra = stack_word(&c, r.sp[k + 1] - 8);

		CHECK_EQ_U64(*ra, full[k]);
		saved = *ra;
		*ra = 0x1234;
		forget();
		CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), k);
		CHECK_EQ_U64(end, MT_STACK_BROKEN);
		CHECK(!memcmp(frames, full, (size_t)k * 8));
		*ra = 0;
		forget();
		CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), k);
		CHECK_EQ_U64(end, MT_STACK_COMPLETE);
		*ra = saved;
	}
	/* frame k's rule made unexpressible in the pool: truncated there, at
	 * the first frame that has that row (msort_with_tmp recurses) */
	for (int k = 0; k < n; k++) {
		__u32 slot = row_slot(&c, full[k] - 1), want = (__u32)k + 1;
		struct mt_unwind_row orig, stop;

		CHECK(slot != ~0u);
		if (slot == ~0u)
			continue;
		for (int j = 0; j < k; j++) {
			if (row_slot(&c, full[j] - 1) == slot) {
				want = (__u32)j + 1;
				break;
			}
		}
		memcpy(&orig, pool_get(slot), sizeof(orig));
		stop = orig;
		stop.kind = MT_UW_CFA_STOP;
		pool_put(slot, &stop);
		forget();
		CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), want);
		CHECK_EQ_U64(end, MT_STACK_TRUNCATED);
		pool_put(slot, &orig);
	}
	forget();
	CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), n);
	CHECK(!memcmp(frames, full, (size_t)n * 8));
	capture_free(&c);

	/* no tables: the frame-pointer step, as far as the chain is sound */
	if (load(&c, "fp_paths"))
		goto out;
	for (uint32_t i = 0; i < proc.nmaps; i++)
		proc.maps[i].table = MT_UW_NO_TABLE;
	n = dwarf_walk(&c, MT_MAX_FRAMES, &end);
	CHECK(n >= 4);
	CHECK(end == MT_STACK_BROKEN || end == MT_STACK_COMPLETE);
	CHECK(ref_walk(&c, &r) == 0);
	CHECK(!memcmp(frames, r.pc + 1, 4 * 8));
	/* the same chain going back down: broken there, as the fp walk */
	{
		__u64 fps[2], up;

		fp_chain(&c, fps, 2);
		up = *stack_word(&c, fps[1]);
		*stack_word(&c, fps[1]) = fps[0];
		forget();
		CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), 3);
		CHECK_EQ_U64(end, MT_STACK_BROKEN);
		*stack_word(&c, fps[1]) = up;
	}
	forget();
	c.rbp = 0;
	CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), 1);
	CHECK_EQ_U64(end, MT_STACK_COMPLETE);
	/* a process without a mapping list: -1, for the frame-pointer walk */
	proc_listed = 0;
	forget();
	CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end), -1);
out:
	capture_free(&c);
}

/* The rows cached per CPU are keyed by the list's generation: a new list
 * (uw_lists_changed bumped, as the daemon does) is seen by the next walk. */
TEST(dwarf_cache_generation)
{
	struct capture c;
	__u64 cached[FRAMES];
	__u8 end, end2;
	int n, m;

	if (load(&c, "nofp_paths"))
		goto out;
	n = dwarf_walk(&c, MT_MAX_FRAMES, &end);
	CHECK_EQ_U64(n, 7);
	/* the program's own mapping loses its table: frame pointers there,
	 * which it does not keep */
	for (uint32_t i = 0; i < proc.nmaps; i++) {
		if (proc.maps[i].start <= frames[1] && frames[1] < proc.maps[i].end)
			proc.maps[i].table = MT_UW_NO_TABLE;
	}
	proc.gen = ++lists_written;
	uw_lists_changed++;
	/* the walk with the rows cached is the walk of a CPU that has none */
	m = dwarf_walk(&c, MT_MAX_FRAMES, &end);
	memcpy(cached, frames, sizeof(cached));
	forget();
	CHECK_EQ_U64(dwarf_walk(&c, MT_MAX_FRAMES, &end2), m);
	CHECK(!memcmp(cached, frames, (size_t)m * 8) && end == end2);
	CHECK(m < n);
	CHECK(end == MT_STACK_BROKEN || end == MT_STACK_COMPLETE);
out:
	capture_free(&c);
}

/* Every address of each table: the walker's row (uw_find_row, through the
 * pool) is the builder's (unwind_table_find), and uw_find_map finds the
 * mapping of every boundary. */
TEST(row_and_map_lookup)
{
	struct capture c;
	unsigned long checked = 0;

	if (load(&c, "nofp_cxx"))
		goto out;
	for (int i = 0; i < c.nmods; i++) {
		const struct module *m = &c.mods[i];

		if (m->id == MT_UW_NO_TABLE)
			continue;
		for (__u64 off = 0; off < m->t.size + 512; off++) {
			const struct mt_unwind_row *want =
						       unwind_table_find(&m->t, m->t.base + off),
						   *got = uw_find_row(&states[0], m->id, off);

			checked++;
			/* past the table's end (in its last page) the walker finds
			 * the builder's closing row: no rule, as the builder says */
			if (!want && got && MT_UW_CFA_KIND(got->kind) == MT_UW_CFA_NONE)
				continue;
			if (!want != !got || (want && memcmp(want, got, sizeof(*want)))) {
				fprintf(stderr, "%s: offset %#llx: row %s, want %s\n", m->tag, off,
					got ? "found" : "none", want ? "one" : "none");
				CHECK(0);
				break;
			}
		}
	}
	CHECK(checked > 100000);
	for (uint32_t i = 0; i < proc.nmaps; i++) {
		const struct mt_unwind_map *mp = &proc.maps[i];

		CHECK_EQ_U64(uw_find_map(&states[0], &proc, mp->start), i);
		CHECK_EQ_U64(uw_find_map(&states[0], &proc, mp->end - 1), i);
		if (i + 1 < proc.nmaps && proc.maps[i + 1].start != mp->end)
			CHECK(uw_find_map(&states[0], &proc, mp->end) == -1);
		CHECK(uw_find_map(&states[0], &proc, mp->start - 1) ==
		      (i && proc.maps[i - 1].end == mp->start ? (int)i - 1 : -1));
	}
	/* many mappings: every one found by its start and its last byte */
	memset(&proc, 0, sizeof(proc));
	proc.nmaps = MT_UW_MAX_MAPS;
	for (uint32_t i = 0; i < proc.nmaps; i++) {
		proc.maps[i].start = 0x400000 + (__u64)i * 0x3000;
		proc.maps[i].end = proc.maps[i].start + 0x2000;
	}
	for (uint32_t i = 0; i < proc.nmaps; i++) {
		CHECK_EQ_U64(uw_find_map(&states[0], &proc, proc.maps[i].start), i);
		CHECK_EQ_U64(uw_find_map(&states[0], &proc, proc.maps[i].end - 1), i);
		CHECK(uw_find_map(&states[0], &proc, proc.maps[i].end) == -1);
	}
	CHECK(uw_find_map(&states[0], &proc, 0x3fffff) == -1);
out:
	capture_free(&c);
}

static __u64 rnd_state = 0x2545f4914f6cdd1dull;

static __u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Stacks with words overwritten at random (by random values, stack
 * addresses, code addresses, 0): both walks end, within their bounds, every
 * DWARF frame after the first in the code. */
TEST(damaged_stacks)
{
	unsigned ends[8] = {0};

	for (size_t s = 0; s < sizeof(stacks) / sizeof(stacks[0]); s++) {
		struct capture c;
		struct ref_frames r;
		__u64 full[FRAMES], used;
		uint8_t *clean;
		int n;
		__u8 end;

		if (load(&c, stacks[s].name)) {
			capture_free(&c);
			continue;
		}
		n = dwarf_walk(&c, MT_MAX_FRAMES, &end);
		memcpy(full, frames, sizeof(full));
		/* the words the frames use: up to the outermost one's stack pointer */
		CHECK(ref_walk(&c, &r) == 0 && r.n > 1);
		used = r.n > 1 ? r.sp[r.n - 1] - c.rsp + 16 : c.stack_len;
		if (used > c.stack_len)
			used = c.stack_len;
		clean = malloc(c.stack_len);
		memcpy(clean, c.stack, c.stack_len);
		for (int trial = 0; trial < 2000; trial++) {
			int words = 1 + (int)(rnd() % 4), k;

			for (int w = 0; w < words; w++) {
				__u64 at = c.rsp + (rnd() % (used / 8)) * 8, v;

				switch (rnd() % 5) {
				case 0:
					v = rnd();
					break;
				case 1:
					v = c.rsp + rnd() % c.stack_len;
					break;
				case 2:
					v = c.rsp - rnd() % 4096;
					break;
				case 3:
					v = full[rnd() % (__u64)n] + rnd() % 64 - 32;
					break;
				default:
					v = 0;
				}
				*stack_word(&c, at) = v;
			}
			forget();
			k = dwarf_walk(&c, MT_MAX_FRAMES, &end);
			ends[end & 7]++;
			CHECK(k >= 1 && end <= MT_STACK_OUTERMOST && end != MT_STACK_NONE &&
			      end != MT_STACK_KERNEL);
			for (int i = 1; i < k; i++) {
				int in = 0;

				for (uint32_t j = 0; j < proc.nmaps; j++)
					in |= proc.maps[j].start <= frames[i] - 1 &&
					      frames[i] - 1 < proc.maps[j].end;
				CHECK(in);
			}
			fp_walk(&c, c.rbp, MT_MAX_FRAMES, &end);
			CHECK(end == MT_STACK_BROKEN || end == MT_STACK_COMPLETE ||
			      end == MT_STACK_DEPTH);
			memcpy(c.stack, clean, c.stack_len);
		}
		CHECK_EQ_U64(bad_lookups, 0);
		free(clean);
		capture_free(&c);
	}
	/* the damage reached the frames: walks ended every way but the depth */
	CHECK(ends[MT_STACK_COMPLETE] && ends[MT_STACK_BROKEN] && ends[MT_STACK_TRUNCATED] &&
	      ends[MT_STACK_OUTERMOST]);
}

/* ---- every kind of rule, on a table and a stack made here ----------------- */

#define CODE  0x400000ull
#define STACK 0x7ffc0000f000ull

static uint8_t synth_mem[4096];

static void put(__u64 addr, __u64 v)
{
	memcpy(synth_mem + (addr - STACK), &v, 8);
}

static struct mt_unwind_row row(__u32 pc, int cfa, int rbp, int cfa_off, int rbp_off)
{
	struct mt_unwind_row r = {.pc = pc,
				  .kind = (__u8)(cfa | rbp << 4),
				  .rbp_off = (__s8)rbp_off,
				  .cfa_off = (__s16)cfa_off};

	return r;
}

/* Table id in the pool at slot, rows sorted, covering [0, size) from CODE,
 * its page entries as the builder makes them: every row that applies
 * somewhere in the page. */
static void synth_table(__u32 id, __u32 slot, const struct mt_unwind_row *rows, __u32 n, __u32 size)
{
	__u32 npages = (size + (1u << MT_UW_PAGE_SHIFT) - 1) >> MT_UW_PAGE_SHIFT;

	tables[id].pages_slot = slot;
	tables[id].npages = npages;
	tables[id].rows_slot = slot + npages;
	tables[id].nrows = n;
	for (__u32 p = 0; p < npages; p++) {
		__u32 lo = p << MT_UW_PAGE_SHIFT, hi = lo + (1u << MT_UW_PAGE_SHIFT), first = 0,
		      last = 0;
		struct mt_unwind_page pg;

		for (__u32 i = 0; i < n; i++) {
			if (rows[i].pc <= lo)
				first = i;
			if (rows[i].pc < hi)
				last = i;
		}
		pg.first = first;
		pg.count = last - first + 1;
		pool_put(slot + p, &pg);
	}
	for (__u32 i = 0; i < n; i++)
		pool_put(slot + npages + i, &rows[i]);
}

enum {
	F_A = 0x100,
	F_B = 0x200,
	F_C = 0x300,
	F_D = 0x400,
	F_E = 0x500,
	F_F = 0x600,
	F_ROOT = 0x700,
	F_PLT = 0x800,
	F_SIG = 0x8f0,
	F_G = 0xa00,
	F_END = 0xb00
};

static void synth_setup(void)
{
	static const int R = MT_UW_RBP_SAME;
	const struct mt_unwind_row rows[] = {
	    row(0, MT_UW_CFA_NONE, R, 0, 0),
	    row(F_A, MT_UW_CFA_RSP, R, 2, 0),			    /* 8 bytes of locals */
	    row(F_B, MT_UW_CFA_RSP, R, 1, 0),			    /* at entry */
	    row(F_C, MT_UW_CFA_RBP, MT_UW_RBP_AT_CFA, 2, -2),	    /* a frame-pointer frame */
	    row(F_D, MT_UW_CFA_DEREF_RBP, MT_UW_RBP_AT_RBP, -1, 0), /* a realigned frame */
	    row(F_E, MT_UW_CFA_RSP, MT_UW_RBP_UNKNOWN, 3, 0),
	    row(F_F, MT_UW_CFA_RBP, R, 2, 0), /* needs rbp */
	    row(F_ROOT, MT_UW_CFA_ROOT, MT_UW_RBP_UNKNOWN, 0, 0),
	    row(F_PLT, MT_UW_CFA_PLT, R, 11, 0),
	    row(F_PLT + 0x10, MT_UW_CFA_NONE, R, 0, 0),
	    row(F_SIG, MT_UW_CFA_SIGNAL, R, 20, 15),
	    row(F_G, MT_UW_CFA_RSP, R, 0, 0), /* a CFA that is not above rsp */
	    row(F_END, MT_UW_CFA_NONE, R, 0, 0),
	};

	memset(tables, 0, sizeof(tables));
	for (int i = 0; i < NCHUNKS; i++) {
		free(chunks[i]);
		chunks[i] = NULL;
	}
	synth_table(3, 100, rows, sizeof(rows) / sizeof(rows[0]), 0x1000);
	memset(&proc, 0, sizeof(proc));
	proc.nmaps = 1;
	proc.maps[0].start = CODE;
	proc.maps[0].end = CODE + 0x1000;
	proc.maps[0].bias = CODE;
	proc.maps[0].table = 3;
	proc.gen = ++lists_written;
	proc_listed = 1;
	uw_lists_changed++;
	memset(synth_mem, 0, sizeof(synth_mem));
	mem = synth_mem;
	mem_lo = STACK;
	mem_len = sizeof(synth_mem);
	forget();
}

static int synth_walk(__u64 ip, __u64 sp, __u64 bp, __u8 *end)
{
	struct stack_window win;

	for (int i = 0; i < FRAMES + 4; i++)
		frames[i] = CANARY;
	memset(&win, 0, sizeof(win));
	forget();
	return uw_walk(ip, sp, bp, &win, frames, MT_MAX_FRAMES, end, TGID, 0);
}

#define CHECK_FRAMES(n, ...)                                                                       \
	do {                                                                                       \
		const __u64 want_[] = {__VA_ARGS__};                                               \
		CHECK_EQ_U64(n, sizeof(want_) / 8);                                                \
		for (size_t i_ = 0; i_ < sizeof(want_) / 8 && (int)i_ < (n); i_++)                 \
			CHECK_EQ_U64(frames[i_], want_[i_]);                                       \
	} while (0)

TEST(every_rule)
{
	__u8 end;
	int n;

	/* a return address right after a call that ends its function (a
	 * noreturn one): the rule is the caller's, at ra - 1, not the next
	 * function's */
	synth_setup();
	put(STACK + 8, CODE + F_ROOT + 0x10);
	put(STACK, 0x1234);
	n = synth_walk(CODE + F_B, STACK, 0, &end);
	CHECK_FRAMES(n, CODE + F_B, CODE + F_ROOT + 0x10);
	CHECK_EQ_U64(end, MT_STACK_OUTERMOST);

	/* the same for a caller's return address: looked up at ra - 1 */
	synth_setup();
	put(STACK + 8, CODE + F_B);
	put(STACK + 0x18, CODE + F_ROOT + 0x18);
	put(STACK + 0x10, 0x1234);
	n = synth_walk(CODE + F_A + 0x10, STACK, 0, &end);
	CHECK_FRAMES(n, CODE + F_A + 0x10, CODE + F_B, CODE + F_ROOT + 0x18);
	CHECK_EQ_U64(end, MT_STACK_OUTERMOST);

	/* a frame-pointer frame, a realigned one (CFA through rbp, rbp saved at
	 * rbp), one that loses rbp, then one that needs it: truncated */
	synth_setup();
	put(STACK + 0x40, STACK + 0x80);      /* fC: caller's rbp at CFA - 16 */
	put(STACK + 0x48, CODE + F_D + 0x50); /* its return address */
	put(STACK + 0x78, STACK + 0xc0);      /* fD: CFA at rbp - 8 */
	put(STACK + 0x80, STACK + 0x400);     /* its caller's rbp at rbp */
	put(STACK + 0xb8, CODE + F_E + 0x50); /* CFA - 8 */
	put(STACK + 0xd0, CODE + F_F + 0x50); /* fE: CFA = sp + 24 */
	n = synth_walk(CODE + F_C + 0x50, STACK + 0x10, STACK + 0x40, &end);
	CHECK_FRAMES(n, CODE + F_C + 0x50, CODE + F_D + 0x50, CODE + F_E + 0x50, CODE + F_F + 0x50);
	CHECK_EQ_U64(end, MT_STACK_TRUNCATED);
	/* a realigned frame after rbp was lost: truncated too, the stale rbp
	 * (which would find a frame) not used */
	put(STACK + 0xd0, CODE + F_D + 0x60);
	put(STACK + 0x3f8, STACK + 0x420);
	put(STACK + 0x418, CODE + F_ROOT);
	n = synth_walk(CODE + F_C + 0x50, STACK + 0x10, STACK + 0x40, &end);
	CHECK_FRAMES(n, CODE + F_C + 0x50, CODE + F_D + 0x50, CODE + F_E + 0x50, CODE + F_D + 0x60);
	CHECK_EQ_U64(end, MT_STACK_TRUNCATED);
	put(STACK + 0xd0, CODE + F_F + 0x50);
	/* with rbp known through fE, fF's CFA is rbp + 16 */
	{
		struct mt_unwind_row e = row(F_E, MT_UW_CFA_RSP, MT_UW_RBP_SAME, 3, 0);

		pool_put(tables[3].rows_slot + 5, &e);
	}
	put(STACK + 0x408, CODE + F_ROOT + 8);
	n = synth_walk(CODE + F_C + 0x50, STACK + 0x10, STACK + 0x40, &end);
	CHECK_FRAMES(n, CODE + F_C + 0x50, CODE + F_D + 0x50, CODE + F_E + 0x50, CODE + F_F + 0x50,
		     CODE + F_ROOT + 8);
	CHECK_EQ_U64(end, MT_STACK_OUTERMOST);

	/* the kernel's signal frame: the interrupted rsp, rip and rbp; the rip
	 * is exact (the first instruction of fB: its rule, not fA's) */
	synth_setup();
	put(STACK + 160, STACK + 0x300);
	put(STACK + 168, CODE + F_B);
	put(STACK + 120, STACK + 0x500);
	put(STACK + 0x300, CODE + F_ROOT + 0x20);
	put(STACK + 0x308, 0x1234);
	n = synth_walk(CODE + F_SIG + 0x10, STACK, 0, &end);
	CHECK_FRAMES(n, CODE + F_SIG + 0x10, CODE + F_B, CODE + F_ROOT + 0x20);
	CHECK_EQ_U64(end, MT_STACK_OUTERMOST);

	/* interrupted in a lazy PLT stub: rsp + 8 before (pc & 15) reaches
	 * the threshold, rsp + 16 from it */
	for (int at = 10; at <= 11; at++) {
		synth_setup();
		put(STACK + 160, STACK + 0x300);
		put(STACK + 168, CODE + F_PLT + (__u64)at);
		put(STACK + 0x300 + (at >= 11 ? 8 : 0), CODE + F_ROOT + 0x30);
		put(STACK + 0x300 + (at >= 11 ? 0 : 8), 0x1234);
		n = synth_walk(CODE + F_SIG + 0x10, STACK, 0, &end);
		CHECK_FRAMES(n, CODE + F_SIG + 0x10, CODE + F_PLT + (__u64)at,
			     CODE + F_ROOT + 0x30);
		CHECK_EQ_U64(end, MT_STACK_OUTERMOST);
	}

	/* a CFA not above the stack pointer: truncated, not a loop */
	synth_setup();
	put(STACK, CODE + F_G + 0x10);
	n = synth_walk(CODE + F_G + 0x10, STACK + 8, 0, &end);
	CHECK_FRAMES(n, CODE + F_G + 0x10);
	CHECK_EQ_U64(end, MT_STACK_TRUNCATED);

	/* no rule (a gap): the frame-pointer step from there */
	synth_setup();
	put(STACK + 0x100, 0);
	put(STACK + 0x108, CODE + F_ROOT + 0x40);
	n = synth_walk(CODE + F_END + 0x10, STACK, STACK + 0x100, &end);
	CHECK_FRAMES(n, CODE + F_END + 0x10, CODE + F_ROOT + 0x40);
	CHECK_EQ_U64(end, MT_STACK_OUTERMOST);
}

/* A frame-pointer chain deeper than the kernel keeps, walked in batches:
 * every frame, every depth limit, the ends between and at the batches. */
TEST(fp_batches_deep)
{
	enum { DEEP = 200 };
	__u8 end;
	__u32 n;

	synth_setup();
	for (__u64 i = 0; i < DEEP; i++) {
		put(STACK + 16 * i, i + 1 < DEEP ? STACK + 16 * (i + 1) : 0);
		put(STACK + 16 * i + 8, CODE + 0x10 + i);
	}
	n = fp_walk_regs(CODE + 0x1, STACK, STACK, MT_MAX_FRAMES, &end);
	CHECK_EQ_U64(n, MT_MAX_FRAMES);
	CHECK_EQ_U64(end, MT_STACK_DEPTH);
	CHECK_EQ_U64(fp_batches, (MT_MAX_FRAMES - 1 + MT_FP_BATCH - 1) / MT_FP_BATCH);
	for (__u32 i = 1; i < n; i++)
		CHECK_EQ_U64(frames[i], CODE + 0x10 + i - 1);
	for (__u32 d = 1; d <= MT_MAX_FRAMES; d++) {
		CHECK_EQ_U64(fp_walk_regs(CODE + 0x1, STACK, STACK, d, &end), d);
		CHECK_EQ_U64(end, MT_STACK_DEPTH);
		CHECK(frames[d] == CANARY);
	}
	/* the chain ending at each place: complete there, whatever the batch */
	for (__u32 k = 1; k < 100; k++) {
		put(STACK + 16 * (k - 1), 0);
		CHECK_EQ_U64(fp_walk_regs(CODE + 0x1, STACK, STACK, MT_MAX_FRAMES, &end), k + 1);
		CHECK_EQ_U64(end, MT_STACK_COMPLETE);
		/* or going back down: broken there */
		put(STACK + 16 * (k - 1), STACK);
		CHECK_EQ_U64(fp_walk_regs(CODE + 0x1, STACK, STACK, MT_MAX_FRAMES, &end), k + 1);
		CHECK_EQ_U64(end, MT_STACK_BROKEN);
		put(STACK + 16 * (k - 1), STACK + 16 * k);
	}
}

/* A page as full of rows as it can be (one a byte, and the one before it):
 * the search's MT_UW_SEARCH_STEPS steps find each. */
TEST(dense_page)
{
	static struct mt_unwind_row rows[600];
	struct uw_state *st = &states[0];
	__u32 n = 0;

	synth_setup();
	rows[n++] = row(0, MT_UW_CFA_NONE, 0, 0, 0);
	for (__u32 pc = 0xc0; pc < 0x300; pc++)
		rows[n++] = row(pc, MT_UW_CFA_RSP, 0, (int)(pc & 0xff) + 1, 0);
	synth_table(5, 5000, rows, n, 0x300);
	for (__u64 off = 0; off < 0x300; off++) {
		const struct mt_unwind_row *r = uw_find_row(st, 5, off);
		__u32 want = 0;

		for (__u32 i = 0; i < n && rows[i].pc <= off; i++)
			want = i;
		CHECK(r != NULL && r->pc == rows[want].pc && r->cfa_off == rows[want].cfa_off);
	}
	CHECK(uw_find_row(st, 5, 0x300) == NULL);
	CHECK(uw_find_row(st, 6, 0) == NULL); /* no such table */
}

/* ---- the stack window ------------------------------------------------------ */

TEST(window_reads)
{
	static uint8_t img[3 * 4096];
	struct stack_window w;
	__u64 out[2] = {0}, base = 0x7ffe0000f000ull; /* page-aligned */
	unsigned long before;

	for (size_t i = 0; i < sizeof(img) / 8; i++)
		((__u64 *)(void *)img)[i] = base + i * 8;
	mem = img;
	mem_lo = base;
	mem_len = sizeof(img);
	memset(&w, 0, sizeof(w));
	/* one copy serves the words after it, up to MT_WIN_BYTES */
	reads = 0;
	CHECK(win_read(&w, base + 64, out, 2) == 0);
	CHECK(out[0] == base + 64 && out[1] == base + 72);
	CHECK_EQ_U64(w.lo, base + 64);
	CHECK_EQ_U64(w.len, MT_WIN_BYTES);
	CHECK(win_read(&w, base + 64 + MT_WIN_BYTES - 16, out, 2) == 0);
	CHECK(out[1] == base + 64 + MT_WIN_BYTES - 8);
	CHECK_EQ_U64(reads, 1);
	CHECK(win_read(&w, base + 64 + MT_WIN_BYTES - 8, out, 2) == 0); /* past it: again */
	CHECK(out[0] == base + 64 + MT_WIN_BYTES - 8 && out[1] == base + 64 + MT_WIN_BYTES);
	CHECK_EQ_U64(reads, 2);
	/* a window ends with the page the words end in */
	CHECK(win_read(&w, base + 4096 - 24, out, 1) == 0);
	CHECK_EQ_U64(w.len, 24);
	CHECK(win_read(&w, base + 4096 - 8, out, 2) == 0); /* across: the next page too */
	CHECK(out[0] == base + 4096 - 8 && out[1] == base + 4096);
	/* below the window: read again */
	before = reads;
	CHECK(win_read(&w, base, out, 1) == 0 && out[0] == base);
	CHECK_EQ_U64(reads, before + 1);
	/* the last word of the memory; two words from it fail */
	CHECK(win_read(&w, base + sizeof(img) - 8, out, 1) == 0);
	CHECK(out[0] == base + sizeof(img) - 8);
	CHECK(win_read(&w, base + sizeof(img) - 8, out, 2) == -1);
	CHECK_EQ_U64(w.len, 0);
	CHECK(win_read(&w, base - 8, out, 1) == -1);
	/* unaligned: read as asked */
	CHECK(win_read(&w, base + 4, out, 1) == 0);
	CHECK(out[0] == ((base >> 32) | ((base + 8) << 32)));
	/* at the top of the address space: no read at all */
	before = reads;
	CHECK(win_read(&w, ~0ull - 7, out, 1) == -1);
	CHECK_EQ_U64(reads, before);
}

/* ---- stack ids -------------------------------------------------------------- */

TEST(stack_ids)
{
	__u64 f[MT_ID_FRAMES + 1], h;
	struct stack_id_entry e;

	for (int i = 0; i <= MT_ID_FRAMES; i++)
		f[i] = 0x555555555000ull + (__u64)i * 0x40;
	h = stack_hash(7, f, 5);
	CHECK(h != 0);
	CHECK_EQ_U64(stack_hash(7, f, 5), h);
	CHECK(stack_hash(8, f, 5) != h);
	CHECK(stack_hash(7, f, 4) != h);
	CHECK(stack_hash(7, f, 6) != h);
	f[5] ^= 1; /* beyond n: not part of it */
	CHECK_EQ_U64(stack_hash(7, f, 5), h);
	f[4] ^= 1;
	CHECK(stack_hash(7, f, 5) != h);
	f[4] ^= 1;
	/* frames swapped: another stack */
	{
		__u64 t = f[1];

		f[1] = f[2];
		f[2] = t;
		CHECK(stack_hash(7, f, 5) != h);
		f[2] = f[1];
		f[1] = t;
	}
	CHECK(stack_hash(7, f, 0) != 0);
	memset(&e, 0xee, sizeof(e));
	stack_entry_fill(&e, 7, f, 5);
	CHECK_EQ_U64(e.tgid, 7);
	CHECK_EQ_U64(e.nframes, 5);
	CHECK(!memcmp(e.frames, f, 5 * 8));
	CHECK_EQ_U64(e.frames[5], 0xeeeeeeeeeeeeeeeeull); /* nothing past n */
	CHECK(stack_entry_is(&e, 7, f, 5));
	CHECK(!stack_entry_is(&e, 8, f, 5));
	CHECK(!stack_entry_is(&e, 7, f, 4));
	f[3]++;
	CHECK(!stack_entry_is(&e, 7, f, 5));
	f[3]--;
	f[5]++;
	CHECK(stack_entry_is(&e, 7, f, 5));
	/* the longest stack sent as an id */
	stack_entry_fill(&e, 9, f, MT_ID_FRAMES);
	CHECK(stack_entry_is(&e, 9, f, MT_ID_FRAMES));
	f[MT_ID_FRAMES - 1]++;
	CHECK(!stack_entry_is(&e, 9, f, MT_ID_FRAMES));
	CHECK(stack_hash(9, f, MT_ID_FRAMES) != stack_hash(9, e.frames, MT_ID_FRAMES));
	/* 100,000 stacks that differ in one frame: 100,000 ids */
	{
		enum { N = 100000 };
		__u64 *ids = malloc(N * sizeof(*ids));
		int dup = 0;

		for (int i = 0; i < N; i++) {
			f[i % 8] += 16;
			ids[i] = stack_hash(7, f, 8);
		}
		for (int i = 0; i < N && ids; i++) {
			for (int j = i + 1; j < i + 64 && j < N; j++)
				dup += ids[i] == ids[j];
		}
		CHECK_EQ_U64(dup, 0);
		free(ids);
	}
}

int main(int argc, char **argv)
{
	elf_version(EV_CURRENT);
	return UNIT_RUN(argc, argv);
}
