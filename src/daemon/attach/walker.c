// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The stack walkers by name, and their fallback order (see walker.h). */
#include "daemon/attach/walker.h"

#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "memtrace/event.h"

static const char *const names[] = {
    [MT_WALK_FP] = "fp",
    [MT_WALK_KERNEL] = "kernel",
    [MT_WALK_DWARF] = "dwarf",
    [MT_WALK_CALLER] = "caller",
};

const char *walker_name(int walker)
{
	return walker >= 0 && (size_t)walker < ARRAY_SIZE(names) && names[walker] ? names[walker]
										  : "unknown";
}

int walker_parse(const char *name)
{
	for (size_t w = 0; w < ARRAY_SIZE(names); w++)
		if (names[w] && !strcmp(name, names[w]))
			return (int)w;
	return -1;
}

/*
 * From the most a walker gives to the least: the DWARF walk needs the most
 * of the verifier (a row lookup per frame), the frame-pointer walk less (a
 * bpf_loop of reads), the call site alone nothing but the return probe's
 * own registers. bpf_get_stack's walk (kernel) is frame pointers too, in
 * the kernel: after it, ours.
 */
int walker_next(int failed)
{
	switch (failed) {
	case MT_WALK_DWARF:
	case MT_WALK_KERNEL:
		return MT_WALK_FP;
	case MT_WALK_FP:
		return MT_WALK_CALLER;
	default:
		return -1;
	}
}

/* "walk_dwarf: LINE", or "walk_dwarf" when the verifier said nothing. */
static void what_refused(const struct walker_refusal *r, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s%s%s", r->program, r->line[0] ? ": " : "", r->line);
}

void walker_reason(int given, const struct walker_refusal *r, int n, char *out, size_t outlen)
{
	size_t len = 0;

	if (!n) {
		snprintf(out, outlen, "%s", given ? "chosen" : "default");
		return;
	}
	out[0] = 0;
	for (int i = 0; i < n && len < outlen; i++) {
		char what[sizeof(r->program) + sizeof(r->line) + 2];

		what_refused(&r[i], what, sizeof(what));
		len += (size_t)snprintf(
		    out + len, outlen - len, "%s%s%s refused by the verifier: %s", i ? "; " : "",
		    walker_name(r[i].walker), given && !i ? " (chosen)" : "", what);
	}
}

void walker_fallback_line(int given, const struct walker_refusal *r, int next, char *out,
			  size_t outlen)
{
	char what[sizeof(r->program) + sizeof(r->line) + 2];

	what_refused(r, what, sizeof(what));
	if (given)
		snprintf(out, outlen,
			 "the %s stack walker chosen (--stack-walker %s) does not load on this "
			 "kernel (%s); using %s",
			 walker_name(r->walker), walker_name(r->walker), what, walker_name(next));
	else
		snprintf(out, outlen,
			 "the %s stack walker's programs do not load on this kernel (%s); using %s",
			 walker_name(r->walker), what, walker_name(next));
}
