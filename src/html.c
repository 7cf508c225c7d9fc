// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "render.h"
#include "views.h"

void render_html(struct buf *out, const struct snapshot *s, const struct render_opts *o)
{
	buf_printf(out, "<!doctype html>\n");
}
