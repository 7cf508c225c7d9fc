/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's side of the DWARF stack walker: one unwind table per module
 * file (keyed by build-id, else device, inode and modification time), built
 * once (src/daemon/unwind/unwind_table.c) and shared by every traced process that maps
 * it, loaded into the BPF pool while one does and unloaded when none does,
 * within a memory bound (--unwind-memory). Per traced process, the list of
 * its executable mappings the walker searches, kept current at attach,
 * after an exec, at every dlopen and dlclose (a probe on ld.so's
 * _dl_debug_state holds the process until its new tables are in), and when
 * a stack shows an address outside the known mappings.
 *
 * Every function accepts u == NULL (another walker): it then does nothing.
 */
#ifndef MEMTRACE_UNWIND_DAEMON_H
#define MEMTRACE_UNWIND_DAEMON_H

#include <stddef.h>
#include <stdint.h>

struct memtrace_bpf;
struct unwinder;

/* What `status` shows. */
struct unwind_status {
	uint64_t memory_limit;	  /* --unwind-memory, bytes */
	uint64_t memory_used;	  /* pool chunks made, bytes */
	uint64_t table_bytes;	  /* rows and page entries of the loaded tables */
	uint32_t tables;	  /* loaded */
	uint32_t modules_without; /* mapped by a traced process, no table (no CFI, ...) */
	uint32_t modules_refused; /* not loaded: the memory limit */
	uint64_t build_ns;	  /* time spent building tables */
};

/* Default --unwind-memory. */
#define UNWIND_DEFAULT_MEMORY (256ull << 20)

/* A walker for skel's programs within max_bytes of tables (rounded to whole chunks). */
struct unwinder *unwind_new(struct memtrace_bpf *skel, uint64_t max_bytes);
void unwind_free(struct unwinder *u);

/*
 * Make pid's mappings current: read /proc/PID/maps, load the tables of its
 * executable files, publish the list to the walker (and, the first time,
 * probe its ld.so). Called at attach, after an exec's new program is
 * resolved, and when its linker reports a change (unwind_linker_event).
 */
void unwind_attach(struct unwinder *u, int pid);

/* pid is no longer traced (detached, exited, or executed another program):
 * its list goes, and the tables only it mapped are unloaded. */
void unwind_detach(struct unwinder *u, int pid);

/* A followed target forked child (the BPF side copied the parent's list). */
void unwind_fork(struct unwinder *u, int parent, int child);

/* pid's linker mapped or unmapped objects (MT_EV_LDSO with addr 1); the
 * caller continues the process afterwards. */
void unwind_linker_event(struct unwinder *u, int pid);

/* A new stack of pid: an address outside its known mappings (code mapped
 * without the linker, a missed dlopen) makes the list re-read, at most
 * once per stack and then not more often than every 100 ms. */
void unwind_note_frames(struct unwinder *u, int pid, const uint64_t *frames, size_t n);

void unwind_get_status(const struct unwinder *u, struct unwind_status *out);

/* "256M", "1G", "1048576": bytes, 1 MiB to 4 GiB. 0, or -1. */
int unwind_parse_size(const char *s, uint64_t *out);

#endif
