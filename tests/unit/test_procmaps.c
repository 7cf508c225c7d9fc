// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of the /proc/PID/maps parser: every field of a fixed listing,
 * lookups at the edges of mappings, malformed listings refused, random
 * mutations survived, and the live maps of this process; and a process's
 * command line as the daemon shows it.
 */
#include "daemon/proc/procmaps.h"
#include "daemon/proc/kroots.h"
#include "daemon/proc/smaps.h"
#include "daemon/proc/process.h"
#include "unit.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char fixture[] =
    "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
    "00651000-00652000 rw-p 00051000 08:02 173521      /usr/bin/dbus-daemon\n"
    "00e03000-00e24000 rw-p 00000000 00:00 0           [heap]\n"
    "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
    "7f1000000000-7f1000003000 r-xs 0001a000 fd:1a 4294967297 /opt/my lib/lib x.so (deleted)\n"
    "7ffd5b5f6000-7ffd5b5f8000 r-xp 00000000 00:00 0                  [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0          [vsyscall]";

struct expected_entry {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	const char *perms;
	int deleted;
	const char *path;
};

static const struct expected_entry fixture_entries[] = {
    {0x400000, 0x452000, 0, 173521, 8, 2, "r-xp", 0, "/usr/bin/dbus-daemon"},
    {0x651000, 0x652000, 0x51000, 173521, 8, 2, "rw-p", 0, "/usr/bin/dbus-daemon"},
    {0xe03000, 0xe24000, 0, 0, 0, 0, "rw-p", 0, "[heap]"},
    {0x7f0000000000, 0x7f0000021000, 0, 0, 0, 0, "rw-p", 0, NULL},
    {0x7f1000000000, 0x7f1000003000, 0x1a000, 4294967297ull, 0xfd, 0x1a, "r-xs", 1,
     "/opt/my lib/lib x.so"},
    {0x7ffd5b5f6000, 0x7ffd5b5f8000, 0, 0, 0, 0, "r-xp", 0, "[vdso]"},
    {0xffffffffff600000, 0xffffffffff601000, 0, 0, 0, 0, "--xp", 0, "[vsyscall]"},
};

static void check_fixture(const struct proc_maps *m)
{
	size_t i;

	CHECK_EQ_U64(m->n, ARRAY_SIZE(fixture_entries));
	for (i = 0; i < m->n && i < ARRAY_SIZE(fixture_entries); i++) {
		const struct expected_entry *x = &fixture_entries[i];
		const struct map_entry *e = &m->v[i];

		CHECK_EQ_U64(e->start, x->start);
		CHECK_EQ_U64(e->end, x->end);
		CHECK_EQ_U64(e->offset, x->offset);
		CHECK_EQ_U64(e->inode, x->inode);
		CHECK_EQ_U64(e->dev_major, x->dev_major);
		CHECK_EQ_U64(e->dev_minor, x->dev_minor);
		CHECK_STR(e->perms, x->perms);
		CHECK_EQ_U64(e->deleted, x->deleted);
		if (x->path)
			CHECK_STR(e->path, x->path);
		else
			CHECK(e->path == NULL);
	}
}

TEST(parse_fixture)
{
	struct proc_maps m;
	char *exact;

	CHECK(procmaps_parse(fixture, strlen(fixture), &m) == 0);
	check_fixture(&m);
	procmaps_free(&m);
	CHECK(m.v == NULL && m.n == 0);

	/* Without a NUL after the text: ASan catches any read past len. */
	exact = xmalloc(strlen(fixture));
	memcpy(exact, fixture, strlen(fixture));
	CHECK(procmaps_parse(exact, strlen(fixture), &m) == 0);
	check_fixture(&m);
	procmaps_free(&m);
	free(exact);
}

TEST(parse_is_file)
{
	struct proc_maps m;

	CHECK(procmaps_parse(fixture, strlen(fixture), &m) == 0);
	CHECK(m.n == 7);
	if (m.n == 7) {
		CHECK(procmaps_is_file(&m.v[0]));
		CHECK(!procmaps_is_file(&m.v[2])); /* [heap] */
		CHECK(!procmaps_is_file(&m.v[3])); /* anonymous */
		CHECK(procmaps_is_file(&m.v[4]));
		CHECK(!procmaps_is_file(&m.v[5])); /* [vdso] */
	}
	procmaps_free(&m);
}

TEST(find_edges)
{
	struct proc_maps m;
	const struct map_entry *e;

	CHECK(procmaps_parse(fixture, strlen(fixture), &m) == 0);
	CHECK(procmaps_find(&m, 0) == NULL);
	CHECK(procmaps_find(&m, 0x3fffff) == NULL);
	e = procmaps_find(&m, 0x400000);
	CHECK(e && e->start == 0x400000);
	e = procmaps_find(&m, 0x451fff);
	CHECK(e && e->start == 0x400000);
	CHECK(procmaps_find(&m, 0x452000) == NULL);
	CHECK(procmaps_find(&m, 0x650fff) == NULL);
	e = procmaps_find(&m, 0x7f1000002abc);
	CHECK(e && e->path && !strcmp(e->path, "/opt/my lib/lib x.so"));
	e = procmaps_find(&m, 0xffffffffff600fff);
	CHECK(e && e->start == 0xffffffffff600000);
	CHECK(procmaps_find(&m, UINT64_MAX) == NULL);
	procmaps_free(&m);

	m.v = NULL;
	m.n = 0;
	CHECK(procmaps_find(&m, 0x400000) == NULL);
}

TEST(parse_empty_and_odd_but_valid)
{
	static const char unsorted[] = "2000-3000 r--p 0 0:0 0\n"
				       "1000-2000 r--p 0 0:0 0\n"
				       "1000-2000 r--p 0 0:0 0\n";
	static const char no_path[] = "1000-2000 ---p 00000000 00:00 0";
	static const char double_deleted[] = "1000-2000 r--p 0 1:2 3 /tmp/x (deleted) (deleted)\n";
	struct proc_maps m;

	CHECK(procmaps_parse("", 0, &m) == 0);
	CHECK(m.n == 0);
	procmaps_free(&m);
	CHECK(procmaps_parse(NULL, 0, &m) == 0);
	CHECK(m.n == 0);

	/* Sorted, and a line a racing read repeated is dropped. */
	CHECK(procmaps_parse(unsorted, strlen(unsorted), &m) == 0);
	CHECK_EQ_U64(m.n, 2);
	if (m.n == 2) {
		CHECK_EQ_U64(m.v[0].start, 0x1000);
		CHECK_EQ_U64(m.v[1].start, 0x2000);
	}
	procmaps_free(&m);

	CHECK(procmaps_parse(no_path, strlen(no_path), &m) == 0);
	CHECK(m.n == 1 && m.v[0].path == NULL && !strcmp(m.v[0].perms, "---p"));
	procmaps_free(&m);

	CHECK(procmaps_parse(double_deleted, strlen(double_deleted), &m) == 0);
	CHECK(m.n == 1);
	if (m.n == 1) {
		CHECK_STR(m.v[0].path, "/tmp/x (deleted)");
		CHECK(m.v[0].deleted == 1);
	}
	procmaps_free(&m);
}

TEST(parse_malformed)
{
	static const char *const bad[] = {
	    "zzzz\n",
	    "\n",
	    "1000-2000 r--p 0 0:0 0\n\n2000-3000 r--p 0 0:0 0\n",
	    "1000 r--p 0 0:0 0\n",
	    "1000-2000\n",
	    "1000-2000 r--p\n",
	    "1000-2000 r--p 0\n",
	    "1000-2000 r--p 0 0:0\n",
	    "1000-2000 r--p 0 0:0 \n",
	    "1000-2000 r--p 0 00 0\n",
	    "1000-2000 rxp 0 0:0 0\n",
	    "1000-2000 r-xq 0 0:0 0\n",
	    "1000-2000 R--p 0 0:0 0\n",
	    "1000-2000  r--p 0 0:0 0\n",
	    "-2000 r--p 0 0:0 0\n",
	    "1000-200g r--p 0 0:0 0\n",
	    "2000-1000 r--p 0 0:0 0\n",
	    "2000-2000 r--p 0 0:0 0\n",
	    "10000000000000000-10000000000000001 r--p 0 0:0 0\n",
	    "1000-2000 r--p 0 100000000:0 0\n",
	    "1000-2000 r--p 0 0:0 18446744073709551616\n",
	    "1000-2000 r--p 0 0:0 12a /x\n",
	    "1000-2000 r--p 0 0:0 0\t/x\n",
	    "1000-3000 r--p 0 0:0 0\n2000-4000 r--p 0 0:0 0\n",
	    "1000-3000 r--p 0 0:0 0\n1000-2000 r--p 0 0:0 0\n",
	};
	static const char with_nul[] = "1000-2000 r--p 0 0:0 1 /a\0b\n";
	struct proc_maps m;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		int rc = procmaps_parse(bad[i], strlen(bad[i]), &m);

		if (rc != -1)
			fprintf(stderr, "accepted malformed maps text %zu: %s", i, bad[i]);
		CHECK(rc == -1);
		CHECK(errno == EINVAL);
		CHECK(m.v == NULL && m.n == 0);
	}
	CHECK(procmaps_parse(with_nul, sizeof(with_nul) - 1, &m) == -1);
}

/* Random byte changes and truncations: no crash, and any accepted result is sound. */
TEST(parse_mutations)
{
	static const char alphabet[] = "0123456789abcdefx- :\n\0/()[]rwxps";
	uint64_t state = 0x9e3779b97f4a7c15ull;
	size_t len = strlen(fixture), iter;
	char *text = xmalloc(len);

	for (iter = 0; iter < 20000; iter++) {
		struct proc_maps m;
		size_t n = len, k, i;

		memcpy(text, fixture, len);
		for (k = 0; k < 1 + iter % 4; k++) {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			text[state % len] = alphabet[(state >> 32) % (sizeof(alphabet) - 1)];
		}
		if (iter % 3 == 0)
			n = (size_t)(state >> 40) % (len + 1);
		if (procmaps_parse(text, n, &m) == 0) {
			for (i = 0; i < m.n; i++) {
				CHECK(m.v[i].start < m.v[i].end);
				CHECK(i == 0 || m.v[i - 1].end <= m.v[i].start);
				CHECK(strlen(m.v[i].perms) == 4);
			}
			procmaps_free(&m);
		} else {
			CHECK(m.v == NULL && m.n == 0);
		}
	}
	free(text);
}

/* This process: the text of this program, and a deleted file with spaces in its name. */
TEST(read_self)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char exe[4096], dir[4096], path[4200];
	struct proc_maps m;
	const struct map_entry *e;
	struct stat st;
	ssize_t n;
	void *map = MAP_FAILED;
	int fd = -1;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0);
	if (n <= 0)
		return;
	exe[n] = '\0';
	snprintf(dir, sizeof(dir), "%s/memtrace-unit-XXXXXX", tmp);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/mapped file with spaces", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0);
	if (fd < 0)
		goto out;
	CHECK(ftruncate(fd, 3 * 4096) == 0);
	CHECK(fstat(fd, &st) == 0);
	map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 2 * 4096);
	CHECK(map != MAP_FAILED);
	CHECK(unlink(path) == 0);
	if (map == MAP_FAILED)
		goto out;

	CHECK(procmaps_read(getpid(), &m) == 0);
	CHECK(m.n > 3);
	e = procmaps_find(&m, (uint64_t)(uintptr_t)&parse_fixture);
	CHECK(e != NULL);
	if (e) {
		CHECK_STR(e->path, exe);
		CHECK(e->perms[2] == 'x');
		CHECK(!e->deleted);
	}
	e = procmaps_find(&m, (uint64_t)(uintptr_t)map + 100);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ_U64(e->start, (uintptr_t)map);
		CHECK_EQ_U64(e->end, (uintptr_t)map + 4096);
		CHECK_EQ_U64(e->offset, 2 * 4096);
		CHECK_STR(e->perms, "r--p");
		/* Not st_dev: btrfs and overlayfs report another device to stat(). */
		CHECK_EQ_U64(e->inode, st.st_ino);
		CHECK_STR(e->path, path);
		CHECK(e->deleted == 1);
	}
	procmaps_free(&m);

	CHECK(procmaps_read(-1, &m) < 0);
	CHECK(procmaps_read(0x7ffffffe, &m) == -ENOENT);
out:
	if (map != MAP_FAILED)
		munmap(map, 4096);
	if (fd >= 0)
		close(fd);
	rmdir(dir);
}

/* smaps: the VmFlags a leak scan minds (device memory, userfaultfd ranges, shared). */
TEST(smaps_vmflags)
{
	static const char text[] =
	    "55e73b800000-55e73b821000 rw-p 00000000 00:00 0    [heap]\n"
	    "Rss:                 132 kB\nPss:                 132 kB\n"
	    "Anonymous:           132 kB\nSwap:                 16 kB\n"
	    "VmFlags: rd wr mr mw me ac um\n"
	    "7f0000000000-7f0000001000 rw-s 00000000 00:05 77   /dev/dri/card0\n"
	    "Rss: 0 kB\nPss: 0 kB\nAnonymous: 0 kB\nSwap: 0 kB\n"
	    "VmFlags: rd wr sh mr mw me io pf\n"
	    "7f0000004000-7f0000005000 rw-p 00000000 00:00 0\n"
	    "Rss: 4 kB\nPss: 4 kB\nAnonymous: 4 kB\nSwap: 0 kB\n"
	    "VmFlags: rd wr mr mw me ac iox\n";
	struct smaps m;
	char err[256];

	CHECK(!smaps_parse(text, sizeof(text) - 1, &m, err, sizeof(err)));
	CHECK_EQ_U64(m.n, 3);
	if (m.n == 3) {
		CHECK_EQ_U64(m.v[0].vmflags, SMAPS_VM_UFFD);
		CHECK_EQ_U64(m.v[0].swap, 16 * 1024);
		CHECK_EQ_U64(m.v[1].vmflags, SMAPS_VM_IO | SMAPS_VM_PFNMAP | SMAPS_VM_SHARED);
		CHECK_EQ_U64(m.v[2].vmflags, 0); /* "iox" is no code */
	}
	smaps_free(&m);
}

/* Pointers the kernel keeps: epoll registrations' data, timers' signal values. */
TEST(kroots_text)
{
	static const char epoll[] = "pos:\t0\nflags:\t02000002\nmnt_id:\t17\n"
				    "tfd:        4 events:       19 data:     55d0c0a04f00  pos:0 "
				    "ino:c0b1d sdev:f\n"
				    "tfd:        7 events:       19 data:                0  pos:0\n"
				    "tfd:        9 events:       19 data: ffffffffffffffffff\n"
				    "tfd: junk\n";
	static const char timers[] = "ID: 0\nsignal: 12/000055d0c0a05000\nnotify: signal/pid.77\n"
				     "ClockID: 1\nID: 1\nsignal: 14/0000000000000000\n";
	struct kroots k = {0};

	kroots_parse_epoll(epoll, sizeof(epoll) - 1, &k);
	/* a zero is no pointer; a value is at most 16 digits */
	CHECK_EQ_U64(k.n, 2);
	if (k.n == 2) {
		CHECK_EQ_U64(k.v[0], 0x55d0c0a04f00ull);
		CHECK_EQ_U64(k.v[1], UINT64_MAX);
	}
	kroots_parse_timers(timers, sizeof(timers) - 1, &k);
	CHECK_EQ_U64(k.n, 3);
	if (k.n == 3)
		CHECK_EQ_U64(k.v[2], 0x55d0c0a05000ull);
	kroots_parse_epoll("", 0, &k);
	CHECK_EQ_U64(k.n, 3);
	kroots_free(&k);
	CHECK(!kroots_read(getpid(), &k));
	kroots_free(&k);
}

/* Control characters in arguments (a newline in python -c "...") become
 * spaces: the command goes into one-line log messages. */
TEST(read_command_controls)
{
	char *const argv[] = {"a\nb\tc", "30", NULL};
	struct timespec nap = {0, 1000000};
	char *cmd = NULL;
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		execv("/bin/sleep", argv);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	/* until the exec has replaced the command line (5 s at most) */
	for (int i = 0; i < 5000; i++) {
		free(cmd);
		cmd = process_read_command(pid);
		if (!strcmp(cmd, "a b c 30"))
			break;
		nanosleep(&nap, NULL);
	}
	CHECK_STR(cmd, "a b c 30");
	free(cmd);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

UNIT_MAIN()
