// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The unwind table builder (src/daemon/unwind/unwind_table.c) on committed ELF files made
 * from tests/unit/data/unwind_rules.S (one function per kind of rule; `make
 * unwind-test-data` remakes them): each rule's compact row, the page index
 * against a linear search, .debug_frame from a separate debug file, and the
 * pointer decoding it does itself.
 */
#include "unit.h"
#include "daemon/unwind/unwind_table.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <unistd.h>

#define DATA "tests/unit/data/"

/* A symbol's value in the file at path (labels of unwind_rules.S). */
static uint64_t symbol(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t v = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !v && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sizeof(Elf64_Sym); i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name) && sym.st_value) {
				v = sym.st_value;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return v;
}

static int build(const char *path, const char *debug, struct unwind_table *t, char *err)
{
	int fd = open(path, O_RDONLY), dfd = debug ? open(debug, O_RDONLY) : -1, rc;

	rc = fd < 0 ? -1 : unwind_table_build_fd(fd, dfd, t, err, 256);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* The row at a label (plus delta): its kinds and offsets, or -1 kinds when none. */
struct want {
	const char *label;
	int delta;
	int cfa, rbp;
	int cfa_off, rbp_off;
};

static const struct want rules[] = {
    {"f_rsp_body", 0, MT_UW_CFA_RSP, MT_UW_RBP_SAME, 5, 0},
    {"f_rsp_end", 0, MT_UW_CFA_RSP, MT_UW_RBP_SAME, 1, 0},
    {"f_rsp", 0, MT_UW_CFA_RSP, MT_UW_RBP_SAME, 1, 0},
    {"f_rbp_body", 0, MT_UW_CFA_RBP, MT_UW_RBP_AT_CFA, 2, -2},
    {"f_nocfi", 0, MT_UW_CFA_NONE, MT_UW_RBP_SAME, 0, 0},
    {"f_nocfi_end", 0, MT_UW_CFA_NONE, MT_UW_RBP_SAME, 0, 0},
    {"f_root_body", 0, MT_UW_CFA_ROOT, MT_UW_RBP_UNKNOWN, 0, 0},
    {"f_drap_body", 0, MT_UW_CFA_DEREF_RBP, MT_UW_RBP_AT_RBP, -1, 0},
    {"f_drap", 8, MT_UW_CFA_STOP, MT_UW_RBP_UNKNOWN, 0, 0},	   /* CFA = r10: a prologue */
    {"f_signal_body", 0, MT_UW_CFA_STOP, MT_UW_RBP_UNKNOWN, 0, 0}, /* not the kernel's */
    {"f_restore_rt", 0, MT_UW_CFA_SIGNAL, MT_UW_RBP_SAME, 20, 15},
    {"f_expr_body", 0, MT_UW_CFA_STOP, MT_UW_RBP_UNKNOWN, 0, 0},
    {"f_big_body", 0, MT_UW_CFA_STOP, MT_UW_RBP_UNKNOWN, 0, 0},
    {"f_plt_body", 0, MT_UW_CFA_PLT, MT_UW_RBP_SAME, 11, 0},
};

static void check_rules(const char *path, const struct unwind_table *t, int with_plt)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct want *w = &rules[i];
		uint64_t at = symbol(path, w->label) + (uint64_t)w->delta;
		const struct mt_unwind_row *r = unwind_table_find(t, at);

		if (!with_plt && w->cfa == MT_UW_CFA_PLT)
			continue;
		CHECK(at > (uint64_t)w->delta);
		CHECK(r != NULL);
		if (!r)
			continue;
		if (MT_UW_CFA_KIND(r->kind) != w->cfa || MT_UW_RBP_KIND(r->kind) != w->rbp)
			fprintf(stderr, "%s: %s+%d: kinds %d/%d, want %d/%d\n", path, w->label,
				w->delta, MT_UW_CFA_KIND(r->kind), MT_UW_RBP_KIND(r->kind), w->cfa,
				w->rbp);
		CHECK_EQ_U64(MT_UW_CFA_KIND(r->kind), w->cfa);
		CHECK_EQ_U64(MT_UW_RBP_KIND(r->kind), w->rbp);
		if (w->cfa != MT_UW_CFA_STOP && w->cfa != MT_UW_CFA_ROOT) {
			CHECK_EQ_U64((int64_t)r->cfa_off, (int64_t)w->cfa_off);
			CHECK_EQ_U64((int64_t)r->rbp_off, (int64_t)w->rbp_off);
		}
	}
}

/* Every address: the page index and binary search find the row a linear search does. */
static void check_index(const struct unwind_table *t)
{
	for (uint64_t off = 0; off < t->size; off++) {
		const struct mt_unwind_row *r = unwind_table_find(t, t->base + off), *lin = NULL;

		for (uint32_t i = 0; i < t->nrows && t->rows[i].pc <= off; i++)
			lin = &t->rows[i];
		CHECK(r == lin);
	}
	CHECK(unwind_table_find(t, t->base + t->size) == NULL);
	CHECK(unwind_table_find(t, t->base - 1) == NULL);
	for (uint32_t i = 1; i < t->nrows; i++)
		CHECK(t->rows[i].pc > t->rows[i - 1].pc);
}

TEST(eh_frame_rules)
{
	struct unwind_table t;
	char err[256] = "";

	CHECK(build(DATA "unwind_rules.so", NULL, &t, err) == 0);
	if (!t.nrows) {
		fprintf(stderr, "unwind_rules.so: %s\n", err);
		return;
	}
	CHECK_STR(t.source, ".eh_frame");
	CHECK_EQ_U64(t.fdes, 10); /* nine functions and the linker's PLT */
	check_rules(DATA "unwind_rules.so", &t, 1);
	check_index(&t);
	unwind_table_free(&t);
}

TEST(debug_frame_from_separate_file)
{
	struct unwind_table t;
	char err[256] = "";

	/* the stripped file alone has no call frame information at all */
	CHECK(build(DATA "unwind_debug.so", NULL, &t, err) == -1);
	CHECK(strstr(err, "no call frame information") != NULL);
	CHECK(t.nrows == 0 && t.rows == NULL);
	CHECK(build(DATA "unwind_debug.so", DATA "unwind_debug.debug", &t, err) == 0);
	if (!t.nrows)
		return;
	CHECK_STR(t.source, ".debug_frame");
	check_rules(DATA "unwind_debug.debug", &t, 1);
	check_index(&t);
	unwind_table_free(&t);
}

TEST(not_elf)
{
	static const uint8_t junk[64] = "\x7f"
					"ELF garbage";
	struct unwind_table t;
	char err[256];
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)junk, sizeof(junk));
	CHECK(unwind_table_build(elf, NULL, &t, err, sizeof(err)) == -1);
	CHECK(unwind_table_build(NULL, NULL, &t, err, sizeof(err)) == -1);
	if (elf)
		elf_end(elf);
}

TEST(decode_pointer)
{
	static const uint8_t sdata4[] = {0xf0, 0xff, 0xff, 0xff}, uleb[] = {0xe5, 0x8e, 0x26},
			     sleb[] = {0x7f}, u2[] = {0x34, 0x12};
	uint64_t v;

	CHECK_EQ_U64(unwind_decode_pointer(sdata4, 4, 0x1b, 0x1000, &v), 4); /* pcrel|sdata4 */
	CHECK_EQ_U64(v, 0x1000 - 16);
	CHECK_EQ_U64(unwind_decode_pointer(sdata4, 4, 0x03, 0x1000, &v), 4); /* udata4 */
	CHECK_EQ_U64(v, 0xfffffff0);
	CHECK_EQ_U64(unwind_decode_pointer(uleb, 3, 0x01, 0, &v), 3);
	CHECK_EQ_U64(v, 624485);
	CHECK_EQ_U64(unwind_decode_pointer(sleb, 1, 0x09, 0, &v), 1);
	CHECK_EQ_U64(v, (uint64_t)-1);
	CHECK_EQ_U64(unwind_decode_pointer(u2, 2, 0x02, 0, &v), 2);
	CHECK_EQ_U64(v, 0x1234);
	CHECK_EQ_U64(unwind_decode_pointer(sdata4, 3, 0x1b, 0, &v), 0); /* too short */
	CHECK_EQ_U64(unwind_decode_pointer(uleb, 2, 0x01, 0, &v), 0);	/* unterminated */
	CHECK_EQ_U64(unwind_decode_pointer(sdata4, 4, 0x3b, 0, &v), 0); /* datarel */
	CHECK_EQ_U64(unwind_decode_pointer(sdata4, 4, 0x9b, 0, &v), 0); /* indirect */
	CHECK_EQ_U64(unwind_decode_pointer(sdata4, 4, 0xff, 0, &v), 0); /* omit */
}

UNIT_MAIN()
