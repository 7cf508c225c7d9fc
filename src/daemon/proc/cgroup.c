// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A process's cgroup (cgroup.h): parsing /proc/PID/cgroup, what a cgroup
 * path names, NSpid, and the memory controller's files of both versions;
 * then the one reader that opens them. Which file and key hold a figure is
 * the MT_CGROUP_FIGURES table's (include/memtrace/cgroup.h): a figure is
 * added there, not here.
 */
#include "daemon/proc/cgroup.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

/* ---- /proc/PID/cgroup ----------------------------------------------------- */

/* Does the comma-separated list ctl[0..n) name controller name? */
static int has_controller(const char *ctl, size_t n, const char *name)
{
	size_t len = strlen(name);
	const char *p = ctl, *end = ctl + n;

	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		size_t k = (size_t)((c ? c : end) - p);

		if (k == len && !memcmp(p, name, len))
			return 1;
		p = c ? c + 1 : end;
	}
	return 0;
}

static int copy_path(char *dst, const char *src, size_t n)
{
	if (n >= MT_CGROUP_PATH_MAX)
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

int cgroup_parse_proc(const char *text, size_t len, struct cgroup_where *out, char *err,
		      size_t errlen)
{
	const char *p = text, *end = text + len;
	struct cgroup_where w = {{0}, {0}};
	int v2 = 0, mem = 0;
	unsigned lineno = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *c1, *c2, *q;
		size_t n = (size_t)(le - p);

		lineno++;
		if (!n) {
			p = nl ? nl + 1 : end;
			continue;
		}
		c1 = memchr(p, ':', n);
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		for (q = p; c1 && q < c1 && *q >= '0' && *q <= '9'; q++)
			;
		if (!c2 || q == p || q != c1 || c2 + 1 >= le || c2[1] != '/') {
			snprintf(err, errlen, "cgroup: line %u is not \"ID:CONTROLLERS:/PATH\"",
				 lineno);
			return -1;
		}
		if (c1 - p == 1 && *p == '0' && c2 == c1 + 1) {
			if (v2++) {
				snprintf(err, errlen, "cgroup: line %u: a second \"0::\" line",
					 lineno);
				return -1;
			}
			if (copy_path(w.v2, c2 + 1, (size_t)(le - c2 - 1)))
				goto too_long;
		} else if (has_controller(c1 + 1, (size_t)(c2 - c1 - 1), "memory")) {
			if (mem++) {
				snprintf(err, errlen, "cgroup: line %u: a second memory line",
					 lineno);
				return -1;
			}
			if (copy_path(w.memory, c2 + 1, (size_t)(le - c2 - 1)))
				goto too_long;
		}
		p = nl ? nl + 1 : end;
	}
	if (!v2 && !mem) {
		snprintf(err, errlen, "cgroup: neither a v2 \"0::\" line nor a v1 memory line");
		return -1;
	}
	*out = w;
	return 0;
too_long:
	snprintf(err, errlen, "cgroup: line %u: a path longer than %d bytes", lineno,
		 MT_CGROUP_PATH_MAX - 1);
	return -1;
}

/* ---- what a path names ----------------------------------------------------- */

static int all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

/* A container id: 64 lowercase hex digits, exactly. */
static int is_id(const char *s, size_t n)
{
	return n == 64 && all_hex(s, n);
}

static int starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && !memcmp(s, prefix, k);
}

static int ends(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

static void set(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/*
 * A pod uid of a kubepods component ("pod" then 36 characters: hex and '-',
 * or '_' in systemd's slice names), with '-' for '_'. 1 when it is one.
 */
static int pod_uid(const char *s, size_t n, char *out)
{
	if (n != 36)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i] == '_' ? '-' : s[i];
		int dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? c != '-' : !all_hex(&c, 1))
			return 0;
		out[i] = c;
	}
	out[n] = '\0';
	return 1;
}

/* One component of a path, and the next one's (n = 0: none). */
struct comp {
	const char *s;
	size_t n;
};

/* A container id and runtime in component c (next: the component after it): 1 when found. */
static int container_of(struct comp c, struct comp next, struct mt_cgroup_labels *out)
{
	static const struct {
		const char *prefix, *runtime, *skip;
	} scopes[] = {
	    {"docker-", "docker", NULL},
	    {"libpod-", "podman", "libpod-conmon-"},
	    {"cri-containerd-", "containerd", NULL},
	    {"crio-", "cri-o", "crio-conmon-"},
	};
	size_t n = c.n;

	if (ends(c.s, n, ".scope"))
		n -= strlen(".scope");
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		size_t k = strlen(scopes[i].prefix);

		if (!starts(c.s, n, scopes[i].prefix) ||
		    (scopes[i].skip && starts(c.s, n, scopes[i].skip)) || !is_id(c.s + k, n - k))
			continue;
		set(out->container, sizeof(out->container), c.s + k, n - k);
		set(out->runtime, sizeof(out->runtime), scopes[i].runtime,
		    strlen(scopes[i].runtime));
		return 1;
	}
	/* the cgroupfs drivers: /docker/<id>, /kubepods/.../pod<uid>/<id> */
	if (c.n == strlen("docker") && !memcmp(c.s, "docker", c.n) && is_id(next.s, next.n)) {
		set(out->container, sizeof(out->container), next.s, next.n);
		set(out->runtime, sizeof(out->runtime), "docker", strlen("docker"));
		return 1;
	}
	return 0;
}

void cgroup_identify(const char *path, struct mt_cgroup_labels *out)
{
	struct comp v[256];
	size_t nc = 0;
	int kube = 0, found = 0;

	out->unit[0] = out->container[0] = out->runtime[0] = out->pod[0] = '\0';
	for (const char *p = path; p && *p && nc < sizeof(v) / sizeof(v[0]);) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);

		if (n)
			v[nc++] = (struct comp){p, n};
		p = slash ? slash + 1 : p + n;
	}
	for (size_t i = 0; i < nc; i++) {
		const char *s = v[i].s;
		size_t n = v[i].n;
		char uid[MT_CGROUP_POD_MAX];

		if (ends(s, n, ".service") || ends(s, n, ".scope") || ends(s, n, ".slice"))
			set(out->unit, sizeof(out->unit), s, n); /* the innermost wins */
		if (starts(s, n, "kubepods"))
			kube = 1;
		if (kube && ends(s, n, ".slice")) {
			/* kubepods-burstable-pod<uid>.slice */
			const char *pod = NULL;

			for (size_t k = 0; k + 4 <= n; k++) {
				if (!memcmp(s + k, "-pod", 4))
					pod = s + k + 4;
			}
			if (pod && pod_uid(pod, (size_t)(s + n - strlen(".slice") - pod), uid))
				set(out->pod, sizeof(out->pod), uid, strlen(uid));
		} else if (kube && starts(s, n, "pod") && pod_uid(s + 3, n - 3, uid)) {
			set(out->pod, sizeof(out->pod), uid, strlen(uid));
			/* cgroupfs: the container is the next component */
			if (i + 1 < nc && is_id(v[i + 1].s, v[i + 1].n)) {
				set(out->container, sizeof(out->container), v[i + 1].s, v[i + 1].n);
				set(out->runtime, sizeof(out->runtime), "kubepods",
				    strlen("kubepods"));
				found = 1;
				i++;
				continue;
			}
		}
		if (container_of(v[i], i + 1 < nc ? v[i + 1] : (struct comp){NULL, 0}, out)) {
			found = 1;
			if (!ends(s, n, ".scope") && starts(s, n, "docker") && n == 6)
				i++; /* /docker/<id>: the id was the next component */
		}
	}
	if (!found && out->pod[0])
		set(out->runtime, sizeof(out->runtime), "kubepods", strlen("kubepods"));
}

/* ---- /proc/PID/status NSpid ------------------------------------------------ */

int cgroup_parse_nspid(const char *text, size_t len, int32_t *nspid, char *err, size_t errlen)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		int64_t last = -1, v = -1;

		if ((size_t)(le - p) > 6 && !memcmp(p, "NSpid:", 6)) {
			for (const char *q = p + 6; q <= le; q++) {
				if (q < le && *q >= '0' && *q <= '9') {
					v = (v < 0 ? 0 : v) * 10 + (*q - '0');
					if (v > INT32_MAX)
						break;
				} else if (q == le || *q == ' ' || *q == '\t') {
					if (v >= 0)
						last = v;
					v = -1;
				} else {
					last = -1;
					break;
				}
			}
			if (last <= 0 || v > INT32_MAX) {
				snprintf(err, errlen, "status: NSpid is not a list of pids");
				return -1;
			}
			*nspid = (int32_t)last;
			return 0;
		}
		p = nl ? nl + 1 : end;
	}
	snprintf(err, errlen, "status: no NSpid line (a kernel before 4.1)");
	return -1;
}

/* ---- the memory controller's files ------------------------------------------ */

static const struct {
	const char *name;
	enum mt_cgroup_version version;
} files[CG_NFILES] = {
    [CG_V2_CURRENT] = {"memory.current", MT_CGROUP_V2},
    [CG_V2_MAX] = {"memory.max", MT_CGROUP_V2},
    [CG_V2_HIGH] = {"memory.high", MT_CGROUP_V2},
    [CG_V2_STAT] = {"memory.stat", MT_CGROUP_V2},
    [CG_V2_EVENTS] = {"memory.events", MT_CGROUP_V2},
    [CG_V1_USAGE] = {"memory.usage_in_bytes", MT_CGROUP_V1},
    [CG_V1_LIMIT] = {"memory.limit_in_bytes", MT_CGROUP_V1},
    [CG_V1_STAT] = {"memory.stat", MT_CGROUP_V1},
    [CG_V1_OOM_CONTROL] = {"memory.oom_control", MT_CGROUP_V1},
    [CG_V1_FAILCNT] = {"memory.failcnt", MT_CGROUP_V1},
};

/* v1's page counter maximum is 2^63 - 4096 bytes, and "no limit" is near it. */
#define V1_NO_LIMIT_FROM (1ull << 62)

const char *cgroup_file_name(enum cgroup_file f)
{
	return (unsigned)f < CG_NFILES ? files[f].name : "?";
}

/* A decimal u64 in s[0..n): 0, or -1. */
static int parse_decimal(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t d = (uint64_t)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* The key within file f of figure i's source, or NULL when f does not hold it. */
static const char *figure_key(enum cgroup_file f, size_t i)
{
	const struct mt_cgroup_desc *d = &mt_cgroup_descs[i];
	const char *src = files[f].version == MT_CGROUP_V2 ? d->v2 : d->v1;
	size_t n = strlen(files[f].name);

	if (!src || strncmp(src, files[f].name, n))
		return NULL;
	if (src[n] == '\0')
		return ""; /* the file is the value */
	return src[n] == ':' ? src + n + 1 : NULL;
}

/* A limit: "max" or a v1 default means none. */
static int is_limit(size_t i)
{
	return i == offsetof(struct mt_cgroup_figures, limit_bytes) / sizeof(uint64_t) ||
	       i == offsetof(struct mt_cgroup_figures, high_bytes) / sizeof(uint64_t);
}

/* Figure i's value vs[0..vn) of file f into *v: 0, or -1. */
static int figure_value(enum cgroup_file f, size_t i, const char *vs, size_t vn, uint64_t *v)
{
	if (is_limit(i) && files[f].version == MT_CGROUP_V2 && vn == 3 && !memcmp(vs, "max", 3)) {
		*v = MT_CGROUP_NO_LIMIT;
		return 0;
	}
	if (parse_decimal(vs, vn, v))
		return -1;
	if (is_limit(i) && files[f].version == MT_CGROUP_V1 && *v >= V1_NO_LIMIT_FROM)
		*v = MT_CGROUP_NO_LIMIT;
	return 0;
}

int cgroup_parse_file(enum cgroup_file f, const char *text, size_t len, struct mt_cgroup_memory *m,
		      char *err, size_t errlen)
{
	const char *name = cgroup_file_name(f), *p = text, *end = text + len;
	struct mt_cgroup_memory got = *m;
	unsigned seen = 0, lineno = 0;
	size_t single = MT_NCGROUP; /* the figure a one-value file holds */

	if ((unsigned)f >= CG_NFILES) {
		snprintf(err, errlen, "cgroup: no such file");
		return -1;
	}
	for (size_t i = 0; i < MT_NCGROUP; i++) {
		const char *key = figure_key(f, i);

		if (key && !*key)
			single = i;
	}
	if (single < MT_NCGROUP) {
		size_t n = len;
		uint64_t v;

		if (n && text[n - 1] == '\n')
			n--;
		if (memchr(text, '\n', n) || figure_value(f, single, text, n, &v)) {
			snprintf(err, errlen, "%s: \"%.*s\" is not %s", name,
				 (int)(n > 40 ? 40 : n), text,
				 is_limit(single) ? "a number or \"max\"" : "a number");
			return -1;
		}
		mt_cgroup_set(&got.f, single, v);
		seen = 1u << single;
	}
	while (single == MT_NCGROUP && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *ls = p, *le = nl ? nl : end, *sp;
		size_t n = (size_t)(le - ls);

		lineno++;
		p = nl ? nl + 1 : end;
		if (!n)
			continue;
		sp = memchr(ls, ' ', n);
		if (!sp || sp == ls) {
			snprintf(err, errlen, "%s: line %u is not \"key value\"", name, lineno);
			return -1;
		}
		for (size_t i = 0; i < MT_NCGROUP; i++) {
			const char *key = figure_key(f, i);
			uint64_t v;

			if (!key || (size_t)(sp - ls) != strlen(key) ||
			    memcmp(ls, key, strlen(key)))
				continue;
			if (seen & (1u << i)) {
				snprintf(err, errlen, "%s: line %u: a second %s line", name, lineno,
					 key);
				return -1;
			}
			if (figure_value(f, i, sp + 1, (size_t)(le - sp - 1), &v)) {
				snprintf(err, errlen, "%s: line %u: %s is not a number", name,
					 lineno, key);
				return -1;
			}
			mt_cgroup_set(&got.f, i, v);
			seen |= 1u << i;
		}
	}
	got.have |= seen;
	got.version = files[f].version;
	*m = got;
	return 0;
}

/* ---- reading them ------------------------------------------------------------ */

static int fs_is(const char *dir, long magic)
{
	struct statfs st;

	return !statfs(dir, &st) && (long)st.f_type == magic;
}

/* Where the unified hierarchy is mounted ("/sys/fs/cgroup" or ".../unified"), or NULL. */
static const char *unified_root(void)
{
	if (fs_is("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup";
	if (fs_is("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup/unified";
	return NULL;
}

/*
 * Files first..last of the cgroup directory dir into m: 0, 1 when the first
 * (the usage) is not there (no memory controller), or -1 with a reason.
 * Other files missing leave their figures unread.
 */
static int read_files(const char *dir, enum cgroup_file first, enum cgroup_file last,
		      struct mt_cgroup_memory *m, char *why, size_t whylen)
{
	char path[MT_CGROUP_PATH_MAX + 64], *text = malloc(CGROUP_MAX_TEXT);
	struct mt_cgroup_memory got = {0};
	int rc = 0;

	if (!text) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	for (int f = (int)first; f <= (int)last; f++) {
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", dir, files[f].name);
		n = read_small_file(path, text, CGROUP_MAX_TEXT);
		if (n == -ENOENT && f == (int)first) {
			rc = 1;
			break;
		}
		if (n == -ENOENT)
			continue;
		if (n < 0) {
			snprintf(why, whylen, "cannot read %s: %s", path,
				 n == -EFBIG ? "longer than expected" : strerror((int)-n));
			rc = -1;
			break;
		}
		if (cgroup_parse_file((enum cgroup_file)f, text, (size_t)n, &got, why, whylen)) {
			rc = -1;
			break;
		}
	}
	free(text);
	if (!rc)
		*m = got;
	return rc;
}

void cgroup_memory_at(const struct cgroup_where *w, const struct cgroup_roots *roots,
		      char *memory_path, struct mt_cgroup_memory *mem, char *mem_why,
		      size_t mem_whylen)
{
	char dir[MT_CGROUP_PATH_MAX + 256], why[3 * MT_CGROUP_PATH_MAX] = "";
	char note[MT_CGROUP_PATH_MAX + 128] = "";
	struct mt_cgroup_memory m = {0};
	const char *root = roots->unified;
	int rc;

	memory_path[0] = '\0';
	/* the unified hierarchy's memory controller, else v1's */
	if (w->v2[0] && root) {
		snprintf(dir, sizeof(dir), "%s%s", root, strcmp(w->v2, "/") ? w->v2 : "");
		rc = read_files(dir, CG_V2_CURRENT, CG_V2_EVENTS, &m, why, sizeof(why));
		if (rc == 0)
			snprintf(memory_path, MT_CGROUP_PATH_MAX, "%s", w->v2);
		else if (rc == 1 && strcmp(w->v2, "/"))
			/* (the root's has none: its memory is the whole machine's) */
			snprintf(note, sizeof(note),
				 "the unified cgroup %s has no memory controller files", w->v2);
	}
	if (!m.version && !why[0] && w->memory[0]) {
		if (!roots->v1_memory) {
			snprintf(why, sizeof(why), "no v1 memory controller mounted");
		} else {
			snprintf(dir, sizeof(dir), "%s%s", roots->v1_memory,
				 strcmp(w->memory, "/") ? w->memory : "");
			rc = read_files(dir, CG_V1_USAGE, CG_V1_FAILCNT, &m, why, sizeof(why));
			if (rc == 0)
				snprintf(memory_path, MT_CGROUP_PATH_MAX, "%s", w->memory);
			else if (rc == 1)
				snprintf(why, sizeof(why), "the v1 memory cgroup %s has no %s",
					 w->memory, files[CG_V1_USAGE].name);
		}
	}
	if (!m.version && !why[0])
		snprintf(why, sizeof(why), "%s",
			 note[0]		  ? note
			 : !root && !w->memory[0] ? "no cgroup v2 hierarchy and no v1 memory line"
						  : "the cgroup has no memory controller");
	else if (m.version && note[0])
		snprintf(why, sizeof(why), "%s: figures of its v1 memory cgroup", note);
	else if (!m.version && note[0] && why[0]) {
		char both[sizeof(why)];

		snprintf(both, sizeof(both), "%s; %s", note, why);
		memcpy(why, both, sizeof(why));
	}
	*mem = m;
	snprintf(mem_why, mem_whylen, "%s", why);
}

int cgroup_read_memory(const struct mt_cgroup_labels *labels, struct mt_cgroup_memory *mem,
		       char *why, size_t whylen)
{
	const struct cgroup_roots roots = {
	    unified_root(),
	    fs_is("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC) ? "/sys/fs/cgroup/memory" : NULL};
	char memory_path[MT_CGROUP_PATH_MAX];
	struct cgroup_where w;

	if (!labels->memory_path[0]) {
		snprintf(why, whylen, "no memory cgroup known");
		return -1;
	}
	/* the unified cgroup first, as a reading of /proc/PID/cgroup would: on a
	 * hybrid host it has no memory files, and the v1 cgroup it names counts */
	snprintf(w.v2, sizeof(w.v2), "%s", labels->path);
	snprintf(w.memory, sizeof(w.memory), "%s", labels->memory_path);
	cgroup_memory_at(&w, &roots, memory_path, mem, why, whylen);
	if (mem->version == MT_CGROUP_NONE || strcmp(memory_path, labels->memory_path))
		return -1;
	return 0;
}

int cgroup_read_nspid(int pid, int32_t *nspid)
{
	char path[64], text[4096], why[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	n = read_small_file(path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	return cgroup_parse_nspid(text, (size_t)n, nspid, why, sizeof(why)) ? -EINVAL : 0;
}

int cgroup_read(int pid, struct mt_cgroup_labels *labels, struct mt_cgroup_memory *mem,
		char *mem_why, size_t mem_whylen, char *err, size_t errlen)
{
	char path[64], text[4096], dir[MT_CGROUP_PATH_MAX + 32];
	struct mt_cgroup_labels *l = calloc(1, sizeof(*l));
	struct cgroup_where *w = calloc(1, sizeof(*w));
	struct mt_cgroup_memory m = {0};
	const char *root = unified_root();
	const struct cgroup_roots roots = {root, fs_is("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC)
						     ? "/sys/fs/cgroup/memory"
						     : NULL};
	char why[3 * MT_CGROUP_PATH_MAX] = "";
	ssize_t n;
	int rc = 0;

	if (!l || !w) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	n = read_small_file(path, text, sizeof(text));
	if (n < 0) {
		snprintf(err, errlen, "cannot read %s: %s", path,
			 n == -EFBIG ? "longer than expected" : strerror((int)-n));
		rc = (int)n;
		goto out;
	}
	if (cgroup_parse_proc(text, (size_t)n, w, err, errlen)) {
		rc = -EINVAL;
		goto out;
	}
	snprintf(l->path, sizeof(l->path), "%s", w->v2[0] ? w->v2 : w->memory);
	cgroup_identify(l->path, l);
	if (!l->unit[0] && !l->container[0] && w->memory[0] && strcmp(w->memory, l->path)) {
		struct mt_cgroup_labels again = *l;

		cgroup_identify(w->memory, &again); /* a v1 memory cgroup may name more */
		if (again.container[0] || again.unit[0])
			cgroup_identify(w->memory, l);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	n = read_small_file(path, text, sizeof(text));
	if (n > 0 && cgroup_parse_nspid(text, (size_t)n, &l->nspid, why, sizeof(why)))
		l->nspid = 0; /* a kernel before 4.1: no label, not an error */
	why[0] = '\0';
	if (!mem) { /* where the figures would come from, without reading them */
		snprintf(dir, sizeof(dir), "%s%s/%s", root ? root : "",
			 strcmp(w->v2, "/") ? w->v2 : "", files[CG_V2_CURRENT].name);
		if (w->v2[0] && root && !access(dir, F_OK))
			snprintf(l->memory_path, sizeof(l->memory_path), "%s", w->v2);
		else if (w->memory[0] && roots.v1_memory)
			snprintf(l->memory_path, sizeof(l->memory_path), "%s", w->memory);
		*labels = *l;
		goto out;
	}

	cgroup_memory_at(w, &roots, l->memory_path, &m, why, sizeof(why));
	*labels = *l;
	*mem = m;
	snprintf(mem_why, mem_whylen, "%s", why);
	rc = 0;
out:
	free(l);
	free(w);
	return rc;
}
