// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Folded stacks, the input of flamegraph.pl, inferno and speedscope: one line
 * per stack, frames from the root to the allocation site joined by ';', then
 * a space and the stack's value (--sample: live bytes, bytes allocated,
 * allocation count, or live bytes at the peak). Stacks in the order of the
 * snapshot (largest first); stacks whose value is zero are left out, so the
 * values add up to the snapshot's total for that sample.
 */
#include "ctl/render/folded.h"
#include "ctl/render/format.h"

#include <inttypes.h>

void render_folded(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	for (uint32_t i = 0; i < s->nstacks; i++) {
		const struct snap_stack *st = &s->stacks[i];
		uint64_t v = mt_sort_value(&st->t, o->sample);

		if (!v)
			continue;
		if (!st->nframes)
			buf_printf(out, "[unknown]");
		for (uint32_t j = st->nframes; j-- > 0;) {
			format_frame_name(out, st->frames[j]);
			if (j)
				buf_put(out, ";", 1);
		}
		buf_printf(out, " %" PRIu64 "\n", v);
	}
}
