/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Capture what the code under test writes to stderr (its one-line error
 * messages), so a test can check the message and the run stays quiet.
 */
#ifndef MEMTRACE_UNIT_CAPTURE_H
#define MEMTRACE_UNIT_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int capture_saved_fd = -1;
static FILE *capture_file;

static void capture_stderr_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	capture_saved_fd = dup(STDERR_FILENO);
	if (!capture_file || capture_saved_fd < 0 || dup2(fileno(capture_file), STDERR_FILENO) < 0)
		abort();
}

/* What was written since capture_stderr_begin(); malloc'd, NUL-terminated. */
static char *capture_stderr_end(void)
{
	long n;
	char *s;

	fflush(stderr);
	dup2(capture_saved_fd, STDERR_FILENO);
	close(capture_saved_fd);
	n = ftell(capture_file);
	s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	rewind(capture_file);
	if (!s || (n > 0 && fread(s, 1, (size_t)n, capture_file) != (size_t)n))
		abort();
	fclose(capture_file);
	return s;
}

#endif
