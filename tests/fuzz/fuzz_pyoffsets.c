// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the _Py_DebugOffsets parser (src/daemon/symbols/pyoffsets.c). Its bytes
 * come from the target's memory, which the target can write.
 */
#include <stdint.h>
#include <stdlib.h>

#include "daemon/symbols/pyoffsets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_layout l = *pyoffsets_table(13);
	char err[256], diff[1024];

	if (pyoffsets_from_debug(data, size, 13, &l, err, sizeof(err)) == 0) {
		/* accepted: a 3.13 layout, walked through current_frame directly */
		if (l.minor != 13 || l.pc.minor != 13 || l.pc.cframe_current != ~0u)
			abort();
	}
	pyoffsets_diff(pyoffsets_table(13), &l, diff, sizeof(diff));
	return 0;
}
