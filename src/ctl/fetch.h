/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Getting one snapshot: a request line to memtraced's socket and its reply,
 * or a snapshot file (or stdin), decoded. A file holds every stack; it is
 * narrowed here to what the request would have asked the daemon for, so a
 * view shows the same from a file as from the daemon.
 */
#ifndef MEMTRACE_CTL_FETCH_H
#define MEMTRACE_CTL_FETCH_H

#include "common/proto.h"
#include "common/util.h"
#include "memtrace/snapshot.h"

/*
 * Fetch a snapshot into snap: from file ("-" is stdin) when it is not NULL,
 * else by sending req to the daemon at socket_path. A file is narrowed to the
 * stacks req would select (a report's, rows' or leaks' pid, sort and top),
 * unless whole (a copy or a diff wants every stack). raw, when not NULL, receives the bytes as they
 * came. Returns 0, or -1 after a one-line message (snap and raw then hold nothing).
 */
int fetch_snapshot(const struct proto_request *req, const char *socket_path, const char *file,
		   int whole, struct snapshot *snap, struct buf *raw);

/*
 * --cgroup PATH: keep only the stacks of processes whose target's cgroup is
 * PATH or below it (group_target_in_cgroup()); the totals' live, allocated
 * and peak figures become the kept stacks' sums (peak_live_bytes: what they
 * held at the moment of the whole trace's peak, peak_time_ns). what names the snapshot in a
 * message. Returns 0, or -1 after a one-line message: a snapshot the daemon already grouped cannot
 * be filtered.
 */
int fetch_filter_cgroup(struct snapshot *s, const char *path, const char *what);

/*
 * stats --cgroup PATH: keep only the targets whose own labels put them in
 * cgroup PATH or below it (group_cgroup_below() of its memory cgroup's path
 * or its cgroup's; a target never labelled is in none), with their
 * breakdowns; the totals become their counters merged as generations merge
 * (mt_counters_merge: sums, and peak_live_bytes the largest of their peaks,
 * with its time). The timeline's figures by target are dropped (stats shows
 * none). The daemon's own figures (events, loss, walker, size histogram,
 * allocator mix) are left as they are.
 */
void fetch_filter_cgroup_targets(struct snapshot *s, const char *path);

/*
 * The bytes of a snapshot, as fetch_snapshot() gets them, checked and counted
 * as they stream through zlib (snapshot_scan) but not decoded: a million
 * blocks would be tens of MB of model for three numbers. 0, or -1 after a
 * one-line message.
 */
int fetch_checked(const struct proto_request *req, const char *socket_path, const char *file,
		  struct buf *raw, struct snapshot_counts *counts);

/*
 * A request with a body (attach-cgroup: the path or unit): the request line,
 * then body[0..len), and the answer decoded into snap. 0, or -1 after a
 * one-line message.
 */
int fetch_body(const struct proto_request *req, const char *socket_path, const void *body,
	       size_t len, struct snapshot *snap);

/*
 * A scan (req->kind PROTO_SCAN): the request line, then body[0..len)
 * (its suppressions, as many bytes as req->scan.suppressions says), and the
 * answer decoded into snap. 0, or -1 after a one-line message.
 */
int fetch_scan(const struct proto_request *req, const char *socket_path, const void *body,
	       size_t len, struct snapshot *snap);

#endif
