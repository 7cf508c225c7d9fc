/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A small JSON writer into a struct buf: the caller opens objects and arrays,
 * names keys and writes values; the writer places commas, indentation and
 * escapes. Strings may hold any bytes: invalid UTF-8 becomes U+FFFD, so the
 * output is always valid JSON whatever a target's command line contains.
 */
#ifndef MEMTRACE_CTL_JSON_H
#define MEMTRACE_CTL_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define JSON_MAX_DEPTH 64

struct json_writer {
	struct buf *out;
	int pretty;	      /* newlines and two-space indentation */
	int depth;	      /* open objects and arrays */
	int after_key;	      /* a key was written; its value comes next */
	uint64_t has_members; /* bit d: the container at depth d has a member */
};

/* Start writing into out; pretty = 0 gives compact output with no spaces. */
void json_init(struct json_writer *w, struct buf *out, int pretty);

void json_begin_object(struct json_writer *w);
void json_end_object(struct json_writer *w);
void json_begin_array(struct json_writer *w);
void json_end_array(struct json_writer *w);

/* The key of the next value; only inside an object. */
void json_key(struct json_writer *w, const char *key);

void json_string(struct json_writer *w, const char *s); /* NULL writes null */
void json_string_len(struct json_writer *w, const char *s, size_t len);
void json_u64(struct json_writer *w, uint64_t v);
void json_i64(struct json_writer *w, int64_t v);
void json_double(struct json_writer *w, double v); /* NaN and infinities write null */
void json_bool(struct json_writer *w, int v);
void json_null(struct json_writer *w);

/* A key and its value in one call. */
void json_kv_string(struct json_writer *w, const char *key, const char *s);
void json_kv_u64(struct json_writer *w, const char *key, uint64_t v);
void json_kv_i64(struct json_writer *w, const char *key, int64_t v);
void json_kv_double(struct json_writer *w, const char *key, double v);
void json_kv_bool(struct json_writer *w, const char *key, int v);

/* Append s as a quoted, escaped JSON string to b. */
void json_escape(struct buf *b, const char *s, size_t len);

#endif
