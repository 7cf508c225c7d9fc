// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Unit tests of what an OOM kill leaves (issue 33): a memory cgroup (this
 * process's own) read as the daemon reads a victim's, and the --oom-snapshots
 * files (src/daemon/serve/oomsnap.c): a folder checked at start, a file
 * written whole under its name, the oldest oom-* pruned beyond --oom-keep,
 * nothing left behind when the folder cannot take it. No root.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "daemon/proc/cgroup.h"
#include "daemon/serve/oomsnap.h"
#include "unit.h"

/* Our own cgroup, read as the daemon reads a victim's: figures where the host has them,
 * else the reason; a pid that is not there always fails. */
TEST(own_cgroup)
{
	struct mt_cgroup_labels labels;
	struct mt_cgroup_memory mem;
	char why[256] = "", err[256] = "";

	CHECK(cgroup_read(getpid(), &labels, &mem, why, sizeof(why), err, sizeof(err)) == 0);
	if (mem.version != MT_CGROUP_NONE)
		CHECK(mem.f.limit_bytes > 0);
	else
		CHECK(why[0] && !strchr(why, '\n'));
	CHECK(cgroup_read(0x3fffff, &labels, &mem, why, sizeof(why), err, sizeof(err)) < 0);
	CHECK(err[0] && !strchr(err, '\n'));
}

static char *tmp_folder(void)
{
	char tmpl[] = "/tmp/memtrace-oomsnap-XXXXXX";
	char *dir = mkdtemp(tmpl);

	CHECK(dir != NULL);
	return dir ? strdup(dir) : NULL;
}

static int count_files(const char *dir, const char *prefix)
{
	struct dirent *e;
	int n = 0;
	DIR *dp = opendir(dir);

	if (!dp)
		return -1;
	while ((e = readdir(dp)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(dp);
	return n;
}

static void remove_folder(const char *dir)
{
	struct dirent *e;
	char path[4200];
	DIR *dp = opendir(dir);

	while (dp && (e = readdir(dp))) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (dp)
		closedir(dp);
	rmdir(dir);
}

TEST(check_folder)
{
	char *dir = tmp_folder(), file[4200], err[512];
	FILE *f;

	CHECK(oomsnap_check_dir(dir, err, sizeof(err)) == 0);
	CHECK_EQ_U64(count_files(dir, ""), 2); /* . and ..: the probe file is gone */
	snprintf(file, sizeof(file), "%s/plain", dir);
	f = fopen(file, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	CHECK(oomsnap_check_dir(file, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not a folder") != NULL);
	snprintf(file, sizeof(file), "%s/missing", dir);
	CHECK(oomsnap_check_dir(file, err, sizeof(err)) == -1);
	CHECK(strstr(err, "No such file") != NULL && !strchr(err, '\n'));
	remove_folder(dir);
	free(dir);
}

/* Files written whole, named by pid and time; the oldest pruned beyond keep; other
 * files of the folder left alone. */
TEST(write_and_prune)
{
	char *dir = tmp_folder(), path[4200], err[512], other[4200];
	const uint8_t bytes[] = "MTSNAP";
	struct oomsnap_job j = {.pid = 4242, .dir = dir, .keep = 3};
	struct stat st;
	FILE *f;

	snprintf(other, sizeof(other), "%s/notes.txt", dir);
	f = fopen(other, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	for (int i = 0; i < 5; i++) {
		struct timeval tv[2] = {{1000 + i, 0}, {1000 + i, 0}};

		j.pid = 4242 + (uint32_t)i;
		j.unix_ns = 1765000000000000000ull + (uint64_t)i * 1000000000ull;
		CHECK(oomsnap_write(&j, bytes, sizeof(bytes), path, sizeof(path), err,
				    sizeof(err)) == 0);
		CHECK(stat(path, &st) == 0 && st.st_size == (off_t)sizeof(bytes));
		utimes(path, tv); /* older first, whatever the clock */
	}
	CHECK(strstr(path, "/oom-4246-20251206T") != NULL);
	CHECK(!strcmp(path + strlen(path) - 4, ".mts"));
	CHECK_EQ_U64(count_files(dir, "oom-"), 3);
	CHECK_EQ_U64(count_files(dir, ".oom-"), 0); /* no partial file left */
	CHECK(stat(other, &st) == 0);
	snprintf(path, sizeof(path), "%s/oom-4242-20251206T054640Z.mts", dir);
	CHECK(stat(path, &st) == -1); /* the oldest went */
	snprintf(path, sizeof(path), "%s/oom-4244-20251206T054642Z.mts", dir);
	CHECK(stat(path, &st) == 0); /* the third stays */
	CHECK_EQ_U64(oomsnap_prune(dir, 1), 2);
	CHECK_EQ_U64(oomsnap_prune(dir, 0), 0); /* 0: keep all */
	CHECK_EQ_U64(count_files(dir, "oom-"), 1);
	remove_folder(dir);
	/* the folder gone: one line, nothing written */
	CHECK(oomsnap_write(&j, bytes, sizeof(bytes), path, sizeof(path), err, sizeof(err)) == -1);
	CHECK(strstr(err, "cannot write") != NULL && !strchr(err, '\n'));
	free(dir);
}

UNIT_MAIN()
