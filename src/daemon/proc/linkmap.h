/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A target's dynamic linker, read from outside (linkmap.c). */
#ifndef MEMTRACE_LINKMAP_H
#define MEMTRACE_LINKMAP_H

#include <stddef.h>
#include <stdint.h>

/*
 * Search order of the loaded objects of pid, as paths the daemon can open
 * (the executable first). Reads ld.so's r_debug; when that is not available
 * (a static executable, or the linker has not started) falls back to the
 * executable followed by mapped files in address order. Caller frees each
 * string and the array. Returns the count, or -1.
 */
int linkmap_search_order(int pid, char ***paths);

/* Runtime address of a dynamic symbol of the target's ld.so ("_r_debug"),
 * through AT_BASE in /proc/PID/auxv. 0 if there is no ld.so (static). */
uint64_t linkmap_ldso_symbol(int pid, const char *name);

/*
 * Where to probe ld.so's _dl_debug_state in pid (which the linker calls
 * after it mapped or unmapped objects): the file as the daemon opens it
 * (caller frees) and the function's offset in it. -1: no ld.so (a static
 * program) or no such symbol.
 */
int linkmap_ldso_probe(int pid, char **open_path, uint64_t *offset);

/* r_state of the target's r_debug (0 = consistent, 1 = adding objects,
 * 2 = deleting), or -1 when the dynamic linker has not published it. */
int linkmap_state(int pid);

/*
 * The objects a program stopped at its exec will bind malloc in, before
 * ld.so has mapped its libraries: the executable, then the libc.so.6 beside
 * its ld.so. Returns the count (caller frees), 0 for a static program (no
 * ld.so: all there is is mapped), or -1 with a reason in err.
 */
int linkmap_exec_order(int pid, char ***paths, char *err, size_t errlen);

/* The target's name of a path the daemon opens: without /proc/PID/root,
 * or what /proc/PID/exe links to. Caller frees. */
char *linkmap_display_path(int pid, const char *open_path);

#endif
