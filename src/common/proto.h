/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The socket protocol between memtracectl and memtraced. A request is one
 * line of ASCII, at most PROTO_MAX_REQUEST bytes with its '\n':
 *
 *     snapshot top=10 sort=live pid=1234 stacks=1
 *
 * (unknown keys and malformed values are errors); a scan request may be
 * followed by as many bytes of suppressions as it says (struct proto_scan).
 * The reply is a frame:
 * 4 bytes "MTR1", 1 byte status (0 ok, 1 error), 4 bytes little-endian
 * length, then length bytes: an encoded snapshot when ok, a one-line UTF-8
 * message when error. The daemon closes the connection after one reply.
 */
#ifndef MEMTRACE_PROTO_H
#define MEMTRACE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAX_REQUEST    1024
#define PROTO_REPLY_MAGIC    "MTR1"
#define PROTO_REPLY_HEADER   9
#define PROTO_MAX_REPLY	     (1u << 31)
#define PROTO_DEFAULT_SOCKET "/run/memtrace/memtraced.sock"
#define PROTO_MAX_TOP	     1000000	  /* largest top= */
#define PROTO_MAX_PID	     (1u << 22)	  /* largest pid= (the kernel's PID_MAX_LIMIT) */
#define PROTO_MAX_OLDER_THAN (1ull << 62) /* largest older_than= (nanoseconds) */
/* scan: the pause bound (max_pause=, nanoseconds), and the suppressions that may follow */
#define PROTO_SCAN_MIN_PAUSE	 1000000ull	  /* 1 ms */
#define PROTO_SCAN_MAX_PAUSE	 3600000000000ull /* 1 h */
#define PROTO_SCAN_DEFAULT_PAUSE 1000000000ull	  /* 1 s */
#define PROTO_MAX_SUPPRESSIONS	 (1u << 20)	  /* bytes after a scan line */

enum proto_command {
	PROTO_CMD_SNAPSHOT = 1,
	PROTO_CMD_RESET_PEAK, /* start a new peak window, then answer as snapshot */
	PROTO_CMD_ATTACH,     /* start tracing pid=N, then answer as snapshot */
	PROTO_CMD_DETACH,     /* stop tracing pid=N (its data stays), then answer */
	PROTO_CMD_SCAN,	      /* leaks --unreachable: its own parameters (struct proto_scan) */
};

/*
 * A scan: stop a target for a moment, mark its live blocks from its roots,
 * resume it, and answer with the blocks no pointer reaches, by stack
 * (snapshot sections 47 and 48). Its parameters are its own: none of
 * struct proto_request's others applies to it.
 *
 *     scan pid=1234 top=10 max_pause=1000000000 suppressions=42\n
 *     <42 bytes: leak:PATTERN lines (LeakSanitizer's format, common/suppress.h)>
 */
struct proto_scan {
	uint32_t pid;	       /* 0 = every attached target, one after another */
	uint32_t top;	       /* entries to send, most bytes first; 0 = all */
	uint64_t max_pause_ns; /* a target stands still at most this long: past it the scan
				* gives up, resumes it and says so */
	uint32_t suppressions; /* bytes of suppressions after the line (0 = none) */
};

struct proto_request {
	int command;		/* enum proto_command */
	uint32_t top;		/* stacks (or rows, or leaking stacks) to include; 0 = all */
	int sort;		/* enum mt_sort */
	uint32_t pid;		/* 0 = every target */
	int stacks;		/* 0 = counters and targets only */
	int blocks;		/* 1 = the live block list too (blocks=1) */
	uint64_t older_than_ns; /* only blocks at least this old (older_than=NS) */
	int ages;		/* 1 = each stack's oldest live block (ages=1) */
	/*
	 * group=NAME: the stacks sort selects (sort=, pid=) are grouped into
	 * rows, ordered by order= (enum mt_sort), and the top rows are sent,
	 * each as one stack (its first, with the row's sums), with the rows'
	 * keys and what the rows not sent add up to (snapshot groups section).
	 */
	int group;	/* enum group_by (common/groupkey.h); GROUP_NONE: not grouped */
	int cumulative; /* cumulative=1: a stack counts in every row one of its frames keys */
	int order;	/* enum mt_sort: the rows' order */
	/*
	 * leaks=1: instead of the block list, per stack the blocks at least
	 * older_than old (count, bytes, age range), for the top stacks by bytes.
	 */
	int leaks;
	/*
	 * memory=1: each traced target's mappings by kind, with the live heap
	 * in each (snapshot memory section); read from /proc at length, so
	 * answered by a request lane.
	 */
	int memory;
	struct proto_scan scan; /* command scan only */
};

/*
 * Defaults: snapshot, top=0 (all), sort=live, pid=0, stacks=1, blocks=0,
 * older_than=0, ages=0, group=none, cumulative=0, order=live, leaks=0, memory=0;
 * a scan's pid=0 top=0 max_pause=1 s suppressions=0. The first word is the
 * command: "snapshot", "reset-peak", "attach", "detach" or "scan".
 */
void proto_request_init(struct proto_request *r);

/*
 * Parse one request line (with or without its trailing '\n'; len excludes
 * any NUL). Returns 0, or -1 with a one-line reason in err ("bad request:
 * unknown key 'foo'").
 */
int proto_request_parse(const char *line, size_t len, struct proto_request *r, char *err,
			size_t errlen);

/*
 * Format r as a request line ending in '\n' (blocks=, older_than= and ages=
 * only when not at their defaults). Returns its length, or -1.
 */
int proto_request_format(const struct proto_request *r, char *buf, size_t buflen);

/* Write a reply header for a payload of len bytes into hdr. */
void proto_reply_header(uint8_t hdr[PROTO_REPLY_HEADER], int status, uint32_t len);

/* Parse a reply header. Returns 0 and fills status/len, or -1 if malformed. */
int proto_reply_parse_header(const uint8_t hdr[PROTO_REPLY_HEADER], int *status, uint32_t *len);

#endif
