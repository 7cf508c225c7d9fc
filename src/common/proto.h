/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The socket protocol between memtracectl and memtraced, version 2. A
 * request is one kind of question with its own parameters: one line of
 * ASCII, at most PROTO_MAX_REQUEST bytes with its '\n', the kind first, then
 * the protocol version and the kind's keys, each at most once:
 *
 *     report v=2 pid=1234 sort=live top=10 ages=0
 *
 * A key of another kind, an unknown key or a malformed value is an error,
 * and so is a line without v=2 (a version 1 client's: docs/design.md,
 * "Requests"); a scan may be followed by as many bytes of suppressions as it
 * says (struct proto_scan). The reply is a frame: 4 bytes "MTR1", 1 byte
 * status (0 ok, 1 error), 4 bytes little-endian length, then length bytes:
 * an encoded snapshot when ok, a one-line UTF-8 message when error. The
 * daemon closes the connection after one reply.
 */
#ifndef MEMTRACE_PROTO_H
#define MEMTRACE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION	     2 /* v= of every request */
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
#define PROTO_MAX_CGROUP_PATH	 4095		  /* bytes after an attach-cgroup line */

/*
 * What a request asks for: the kind is its first word. Every answer has the
 * counters, targets, timeline and daemon figures (of the one target pid=
 * selects, where the kind takes a pid); the kinds differ in what comes with
 * them (docs/snapshot-format.md says which sections).
 */
enum proto_kind {
	PROTO_STATUS = 1,    /* "status": nothing more (status, timeline; proto_status) */
	PROTO_SNAPSHOT,	     /* "snapshot": everything: every stack, the live blocks with
			      * their ages, each target's mappings by kind (snapshot -o) */
	PROTO_REPORT,	     /* "report": the top stacks by one key (struct proto_report) */
	PROTO_ROWS,	     /* "rows": stacks grouped into rows, the top rows (proto_rows) */
	PROTO_LEAKS,	     /* "leaks": stacks by their blocks past an age (proto_leaks) */
	PROTO_MEMORY,	     /* "memory": each target's mappings by kind (proto_memory) */
	PROTO_SCAN,	     /* "scan": which live blocks no pointer reaches (proto_scan) */
	PROTO_ATTACH,	     /* "attach": start tracing pid= (proto_target), answer as status */
	PROTO_DETACH,	     /* "detach": stop tracing pid= (its data stays), answer as status */
	PROTO_RESET_PEAK,    /* "reset-peak": start a new peak window, answer as status */
	PROTO_ATTACH_CGROUP, /* "attach-cgroup": trace a cgroup's processes (proto_cgroup), answer
			      * as status */
	PROTO_KIND_COUNT
};

/* status: the counters, targets and timeline of one target, or all. */
struct proto_status {
	uint32_t pid; /* 0 = every target */
};

/* report: the stacks of pid (0 = all) with a nonzero value under sort, largest first. */
struct proto_report {
	uint32_t pid;
	int sort;	 /* enum mt_sort */
	uint32_t top;	 /* stacks to send; 0 = all */
	int ages;	 /* 1: each stack's oldest live block (snapshot section SEC_AGES) */
	uint32_t cgroup; /* bytes of a cgroup path after the line (0 = none): see proto_rows */
};

/*
 * rows: the stacks of pid with a nonzero value under select, grouped into
 * rows by by, ordered by order (common/order.h), the top rows sent, each as
 * one stack (its first, with the row's sums), with the rows' keys and what
 * the rows not sent add up to (snapshot section SEC_GROUPS).
 */
struct proto_rows {
	uint32_t pid;
	int select;	/* enum mt_sort: which stacks are grouped */
	int by;		/* enum group_by (common/groupkey.h), not GROUP_NONE */
	int cumulative; /* 1: a stack counts in every row one of its frames keys
			 * (not with by stack or site) */
	int order;	/* enum mt_sort: the rows' order */
	uint32_t top;	/* rows to send; 0 = all */
	/*
	 * Bytes of a cgroup path that follow the line (0 = none, and the key is
	 * not written): only the stacks of processes whose cgroup is that path or
	 * below it (group_target_in_cgroup()), and the answer's totals are theirs:
	 *
	 *     rows v=2 by=function cgroup=9\n
	 *     </shop-api>
	 */
	uint32_t cgroup;
};

/*
 * leaks: per stack of pid with live bytes, its live blocks at least
 * older_than_ns old (count, bytes, age range), the top stacks by bytes
 * (snapshot section SEC_LEAKS).
 */
struct proto_leaks {
	uint32_t pid;
	uint64_t older_than_ns;
	uint32_t top; /* stacks to send; 0 = all */
};

/*
 * memory: each traced target's mappings by kind, with the live heap in each
 * (snapshot section SEC_MEMORY); read from /proc at length, so answered by a
 * request lane.
 */
struct proto_memory {
	uint32_t pid; /* 0 = every target */
};

/*
 * attach-cgroup: every process of a cgroup v2 directory or below it, as
 * memtraced --cgroup does (--unit: unit=1), from now on. The path or the
 * unit's name follows the line, path= bytes of it:
 *
 *     attach-cgroup v=2 path=24 unit=0\n
 *     <24 bytes: system.slice/web.service>
 */
struct proto_cgroup {
	uint32_t path; /* bytes after the line: 1 to PROTO_MAX_CGROUP_PATH */
	int unit;      /* 1: they name a systemd unit, not a path */
};

/* attach and detach: the process. */
struct proto_target {
	uint32_t pid; /* 1 or more */
};

/*
 * scan: stop a target for a moment, mark its live blocks from its roots,
 * resume it, and answer with the blocks no pointer reaches, by stack
 * (snapshot sections SEC_SCAN and SEC_SCAN_ENTRIES).
 *
 *     scan v=2 pid=1234 top=10 max_pause=1000000000 suppressions=42\n
 *     <42 bytes: leak:PATTERN lines (LeakSanitizer's format, common/suppress.h)>
 */
struct proto_scan {
	uint32_t pid;	       /* 0 = every attached target, one after another */
	uint32_t top;	       /* entries to send, most bytes first; 0 = all */
	uint64_t max_pause_ns; /* a target stands still at most this long: past it the scan
				* gives up, resumes it and says so */
	uint32_t suppressions; /* bytes of suppressions after the line (0 = none) */
};

/* A request: its kind, and that kind's parameters (snapshot and reset-peak have none). */
struct proto_request {
	int kind; /* enum proto_kind */
	union {
		struct proto_status status;
		/* a snapshot's target: 0 (every one) from the protocol, which sends
		 * no key; the daemon's own (an OOM kill's snapshot) may name one */
		struct proto_status snapshot;
		struct proto_report report;
		struct proto_rows rows;
		struct proto_leaks leaks;
		struct proto_memory memory;
		struct proto_target target; /* attach, detach */
		struct proto_scan scan;
		struct proto_cgroup cgroup; /* attach-cgroup */
	};
};

/*
 * A request of this kind with its defaults: pid=0 (all), sort=live, top=0
 * (all), ages=0; rows select=live order=live cumulative=0 (by= has no
 * default); older_than=0; a scan's max_pause=1 s suppressions=0.
 */
void proto_request_init(struct proto_request *r, int kind);

/* "status", "snapshot", "report", ...; NULL for a bad kind. */
const char *proto_kind_name(int kind);

/*
 * The target a request is about: its pid= (0 = every target) for the kinds
 * that take one, else 0.
 */
uint32_t proto_request_pid(const struct proto_request *r);

/* The bytes of a cgroup path after a report's or rows' line (cgroup=), else 0. */
uint32_t proto_request_cgroup(const struct proto_request *r);

/*
 * Parse one request line (with or without its trailing '\n'; len excludes
 * any NUL). Returns 0, or -1 with a one-line reason in err ("bad request:
 * unknown key 'foo'").
 */
int proto_request_parse(const char *line, size_t len, struct proto_request *r, char *err,
			size_t errlen);

/*
 * Format r as a request line ending in '\n', every key of its kind given.
 * Returns its length, or -1 (a value out of range, or buflen too small).
 */
int proto_request_format(const struct proto_request *r, char *buf, size_t buflen);

/* Write a reply header for a payload of len bytes into hdr. */
void proto_reply_header(uint8_t hdr[PROTO_REPLY_HEADER], int status, uint32_t len);

/* Parse a reply header. Returns 0 and fills status/len, or -1 if malformed. */
int proto_reply_parse_header(const uint8_t hdr[PROTO_REPLY_HEADER], int *status, uint32_t *len);

#endif
