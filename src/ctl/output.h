/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where memtracectl's output goes: stdout, or a file that is replaced
 * atomically, so that a reader (or a crash) sees the old file or the whole
 * new one, never a part.
 */
#ifndef MEMTRACE_CTL_OUTPUT_H
#define MEMTRACE_CTL_OUTPUT_H

#include <stddef.h>

/* Write len bytes to stdout and flush; 0, or -1 after a message. */
int write_stdout(const void *data, size_t len);

/* -o PATH: write_file_atomic() to path, or write_stdout() when path is NULL
 * (no -o) or "-". */
int write_output(const char *path, const void *data, size_t len);

/*
 * Replace path with len bytes: a temporary file "PATH.tmp.PID" in the same
 * directory, written, fsync'd, renamed over path, then the directory fsync'd
 * so that the rename survives a crash too. The file is created mode 0600
 * (output.c says why). Returns 0, or -1 after a one-line message; on failure
 * no temporary file is left and path is as it was.
 */
int write_file_atomic(const char *path, const void *data, size_t len);

#endif
