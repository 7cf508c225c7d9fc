// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The request line and reply frame of the memtraced socket (see proto.h).
 * Request lines come from any local client the socket admits, so the parser
 * accepts only the documented grammar: printable ASCII words separated by
 * spaces, a kind, the protocol version, that kind's keys at most once each,
 * values in range. Anything else is a one-line error. One table says which
 * keys each kind has and where each goes: the parser and the formatter both
 * walk it.
 */
#include "common/proto.h"
#include "common/groupkey.h"
#include "memtrace/snapshot.h"
#include "common/util.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* How a key's value is written and where it goes. */
enum key_type {
	KEY_U32,   /* a number into a uint32_t, min to max */
	KEY_U64,   /* a number into a uint64_t, min to max */
	KEY_FLAG,  /* 0 or 1 into an int */
	KEY_SORT,  /* a sort key's name into an int (enum mt_sort) */
	KEY_GROUP, /* a grouping's name into an int (enum group_by, not none) */
};

struct key {
	const char *name;
	enum key_type type;
	size_t offset; /* in struct proto_request */
	uint64_t min, max;
};

/* A key not written when 0: cgroup= (a daemon older than it refuses it). */
#define OMIT_ZERO(k) (!strcmp((k)->name, "cgroup"))

#define AT(field) offsetof(struct proto_request, field)
#define PID(kind)                                                                                  \
	{                                                                                          \
		"pid", KEY_U32, AT(kind.pid), 0, PROTO_MAX_PID                                     \
	}
#define TOP(kind)                                                                                  \
	{                                                                                          \
		"top", KEY_U32, AT(kind.top), 0, PROTO_MAX_TOP                                     \
	}

static const struct key status_keys[] = {PID(status)};

static const struct key report_keys[] = {
    PID(report),
    {"sort", KEY_SORT, AT(report.sort), 0, 0},
    TOP(report),
    {"ages", KEY_FLAG, AT(report.ages), 0, 1},
    {"cgroup", KEY_U32, AT(report.cgroup), 0, PROTO_MAX_CGROUP_PATH},
};

static const struct key rows_keys[] = {
    PID(rows),
    {"select", KEY_SORT, AT(rows.select), 0, 0},
    {"by", KEY_GROUP, AT(rows.by), 0, 0},
    {"cumulative", KEY_FLAG, AT(rows.cumulative), 0, 1},
    {"order", KEY_SORT, AT(rows.order), 0, 0},
    TOP(rows),
    {"cgroup", KEY_U32, AT(rows.cgroup), 0, PROTO_MAX_CGROUP_PATH},
};

static const struct key leaks_keys[] = {
    PID(leaks),
    {"older_than", KEY_U64, AT(leaks.older_than_ns), 0, PROTO_MAX_OLDER_THAN},
    TOP(leaks),
};

static const struct key memory_keys[] = {PID(memory)};

static const struct key target_keys[] = {{"pid", KEY_U32, AT(target.pid), 1, PROTO_MAX_PID}};

static const struct key cgroup_keys[] = {
    {"path", KEY_U32, AT(cgroup.path), 1, PROTO_MAX_CGROUP_PATH},
    {"unit", KEY_FLAG, AT(cgroup.unit), 0, 1},
};

static const struct key scan_keys[] = {
    PID(scan),
    TOP(scan),
    {"max_pause", KEY_U64, AT(scan.max_pause_ns), PROTO_SCAN_MIN_PAUSE, PROTO_SCAN_MAX_PAUSE},
    {"suppressions", KEY_U32, AT(scan.suppressions), 0, PROTO_MAX_SUPPRESSIONS},
};

static const struct {
	const char *name;
	const struct key *keys;
	size_t nkeys;
	const char *required; /* the key a request of this kind must give, or NULL */
} kinds[PROTO_KIND_COUNT] = {
    [PROTO_STATUS] = {"status", status_keys, ARRAY_SIZE(status_keys), NULL},
    [PROTO_SNAPSHOT] = {"snapshot", NULL, 0, NULL},
    [PROTO_REPORT] = {"report", report_keys, ARRAY_SIZE(report_keys), NULL},
    [PROTO_ROWS] = {"rows", rows_keys, ARRAY_SIZE(rows_keys), "by"},
    [PROTO_LEAKS] = {"leaks", leaks_keys, ARRAY_SIZE(leaks_keys), NULL},
    [PROTO_MEMORY] = {"memory", memory_keys, ARRAY_SIZE(memory_keys), NULL},
    [PROTO_SCAN] = {"scan", scan_keys, ARRAY_SIZE(scan_keys), NULL},
    [PROTO_ATTACH] = {"attach", target_keys, ARRAY_SIZE(target_keys), "pid"},
    [PROTO_DETACH] = {"detach", target_keys, ARRAY_SIZE(target_keys), "pid"},
    [PROTO_RESET_PEAK] = {"reset-peak", NULL, 0, NULL},
    [PROTO_ATTACH_CGROUP] = {"attach-cgroup", cgroup_keys, ARRAY_SIZE(cgroup_keys), "path"},
};

void proto_request_init(struct proto_request *r, int kind)
{
	memset(r, 0, sizeof(*r)); /* padding too: requests compare with memcmp */
	r->kind = kind;
	switch (kind) {
	case PROTO_REPORT:
		r->report.sort = MT_SORT_LIVE;
		break;
	case PROTO_ROWS:
		r->rows.select = MT_SORT_LIVE;
		r->rows.order = MT_SORT_LIVE;
		break;
	case PROTO_SCAN:
		r->scan.max_pause_ns = PROTO_SCAN_DEFAULT_PAUSE;
		break;
	}
}

const char *proto_kind_name(int kind)
{
	return kind > 0 && kind < PROTO_KIND_COUNT ? kinds[kind].name : NULL;
}

uint32_t proto_request_pid(const struct proto_request *r)
{
	switch (r->kind) {
	case PROTO_STATUS:
		return r->status.pid;
	case PROTO_SNAPSHOT:
		return r->snapshot.pid;
	case PROTO_REPORT:
		return r->report.pid;
	case PROTO_ROWS:
		return r->rows.pid;
	case PROTO_LEAKS:
		return r->leaks.pid;
	case PROTO_MEMORY:
		return r->memory.pid;
	case PROTO_SCAN:
		return r->scan.pid;
	case PROTO_ATTACH:
	case PROTO_DETACH:
		return r->target.pid;
	default:
		return 0;
	}
}

uint32_t proto_request_cgroup(const struct proto_request *r)
{
	return r->kind == PROTO_REPORT ? r->report.cgroup
	       : r->kind == PROTO_ROWS ? r->rows.cgroup
				       : 0;
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

/* Longest piece of a bad line quoted back in an error. */
#define QUOTE_MAX 32

/* Is name a key of some kind (for "does not apply" rather than "unknown")? */
static int known_key(const char *name)
{
	for (int k = 1; k < PROTO_KIND_COUNT; k++)
		for (size_t i = 0; i < kinds[k].nkeys; i++)
			if (!strcmp(name, kinds[k].keys[i].name))
				return 1;
	return 0;
}

/* Set key k of r from value: 0, or -1 with the reason. */
static int set_key(const struct key *k, const char *value, struct proto_request *r, char *err,
		   size_t errlen)
{
	char *field = (char *)r + k->offset;
	uint64_t v;
	int e;

	switch (k->type) {
	case KEY_SORT:
		e = mt_sort_from_name(value);
		if (e < 0)
			return request_error(err, errlen,
					     "bad %s '%.*s' (expected live, allocated, count, "
					     "peak or temporary)",
					     k->name, QUOTE_MAX, value);
		memcpy(field, &e, sizeof(e));
		return 0;
	case KEY_GROUP:
		e = group_by_from_name(value);
		if (e < 0)
			return request_error(err, errlen,
					     "bad %s '%.*s' (expected stack, function, file, "
					     "line, module, site, cgroup, unit or container)",
					     k->name, QUOTE_MAX, value);
		memcpy(field, &e, sizeof(e));
		return 0;
	default:
		break;
	}
	if (parse_u64(value, k->max, &v) || v < k->min)
		return request_error(err, errlen, "bad %s '%.*s' (expected %llu to %llu)", k->name,
				     QUOTE_MAX, value, (unsigned long long)k->min,
				     (unsigned long long)k->max);
	if (k->type == KEY_U32) {
		uint32_t v32 = (uint32_t)v;

		memcpy(field, &v32, sizeof(v32));
	} else if (k->type == KEY_U64) {
		memcpy(field, &v, sizeof(v));
	} else {
		e = (int)v;
		memcpy(field, &e, sizeof(e));
	}
	return 0;
}

/* The protocol version a line gives (its v=): 0, or -1 with the reason. */
static int check_version(char **words, size_t nwords, const char *kind, char *err, size_t errlen)
{
	uint64_t v;

	for (size_t i = 1; i < nwords; i++) {
		if (strncmp(words[i], "v=", 2))
			continue;
		if (parse_u64(words[i] + 2, UINT32_MAX, &v))
			return request_error(err, errlen, "bad v '%.*s' (expected %d)", QUOTE_MAX,
					     words[i] + 2, PROTO_VERSION);
		if (v > PROTO_VERSION)
			return request_error(err, errlen,
					     "protocol version %llu is newer than this "
					     "memtraced's (%d)",
					     (unsigned long long)v, PROTO_VERSION);
		if (v < PROTO_VERSION)
			return request_error(err, errlen,
					     "protocol version %llu is older than this "
					     "memtraced's (%d): use the memtracectl of its release",
					     (unsigned long long)v, PROTO_VERSION);
		for (size_t j = i + 1; j < nwords; j++)
			if (!strncmp(words[j], "v=", 2))
				return request_error(err, errlen, "v given twice");
		words[i] = NULL; /* taken */
		return 0;
	}
	/* a version 1 line: an older memtracectl's */
	return request_error(err, errlen,
			     "%s without v=%d: a protocol version 1 request, older than this "
			     "memtraced's (%d): use the memtracectl of its release",
			     kind, PROTO_VERSION, PROTO_VERSION);
}

int proto_request_parse(const char *line, size_t len, struct proto_request *r, char *err,
			size_t errlen)
{
	char copy[PROTO_MAX_REQUEST + 1], *words[PROTO_MAX_REQUEST / 2 + 1], *save, *w;
	size_t nwords = 0;
	unsigned seen = 0;
	int kind;

	proto_request_init(r, PROTO_STATUS);
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
	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
		words[nwords++] = w;
	if (!nwords)
		return request_error(err, errlen, "empty line");
	for (kind = 1; kind < PROTO_KIND_COUNT; kind++)
		if (!strcmp(words[0], kinds[kind].name))
			break;
	if (kind == PROTO_KIND_COUNT)
		return request_error(err, errlen,
				     "unknown request '%.*s' (expected status, snapshot, report, "
				     "rows, leaks, memory, scan, attach, detach or reset-peak)",
				     QUOTE_MAX, words[0]);
	if (check_version(words, nwords, kinds[kind].name, err, errlen))
		return -1;
	proto_request_init(r, kind);
	for (size_t i = 1; i < nwords; i++) {
		char *eq;
		size_t k;

		if (!words[i])
			continue; /* v= */
		eq = strchr(words[i], '=');
		if (!eq)
			return request_error(err, errlen, "expected key=value, got '%.*s'",
					     QUOTE_MAX, words[i]);
		*eq = '\0';
		for (k = 0; k < kinds[kind].nkeys; k++)
			if (!strcmp(words[i], kinds[kind].keys[k].name))
				break;
		if (k == kinds[kind].nkeys) {
			if (known_key(words[i]))
				return request_error(err, errlen, "%s does not apply to %s",
						     words[i], kinds[kind].name);
			return request_error(err, errlen, "unknown key '%.*s'", QUOTE_MAX,
					     words[i]);
		}
		if (seen & (1u << k))
			return request_error(err, errlen, "%s given twice", words[i]);
		seen |= 1u << k;
		if (set_key(&kinds[kind].keys[k], eq + 1, r, err, errlen))
			return -1;
	}
	if (kinds[kind].required) {
		size_t k = 0;

		while (strcmp(kinds[kind].keys[k].name, kinds[kind].required))
			k++;
		if (!(seen & (1u << k)))
			return request_error(err, errlen, "%s needs %s=", kinds[kind].name,
					     kinds[kind].required);
	}
	if (kind == PROTO_ROWS && r->rows.cumulative &&
	    (r->rows.by == GROUP_STACK || r->rows.by == GROUP_SITE || group_by_target(r->rows.by)))
		return request_error(err, errlen, "cumulative=1 does not apply to by=%s",
				     group_by_name(r->rows.by));
	return 0;
}

int proto_request_format(const struct proto_request *r, char *buf, size_t buflen)
{
	const char *name = proto_kind_name(r->kind);
	size_t len;
	int n;

	if (!name)
		return -1;
	n = snprintf(buf, buflen, "%s v=%d", name, PROTO_VERSION);
	if (n < 0 || (size_t)n >= buflen)
		return -1;
	len = (size_t)n;
	for (size_t i = 0; i < kinds[r->kind].nkeys; i++) {
		const struct key *k = &kinds[r->kind].keys[i];
		const char *field = (const char *)r + k->offset;
		char value[32];
		const char *shown = value;
		uint64_t v = 0;
		int e;

		switch (k->type) {
		case KEY_SORT:
		case KEY_GROUP:
			memcpy(&e, field, sizeof(e));
			shown = k->type == KEY_SORT ? mt_sort_name(e) : group_by_name(e);
			if (!shown)
				return -1;
			break;
		case KEY_U32: {
			uint32_t v32;

			memcpy(&v32, field, sizeof(v32));
			v = v32;
			break;
		}
		case KEY_U64:
			memcpy(&v, field, sizeof(v));
			break;
		case KEY_FLAG:
			memcpy(&e, field, sizeof(e));
			if (e < 0)
				return -1;
			v = (uint64_t)e;
			break;
		}
		if (k->type != KEY_SORT && k->type != KEY_GROUP) {
			if (v < k->min || v > k->max)
				return -1;
			if (!v && OMIT_ZERO(k))
				continue;
			snprintf(value, sizeof(value), "%llu", (unsigned long long)v);
		}
		n = snprintf(buf + len, buflen - len, " %s=%s", k->name, shown);
		if (n < 0 || (size_t)n >= buflen - len)
			return -1;
		len += (size_t)n;
	}
	if (r->kind == PROTO_ROWS && r->rows.cumulative &&
	    (r->rows.by == GROUP_STACK || r->rows.by == GROUP_SITE || group_by_target(r->rows.by)))
		return -1;
	if (len + 1 >= buflen)
		return -1;
	buf[len++] = '\n';
	buf[len] = '\0';
	return (int)len;
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
