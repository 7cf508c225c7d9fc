// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Python frames (see pystacks.h). The offsets come from src/daemon/symbols/pyoffsets.c:
 * 3.13's _Py_DebugOffsets, else the interpreter's DWARF, else a table of
 * release builds; the end-to-end tests compare the lines reported with the
 * lines the scripts allocate from.
 */
#include "daemon/symbols/pystacks.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon/elf/elfmod.h"
#include "daemon/proc/procmaps.h"
#include "daemon/symbols/pyoffsets.h"
#include "daemon/proc/linkmap.h"
#include "common/util.h"

struct code_info {
	int pid;
	uint64_t addr;
	char *qualname, *filename;
	int64_t firstlineno;
	uint8_t *linetable;
	size_t linetable_len;
};

struct py_pid {
	int pid;
	struct py_layout l;
};

struct pystacks {
	struct py_pid *pids;
	size_t npids;
	struct code_info *codes; /* linear: a process has few hot code objects */
	size_t ncodes, cap;
};

struct pystacks *pystacks_new(void)
{
	return xcalloc(1, sizeof(struct pystacks));
}

void pystacks_free(struct pystacks *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->ncodes; i++) {
		free(ps->codes[i].qualname);
		free(ps->codes[i].filename);
		free(ps->codes[i].linetable);
	}
	free(ps->codes);
	free(ps->pids);
	free(ps);
}

/* Py_Version (3.11+: PY_VERSION_HEX in .rodata) read from the file. */
static int file_minor(struct elf_module *m)
{
	uint64_t v = 0, off;
	uint32_t hex;

	if (elfmod_dynamic_value(m, "Py_Version", &v) || !v || elfmod_vaddr_to_offset(m, v, &off)) {
		/* 3.10 has no Py_Version: its libpython3.10.so or python3.10 */
		const char *base = strrchr(elfmod_path(m), '/');

		return base && strstr(base, "python3.10") ? 10 : -1;
	}
	if (elfmod_pread(m, &hex, sizeof(hex), off) != sizeof(hex) || (hex >> 24) != 3)
		return -1;
	return (int)(hex >> 16 & 0xff);
}

/*
 * Where the object at open_path (named path in the maps) is loaded in pid:
 * its first mapping, by name or by file (the link map may name it by
 * another path than the maps do: /lib for /usr/lib).
 */
static int load_bias(int pid, const char *open_path, const char *path, struct elf_module *m,
		     uint64_t *bias)
{
	struct proc_maps maps;
	struct stat st;
	uint64_t v0;
	int rc = -1, have_st;

	if (elfmod_offset_to_vaddr(m, 0, &v0) || procmaps_read(pid, &maps))
		return -1;
	have_st = !stat(open_path, &st);
	for (size_t i = 0; i < maps.n && rc; i++) {
		const struct map_entry *e = &maps.v[i];

		if (!e->path || e->offset != 0)
			continue;
		if (!strcmp(e->path, path) ||
		    (have_st && e->inode == st.st_ino && e->dev_major == major(st.st_dev) &&
		     e->dev_minor == minor(st.st_dev))) {
			*bias = e->start - (v0 & ~4095ull);
			rc = 0;
		}
	}
	procmaps_free(&maps);
	return rc;
}

static int read_mem(int pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int read_ptr(int pid, uint64_t addr, uint64_t *v)
{
	return read_mem(pid, addr, v, sizeof(*v));
}

/* Append one clause to a "; "-separated line. */
__attribute__((format(printf, 3, 4))) static void add_note(char *buf, size_t len, const char *fmt,
							   ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used && used + 2 < len) {
		memcpy(buf + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/*
 * 3.13's _Py_DebugOffsets: the first bytes of _PyRuntime, read from the
 * process (what runs), else from the file (it is statically initialised).
 */
static int read_debug_offsets(int pid, struct elf_module *m, uint64_t runtime, uint64_t bias,
			      uint8_t *buf, size_t len)
{
	uint64_t off;

	if (!read_mem(pid, runtime + bias, buf, len))
		return 0;
	if (elfmod_vaddr_to_offset(m, runtime, &off))
		return -1;
	return elfmod_pread(m, buf, len, off) == (ssize_t)len ? 0 : -1;
}

/*
 * The offsets for 3.minor: the built-in table, replaced by the file's DWARF
 * when it has some, replaced by _Py_DebugOffsets on 3.13. Each source is
 * checked against the one it replaces; disagreements go into note. Returns
 * 0 with the source's name in *source, or -1 with a reason in why.
 */
static int choose_layout(int pid, const char *shown, struct elf_module *m, int minor,
			 uint64_t runtime, uint64_t bias, struct py_layout *l, const char **source,
			 char *note, size_t notelen, char *why, size_t whylen)
{
	static char table_name[64];
	struct py_layout next;
	char err[256], diff[1024];
	uint8_t blob[PY_DEBUG_OFFSETS_313_SIZE];
	int r;

	*l = *pyoffsets_table(minor);
	snprintf(table_name, sizeof(table_name), "the built-in table for 3.%d", minor);
	*source = table_name;
	next = *l;
	r = pyoffsets_from_dwarf(m, minor, &next, err, sizeof(err));
	if (r == 0) {
		if (pyoffsets_diff(&next, l, diff, sizeof(diff))) {
			add_note(
			    note, notelen,
			    "DWARF of %s differs from the built-in table for 3.%d (DWARF/table: "
			    "%s): using DWARF",
			    shown, minor, diff);
		}
		*l = next;
		*source = "DWARF";
	} else if (r < 0) {
		add_note(note, notelen, "DWARF of %s not used: %s", shown, err);
	}
	if (minor < 13)
		return 0;
	next = *l;
	if (read_debug_offsets(pid, m, runtime, bias, blob, sizeof(blob))) {
		add_note(note, notelen, "cannot read _Py_DebugOffsets of %s", shown);
		return 0;
	}
	r = pyoffsets_from_debug(blob, sizeof(blob), minor, &next, err, sizeof(err));
	if (r == -2) {
		snprintf(why, whylen, "%s is %s: no Python frames", shown, err);
		return -1;
	}
	if (r < 0) {
		add_note(note, notelen, "%s: _Py_DebugOffsets not used: %s", shown, err);
		return 0;
	}
	if (pyoffsets_diff(&next, l, diff, sizeof(diff))) {
		add_note(note, notelen,
			 "_Py_DebugOffsets of %s differ from %s (_Py_DebugOffsets/%s: %s): using "
			 "_Py_DebugOffsets",
			 shown, *source == table_name ? "the built-in table" : "DWARF",
			 *source == table_name ? "table" : "DWARF", diff);
	}
	*l = next;
	*source = "_Py_DebugOffsets";
	return 0;
}

int pystacks_config(struct pystacks *ps, int pid, struct mt_py_config *pc, char *desc,
		    size_t desclen, char *why, size_t whylen)
{
	char **paths = NULL, err[256], prefix[64], real[4096];
	struct py_layout l;
	struct elf_module *m = NULL;
	uint64_t runtime = 0, bias;
	const char *shown = NULL, *source;
	int n, i, minor = -1, rc = 1;

	if (whylen)
		why[0] = 0;
	n = linkmap_search_order(pid, &paths);
	for (i = 0; i < n && !runtime; i++) {
		m = elfmod_open_shared(paths[i], err, sizeof(err));
		if (!m || elfmod_dynamic_value(m, "_PyRuntime", &runtime) || !runtime) {
			elfmod_close(m);
			m = NULL;
			runtime = 0;
			continue;
		}
		minor = file_minor(m);
		snprintf(prefix, sizeof(prefix), "/proc/%d/root", pid);
		shown = paths[i];
		if (!strncmp(shown, prefix, strlen(prefix)))
			shown += strlen(prefix);
		break;
	}
	if (!runtime)
		goto out;
	rc = -1;
	if (!pyoffsets_table(minor)) {
		snprintf(why, whylen,
			 "%s is a CPython without a frame layout memtrace knows (3.10-3.13 are "
			 "supported): no Python frames",
			 shown);
		goto out;
	}
	/* the executable is /proc/PID/exe, a library replaced on disk
	 * /proc/PID/map_files/...: their links name the path the maps show */
	if (!strncmp(paths[i], "/proc/", 6) &&
	    (strstr(paths[i], "/exe") || strstr(paths[i], "/map_files/"))) {
		ssize_t k = readlink(paths[i], real, sizeof(real) - 1);

		if (k <= 0) {
			snprintf(why, whylen, "cannot read the executable of pid %d", pid);
			goto out;
		}
		real[k] = 0;
		shown = real;
	}
	if (load_bias(pid, paths[i], shown, m, &bias)) {
		snprintf(why, whylen, "cannot find where CPython is loaded in pid %d", pid);
		goto out;
	}
	if (choose_layout(pid, shown, m, minor, runtime, bias, &l, &source, why, whylen, why,
			  whylen))
		goto out;
	snprintf(desc, desclen, "CPython 3.%d (%s), offsets from %s", minor, shown, source);
	*pc = l.pc;
	pc->interp_head = runtime + bias + l.runtime_interp_head;
	ps->pids = xrealloc(ps->pids, (ps->npids + 1) * sizeof(*ps->pids));
	ps->pids[ps->npids++] = (struct py_pid){pid, l};
	rc = 0;
out:
	if (m)
		elfmod_close(m);
	for (i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}

/* A str object's text (compact ASCII or Latin-1 shown as '?' past 0x7f). */
static char *read_str(int pid, const struct py_layout *l, uint64_t obj)
{
	uint64_t length;
	uint32_t state;
	char *s;

	if (!obj || read_ptr(pid, obj + l->str_length, &length) ||
	    read_mem(pid, obj + l->str_state, &state, 4) || length > 4096)
		return NULL;
	/* state: interned:2, kind:3, compact:1, ascii:1 */
	if (!(state >> 5 & 1) || (state >> 2 & 7) != 1)
		return NULL;
	s = xmalloc(length + 1);
	if (read_mem(pid, obj + ((state >> 6 & 1) ? l->ascii_size : l->compact_size), s, length)) {
		free(s);
		return NULL;
	}
	s[length] = 0;
	for (uint64_t i = 0; i < length; i++) {
		if ((unsigned char)s[i] >= 0x80 || !s[i])
			s[i] = '?';
	}
	return s;
}

static const struct py_layout *layout_of(struct pystacks *ps, int pid)
{
	for (size_t i = ps->npids; i-- > 0;) {
		if (ps->pids[i].pid == pid)
			return &ps->pids[i].l;
	}
	return NULL;
}

static struct code_info *find_code(struct pystacks *ps, int pid, uint64_t addr)
{
	for (size_t i = 0; i < ps->ncodes; i++) {
		if (ps->codes[i].addr == addr && ps->codes[i].pid == pid)
			return &ps->codes[i];
	}
	return NULL;
}

static void read_code(struct pystacks *ps, int pid, const struct py_layout *l, uint64_t addr)
{
	struct code_info c = {.pid = pid, .addr = addr};
	uint64_t qual = 0, file = 0, table = 0, size = 0;
	int32_t first = 0;

	if (read_ptr(pid, addr + l->co_qualname, &qual) ||
	    read_ptr(pid, addr + l->co_filename, &file) ||
	    read_ptr(pid, addr + l->co_linetable, &table) ||
	    read_mem(pid, addr + l->co_firstlineno, &first, sizeof(first)))
		return;
	c.qualname = read_str(pid, l, qual);
	c.filename = read_str(pid, l, file);
	c.firstlineno = first;
	if (table && !read_ptr(pid, table + 16, &size) && size <= (1u << 20)) {
		c.linetable = xmalloc(size ? size : 1);
		c.linetable_len = size;
		if (read_mem(pid, table + 32, c.linetable, size)) {
			free(c.linetable);
			c.linetable = NULL;
			c.linetable_len = 0;
		}
	}
	if (!c.qualname || !c.filename) {
		free(c.qualname);
		free(c.filename);
		free(c.linetable);
		return;
	}
	if (ps->ncodes == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 64;
		ps->codes = xrealloc(ps->codes, ps->cap * sizeof(*ps->codes));
	}
	ps->codes[ps->ncodes++] = c;
}

void pystacks_note(struct pystacks *ps, int pid, const uint64_t *words, size_t n)
{
	const struct py_layout *l = layout_of(ps, pid);

	if (!l)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t code = MT_PY_CODE(words[i]);

		if ((words[i] & MT_PY_WORD) && !find_code(ps, pid, code))
			read_code(ps, pid, l, code);
	}
}

static int64_t varint(const uint8_t *t, size_t len, size_t *i)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*i >= len || shift > 60)
			return 0;
		b = t[(*i)++];
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return (int64_t)v;
}

static int64_t svarint(const uint8_t *t, size_t len, size_t *i)
{
	uint64_t v = (uint64_t)varint(t, len, i);

	return v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

int64_t pystacks_line310(const uint8_t *t, size_t len, int64_t firstlineno, uint64_t instr)
{
	uint64_t start = 0, end, addr = instr * 2;
	int64_t line = firstlineno, cur;

	/* (byte delta, signed line delta) pairs; -128: no line */
	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t ldelta = (int8_t)t[i + 1];

		end = start + t[i];
		if (ldelta == -128) {
			cur = -1;
		} else {
			line += ldelta;
			cur = line;
		}
		if (addr >= start && addr < end)
			return cur;
		start = end;
	}
	return -1;
}

int64_t pystacks_line(const uint8_t *t, size_t len, int64_t firstlineno, uint64_t instr)
{
	uint64_t unit = 0;
	int64_t line = firstlineno;
	size_t i = 0;

	while (i < len) {
		uint8_t b = t[i++];
		int code = b >> 3 & 15;
		uint64_t units = (b & 7) + 1;
		int has_line = 1;

		if (!(b & 0x80))
			return -1; /* not at an entry: a table we misread */
		if (code == 15) {
			has_line = 0;
		} else if (code == 14) {
			line += svarint(t, len, &i);
			varint(t, len, &i);
			varint(t, len, &i);
			varint(t, len, &i);
		} else if (code == 13) {
			line += svarint(t, len, &i);
		} else if (code >= 10) {
			line += code - 10;
			i += 2;
		} else {
			i += 1;
		}
		if (instr < unit + units)
			return has_line ? line : -1;
		unit += units;
	}
	return -1;
}

void pystacks_frame(struct pystacks *ps, int pid, uint64_t word, struct snap_frame *out)
{
	const struct code_info *c = find_code(ps, pid, MT_PY_CODE(word));
	const struct py_layout *l;
	int64_t line;

	memset(out, 0, sizeof(*out));
	if (!c) {
		out->function = xstrdup("<unknown code object>");
		return;
	}
	out->function = xstrdup(c->qualname);
	out->file = xstrdup(c->filename);
	l = layout_of(ps, pid);
	if (l && l->minor == 10)
		line = pystacks_line310(c->linetable, c->linetable_len, c->firstlineno,
					MT_PY_INSTR(word));
	else
		line = pystacks_line(c->linetable, c->linetable_len, c->firstlineno,
				     MT_PY_INSTR(word));
	out->line = line > 0 ? line : 0;
}

void pystacks_rename(struct pystacks *ps, int pid, int key)
{
	for (size_t i = 0; i < ps->npids; i++) {
		if (ps->pids[i].pid == pid)
			ps->pids[i].pid = key;
	}
	for (size_t i = 0; i < ps->ncodes; i++) {
		if (ps->codes[i].pid == pid)
			ps->codes[i].pid = key;
	}
}

void pystacks_fork(struct pystacks *ps, int parent, int child)
{
	for (size_t i = 0; i < ps->npids; i++) {
		if (ps->pids[i].pid == parent) {
			ps->pids = xrealloc(ps->pids, (ps->npids + 1) * sizeof(*ps->pids));
			ps->pids[ps->npids++] = (struct py_pid){child, ps->pids[i].l};
			return;
		}
	}
}
