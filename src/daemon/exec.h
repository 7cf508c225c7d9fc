/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A target's exec and fork (exec.c). */
#ifndef MEMTRACE_DAEMON_EXEC_H
#define MEMTRACE_DAEMON_EXEC_H

#include <stdint.h>

struct daemon;

/* The ring buffer says: tgid executed a new program (stopped: held for us;
 * unmatched: a match's, which does not match: traced no more). */
void target_exec_event(struct daemon *d, uint32_t tgid, int stopped, int unmatched);
/* ... reached its ld.so's _dl_debug_state, stopped there. */
void target_ldso_event(struct daemon *d, uint32_t tgid);
/* ... is about to install a CPython allocator, stopped there. */
void target_pyalloc_event(struct daemon *d, uint32_t tgid);
/* ... a followed target or a match, ptgid, forked child. */
void target_forked(struct daemon *d, uint32_t ptgid, int child);

/* Entry i executed a new program whose event was lost: act as if it came. */
void target_execed(struct daemon *d, int i);

/* On the drain timer: is some target's exec not seen yet? If so, drain the
 * ring buffer, then check_execs acts on those whose event was lost. */
int execs_unseen(struct daemon *d);
void check_execs(struct daemon *d);
/* ... and new programs whose allocator is still to be resolved. */
void target_resolve(struct daemon *d, int i);

#endif
