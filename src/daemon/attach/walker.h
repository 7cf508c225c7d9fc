/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stack walkers by name (--stack-walker), and which one the daemon
 * tries when the kernel's verifier refuses a walker's programs: dwarf, then
 * fp, then caller (the call site alone, which every kernel memtrace runs on
 * loads); kernel falls back to fp. Pure functions (unit tested).
 */
#ifndef MEMTRACE_ATTACH_WALKER_H
#define MEMTRACE_ATTACH_WALKER_H

#include <stddef.h>

/* "dwarf", "fp", "kernel", "caller" (enum mt_stack_walker); "unknown" otherwise. */
const char *walker_name(int walker);
/* The walker a --stack-walker name means, or -1. */
int walker_parse(const char *name);
/* The walker to load after failed's programs were refused, or -1: none is left. */
int walker_next(int failed);

/* A walker whose programs the verifier refused, and its word on it. */
struct walker_refusal {
	int walker;
	char program[64]; /* the program refused ("walk_dwarf") */
	char line[256];	  /* the verifier's last line; "" when it said nothing */
};

/*
 * Why the walker in use runs, for status and reports: "default", "chosen"
 * (--stack-walker), or what refused those tried before it, "dwarf refused
 * by the verifier: walk_dwarf: LINE" ("; " between two). given: the first
 * was chosen with --stack-walker.
 */
void walker_reason(int given, const struct walker_refusal *r, int n, char *out, size_t outlen);

/*
 * The line the daemon logs when r's walker does not load and next is tried:
 * "the dwarf stack walker's programs do not load on this kernel
 * (walk_dwarf: LINE); using fp".
 */
void walker_fallback_line(int given, const struct walker_refusal *r, int next, char *out,
			  size_t outlen);

#endif
