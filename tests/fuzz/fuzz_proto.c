// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the request line parser (src/common/proto.c), which reads bytes
 * from any client of the socket. A line that parses must format back into a
 * line that parses to the same request.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_request r, again;
	char err[256], line[PROTO_MAX_REQUEST + 1];
	int n;

	if (proto_request_parse((const char *)data, size, &r, err, sizeof(err))) {
		if (!memchr(err, 0, sizeof(err)) || strncmp(err, "bad request: ", 13))
			abort(); /* the reason must be one terminated "bad request:" line */
		if (strchr(err, '\n'))
			abort();
		return 0;
	}
	n = proto_request_format(&r, line, sizeof(line));
	if (n < 0 || proto_request_parse(line, (size_t)n, &again, err, sizeof(err)))
		abort();
	if (memcmp(&r, &again, sizeof(r)))
		abort();
	return 0;
}
