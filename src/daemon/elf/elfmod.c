// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ELF reader; see elfmod.h. What every user needs is read at open into
 * plain arrays (segments, function symbols, build-id), so lookups never
 * touch libelf; the file stays open (ELF_C_READ: libelf reads with pread,
 * so a file shrinking under us cannot SIGBUS) for what only some users
 * read, on first use (elfcode.c): the code, the symbols as code
 * boundaries, .dynsym's other symbols, relocations. Address lookups for names use the sized
 * function symbols sorted by start plus a running maximum of their ends,
 * which keeps nested or overlapping symbols correct while the common case
 * stays one binary search.
 */
#include "daemon/elf/elfmod.h"
#include "daemon/elf/elfmod_module.h"
#include "common/util.h"
#include "common/search.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* In a .gnu.version entry: the symbol is an old, non-default version. */
#define VERSYM_HIDDEN 0x8000
/* A build-id longer than this is not a real one (SHA-1 gives 20 bytes). */
#define BUILD_ID_MAX_BYTES 64

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int load_segments(struct elf_module *m, Elf *elf, uint64_t file_size, char *err,
			 size_t errlen)
{
	size_t phnum, i, cap = 0;

	if (elf_getphdrnum(elf, &phnum)) {
		set_err(err, errlen, "malformed program headers: %s", elf_errmsg(-1));
		return -1;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			set_err(err, errlen, "malformed program header %zu: %s", i, elf_errmsg(-1));
			return -1;
		}
		if (ph.p_type == PT_INTERP)
			m->has_interp = 1;
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_offset > file_size || ph.p_filesz > file_size - ph.p_offset) {
			set_err(err, errlen, "segment %zu extends past the end of the file", i);
			return -1;
		}
		if (m->nsegments == cap) {
			cap = cap ? cap * 2 : 4;
			m->segments = xrealloc(m->segments, cap * sizeof(*m->segments));
		}
		m->segments[m->nsegments++] = (struct elf_segment){
		    .vaddr = ph.p_vaddr,
		    .offset = ph.p_offset,
		    .filesz = ph.p_filesz,
		};
	}
	return 0;
}

static void read_build_id(struct elf_module *m, Elf_Data *data)
{
	static const char hex[] = "0123456789abcdef";
	size_t off = 0, next, name_off, desc_off, i;
	GElf_Nhdr nh;

	if (!data || !data->d_buf)
		return;
	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > off) {
		const uint8_t *bytes = data->d_buf;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 &&
		    nh.n_descsz <= BUILD_ID_MAX_BYTES && name_off <= data->d_size - 4 &&
		    desc_off <= data->d_size && nh.n_descsz <= data->d_size - desc_off &&
		    !memcmp(bytes + name_off, "GNU", 4)) {
			m->build_id = xmalloc(2 * nh.n_descsz + 1);
			for (i = 0; i < nh.n_descsz; i++) {
				m->build_id[2 * i] = hex[bytes[desc_off + i] >> 4];
				m->build_id[2 * i + 1] = hex[bytes[desc_off + i] & 15];
			}
			m->build_id[2 * nh.n_descsz] = '\0';
			return;
		}
		off = next;
	}
}

/* Files without section headers still have their notes in PT_NOTE. */
static void read_build_id_from_segments(struct elf_module *m, Elf *elf)
{
	size_t phnum, i;

	if (elf_getphdrnum(elf, &phnum))
		return;
	for (i = 0; i < phnum && !m->build_id; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		read_build_id(m, elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						      ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR));
	}
}

/* The .gnu.version entries of .dynsym, or NULL when absent or unusable. */
static Elf_Data *versions_of(Elf_Scn *versym, Elf_Scn *dynsym)
{
	GElf_Shdr sh;
	Elf_Data *data;

	if (!versym || !gelf_getshdr(versym, &sh) || sh.sh_link != elf_ndxscn(dynsym))
		return NULL;
	data = elf_getdata(versym, NULL);
	if (!data || !data->d_buf || data->d_type != ELF_T_HALF)
		return NULL;
	return data;
}

/*
 * The defined symbols of one table that are functions (named STT_FUNC or
 * STT_GNU_IFUNC) or may mark where code starts (STT_NOTYPE, or unnamed).
 */
static int read_symbols(struct elf_module *m, Elf *elf, Elf_Scn *scn, Elf_Data *versions,
			int dynamic, struct buf *names, char *err, size_t errlen)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t count, i, cap = m->nfuncs, ndx = elf_ndxscn(scn);
	GElf_Shdr sh;
	Elf_Data *data;

	if (!gelf_getshdr(scn, &sh) || !(data = elf_getdata(scn, NULL))) {
		set_err(err, errlen, "cannot read %s: %s", dynamic ? ".dynsym" : ".symtab",
			elf_errmsg(-1));
		return -1;
	}
	if (!entsize || !data->d_buf || data->d_type != ELF_T_SYM)
		return 0;
	count = data->d_size / entsize;
	for (i = 1; i < count; i++) {
		GElf_Sym sym;
		GElf_Versym version = 0;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!name)
			name = "";
		if (type == STT_NOTYPE && !sym.st_value)
			continue; /* marks no code */
		if (versions && i < versions->d_size / sizeof(GElf_Versym))
			gelf_getversym(versions, (int)i, &version);
		if (m->nfuncs == cap) {
			cap = cap ? cap * 2 : 256;
			m->funcs = xrealloc(m->funcs, cap * sizeof(*m->funcs));
		}
		m->funcs[m->nfuncs++] = (struct elf_func){
		    .start = sym.st_value,
		    .size = sym.st_size,
		    .name_off = names->len,
		    .seq = ndx << 32 | i,
		    .function = type != STT_NOTYPE && *name,
		    .ifunc = type == STT_GNU_IFUNC,
		    .bind = (uint8_t)GELF_ST_BIND(sym.st_info),
		    .dynamic = (uint8_t)dynamic,
		    .hidden = (version & VERSYM_HIDDEN) != 0,
		};
		buf_put(names, name, strlen(name) + 1);
	}
	return 0;
}

static int load_sections(struct elf_module *m, Elf *elf, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL, *versym = NULL;
	struct buf names = {0};
	size_t shnum, i;

	if (elf_getshdrnum(elf, &shnum)) {
		set_err(err, errlen, "malformed section headers: %s", elf_errmsg(-1));
		return -1;
	}
	elf_errno();
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh)) {
			set_err(err, errlen, "malformed section header: %s", elf_errmsg(-1));
			return -1;
		}
		if (sh.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
		else if (sh.sh_type == SHT_GNU_versym && !versym)
			versym = scn;
		else if (sh.sh_type == SHT_NOTE && !m->build_id)
			read_build_id(m, elf_getdata(scn, NULL));
	}
	if (elf_errno()) {
		set_err(err, errlen, "malformed section headers: %s", elf_errmsg(-1));
		return -1;
	}
	if ((symtab && read_symbols(m, elf, symtab, NULL, 0, &names, err, errlen)) ||
	    (dynsym &&
	     read_symbols(m, elf, dynsym, versions_of(versym, dynsym), 1, &names, err, errlen))) {
		buf_free(&names);
		return -1;
	}
	m->names = (char *)names.data;
	for (i = 0; i < m->nfuncs; i++)
		m->funcs[i].name = m->names + m->funcs[i].name_off;
	return 0;
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Rank of a binding for display: global over weak (an alias) over local. */
static int bind_rank(uint8_t bind)
{
	return bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0;
}

/* <0 when a is the better name to show for an address, >0 when b is. */
static int compare_names(const struct elf_func *a, const struct elf_func *b)
{
	size_t la, lb;
	int d;

	if (a->hidden != b->hidden)
		return a->hidden ? 1 : -1;
	if ((d = leading_underscores(a->name) - leading_underscores(b->name)))
		return d;
	if ((d = bind_rank(b->bind) - bind_rank(a->bind)))
		return d;
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

/*
 * By start; at one start the largest first, so the backwards walk meets the
 * innermost symbol first; of equal start and size the best name last, which
 * is the one build_lookup() keeps.
 */
static int compare_by_addr(const void *pa, const void *pb)
{
	const struct elf_func *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return -compare_names(a, b);
}

static void build_lookup(struct elf_module *m)
{
	int dynamic = 1;
	size_t i, n = 0;
	uint64_t max_end = 0;

	for (i = 0; i < m->nfuncs && dynamic; i++) {
		if (m->funcs[i].function && !m->funcs[i].dynamic && m->funcs[i].size)
			dynamic = 0;
	}
	m->by_addr = xcalloc(m->nfuncs, sizeof(*m->by_addr));
	for (i = 0; i < m->nfuncs; i++) {
		if (m->funcs[i].function && m->funcs[i].dynamic == dynamic && m->funcs[i].size)
			m->by_addr[n++] = m->funcs[i];
	}
	qsort(m->by_addr, n, sizeof(*m->by_addr), compare_by_addr);
	/* Of aliases with equal start and size keep only the best name (the last). */
	m->naddr = 0;
	for (i = 0; i < n; i++) {
		if (i + 1 < n && m->by_addr[i + 1].start == m->by_addr[i].start &&
		    m->by_addr[i + 1].size == m->by_addr[i].size)
			continue;
		m->by_addr[m->naddr++] = m->by_addr[i];
	}
	m->max_end = xcalloc(m->naddr, sizeof(*m->max_end));
	for (i = 0; i < m->naddr; i++) {
		const struct elf_func *f = &m->by_addr[i];
		uint64_t end = f->start + f->size < f->start ? UINT64_MAX : f->start + f->size;

		if (end > max_end)
			max_end = end;
		m->max_end[i] = max_end;
	}
}

/*
 * libelf quietly treats a section header table past the end of the file as
 * absent; a table that does not fit means a truncated or corrupt file.
 */
static int check_tables(const GElf_Ehdr *eh, uint64_t file_size, char *err, size_t errlen)
{
	uint64_t phsize = (uint64_t)eh->e_phnum * eh->e_phentsize;
	uint64_t shsize = (uint64_t)(eh->e_shnum ? eh->e_shnum : 1) * eh->e_shentsize;

	if (eh->e_phoff > file_size || phsize > file_size - eh->e_phoff) {
		set_err(err, errlen, "program headers extend past the end of the file");
		return -1;
	}
	if (eh->e_shoff && (eh->e_shoff > file_size || shsize > file_size - eh->e_shoff)) {
		set_err(err, errlen, "section headers extend past the end of the file");
		return -1;
	}
	return 0;
}

static struct elf_module *load(Elf *elf, uint64_t file_size, const char *path, char *err,
			       size_t errlen)
{
	struct elf_module *m;
	GElf_Ehdr eh;

	if (!elf) {
		set_err(err, errlen, "not readable as ELF: %s", elf_errmsg(-1));
		return NULL;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		set_err(err, errlen, "not an ELF file");
		return NULL;
	}
	if (!gelf_getehdr(elf, &eh)) {
		set_err(err, errlen, "malformed ELF header: %s", elf_errmsg(-1));
		return NULL;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		set_err(err, errlen, "not an executable or shared object (ELF type %u)",
			(unsigned)eh.e_type);
		return NULL;
	}
	if (check_tables(&eh, file_size, err, errlen))
		return NULL;
	m = xcalloc(1, sizeof(*m));
	m->fd = -1;
	m->path = xstrdup(path ? path : "");
	m->is_dyn = eh.e_type == ET_DYN;
	m->machine = eh.e_machine;
	if (load_segments(m, elf, file_size, err, errlen) || load_sections(m, elf, err, errlen)) {
		elfmod_close(m);
		return NULL;
	}
	if (!m->build_id)
		read_build_id_from_segments(m, elf);
	build_lookup(m);
	return m;
}

/* Open from fd, which the module then owns (closed here on failure). */
static struct elf_module *open_owned(int fd, const char *path, char *err, size_t errlen)
{
	struct elf_module *m;
	struct stat st;
	Elf *elf;

	if (fstat(fd, &st)) {
		set_err(err, errlen, "cannot stat: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		set_err(err, errlen, "not a regular file");
		close(fd);
		return NULL;
	}
	elf_version(EV_CURRENT);
	/* ELF_C_READ reads with pread: a file shrinking under us cannot SIGBUS. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	m = load(elf, (uint64_t)st.st_size, path, err, errlen);
	if (!m) {
		elf_end(elf);
		close(fd);
		return NULL;
	}
	m->fd = fd;
	m->elf = elf;
	return m;
}

struct elf_module *elfmod_open_fd(int fd, const char *path, char *err, size_t errlen)
{
	int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	if (own < 0) {
		set_err(err, errlen, "cannot duplicate the descriptor: %s", strerror(errno));
		return NULL;
	}
	return open_owned(own, path, err, errlen);
}

struct elf_module *elfmod_open(const char *path, char *err, size_t errlen)
{
	int fd;

	/* O_NONBLOCK: a FIFO at path must not hang us; it is refused as irregular. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		set_err(err, errlen, "cannot open: %s", strerror(errno));
		return NULL;
	}
	return open_owned(fd, path, err, errlen);
}

struct elf_module *elfmod_from_symbols(const char *path, const struct elfmod_symbol *syms, size_t n)
{
	struct elf_module *m = xcalloc(1, sizeof(*m));
	struct buf names = {0};

	m->fd = -1;
	m->path = xstrdup(path ? path : "");
	m->funcs = xcalloc(n ? n : 1, sizeof(*m->funcs));
	for (size_t i = 0; i < n; i++) {
		if (!syms[i].name || !syms[i].name[0])
			continue;
		m->funcs[m->nfuncs++] = (struct elf_func){
		    .start = syms[i].start,
		    .size = syms[i].size,
		    .name_off = names.len,
		    .seq = i,
		    .function = 1,
		    .bind = syms[i].bind,
		};
		buf_put(&names, syms[i].name, strlen(syms[i].name) + 1);
	}
	m->names = (char *)names.data;
	for (size_t i = 0; i < m->nfuncs; i++)
		m->funcs[i].name = m->names + m->funcs[i].name_off;
	build_lookup(m);
	return m;
}

struct elf_module *elfmod_open_mem(const void *data, size_t len, const char *path, char *err,
				   size_t errlen)
{
	struct elf_module *m;
	char *copy;
	Elf *elf;

	/* libelf may work in place on the image, so give it a private copy. */
	copy = xmalloc(len ? len : 1);
	if (len)
		memcpy(copy, data, len);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, len);
	m = load(elf, len, path, err, errlen);
	if (!m) {
		elf_end(elf);
		free(copy);
		return NULL;
	}
	m->elf = elf;
	m->mem = copy;
	m->mem_len = len;
	return m;
}

void elfmod_release_file(struct elf_module *m)
{
	if (!m)
		return;
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	free(m->mem);
	free(m->code); /* libelf's bytes went with the handle */
	m->elf = NULL;
	m->fd = -1;
	m->mem = NULL;
	m->mem_len = 0;
	m->code = NULL;
	m->ncode = 0;
	m->code_read = 1;
}

int elfmod_fd(const struct elf_module *m)
{
	return m->fd;
}

Elf *elfmod_libelf(const struct elf_module *m)
{
	return m->elf;
}

/*
 * Modules opened by path and shared while the event loop's step lasts
 * (elfmod_open_shared): the allocator's search, CPython's note and frames
 * and ld.so's symbols read the same few files of one process in one
 * attach; each is opened once. A slot is reused only for the same path and
 * the same file (device, inode, size and modification time as stat gives
 * them now), so a library replaced on disk is opened again.
 */
#define SHARED_SLOTS 32

static struct shared_slot {
	struct elf_module *m;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int refs;
} shared[SHARED_SLOTS];
static int nshared;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

static int same_file(const struct shared_slot *s, const char *path, const struct stat *st)
{
	return !strcmp(s->m->path, path) && s->dev == st->st_dev && s->ino == st->st_ino &&
	       s->size == st->st_size && s->mtime.tv_sec == st->st_mtim.tv_sec &&
	       s->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

struct elf_module *elfmod_open_shared(const char *path, char *err, size_t errlen)
{
	struct elf_module *m;
	struct stat st;

	if (stat(path, &st))
		return elfmod_open(path, err, errlen); /* its own error */
	pthread_mutex_lock(&shared_lock);
	for (int i = 0; i < nshared; i++) {
		if (same_file(&shared[i], path, &st)) {
			shared[i].refs++;
			pthread_mutex_unlock(&shared_lock);
			return shared[i].m;
		}
	}
	pthread_mutex_unlock(&shared_lock);
	m = elfmod_open(path, err, errlen);
	if (!m)
		return NULL;
	pthread_mutex_lock(&shared_lock);
	if (nshared < SHARED_SLOTS) {
		shared[nshared++] = (struct shared_slot){.m = m,
							 .dev = st.st_dev,
							 .ino = st.st_ino,
							 .size = st.st_size,
							 .mtime = st.st_mtim,
							 .refs = 1};
		m->shared = 1;
	}
	pthread_mutex_unlock(&shared_lock);
	return m; /* a full table: the caller's alone */
}

static void close_module(struct elf_module *m);

void elfmod_trim_shared(void)
{
	int k = 0;

	pthread_mutex_lock(&shared_lock);
	for (int i = 0; i < nshared; i++) {
		if (shared[i].refs) {
			shared[k++] = shared[i];
			continue;
		}
		close_module(shared[i].m);
	}
	nshared = k;
	pthread_mutex_unlock(&shared_lock);
}

size_t elfmod_shared_count(void)
{
	size_t n;

	pthread_mutex_lock(&shared_lock);
	n = (size_t)nshared;
	pthread_mutex_unlock(&shared_lock);
	return n;
}

void elfmod_close(struct elf_module *m)
{
	if (!m)
		return;
	if (m->shared) {
		pthread_mutex_lock(&shared_lock);
		for (int i = 0; i < nshared; i++) {
			if (shared[i].m == m && shared[i].refs > 0) {
				shared[i].refs--;
				break;
			}
		}
		pthread_mutex_unlock(&shared_lock);
		return; /* closed by elfmod_trim_shared once no one holds it */
	}
	close_module(m);
}

static void close_module(struct elf_module *m)
{
	elfmod_release_file(m);
	free(m->path);
	free(m->build_id);
	free(m->segments);
	free(m->funcs);
	free(m->by_addr);
	free(m->max_end);
	free(m->names);
	free(m->starts);
	free(m);
}

const char *elfmod_path(const struct elf_module *m)
{
	return m->path;
}

const char *elfmod_lookup(const struct elf_module *m, uint64_t vaddr, uint64_t *sym_start)
{
	size_t lo = SEARCH_FIRST(0, m->naddr, m->by_addr[mid].start > vaddr);

	/* Every symbol before lo starts at or below vaddr; walk back while one may reach it. */
	while (lo > 0 && m->max_end[lo - 1] > vaddr) {
		const struct elf_func *f = &m->by_addr[--lo];

		if (vaddr - f->start < f->size) {
			if (sym_start)
				*sym_start = f->start;
			return f->name;
		}
	}
	return NULL;
}

/* A hidden entry is an old symbol version, which the dynamic linker never binds to. */
static const struct elf_func *find_in(const struct elf_module *m, const char *name, int dynamic,
				      int allow_hidden)
{
	const struct elf_func *hidden = NULL;
	size_t i;

	for (i = 0; i < m->nfuncs; i++) {
		const struct elf_func *f = &m->funcs[i];

		if (!f->function || f->dynamic != dynamic || strcmp(f->name, name))
			continue;
		if (!f->hidden)
			return f;
		if (!hidden)
			hidden = f;
	}
	return allow_hidden ? hidden : NULL;
}

int elfmod_find_function(const struct elf_module *m, const char *name, int dynamic_only,
			 uint64_t *vaddr, int *is_ifunc)
{
	const struct elf_func *f = NULL;

	if (!dynamic_only)
		f = find_in(m, name, 0, 1);
	if (!f)
		f = find_in(m, name, 1, !dynamic_only);
	if (!f)
		return -1;
	*vaddr = f->start;
	if (is_ifunc)
		*is_ifunc = f->ifunc;
	return 0;
}

int elfmod_vaddr_to_offset(const struct elf_module *m, uint64_t vaddr, uint64_t *off)
{
	uint64_t seg_vaddr, seg_offset, seg_filesz;

	if (elfmod_segment_of(m, vaddr, &seg_vaddr, &seg_offset, &seg_filesz))
		return -1;
	*off = seg_offset + (vaddr - seg_vaddr);
	return 0;
}

int elfmod_segment_of(const struct elf_module *m, uint64_t vaddr, uint64_t *seg_vaddr,
		      uint64_t *seg_offset, uint64_t *seg_filesz)
{
	size_t i;

	for (i = 0; i < m->nsegments; i++) {
		const struct elf_segment *s = &m->segments[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*seg_vaddr = s->vaddr;
			*seg_offset = s->offset;
			*seg_filesz = s->filesz;
			return 0;
		}
	}
	return -1;
}

int elfmod_segment(const struct elf_module *m, size_t i, uint64_t *seg_vaddr, uint64_t *seg_offset,
		   uint64_t *seg_filesz)
{
	if (i >= m->nsegments)
		return -1;
	*seg_vaddr = m->segments[i].vaddr;
	*seg_offset = m->segments[i].offset;
	*seg_filesz = m->segments[i].filesz;
	return 0;
}

int elfmod_offset_to_vaddr(const struct elf_module *m, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < m->nsegments; i++) {
		const struct elf_segment *s = &m->segments[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	return -1;
}

int elfmod_has_interp(const struct elf_module *m)
{
	return m->has_interp;
}

int elfmod_is_dyn(const struct elf_module *m)
{
	return m->is_dyn;
}

const char *elfmod_build_id(const struct elf_module *m)
{
	return m->build_id;
}

unsigned elfmod_machine(const struct elf_module *m)
{
	return m->machine;
}

ssize_t elfmod_pread(struct elf_module *m, void *buf, size_t len, uint64_t off)
{
	if (m->fd >= 0)
		return pread(m->fd, buf, len, (off_t)off);
	if (!m->mem || off > m->mem_len)
		return -1;
	if (len > m->mem_len - off)
		len = (size_t)(m->mem_len - off);
	memcpy(buf, m->mem + off, len);
	return (ssize_t)len;
}
