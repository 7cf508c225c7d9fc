// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of a process's cgroup (src/daemon/proc/cgroup.c), on fixture
 * text (no root, no cgroup filesystem): /proc/PID/cgroup of a hybrid host
 * and of a v2-only one, what a cgroup path names (systemd units, docker,
 * podman, containerd, CRI-O, kubepods in both drivers), NSpid, the memory
 * controller's files of both versions, and malformed text, which must give
 * one clear error and change nothing.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/proc/cgroup.h"
#include "unit.h"

#define ID   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID  "1b6d2a5e-3c4f-4e1a-9f7b-2d8c6e0a4b11"
#define UID_ "1b6d2a5e_3c4f_4e1a_9f7b_2d8c6e0a4b11"
#define MIB  (1024ull * 1024)

static int has(const char *s, const char *part)
{
	return s && strstr(s, part) != NULL;
}

static int parse_where(const char *text, struct cgroup_where *w, char *err, size_t errlen)
{
	return cgroup_parse_proc(text, strlen(text), w, err, errlen);
}

/* A hybrid host (these machines): v1 controllers, the unified hierarchy with hugetlb only. */
TEST(proc_hybrid)
{
	static const char text[] = "9:name=systemd:/\n"
				   "8:pids:/\n"
				   "4:memory:/batch/4f1c2a9e0d3b5c7e8a6f9b1d2c3e4f50\n"
				   "2:cpuacct,cpu:/\n"
				   "0::/\n";
	struct cgroup_where w;
	char err[256] = "";

	CHECK(parse_where(text, &w, err, sizeof(err)) == 0);
	CHECK_STR(w.v2, "/");
	CHECK_STR(w.memory, "/batch/4f1c2a9e0d3b5c7e8a6f9b1d2c3e4f50");
}

/* A podman container there: every line is its cgroup; a controller list with memory in it. */
TEST(proc_podman_and_lists)
{
	static const char text[] = "5:cpu,cpuacct:/libpod_parent/libpod-" ID "\n"
				   "4:blkio,memory:/libpod_parent/libpod-" ID "\n"
				   "0::/libpod_parent/libpod-" ID "\n";
	struct cgroup_where w;
	char err[256] = "";

	CHECK(parse_where(text, &w, err, sizeof(err)) == 0);
	CHECK_STR(w.v2, "/libpod_parent/libpod-" ID);
	CHECK_STR(w.memory, "/libpod_parent/libpod-" ID);
}

/* v2 only: one line; a path with ':' in it is the path. No trailing newline. */
TEST(proc_v2_only)
{
	struct cgroup_where w;
	char err[256] = "";

	CHECK(parse_where("0::/system.slice/a:b.service", &w, err, sizeof(err)) == 0);
	CHECK_STR(w.v2, "/system.slice/a:b.service");
	CHECK_STR(w.memory, "");
}

TEST(proc_malformed)
{
	static const char *const bad[] = {
	    "0:/\n",	      /* two fields */
	    "x::/\n",	      /* not a number */
	    "0::relative\n",  /* not absolute */
	    "0::\n",	      /* no path */
	    "3:cpu:/\n",      /* neither v2 nor memory */
	    "",		      /* empty */
	    "0::/a\n0::/b\n", /* twice */
	    "4:memory:/a\n5:memory:/b\n",
	};
	static const char *const why[] = {
	    "is not \"ID:CONTROLLERS:/PATH\"",
	    "is not",
	    "is not",
	    "is not",
	    "neither a v2",
	    "neither a v2",
	    "a second \"0::\"",
	    "a second memory",
	};
	struct cgroup_where w;
	char err[256], longp[MT_CGROUP_PATH_MAX + 16];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(w.v2, "untouched");
		err[0] = '\0';
		CHECK(parse_where(bad[i], &w, err, sizeof(err)) == -1);
		CHECK_STR(w.v2, "untouched");
		if (!has(err, why[i]))
			fprintf(stderr, "case %zu: %s\n", i, err);
		CHECK(has(err, why[i]));
	}
	memset(longp, 'a', sizeof(longp));
	memcpy(longp, "0::/", 4);
	longp[sizeof(longp) - 1] = '\0';
	CHECK(parse_where(longp, &w, err, sizeof(err)) == -1);
	CHECK(has(err, "a path longer than 1023 bytes"));
}

static struct mt_cgroup_labels ident(const char *path)
{
	struct mt_cgroup_labels l;

	memset(&l, 'x', sizeof(l)); /* every field it owns is set */
	cgroup_identify(path, &l);
	return l;
}

TEST(identify_units)
{
	struct mt_cgroup_labels l = ident("/system.slice/nginx.service");

	CHECK_STR(l.unit, "nginx.service");
	CHECK_STR(l.container, "");
	CHECK_STR(l.runtime, "");
	CHECK_STR(l.pod, "");
	l = ident("/user.slice/user-1000.slice/user@1000.service/app.slice/foo.scope");
	CHECK_STR(l.unit, "foo.scope");
	l = ident("/user.slice/user-1000.slice/user@1000.service/init.scope");
	CHECK_STR(l.unit, "init.scope");
	l = ident("/system.slice");
	CHECK_STR(l.unit, "system.slice");
	l = ident("/");
	CHECK_STR(l.unit, "");
	CHECK_STR(l.container, "");
	l = ident("/batch/4f1c2a9e0d3b5c7e8a6f9b1d2c3e4f50");
	CHECK_STR(l.unit, "");
	CHECK_STR(l.container, ""); /* 32 hex digits: not a container id */
	l = ident("/system.slice/docker.service");
	CHECK_STR(l.unit, "docker.service");
	CHECK_STR(l.container, "");
}

TEST(identify_containers)
{
	struct mt_cgroup_labels l = ident("/system.slice/docker-" ID ".scope");

	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "docker");
	CHECK_STR(l.unit, "docker-" ID ".scope");
	l = ident("/docker/" ID);
	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "docker");
	CHECK_STR(l.unit, "");
	l = ident("/libpod_parent/libpod-" ID);
	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "podman");
	l = ident("/machine.slice/libpod-" ID ".scope/container");
	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "podman");
	/* conmon, the container's monitor, is not the container */
	l = ident("/machine.slice/libpod-conmon-" ID ".scope");
	CHECK_STR(l.container, "");
	CHECK_STR(l.runtime, "");
	CHECK_STR(l.unit, "libpod-conmon-" ID ".scope");
	l = ident("/system.slice/cri-containerd-" ID ".scope");
	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "containerd");
	l = ident("/system.slice/crio-" ID ".scope");
	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "cri-o");
	l = ident("/system.slice/crio-conmon-" ID ".scope");
	CHECK_STR(l.container, "");
	/* a short or upper-case id is not one */
	l = ident("/docker/0123456789ab");
	CHECK_STR(l.container, "");
	l = ident("/system.slice/docker-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789"
		  "abcdef.scope");
	CHECK_STR(l.container, "");
}

TEST(identify_kubepods)
{
	/* the systemd driver: the pod's uid with '_' in its slice */
	struct mt_cgroup_labels l =
	    ident("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" ID ".scope");

	CHECK_STR(l.pod, UID);
	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "containerd");
	CHECK_STR(l.unit, "cri-containerd-" ID ".scope");
	l = ident("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope");
	CHECK_STR(l.pod, UID);
	CHECK_STR(l.runtime, "cri-o");
	/* the cgroupfs driver: the container is the component after the pod */
	l = ident("/kubepods/burstable/pod" UID "/" ID);
	CHECK_STR(l.pod, UID);
	CHECK_STR(l.container, ID);
	CHECK_STR(l.runtime, "kubepods");
	l = ident("/kubepods/pod" UID "/" ID);
	CHECK_STR(l.pod, UID);
	CHECK_STR(l.container, ID);
	/* the pod's own cgroup: a pod, no container */
	l = ident("/kubepods/besteffort/pod" UID);
	CHECK_STR(l.pod, UID);
	CHECK_STR(l.container, "");
	CHECK_STR(l.runtime, "kubepods");
	/* "pod" outside kubepods is a name like any other */
	l = ident("/pod" UID "/" ID);
	CHECK_STR(l.pod, "");
	CHECK_STR(l.container, "");
}

TEST(nspid)
{
	static const char host[] = "Name:\tsh\nPid:\t4242\nNSpid:\t4242\nVmRSS:\t 1 kB\n";
	static const char ns[] = "Name:\tprog\nNSpid:\t51234\t7\t1\n";
	int32_t v = 99;
	char err[256] = "";

	CHECK(cgroup_parse_nspid(host, strlen(host), &v, err, sizeof(err)) == 0);
	CHECK_EQ_U64(v, 4242);
	CHECK(cgroup_parse_nspid(ns, strlen(ns), &v, err, sizeof(err)) == 0);
	CHECK_EQ_U64(v, 1);
	v = 99;
	CHECK(cgroup_parse_nspid("Name:\tx\n", 8, &v, err, sizeof(err)) == -1);
	CHECK(has(err, "no NSpid line"));
	CHECK(cgroup_parse_nspid("NSpid:\t12x\n", 11, &v, err, sizeof(err)) == -1);
	CHECK(has(err, "not a list of pids"));
	CHECK(cgroup_parse_nspid("NSpid:\t\n", 8, &v, err, sizeof(err)) == -1);
	CHECK(cgroup_parse_nspid("NSpid:\t99999999999\n", 19, &v, err, sizeof(err)) == -1);
	CHECK_EQ_U64(v, 99);
}

static int parse(enum cgroup_file f, const char *text, struct mt_cgroup_memory *m, char *err,
		 size_t errlen)
{
	return cgroup_parse_file(f, text, strlen(text), m, err, errlen);
}

#define BIT(field) (1u << (offsetof(struct mt_cgroup_figures, field) / sizeof(uint64_t)))

/* A v2 cgroup with a 64 MiB limit (memory.stat trimmed to a few other keys). */
TEST(v2_files)
{
	static const char stat[] = "anon 50372608\nfile 4096\nkernel 700416\nkernel_stack 32768\n"
				   "pagetables 65536\nsock 0\nshmem 0\nfile_mapped 0\n"
				   "slab_reclaimable 180000\nslab 310272\npgfault 12345\n";
	static const char events[] = "low 0\nhigh 3\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n";
	struct mt_cgroup_memory m = {0};
	char err[256] = "";

	CHECK(parse(CG_V2_CURRENT, "51085312\n", &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V2_MAX, "67108864\n", &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V2_HIGH, "max\n", &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V2_STAT, stat, &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V2_EVENTS, events, &m, err, sizeof(err)) == 0);
	CHECK_EQ_U64(m.version, MT_CGROUP_V2);
	CHECK_EQ_U64(m.f.usage_bytes, 51085312);
	CHECK_EQ_U64(m.f.limit_bytes, 64 * MIB);
	CHECK_EQ_U64(m.f.high_bytes, MT_CGROUP_NO_LIMIT);
	CHECK_EQ_U64(m.f.anon_bytes, 50372608);
	CHECK_EQ_U64(m.f.file_bytes, 4096);
	CHECK_EQ_U64(m.f.kernel_bytes, 700416);
	CHECK_EQ_U64(m.f.slab_bytes, 310272); /* not slab_reclaimable */
	CHECK_EQ_U64(m.f.sock_bytes, 0);
	CHECK_EQ_U64(m.f.shmem_bytes, 0);
	CHECK_EQ_U64(m.f.high_events, 3);
	CHECK_EQ_U64(m.f.max_events, 17);
	CHECK_EQ_U64(m.f.oom_events, 1);
	CHECK_EQ_U64(m.f.oom_kills, 1);
	CHECK_EQ_U64(m.have, (1u << MT_NCGROUP) - 1); /* v2 has every figure */
	CHECK(parse(CG_V2_MAX, "max", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U64(m.f.limit_bytes, MT_CGROUP_NO_LIMIT);
	/* an older kernel's memory.stat without kernel: that figure is not read */
	m = (struct mt_cgroup_memory){0};
	CHECK(parse(CG_V2_STAT, "anon 1\nfile 2\nslab 3\nsock 4\nshmem 5\n", &m, err,
		    sizeof(err)) == 0);
	CHECK(!(m.have & BIT(kernel_bytes)));
	CHECK(m.have & BIT(anon_bytes));
	CHECK_EQ_U64(m.f.shmem_bytes, 5);
}

/* The v1 memory controller (a hybrid host), as a container limited to 64 MiB shows it. */
TEST(v1_files)
{
	static const char stat[] =
	    "cache 11030528\nrss 2957312\nrss_huge 0\nshmem 10465280\n"
	    "hierarchical_memory_limit 67108864\n"
	    "total_cache 830427136\ntotal_rss 104341504\ntotal_shmem 10469376\n"
	    "total_pgfault 447656635\n";
	static const char oom[] = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
	struct mt_cgroup_memory m = {0};
	char err[256] = "";

	CHECK(parse(CG_V1_USAGE, "50593792\n", &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V1_LIMIT, "67108864\n", &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V1_STAT, stat, &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V1_OOM_CONTROL, oom, &m, err, sizeof(err)) == 0);
	CHECK(parse(CG_V1_FAILCNT, "4\n", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U64(m.version, MT_CGROUP_V1);
	CHECK_EQ_U64(m.f.usage_bytes, 50593792);
	CHECK_EQ_U64(m.f.limit_bytes, 64 * MIB);
	/* the hierarchy's figures: total_ (usage_in_bytes counts the children too) */
	CHECK_EQ_U64(m.f.anon_bytes, 104341504);
	CHECK_EQ_U64(m.f.file_bytes, 830427136);
	CHECK_EQ_U64(m.f.shmem_bytes, 10469376);
	CHECK_EQ_U64(m.f.oom_kills, 2);
	CHECK_EQ_U64(m.f.max_events, 4);
	/* v1 has no memory.high, kernel, slab, sock, high or oom events */
	CHECK(!(m.have & (BIT(high_bytes) | BIT(kernel_bytes) | BIT(slab_bytes) | BIT(sock_bytes) |
			  BIT(high_events) | BIT(oom_events))));
	CHECK(m.have & BIT(limit_bytes));
	/* the kernel's default is no limit; so is anything from 2^62 bytes */
	CHECK(parse(CG_V1_LIMIT, "9223372036854771712\n", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U64(m.f.limit_bytes, MT_CGROUP_NO_LIMIT);
	CHECK(parse(CG_V1_LIMIT, "4611686018427387904\n", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U64(m.f.limit_bytes, MT_CGROUP_NO_LIMIT);
	CHECK(parse(CG_V1_LIMIT, "4611686018427383808\n", &m, err, sizeof(err)) == 0);
	CHECK_EQ_U64(m.f.limit_bytes, 4611686018427383808ull);
	/* v1 has no "max" */
	CHECK(parse(CG_V1_LIMIT, "max\n", &m, err, sizeof(err)) == -1);
}

TEST(files_malformed)
{
	static const struct {
		enum cgroup_file f;
		const char *text, *why;
	} bad[] = {
	    {CG_V2_CURRENT, "", "\"\" is not a number"},
	    {CG_V2_CURRENT, "12 kB\n", "is not a number"},
	    {CG_V2_CURRENT, "1\n2\n", "is not a number"},
	    {CG_V2_CURRENT, "max\n", "is not a number"}, /* only limits may be max */
	    {CG_V2_MAX, "-1\n", "is not a number or \"max\""},
	    {CG_V2_MAX, "99999999999999999999\n", "is not a number"},
	    {CG_V2_STAT, "anon 1\nanon 2\n", "line 2: a second anon line"},
	    {CG_V2_STAT, "anon\n", "line 1 is not \"key value\""},
	    {CG_V2_STAT, "anon x\n", "line 1: anon is not a number"},
	    {CG_V2_EVENTS, "oom_kill -1\n", "oom_kill is not a number"},
	    {CG_V1_OOM_CONTROL, "oom_kill 1\noom_kill 1\n", "a second oom_kill"},
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct mt_cgroup_memory m = {.have = 1, .f.usage_bytes = 7};

		err[0] = '\0';
		CHECK(parse(bad[i].f, bad[i].text, &m, err, sizeof(err)) == -1);
		CHECK_EQ_U64(m.f.usage_bytes, 7); /* nothing changed */
		CHECK_EQ_U64(m.have, 1);
		CHECK_EQ_U64(m.version, 0);
		if (!has(err, bad[i].why))
			fprintf(stderr, "case %zu: %s\n", i, err);
		CHECK(has(err, bad[i].why));
		CHECK(has(err, cgroup_file_name(bad[i].f)));
	}
}

/* A file of the fake tree: dir/name with text (the directories made on the way). */
static void put(const char *root, const char *rel, const char *name, const char *text)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (char *p = path + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	mkdir(path, 0755);
	if (!name)
		return;
	snprintf(path, sizeof(path), "%s%s/%s", root, rel, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

/*
 * Which hierarchy's figures, and what the output says when there are none,
 * on fake trees (directories with the controller's files): a unified cgroup
 * with a memory controller, one without it beside a v1 memory cgroup (these
 * hosts), no unified hierarchy, no memory controller at all.
 */
TEST(memory_at_trees)
{
	char base[] = "/tmp/memtrace-cgroup-XXXXXX", uni[64], v1[64], why[4096],
	     mp[MT_CGROUP_PATH_MAX];
	struct cgroup_where w = {"/app.slice/shop.service", "/shop"};
	struct mt_cgroup_memory m;
	struct cgroup_roots roots;

	CHECK(mkdtemp(base) != NULL);
	snprintf(uni, sizeof(uni), "%s/unified", base);
	snprintf(v1, sizeof(v1), "%s/memory", base);
	put(uni, "/app.slice/shop.service", "memory.current", "51085312\n");
	put(uni, "/app.slice/shop.service", "memory.max", "67108864\n");
	put(uni, "/app.slice/shop.service", "memory.events", "high 0\nmax 2\noom 0\noom_kill 0\n");
	put(v1, "/shop", "memory.usage_in_bytes", "1000\n");
	put(v1, "/shop", "memory.limit_in_bytes", "9223372036854771712\n");
	put(uni, "/bare", NULL, NULL); /* a unified cgroup without memory files */

	/* v2 with its memory controller: its figures (memory.high, memory.stat absent: unread) */
	roots = (struct cgroup_roots){uni, v1};
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_EQ_U64(m.version, MT_CGROUP_V2);
	CHECK_STR(mp, "/app.slice/shop.service");
	CHECK_EQ_U64(m.f.limit_bytes, 64 * MIB);
	CHECK_EQ_U64(m.f.max_events, 2);
	CHECK(!(m.have & BIT(high_bytes)) && !(m.have & BIT(anon_bytes)));
	CHECK_STR(why, "");
	/* a unified cgroup without a memory controller: the v1 memory cgroup's, and a note */
	strcpy(w.v2, "/bare");
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_EQ_U64(m.version, MT_CGROUP_V1);
	CHECK_STR(mp, "/shop");
	CHECK_EQ_U64(m.f.usage_bytes, 1000);
	CHECK_EQ_U64(m.f.limit_bytes, MT_CGROUP_NO_LIMIT);
	CHECK_STR(why, "the unified cgroup /bare has no memory controller files: figures of its v1 "
		       "memory cgroup");
	/* ... and no v1 memory cgroup either (the process's is gone) */
	strcpy(w.memory, "/gone");
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_EQ_U64(m.version, MT_CGROUP_NONE);
	CHECK_STR(mp, "");
	CHECK_STR(why, "the unified cgroup /bare has no memory controller files; the v1 memory "
		       "cgroup /gone has no memory.usage_in_bytes");
	/* a host without cgroup v2, and a process without a memory line */
	roots = (struct cgroup_roots){NULL, v1};
	w = (struct cgroup_where){"/x", ""};
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_EQ_U64(m.version, MT_CGROUP_NONE);
	CHECK_STR(why, "no cgroup v2 hierarchy and no v1 memory line");
	/* a unified hierarchy, the process in its root, no memory line */
	roots = (struct cgroup_roots){uni, v1};
	w = (struct cgroup_where){"/", ""};
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_EQ_U64(m.version, MT_CGROUP_NONE);
	CHECK_STR(why, "the cgroup has no memory controller");
	/* a v1 memory line but no v1 memory controller mounted */
	roots = (struct cgroup_roots){NULL, NULL};
	w = (struct cgroup_where){"", "/shop"};
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_STR(why, "no v1 memory controller mounted");
	/* the root of the unified hierarchy never has memory.current: no note for it */
	roots = (struct cgroup_roots){uni, v1};
	w = (struct cgroup_where){"/", "/shop"};
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_EQ_U64(m.version, MT_CGROUP_V1);
	CHECK_STR(why, "");
	/* a file that is not what it should be: no figures, and which file says why */
	put(v1, "/bad", "memory.usage_in_bytes", "lots\n");
	w = (struct cgroup_where){"", "/bad"};
	cgroup_memory_at(&w, &roots, mp, &m, why, sizeof(why));
	CHECK_EQ_U64(m.version, MT_CGROUP_NONE);
	CHECK(has(why, "memory.usage_in_bytes: \"lots\" is not a number"));
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
		CHECK(system(cmd) == 0);
	}
}

/* The thin reader on this very process: labels as /proc says, whatever the host. */
TEST(read_self)
{
	struct mt_cgroup_labels l;
	struct mt_cgroup_memory m;
	char why[512], err[256];

	CHECK(cgroup_read(getpid(), &l, &m, why, sizeof(why), err, sizeof(err)) == 0);
	CHECK(l.path[0] == '/');
	CHECK(l.nspid > 0);
	CHECK(m.version != MT_CGROUP_NONE || why[0]); /* figures, or why none */
	if (m.version)
		CHECK(m.have & BIT(usage_bytes));
	CHECK(cgroup_read(-5, &l, &m, why, sizeof(why), err, sizeof(err)) < 0);
	CHECK(has(err, "/proc/-5/cgroup"));
}

UNIT_MAIN()
