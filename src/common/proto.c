// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The request line and reply frame of the memtraced socket (see proto.h).
 * Request lines come from any local client the socket admits, so the parser
 * accepts only the documented grammar: printable ASCII words separated by
 * spaces, one command, known keys at most once each, values in range.
 * Anything else is a one-line error.
 */
#include "common/proto.h"
#include "common/groupkey.h"
#include "memtrace/snapshot.h"
#include "common/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void proto_request_init(struct proto_request *r)
{
	memset(r, 0, sizeof(*r)); /* padding too: requests compare with memcmp */
	r->command = PROTO_CMD_SNAPSHOT;
	r->top = 0;
	r->sort = MT_SORT_LIVE;
	r->pid = 0;
	r->stacks = 1;
	r->blocks = 0;
	r->older_than_ns = 0;
	r->ages = 0;
	r->scan.max_pause_ns = PROTO_SCAN_DEFAULT_PAUSE;
}

static int request_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int request_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!errlen)
		return -1;
	n = snprintf(err, errlen, "bad request: ");
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Keys, what they set and the largest number they take (sort is by name). */
enum request_key {
	KEY_TOP,
	KEY_SORT,
	KEY_PID,
	KEY_STACKS,
	KEY_BLOCKS,
	KEY_OLDER_THAN,
	KEY_AGES,
	KEY_GROUP,
	KEY_CUMULATIVE,
	KEY_ORDER,
	KEY_LEAKS,
	KEY_MEMORY,
	KEY_COUNT
};

static const struct {
	const char *name;
	uint64_t max;
} request_keys[KEY_COUNT] = {
    [KEY_TOP] = {"top", PROTO_MAX_TOP},
    [KEY_SORT] = {"sort", 0},
    [KEY_PID] = {"pid", PROTO_MAX_PID},
    [KEY_STACKS] = {"stacks", 1},
    [KEY_BLOCKS] = {"blocks", 1},
    [KEY_OLDER_THAN] = {"older_than", PROTO_MAX_OLDER_THAN},
    [KEY_AGES] = {"ages", 1},
    [KEY_GROUP] = {"group", 0},
    [KEY_CUMULATIVE] = {"cumulative", 1},
    [KEY_ORDER] = {"order", 0},
    [KEY_LEAKS] = {"leaks", 1},
    [KEY_MEMORY] = {"memory", 1},
};

/* Longest piece of a bad line quoted back in an error. */
#define QUOTE_MAX 32

/* A scan's keys: its own, into struct proto_scan. */
enum scan_key { SCAN_PID, SCAN_TOP, SCAN_MAX_PAUSE, SCAN_SUPPRESSIONS, SCAN_KEY_COUNT };

static const struct {
	const char *name;
	uint64_t min, max;
} scan_keys[SCAN_KEY_COUNT] = {
    [SCAN_PID] = {"pid", 0, PROTO_MAX_PID},
    [SCAN_TOP] = {"top", 0, PROTO_MAX_TOP},
    [SCAN_MAX_PAUSE] = {"max_pause", PROTO_SCAN_MIN_PAUSE, PROTO_SCAN_MAX_PAUSE},
    [SCAN_SUPPRESSIONS] = {"suppressions", 0, PROTO_MAX_SUPPRESSIONS},
};

static int parse_scan_pair(char *word, unsigned *seen, struct proto_scan *s, char *err,
			   size_t errlen)
{
	char *eq = strchr(word, '=');
	uint64_t v;
	size_t k;

	if (!eq)
		return request_error(err, errlen, "expected key=value, got '%.*s'", QUOTE_MAX,
				     word);
	*eq = '\0';
	for (k = 0; k < SCAN_KEY_COUNT; k++)
		if (!strcmp(word, scan_keys[k].name))
			break;
	if (k == SCAN_KEY_COUNT) {
		for (size_t o = 0; o < KEY_COUNT; o++)
			if (!strcmp(word, request_keys[o].name))
				return request_error(err, errlen, "%s does not apply to scan",
						     word);
		return request_error(err, errlen, "unknown key '%.*s'", QUOTE_MAX, word);
	}
	if (*seen & (1u << k))
		return request_error(err, errlen, "%s given twice", word);
	*seen |= 1u << k;
	if (parse_u64(eq + 1, scan_keys[k].max, &v) || v < scan_keys[k].min)
		return request_error(err, errlen, "bad %s '%.*s' (expected %llu to %llu)", word,
				     QUOTE_MAX, eq + 1, (unsigned long long)scan_keys[k].min,
				     (unsigned long long)scan_keys[k].max);
	if (k == SCAN_PID)
		s->pid = (uint32_t)v;
	else if (k == SCAN_TOP)
		s->top = (uint32_t)v;
	else if (k == SCAN_MAX_PAUSE)
		s->max_pause_ns = v;
	else
		s->suppressions = (uint32_t)v;
	return 0;
}

static int parse_pair(char *word, unsigned *seen, struct proto_request *r, char *err, size_t errlen)
{
	char *eq = strchr(word, '=');
	const char *value;
	uint64_t v;
	size_t k;

	if (!eq)
		return request_error(err, errlen, "expected key=value, got '%.*s'", QUOTE_MAX,
				     word);
	*eq = '\0';
	value = eq + 1;
	for (k = 0; k < KEY_COUNT; k++)
		if (!strcmp(word, request_keys[k].name))
			break;
	if (k == KEY_COUNT)
		return request_error(err, errlen, "unknown key '%.*s'", QUOTE_MAX, word);
	if (*seen & (1u << k))
		return request_error(err, errlen, "%s given twice", word);
	*seen |= 1u << k;

	if (k == KEY_SORT || k == KEY_ORDER) {
		int sort = mt_sort_from_name(value);

		if (sort < 0)
			return request_error(err, errlen,
					     "bad %s '%.*s' (expected live, allocated, count, "
					     "peak or temporary)",
					     word, QUOTE_MAX, value);
		if (k == KEY_SORT)
			r->sort = sort;
		else
			r->order = sort;
		return 0;
	}
	if (k == KEY_GROUP) {
		int g = strcmp(value, "none") ? group_by_from_name(value) : GROUP_NONE;

		if (g >= 0) {
			r->group = g;
			return 0;
		}
		return request_error(err, errlen,
				     "bad group '%.*s' (expected none, stack, function, file, "
				     "line, module or site)",
				     QUOTE_MAX, value);
	}
	if (parse_u64(value, request_keys[k].max, &v))
		return request_error(err, errlen, "bad %s '%.*s' (expected 0 to %llu)", word,
				     QUOTE_MAX, value, (unsigned long long)request_keys[k].max);
	if (k == KEY_TOP)
		r->top = (uint32_t)v;
	else if (k == KEY_PID)
		r->pid = (uint32_t)v;
	else if (k == KEY_BLOCKS)
		r->blocks = (int)v;
	else if (k == KEY_OLDER_THAN)
		r->older_than_ns = v;
	else if (k == KEY_AGES)
		r->ages = (int)v;
	else if (k == KEY_CUMULATIVE)
		r->cumulative = (int)v;
	else if (k == KEY_LEAKS)
		r->leaks = (int)v;
	else if (k == KEY_MEMORY)
		r->memory = (int)v;
	else
		r->stacks = (int)v;
	return 0;
}

int proto_request_parse(const char *line, size_t len, struct proto_request *r, char *err,
			size_t errlen)
{
	char copy[PROTO_MAX_REQUEST + 1];
	unsigned seen = 0;
	char *word, *save;

	proto_request_init(r);
	if (errlen)
		err[0] = '\0';
	if (len > PROTO_MAX_REQUEST)
		return request_error(err, errlen, "line longer than %d bytes", PROTO_MAX_REQUEST);
	if (len && line[len - 1] == '\n')
		len--;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];

		if (c == '\0')
			return request_error(err, errlen, "NUL byte in line");
		if (c == '\n')
			return request_error(err, errlen, "more than one line");
		if (c < 0x20 || c > 0x7e)
			return request_error(err, errlen, "character 0x%02x in line", c);
	}
	memcpy(copy, line, len);
	copy[len] = '\0';

	word = strtok_r(copy, " ", &save);
	if (!word)
		return request_error(err, errlen, "empty line");
	if (!strcmp(word, "snapshot"))
		r->command = PROTO_CMD_SNAPSHOT;
	else if (!strcmp(word, "reset-peak"))
		r->command = PROTO_CMD_RESET_PEAK;
	else if (!strcmp(word, "attach"))
		r->command = PROTO_CMD_ATTACH;
	else if (!strcmp(word, "detach"))
		r->command = PROTO_CMD_DETACH;
	else if (!strcmp(word, "scan"))
		r->command = PROTO_CMD_SCAN;
	else
		return request_error(err, errlen, "unknown command '%.*s'", QUOTE_MAX, word);
	while ((word = strtok_r(NULL, " ", &save)))
		if (r->command == PROTO_CMD_SCAN
			? parse_scan_pair(word, &seen, &r->scan, err, errlen)
			: parse_pair(word, &seen, r, err, errlen))
			return -1;
	if ((r->command == PROTO_CMD_ATTACH || r->command == PROTO_CMD_DETACH) && !r->pid)
		return request_error(err, errlen, "%s needs pid=N",
				     r->command == PROTO_CMD_ATTACH ? "attach" : "detach");
	return 0;
}

int proto_request_format(const struct proto_request *r, char *buf, size_t buflen)
{
	const char *sort = mt_sort_name(r->sort);
	int n;

	char extra[160] = "";

	static const char *const names[] = {[PROTO_CMD_SNAPSHOT] = "snapshot",
					    [PROTO_CMD_RESET_PEAK] = "reset-peak",
					    [PROTO_CMD_ATTACH] = "attach",
					    [PROTO_CMD_DETACH] = "detach"};

	if (r->command == PROTO_CMD_SCAN) {
		const struct proto_scan *sc = &r->scan;

		if (sc->pid > PROTO_MAX_PID || sc->top > PROTO_MAX_TOP ||
		    sc->max_pause_ns < PROTO_SCAN_MIN_PAUSE ||
		    sc->max_pause_ns > PROTO_SCAN_MAX_PAUSE ||
		    sc->suppressions > PROTO_MAX_SUPPRESSIONS)
			return -1;
		n = snprintf(buf, buflen, "scan pid=%u top=%u max_pause=%llu suppressions=%u\n",
			     sc->pid, sc->top, (unsigned long long)sc->max_pause_ns,
			     sc->suppressions);
		return n < 0 || (size_t)n >= buflen ? -1 : n;
	}
	if (r->command < PROTO_CMD_SNAPSHOT || r->command > PROTO_CMD_DETACH || !sort ||
	    r->top > PROTO_MAX_TOP || r->pid > PROTO_MAX_PID ||
	    (r->stacks != 0 && r->stacks != 1) || (r->blocks != 0 && r->blocks != 1) ||
	    r->older_than_ns > PROTO_MAX_OLDER_THAN || (r->ages != 0 && r->ages != 1) ||
	    r->group < GROUP_NONE || r->group >= GROUP_BY_COUNT ||
	    (r->cumulative != 0 && r->cumulative != 1) || !mt_sort_name(r->order) ||
	    (r->leaks != 0 && r->leaks != 1) || (r->memory != 0 && r->memory != 1))
		return -1;
	if (r->blocks || r->older_than_ns)
		snprintf(extra, sizeof(extra), " blocks=%d older_than=%llu", r->blocks,
			 (unsigned long long)r->older_than_ns);
	if (r->ages)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " ages=1");
	if (r->group)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
			 " group=%s cumulative=%d order=%s", group_by_name(r->group), r->cumulative,
			 mt_sort_name(r->order));
	else if (r->cumulative || r->order)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
			 " cumulative=%d order=%s", r->cumulative, mt_sort_name(r->order));
	if (r->leaks)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " leaks=1");
	if (r->memory)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " memory=1");
	n = snprintf(buf, buflen, "%s top=%u sort=%s pid=%u stacks=%d%s\n", names[r->command],
		     r->top, sort, r->pid, r->stacks, extra);
	if (n < 0 || (size_t)n >= buflen)
		return -1;
	return n;
}

void proto_reply_header(uint8_t hdr[PROTO_REPLY_HEADER], int status, uint32_t len)
{
	memcpy(hdr, PROTO_REPLY_MAGIC, 4);
	hdr[4] = (uint8_t)status;
	for (int i = 0; i < 4; i++)
		hdr[5 + i] = (uint8_t)(len >> (8 * i));
}

int proto_reply_parse_header(const uint8_t hdr[PROTO_REPLY_HEADER], int *status, uint32_t *len)
{
	uint32_t n = 0;

	if (memcmp(hdr, PROTO_REPLY_MAGIC, 4) || hdr[4] > 1)
		return -1;
	for (int i = 3; i >= 0; i--)
		n = (n << 8) | hdr[5 + i];
	if (n > PROTO_MAX_REPLY)
		return -1;
	*status = hdr[4];
	*len = n;
	return 0;
}
