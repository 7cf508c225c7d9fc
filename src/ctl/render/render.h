/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What every renderer is handed besides its rows: the output format and how
 * to print. A renderer prints a snapshot, or the rows a view computed from
 * one (view/), as the text people read, the JSON scripts read, or a profile
 * (folded stacks, pprof, HTML). Every number has the name it has in
 * docs/metrics.md, in each form; the JSON keys are a stable contract.
 */
#ifndef MEMTRACE_CTL_RENDER_H
#define MEMTRACE_CTL_RENDER_H

#include <stdint.h>

enum render_format {
	RENDER_TEXT = 0,
	RENDER_JSON,
	RENDER_FOLDED, /* render/folded.c */
	RENDER_PPROF,  /* render/pprof.c */
	RENDER_HTML,   /* render/html.c */
};

struct render_opts {
	int format; /* enum render_format */
	int pretty; /* JSON: newlines and two-space indentation */
	int sort;   /* report: enum mt_sort the stacks are ordered by (text shows peak for PEAK) */
	uint32_t pid;  /* report: limited to this target; 0 = all */
	int oldest;    /* report: each stack's oldest live block (snapshots with ages) */
	int sample;    /* folded and html: enum mt_sort, not temporary */
	int peak;      /* pprof: the profile of what was live at the peak */
	uint32_t rows; /* timeline: text rows at most */
};

#endif
