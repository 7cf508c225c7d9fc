// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The JSON writer (see json.h). It keeps only a depth and one bit per level,
 * so writing a report of a million stacks costs nothing beyond the text. All
 * output is ASCII: control characters, U+2028/U+2029 and every byte of
 * invalid UTF-8 are escaped, the last as \ufffd.
 */
#include "ctl/render/json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_init(struct json_writer *w, struct buf *out, int pretty)
{
	memset(w, 0, sizeof(*w));
	w->out = out;
	w->pretty = pretty;
}

static void newline_indent(struct json_writer *w, int depth)
{
	static const char spaces[] = "                                ";

	buf_put(w->out, "\n", 1);
	for (int n = 2 * depth; n > 0; n -= (int)sizeof(spaces) - 1)
		buf_put(w->out, spaces,
			n < (int)sizeof(spaces) - 1 ? (size_t)n : sizeof(spaces) - 1);
}

/* Separator and indentation before a value or a key. */
static void before_item(struct json_writer *w)
{
	uint64_t bit = 1ull << w->depth;

	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (!w->depth)
		return;
	if (w->has_members & bit)
		buf_put(w->out, ",", 1);
	w->has_members |= bit;
	if (w->pretty)
		newline_indent(w, w->depth);
}

static void begin(struct json_writer *w, char open)
{
	before_item(w);
	assert(w->depth + 1 < JSON_MAX_DEPTH);
	buf_put(w->out, &open, 1);
	w->depth++;
	w->has_members &= ~(1ull << w->depth);
}

static void end(struct json_writer *w, char close)
{
	assert(w->depth > 0 && !w->after_key);
	if (w->pretty && (w->has_members & (1ull << w->depth)))
		newline_indent(w, w->depth - 1);
	w->depth--;
	buf_put(w->out, &close, 1);
}

void json_begin_object(struct json_writer *w)
{
	begin(w, '{');
}

void json_end_object(struct json_writer *w)
{
	end(w, '}');
}

void json_begin_array(struct json_writer *w)
{
	begin(w, '[');
}

void json_end_array(struct json_writer *w)
{
	end(w, ']');
}

void json_key(struct json_writer *w, const char *key)
{
	assert(!w->after_key);
	before_item(w);
	json_escape(w->out, key, strlen(key));
	buf_put(w->out, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
	w->after_key = 1;
}

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0 if it is not one. */
static size_t utf8_valid(const unsigned char *p, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4;
	else
		return 0;
	/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF. */
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return len;
}

void json_escape(struct buf *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;
	char esc[8];

	buf_put(b, "\"", 1);
	while (i < len) {
		unsigned char c = p[i];
		const char *rep = NULL;
		size_t n = 1;

		if (c == '"')
			rep = "\\\"";
		else if (c == '\\')
			rep = "\\\\";
		else if (c == '\n')
			rep = "\\n";
		else if (c == '\r')
			rep = "\\r";
		else if (c == '\t')
			rep = "\\t";
		else if (c == '\b')
			rep = "\\b";
		else if (c == '\f')
			rep = "\\f";
		else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			rep = esc;
		} else if (c >= 0x80) {
			n = utf8_valid(p + i, len - i);
			if (!n) {
				rep = "\\ufffd";
				n = 1;
			} else if (n == 3 && c == 0xe2 && p[i + 1] == 0x80 &&
				   (p[i + 2] == 0xa8 || p[i + 2] == 0xa9)) {
				/* Valid JSON, but not valid JavaScript inside a <script>. */
				rep = p[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
			}
		}
		if (rep) {
			buf_put(b, s + i - run, run);
			run = 0;
			buf_put(b, rep, strlen(rep));
		} else {
			run += n;
		}
		i += n;
	}
	buf_put(b, s + i - run, run);
	buf_put(b, "\"", 1);
}

void json_string_len(struct json_writer *w, const char *s, size_t len)
{
	before_item(w);
	json_escape(w->out, s, len);
}

void json_string(struct json_writer *w, const char *s)
{
	if (!s) {
		json_null(w);
		return;
	}
	json_string_len(w, s, strlen(s));
}

void json_u64(struct json_writer *w, uint64_t v)
{
	char digits[20];
	size_t i = sizeof(digits);

	before_item(w);
	do {
		digits[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	buf_put(w->out, digits + i, sizeof(digits) - i);
}

void json_i64(struct json_writer *w, int64_t v)
{
	before_item(w);
	buf_printf(w->out, "%" PRId64, v);
}

/* The shortest form that reads back as the same double, always with a '.' or
 * an exponent so that readers take it for a float. */
void json_double(struct json_writer *w, double v)
{
	char text[40];

	if (!isfinite(v)) {
		json_null(w);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(text, sizeof(text), "%.*g", prec, v);
		if (strtod(text, NULL) == v)
			break;
	}
	if (!strpbrk(text, ".e"))
		strcat(text, ".0");
	before_item(w);
	buf_put(w->out, text, strlen(text));
}

void json_bool(struct json_writer *w, int v)
{
	before_item(w);
	buf_put(w->out, v ? "true" : "false", v ? 4 : 5);
}

void json_null(struct json_writer *w)
{
	before_item(w);
	buf_put(w->out, "null", 4);
}

void json_kv_string(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	json_string(w, s);
}

void json_kv_u64(struct json_writer *w, const char *key, uint64_t v)
{
	json_key(w, key);
	json_u64(w, v);
}

void json_kv_i64(struct json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	json_i64(w, v);
}

void json_kv_double(struct json_writer *w, const char *key, double v)
{
	json_key(w, key);
	json_double(w, v);
}

void json_kv_bool(struct json_writer *w, const char *key, int v)
{
	json_key(w, key);
	json_bool(w, v);
}
