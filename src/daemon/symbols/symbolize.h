/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Turns return addresses of traced processes into frames (module, offset,
 * function). Keeps each pid's mappings and a module cache shared by all pids,
 * keyed by the mapped file's (device, inode), so symbols stay available after
 * a process exits. Never guesses: an address outside every symbol gets none.
 * Each module remembers what its addresses symbolized to (symcache.h), so an
 * address is looked up in symbol tables and DWARF once, not once per request.
 */
#ifndef MEMTRACE_SYMBOLIZE_H
#define MEMTRACE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/snapshot.h"

struct symbolizer;

struct symbolizer_stats {
	uint64_t lookups;	  /* addresses looked up in symbol tables or DWARF */
	uint64_t hits;		  /* answered from a module's cache */
	uint64_t modules_opened;  /* module files read */
	uint64_t modules_dropped; /* modules no pid maps any more, with their caches */
	uint64_t modules;	  /* modules held now */
};

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);

/*
 * Make the cached maps of pid cover addrs, re-reading /proc/PID/maps once if
 * any address is outside them (a failed or empty read keeps the old cache),
 * and open the module of every file those addresses are in while the process
 * is alive. Makes no system call when every address is already known.
 *
 * The addresses are of the program the process ran when its stack was
 * taken, and /proc shows what it runs now: a read is kept only if the guard
 * (symbolizer_set_guard) says, after it, that pid is still that program,
 * and only if it still maps, at the same address, the file the first read
 * of that program had as its lowest executable mapping (an exec under way,
 * which the guard cannot see yet, has replaced it). A read not kept leaves
 * the frames unnamed, never named from another program.
 */
void symbolizer_note(struct symbolizer *s, int pid, const uint64_t *addrs, size_t n);

/*
 * Read pid's maps now and open the module of every executable mapping, so
 * frames stay nameable even if the process exits before its first stack is
 * noted: at attach, and while the process holds still for the daemon (a new
 * program stopped in its ld.so, a dlopen stopped for the unwinder).
 */
void symbolizer_note_process(struct symbolizer *s, int pid);

/*
 * current(arg, pid): is pid still the program whose events are being
 * drained (alive, not past another exec)? Asked before and after every
 * read of /proc/PID/maps; without a guard every read is kept.
 */
void symbolizer_set_guard(struct symbolizer *s, int (*current)(void *arg, int pid), void *arg);

/*
 * Fill *out for a return address of pid from the cached maps; never reads
 * the maps (the pid may have been reused), though it opens a module not
 * opened yet. Strings are malloc'd. The symbol is looked up at addr - 1, the
 * call instruction; offset is that of addr. Without a mapping: module NULL,
 * offset = addr. In a file: module is its path and offset the ELF virtual
 * address (the file offset when the file could not be read as ELF). In
 * "[vdso]"-like pseudo mappings: module is that name, offset from its start.
 */
void symbolizer_frame(struct symbolizer *s, int pid, uint64_t addr, struct snap_frame *out);

#define SYMBOLIZER_MAX_INLINE 16

/*
 * Like symbolizer_frame, but a return address inside inlined code becomes
 * several frames (DWARF inlined subroutines): the innermost inlined function
 * first, marked inlined, down to the real function. Fills at most max frames
 * (max >= 1) and returns how many.
 */
size_t symbolizer_frames(struct symbolizer *s, int pid, uint64_t addr, struct snap_frame *out,
			 size_t max);

/*
 * The maps cached for pid now belong to key (a retired generation's key,
 * never a live pid): a new program in pid starts with maps of its own. Key
 * is never re-read from /proc.
 */
void symbolizer_rename(struct symbolizer *s, int pid, int key);

/*
 * child was forked by parent: it starts with the parent's maps as cached
 * now, at the fork's place in the parent's events (not re-read: the parent
 * may have mapped, executed or exited since), so that its stacks resolve
 * even when it has exited before the daemon could read /proc/CHILD/maps. A
 * later address outside them re-reads the child's own.
 */
void symbolizer_fork(struct symbolizer *s, int parent, int child);

/*
 * Drop a pid's maps. A module no other pid's maps hold goes with them,
 * and with it what its addresses symbolized to.
 */
void symbolizer_forget(struct symbolizer *s, int pid);

/*
 * symbolizer_frames with the symbolizer's own strings: function, file,
 * module and build_id are not to be freed, and stay valid until the next
 * call that may re-read maps or drop a module (symbolizer_note,
 * symbolizer_note_process, symbolizer_fork, symbolizer_forget) or
 * symbolizer_free, or while held (symbolizer_hold). What a request builds
 * and sends between two of those can point at them.
 */
size_t symbolizer_frames_interned(struct symbolizer *s, int pid, uint64_t addr,
				  struct snap_frame *out, size_t max);

/*
 * Only the function symbol containing a return address (demangled, NULL if
 * none; no DWARF read), and the module path in *module (NULL outside every
 * mapping). Strings as for symbolizer_frames_interned.
 */
const char *symbolizer_symbol(struct symbolizer *s, int pid, uint64_t addr, const char **module);

/*
 * While held, the strings symbolizer_frames_interned() handed out stay valid
 * even if their module goes (it is freed at the last release): another
 * thread can encode what it collected while this one moves on. Both may be
 * called from any thread.
 */
void symbolizer_hold(struct symbolizer *s);
void symbolizer_release(struct symbolizer *s);

/* A string kept until symbolizer_free, equal to str (NULL for NULL). */
const char *symbolizer_intern(struct symbolizer *s, const char *str);

void symbolizer_get_stats(const struct symbolizer *s, struct symbolizer_stats *out);

#endif
