/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Which processes a cgroup match names (cgpath.c): --cgroup PATH and --unit
 * NAME resolved to a directory of the cgroup v2 hierarchy, its id (the
 * directory's inode number, which is what bpf_get_current_cgroup_id() and
 * its ancestors' ids are) and its level (0 for the root), and whether a
 * process is in it or below it. v2 only: it is mounted by itself
 * (/sys/fs/cgroup) or, on hybrid hosts, beside the v1 controllers
 * (/sys/fs/cgroup/unified); /proc/self/mountinfo says where. The parsers
 * take text, so the unit tests feed them fixtures.
 */
#ifndef MEMTRACE_PROC_CGPATH_H
#define MEMTRACE_PROC_CGPATH_H

#include <stddef.h>
#include <stdint.h>

#define CGPATH_MAX 4096

struct cgmatch {
	char mount[CGPATH_MAX]; /* where the v2 hierarchy is mounted */
	char path[CGPATH_MAX]; /* the cgroup, relative to the hierarchy's root: "/a/b" ("/": all) */
	uint64_t id;	       /* its directory's inode number: its cgroup id */
	uint32_t level;	       /* its depth below the root (the root: 0) */
};

/*
 * The mount point of the first cgroup2 file system in mountinfo's text
 * (/proc/self/mountinfo), into out: 0, or -1 when there is none.
 */
int cgpath_find_mount(const char *mountinfo, char *out, size_t outlen);

/*
 * path made relative to the hierarchy mounted at mount, normalised ("/a/b":
 * no "." or ".." components, no doubled or trailing slash): an absolute path
 * under mount, or a path relative to its root (with or without a leading
 * slash when it is not under mount). Its level is the number of components.
 * 0, or -1 with a one-line reason in err (a ".." component, a path outside
 * the mount, too long).
 */
int cgpath_relative(const char *mount, const char *path, char *out, size_t outlen, uint32_t *level,
		    char *err, size_t errlen);

/*
 * The v2 path of /proc/PID/cgroup's text (its "0::PATH" line), into out:
 * 0, or -1 when it has none.
 */
int cgpath_of_proc(const char *text, char *out, size_t outlen);

/* Is cgroup path (relative to the root) dir itself or below it? */
int cgpath_under(const char *path, const char *dir);

/*
 * A systemd unit's name as its cgroup directory is named: NAME as given when
 * it has a unit suffix (.service, .scope, .slice, ...), NAME.service
 * otherwise. 0, or -1 with a reason (empty, a slash in it, too long).
 */
int cgpath_unit_dir(const char *name, char *out, size_t outlen, char *err, size_t errlen);

/*
 * Resolve --cgroup PATH (unit NULL) or --unit NAME (path NULL) on this host:
 * the v2 mount from /proc/self/mountinfo, the directory (a unit: searched
 * for below the root, the shallowest of that name), checked to be a
 * directory of the cgroup2 file system. 0, or -1 with a one-line reason in
 * err: no cgroup v2 hierarchy, no such cgroup, not a cgroup, a unit with no
 * cgroup.
 */
int cgmatch_resolve(const char *path, const char *unit, struct cgmatch *m, char *err,
		    size_t errlen);

/* Is pid in m's cgroup or below it now (/proc/PID/cgroup)? */
int cgmatch_has_pid(const struct cgmatch *m, int pid);

#endif
