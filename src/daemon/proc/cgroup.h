/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's cgroup as /proc and the cgroup filesystem say it (cgroup.c):
 * which cgroup it is in (/proc/PID/cgroup: the unified hierarchy's "0::"
 * line, and the v1 memory controller's line on hybrid hosts), what that
 * path names (a systemd unit, a container of docker, podman, containerd,
 * CRI-O or Kubernetes), its pid in its own pid namespace (/proc/PID/status
 * NSpid), and its memory cgroup's figures (include/memtrace/cgroup.h).
 * The parsers take the text as untrusted bytes and say what is wrong
 * rather than guess; cgroup_read() is the thin part that opens the files.
 */
#ifndef MEMTRACE_PROC_CGROUP_H
#define MEMTRACE_PROC_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "memtrace/cgroup.h"

/* The most a cgroup file memtrace reads may hold (memory.stat is 1-2 KiB). */
#define CGROUP_MAX_TEXT 16384

/* Where a process is, by /proc/PID/cgroup ("" when that line is absent). */
struct cgroup_where {
	char v2[MT_CGROUP_PATH_MAX];	 /* the "0::PATH" line's path */
	char memory[MT_CGROUP_PATH_MAX]; /* the v1 "N:...memory...:PATH" line's path */
};

/*
 * Parse len bytes of /proc/PID/cgroup. 0, or -1 with a one-line reason in
 * err: a line that is not "ID:CONTROLLERS:PATH" with a numeric ID and an
 * absolute PATH, a path longer than a label holds, or neither a v2 nor a v1
 * memory line.
 */
int cgroup_parse_proc(const char *text, size_t len, struct cgroup_where *out, char *err,
		      size_t errlen);

/*
 * What a cgroup path names: the unit, container id, runtime and pod fields
 * of out (the others are left as they are; those it names nothing of are
 * made empty). Never fails: a path that names nothing leaves them empty.
 */
void cgroup_identify(const char *path, struct mt_cgroup_labels *out);

/*
 * The NSpid line of /proc/PID/status: the last of its pids (the pid in the
 * process's own namespace). 0, or -1 with a reason (no such line, not
 * numbers).
 */
int cgroup_parse_nspid(const char *text, size_t len, int32_t *nspid, char *err, size_t errlen);

/* pid's NSpid, from /proc/PID/status: 0, or -errno (gone, no such line). */
int cgroup_read_nspid(int pid, int32_t *nspid);

/* The memory controller's files memtrace reads, of both versions. */
enum cgroup_file {
	CG_V2_CURRENT,
	CG_V2_MAX,
	CG_V2_HIGH,
	CG_V2_STAT,
	CG_V2_EVENTS,
	CG_V1_USAGE,
	CG_V1_LIMIT,
	CG_V1_STAT,
	CG_V1_OOM_CONTROL,
	CG_V1_FAILCNT,
	CG_NFILES
};

/* The file's name in the cgroup's directory ("memory.current"). */
const char *cgroup_file_name(enum cgroup_file f);

/*
 * Parse len bytes of file f into the figures of m that come from it (their
 * bits set in m->have; the others are left as they are). A limit of "max",
 * or on v1 one of 2^62 bytes or more (the kernel's default), is
 * MT_CGROUP_NO_LIMIT. A keyed file's line of a figure that is missing
 * (an older kernel's) leaves that figure unread. 0, or -1 with a one-line
 * reason in err: a value that is not a number, a line that is not
 * "key value", a figure's line given twice.
 */
int cgroup_parse_file(enum cgroup_file f, const char *text, size_t len, struct mt_cgroup_memory *m,
		      char *err, size_t errlen);

/* Where the hierarchies are mounted (NULL: not at all). */
struct cgroup_roots {
	const char *unified;   /* "/sys/fs/cgroup" (v2 only) or "/sys/fs/cgroup/unified" */
	const char *v1_memory; /* "/sys/fs/cgroup/memory" on hybrid hosts */
};

/*
 * The memory cgroup figures of a process that is where w says, under
 * roots: the unified cgroup's when it has memory.current, else the v1
 * memory cgroup's; *memory_path (MT_CGROUP_PATH_MAX bytes) names which ("":
 * none). mem->version 0 when none could be read, and mem_why says why
 * (no hierarchy, no memory controller files, a file that is not what it
 * should be); when the v1 figures stand in for a unified cgroup without a
 * memory controller, mem_why says so too; "" otherwise.
 */
void cgroup_memory_at(const struct cgroup_where *w, const struct cgroup_roots *roots,
		      char *memory_path, struct mt_cgroup_memory *mem, char *mem_why,
		      size_t mem_whylen);

/*
 * Read pid's labels (its cgroup and what it names, NSpid) into *labels and
 * its memory cgroup's figures into *mem: those of the unified hierarchy's
 * memory controller when its cgroup there has one, else the v1 memory
 * controller's (labels->memory_path says which cgroup). 0, or -errno with
 * a reason in err when /proc/PID/cgroup cannot be read or parsed (labels
 * and mem untouched). A cgroup without memory controller files is not an
 * error: mem->version is MT_CGROUP_NONE and mem_why says why; when the
 * figures come from v1 because the unified cgroup has no memory controller
 * (these hosts), mem_why says that too; "" otherwise. mem NULL: the
 * labels only (no memory controller file is read).
 */
int cgroup_read(int pid, struct mt_cgroup_labels *labels, struct mt_cgroup_memory *mem,
		char *mem_why, size_t mem_whylen, char *err, size_t errlen);

/*
 * The figures of the memory cgroup labels name (labels->memory_path, read
 * earlier), without the process: one that is exiting may have left its
 * cgroup already (its /proc/PID/cgroup says the root). 0, or -1 with why
 * (no memory cgroup named, or its files gone or unreadable).
 */
int cgroup_read_memory(const struct mt_cgroup_labels *labels, struct mt_cgroup_memory *mem,
		       char *why, size_t whylen);

#endif
