// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unwind tables from call frame information (see unwind_table.h). libdw
 * interprets the CFI: dwarf_next_cfi lists the FDEs, dwarf_cfi_addrframe
 * gives the row at an address with its range (dwarf_frame_info) and rules
 * (dwarf_frame_cfa, dwarf_frame_register). Each row becomes the compact
 * form; consecutive rows that say the same merge, and the gaps between
 * FDEs become MT_UW_CFA_NONE rows (frame-pointer steps).
 */
#include "daemon/unwind/unwind_table.h"
#include "common/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* x86-64 DWARF register numbers. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* A module's text is below 4 GiB of it: table offsets are 32 bits. */
#define MAX_TABLE_SIZE (1ull << 32)
/* Rows of one FDE, at most: a function with more is stopped at, not read for minutes. */
#define MAX_FDE_ROWS 100000

size_t unwind_decode_pointer(const uint8_t *p, size_t avail, uint8_t encoding, uint64_t field_vaddr,
			     uint64_t *out)
{
	uint64_t v = 0;
	size_t n = 0;
	int shift = 0;

	if (encoding == DW_EH_PE_omit)
		return 0;
	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		n = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		n = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		n = 2;
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		for (n = 0; n < avail && n < 10; n++) {
			v |= (uint64_t)(p[n] & 0x7f) << shift;
			shift += 7;
			if (!(p[n] & 0x80))
				break;
		}
		if (n == avail || n == 10)
			return 0;
		n++;
		if ((encoding & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (p[n - 1] & 0x40))
			v |= ~0ull << shift;
		break;
	default:
		return 0;
	}
	if (n > avail)
		return 0;
	if ((encoding & 0x0f) != DW_EH_PE_uleb128 && (encoding & 0x0f) != DW_EH_PE_sleb128) {
		for (size_t i = 0; i < n; i++)
			v |= (uint64_t)p[i] << (8 * i);
		if ((encoding & 0x0f) == DW_EH_PE_sdata4)
			v = (uint64_t)(int64_t)(int32_t)v;
		else if ((encoding & 0x0f) == DW_EH_PE_sdata2)
			v = (uint64_t)(int64_t)(int16_t)v;
	}
	switch (encoding & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field_vaddr;
		break;
	default: /* textrel, datarel, funcrel, aligned: not in FDEs we read */
		return 0;
	}
	if (encoding & DW_EH_PE_indirect)
		return 0;
	*out = v;
	return n;
}

/* The size of an encoded pointer's field, or 0 when it varies or is unknown. */
static size_t encoded_size(uint8_t encoding)
{
	switch (encoding & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	}
	return 0;
}

/*
 * The FDE pointer encoding a CIE's augmentation gives ('R'), absptr when it
 * gives none; -1 when the augmentation cannot be followed.
 */
static int cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *aug = cie->augmentation;
	size_t pos = 0;

	if (!aug || aug[0] != 'z')
		return aug && aug[0] ? -1 : DW_EH_PE_absptr;
	for (const char *c = aug + 1; *c; c++) {
		switch (*c) {
		case 'R':
			if (pos >= cie->augmentation_data_size)
				return -1;
			return cie->augmentation_data[pos];
		case 'L':
			pos++;
			break;
		case 'P': {
			uint8_t enc;
			size_t sz;

			if (pos >= cie->augmentation_data_size)
				return -1;
			enc = cie->augmentation_data[pos++];
			sz = encoded_size(enc);
			if (!sz || (enc & 0x70) == DW_EH_PE_aligned)
				return -1;
			pos += sz;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

struct cie_enc {
	Dwarf_Off offset;
	int encoding;
};

struct fde_range {
	uint64_t start, end;
};

static int cmp_range(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Every FDE's [start, end) in the CFI section data (sh_addr: its address,
 * for pc-relative encodings), sorted. Entries that cannot be read are
 * skipped.
 */
static struct fde_range *list_fdes(Elf *elf, Elf_Data *data, uint64_t sh_addr, int eh_frame,
				   size_t *nout)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct cie_enc *cies = NULL;
	struct fde_range *v = NULL;
	size_t ncies = 0, n = 0, cap = 0;
	Dwarf_Off off = 0, next;

	*nout = 0;
	if (!ident)
		return NULL;
	while (off != (Dwarf_Off)-1 && off < data->d_size) {
		Dwarf_CFI_Entry e;
		int rc = dwarf_next_cfi(ident, data, eh_frame, off, &next, &e), enc = -1;
		const uint8_t *p, *end;
		uint64_t start, len;
		size_t used, i;

		if (rc > 0)
			break;
		if (rc < 0) {
			if (next <= off || next == (Dwarf_Off)-1)
				break;
			off = next;
			continue;
		}
		if (dwarf_cfi_cie_p(&e)) {
			off = next;
			continue;
		}
		for (i = 0; i < ncies; i++) {
			if (cies[i].offset == e.fde.CIE_pointer) {
				enc = cies[i].encoding;
				break;
			}
		}
		if (i == ncies) {
			Dwarf_CFI_Entry c;
			Dwarf_Off cnext;

			if (dwarf_next_cfi(ident, data, eh_frame, e.fde.CIE_pointer, &cnext, &c) ==
				0 &&
			    dwarf_cfi_cie_p(&c))
				enc = eh_frame ? cie_fde_encoding(&c.cie) : DW_EH_PE_absptr;
			cies = xrealloc(cies, (ncies + 1) * sizeof(*cies));
			cies[ncies].offset = e.fde.CIE_pointer;
			cies[ncies++].encoding = enc;
		}
		p = e.fde.start;
		end = e.fde.end;
		off = next;
		if (enc < 0 || p < (const uint8_t *)data->d_buf || end < p ||
		    end > (const uint8_t *)data->d_buf + data->d_size)
			continue;
		used = unwind_decode_pointer(p, (size_t)(end - p), (uint8_t)enc,
					     sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf),
					     &start);
		/* the range: same format, never pc-relative */
		if (!used || !unwind_decode_pointer(p + used, (size_t)(end - p - used),
						    (uint8_t)(enc & 0x0f), 0, &len))
			continue;
		if (!len || start + len < start)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n].start = start;
		v[n++].end = start + len;
	}
	free(cies);
	if (n)
		qsort(v, n, sizeof(*v), cmp_range);
	*nout = n;
	return v;
}

static int64_t op_signed(Dwarf_Word w)
{
	return (int64_t)w;
}

/* A register-relative operation (DW_OP_bregN or DW_OP_bregx): its register and offset. */
static int breg(const Dwarf_Op *op, int *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = op_signed(op->number);
		return 0;
	}
	if (op->atom == DW_OP_bregx && op->number < 64) {
		*reg = (int)op->number;
		*off = op_signed(op->number2);
		return 0;
	}
	return -1;
}

/* The lazy PLT's CFA: rsp + 8 + ((rip & 15) >= T ? 8 : 0), T 10 or 11. */
static int plt_threshold(const Dwarf_Op *ops, size_t nops)
{
	static const uint8_t want[] = {DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
				       DW_OP_ge,    DW_OP_lit3,	  DW_OP_shl,   DW_OP_plus};

	int reg;
	int64_t off;

	if (nops != sizeof(want) || breg(&ops[0], &reg, &off) || reg != REG_RSP || off != 8 ||
	    breg(&ops[1], &reg, &off) || reg != REG_RA || off != 0)
		return -1;
	for (size_t i = 2; i < nops; i++) {
		if (want[i] && ops[i].atom != want[i])
			return -1;
	}
	if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31)
		return -1;
	return ops[4].atom - DW_OP_lit0;
}

/* A byte offset as the rows keep it (/ 8); -1 when it does not fit. */
static int scaled(int64_t off, int64_t lo, int64_t hi, int64_t *out)
{
	if (off % 8 || off / 8 < lo || off / 8 > hi)
		return -1;
	*out = off / 8;
	return 0;
}

/*
 * A signal frame (the kernel's, entered through libc's __restore_rt): the
 * interrupted registers are saved on the stack, the CFA is the saved rsp,
 * *(rsp + N), the return address the saved rip at rsp + N + 8 (an exact pc,
 * not a return address), rbp at rsp + M. Anything else stays a stop.
 */
static void signal_row(Dwarf_Frame *frame, struct mt_unwind_row *row)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	int reg;
	int64_t cfa_at, ra_at, rbp_at, v, w;

	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 2 || breg(&ops[0], &reg, &cfa_at) ||
	    reg != REG_RSP || ops[1].atom != DW_OP_deref)
		return;
	/* DW_CFA_expression: libdw pushes the CFA first; the address is rsp + N */
	if (dwarf_frame_register(frame, REG_RA, ops_mem, &ops, &nops) || nops != 2 ||
	    ops[0].atom != DW_OP_call_frame_cfa || breg(&ops[1], &reg, &ra_at) || reg != REG_RSP ||
	    ra_at != cfa_at + 8)
		return;
	if (dwarf_frame_register(frame, REG_RBP, ops_mem, &ops, &nops) || nops != 2 ||
	    ops[0].atom != DW_OP_call_frame_cfa || breg(&ops[1], &reg, &rbp_at) || reg != REG_RSP)
		return;
	if (cfa_at < 0 || rbp_at < 0 || scaled(cfa_at, 0, INT16_MAX, &v) ||
	    scaled(rbp_at, 0, INT8_MAX, &w))
		return;
	row->kind = MT_UW_CFA_SIGNAL; /* rbp_off is from rsp: the walker reads it itself */
	row->cfa_off = (int16_t)v;
	row->rbp_off = (int8_t)w;
}

/* The compact form of the row libdw computed for frame. */
static void compact_row(Dwarf_Frame *frame, int signal, struct mt_unwind_row *row)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	int cfa = MT_UW_CFA_STOP, rbp = MT_UW_RBP_UNKNOWN, thr, reg;
	int64_t cfa_off = 0, rbp_off = 0, v, off;

	row->kind = MT_UW_CFA_STOP | MT_UW_RBP_UNKNOWN << 4;
	row->cfa_off = 0;
	row->rbp_off = 0;
	if (signal) {
		signal_row(frame, row);
		return;
	}
	/* the return address: CFA - 8, or undefined at the outermost frame */
	if (dwarf_frame_register(frame, REG_RA, ops_mem, &ops, &nops))
		return;
	if (nops == 0 && ops == ops_mem) {
		row->kind = MT_UW_CFA_ROOT | MT_UW_RBP_UNKNOWN << 4;
		return;
	}
	if (nops != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst ||
	    op_signed(ops[1].number) != -8)
		return;
	if (dwarf_frame_cfa(frame, &ops, &nops) || !nops)
		return;
	if (nops == 1 && !breg(&ops[0], &reg, &off) && (reg == REG_RSP || reg == REG_RBP)) {
		if (!scaled(off, INT16_MIN, INT16_MAX, &v)) {
			cfa = reg == REG_RSP ? MT_UW_CFA_RSP : MT_UW_CFA_RBP;
			cfa_off = v;
		}
	} else if (nops == 2 && !breg(&ops[0], &reg, &off) && reg == REG_RBP &&
		   ops[1].atom == DW_OP_deref) {
		if (!scaled(off, INT16_MIN, INT16_MAX, &v)) {
			cfa = MT_UW_CFA_DEREF_RBP;
			cfa_off = v;
		}
	} else if ((thr = plt_threshold(ops, nops)) >= 0) {
		cfa = MT_UW_CFA_PLT;
		cfa_off = thr;
	}
	if (cfa == MT_UW_CFA_STOP)
		return;
	/* the caller's rbp */
	if (dwarf_frame_register(frame, REG_RBP, ops_mem, &ops, &nops) == 0) {
		if (nops == 0 && !ops) {
			rbp = MT_UW_RBP_SAME;
		} else if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
			rbp = MT_UW_RBP_AT_CFA;
		} else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			   ops[1].atom == DW_OP_plus_uconst &&
			   !scaled(op_signed(ops[1].number), INT8_MIN, INT8_MAX, &v)) {
			rbp = MT_UW_RBP_AT_CFA;
			rbp_off = v;
		} else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
			   !breg(&ops[1], &reg, &off) && reg == REG_RBP &&
			   !scaled(off, INT8_MIN, INT8_MAX, &v)) {
			/* DW_CFA_expression (libdw pushes the CFA first): saved at rbp + off */
			rbp = MT_UW_RBP_AT_RBP;
			rbp_off = v;
		}
	}
	row->kind = (uint8_t)(cfa | rbp << 4);
	row->cfa_off = (int16_t)cfa_off;
	row->rbp_off = (int8_t)rbp_off;
}

struct row_vec {
	struct mt_unwind_row *v; /* pc holds the full address until the end */
	uint64_t *addr;
	size_t n, cap;
};

static void push_row(struct row_vec *rv, uint64_t addr, const struct mt_unwind_row *r)
{
	/* the same rule as the row before: nothing new */
	if (rv->n && rv->v[rv->n - 1].kind == r->kind && rv->v[rv->n - 1].cfa_off == r->cfa_off &&
	    rv->v[rv->n - 1].rbp_off == r->rbp_off)
		return;
	if (rv->n && rv->addr[rv->n - 1] == addr) {
		rv->v[rv->n - 1] = *r; /* an empty row replaced */
		return;
	}
	if (rv->n == rv->cap) {
		rv->cap = rv->cap ? rv->cap * 2 : 1024;
		rv->v = xrealloc(rv->v, rv->cap * sizeof(*rv->v));
		rv->addr = xrealloc(rv->addr, rv->cap * sizeof(*rv->addr));
	}
	rv->v[rv->n] = *r;
	rv->addr[rv->n++] = addr;
}

/* The rows of one FDE's range [start, end), after a NONE row for any gap before it. */
static void fde_rows(Dwarf_CFI *cfi, uint64_t start, uint64_t end, uint64_t *covered,
		     struct row_vec *rv, uint32_t *stops)
{
	static const struct mt_unwind_row none = {.kind = MT_UW_CFA_NONE};
	uint64_t addr = start;

	if (start < *covered)
		start = addr = *covered; /* overlaps the one before: that one wins */
	if (start >= end)
		return;
	if (rv->n && start > *covered)
		push_row(rv, *covered, &none);
	for (int k = 0; addr < end && k < MAX_FDE_ROWS; k++) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr s, e;
		bool signal = false;
		struct mt_unwind_row row;

		if (dwarf_cfi_addrframe(cfi, addr, &frame) || !frame)
			break;
		if (dwarf_frame_info(frame, &s, &e, &signal) < 0 || e <= addr) {
			free(frame);
			break;
		}
		compact_row(frame, signal, &row);
		free(frame);
		*stops += MT_UW_CFA_KIND(row.kind) == MT_UW_CFA_STOP;
		push_row(rv, addr, &row);
		addr = e < end ? e : end;
	}
	if (addr < end) { /* the rest could not be read: stop there */
		struct mt_unwind_row stop = {.kind = MT_UW_CFA_STOP | MT_UW_RBP_UNKNOWN << 4};

		push_row(rv, addr, &stop);
		(*stops)++;
	}
	*covered = end;
}

static void fail(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
}

/* The section named name in elf, or NULL. */
static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name) && sh->sh_type != SHT_NOBITS)
			return scn;
	}
	return NULL;
}

static int check_elf(Elf *elf, char *err, size_t errlen)
{
	GElf_Ehdr eh;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		fail(err, errlen, "not an ELF file");
		return -1;
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64) {
		fail(err, errlen, "not an x86-64 ELF file");
		return -1;
	}
	return 0;
}

/* Rows (addresses in rv->addr) into t: offsets from base, and the page index. */
static int finish(struct unwind_table *t, struct row_vec *rv, uint64_t end, char *err,
		  size_t errlen)
{
	uint64_t base = rv->addr[0], size = end - base;
	size_t r = 0;

	if (size >= MAX_TABLE_SIZE) {
		fail(err, errlen, "call frame information spans more than 4 GiB");
		return -1;
	}
	t->base = base;
	t->size = size;
	t->nrows = (uint32_t)rv->n;
	t->rows = rv->v;
	for (size_t i = 0; i < rv->n; i++)
		t->rows[i].pc = (uint32_t)(rv->addr[i] - base);
	rv->v = NULL;
	t->npages = (uint32_t)((size + (1u << MT_UW_PAGE_SHIFT) - 1) >> MT_UW_PAGE_SHIFT);
	t->pages = xcalloc(t->npages ? t->npages : 1, sizeof(*t->pages));
	for (uint32_t p = 0; p < t->npages; p++) {
		uint64_t lo = (uint64_t)p << MT_UW_PAGE_SHIFT, hi = lo + (1u << MT_UW_PAGE_SHIFT);
		size_t first, last;

		/* the row that applies at lo: the last with pc <= lo */
		while (r + 1 < t->nrows && t->rows[r + 1].pc <= lo)
			r++;
		first = r;
		for (last = r; last + 1 < t->nrows && t->rows[last + 1].pc < hi; last++)
			;
		t->pages[p].first = (uint32_t)first;
		t->pages[p].count = (uint32_t)(last - first + 1);
	}
	return 0;
}

int unwind_table_build(Elf *elf, Elf *debug, struct unwind_table *t, char *err, size_t errlen)
{
	struct row_vec rv = {0};
	struct fde_range *fdes = NULL;
	Dwarf_CFI *cfi = NULL, *owned = NULL;
	Dwarf *dw = NULL;
	Elf *src = elf;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *data;
	size_t nfdes = 0;
	uint64_t covered = 0;
	int eh = 1, rc = -1;

	memset(t, 0, sizeof(*t));
	if (check_elf(elf, err, errlen))
		return -1;
	scn = find_section(elf, ".eh_frame", &sh);
	if (!scn) {
		eh = 0;
		scn = find_section(elf, ".debug_frame", &sh);
		if (!scn && debug && !check_elf(debug, err, errlen)) {
			src = debug;
			scn = find_section(debug, ".debug_frame", &sh);
		}
	}
	if (!scn) {
		fail(err, errlen, "no call frame information (.eh_frame or .debug_frame)");
		return -1;
	}
	data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size) {
		fail(err, errlen, eh ? "empty .eh_frame" : "empty .debug_frame");
		return -1;
	}
	if (eh) {
		cfi = owned = dwarf_getcfi_elf(elf);
	} else {
		dw = dwarf_begin_elf(src, DWARF_C_READ, NULL);
		cfi = dw ? dwarf_getcfi(dw) : NULL;
	}
	if (!cfi) {
		snprintf(err, errlen, "libdw cannot read its %s: %s",
			 eh ? ".eh_frame" : ".debug_frame", dwarf_errmsg(-1));
		goto out;
	}
	fdes = list_fdes(src, data, sh.sh_addr, eh, &nfdes);
	for (size_t i = 0; i < nfdes; i++)
		fde_rows(cfi, fdes[i].start, fdes[i].end, &covered, &rv, &t->stop_rows);
	if (!rv.n) {
		fail(err, errlen, "no usable FDE in the call frame information");
		goto out;
	}
	/* past the last FDE, in the same page: no information */
	push_row(&rv, covered, &(struct mt_unwind_row){.kind = MT_UW_CFA_NONE});
	t->fdes = (uint32_t)nfdes;
	t->source = eh ? ".eh_frame" : ".debug_frame";
	rc = finish(t, &rv, covered, err, errlen);
out:
	if (rc)
		unwind_table_free(t);
	free(rv.v);
	free(rv.addr);
	free(fdes);
	if (owned)
		dwarf_cfi_end(owned);
	if (dw)
		dwarf_end(dw);
	return rc;
}

int unwind_table_build_fd(int fd, int debug_fd, struct unwind_table *t, char *err, size_t errlen)
{
	Elf *elf, *debug = NULL;
	int rc;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (debug_fd >= 0)
		debug = elf_begin(debug_fd, ELF_C_READ_MMAP, NULL);
	rc = unwind_table_build(elf, debug, t, err, errlen);
	if (debug)
		elf_end(debug);
	if (elf)
		elf_end(elf);
	return rc;
}

void unwind_table_free(struct unwind_table *t)
{
	free(t->rows);
	free(t->pages);
	memset(t, 0, sizeof(*t));
}

const struct mt_unwind_row *unwind_table_find(const struct unwind_table *t, uint64_t vaddr)
{
	uint64_t off = vaddr - t->base;
	const struct mt_unwind_page *pg;
	uint32_t lo, n;

	if (vaddr < t->base || off >= t->size || !t->nrows)
		return NULL;
	pg = &t->pages[off >> MT_UW_PAGE_SHIFT];
	lo = pg->first;
	n = pg->count;
	/* the last row with pc <= off, among [lo, lo + n): rows[lo].pc <= off holds */
	for (int step = 0; step < MT_UW_SEARCH_STEPS && n > 1; step++) {
		uint32_t half = n / 2;

		if (t->rows[lo + half].pc <= off) {
			lo += half;
			n -= half;
		} else {
			n = half;
		}
	}
	return &t->rows[lo];
}
